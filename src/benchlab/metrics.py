"""A metric value as every layer sees it: measured by `measure`, stored by `store`, judged by `stats`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Direction = Literal["lower", "higher", "none"]


@dataclass(frozen=True)
class Metric:
    name: str
    value: float
    unit: str
    direction: Direction
