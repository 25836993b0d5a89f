"""The JSON report: the analysis exactly as computed, raw run values included."""

from __future__ import annotations

import json
from typing import Any


def render(report: dict[str, Any]) -> str:
    return json.dumps(report, indent=2, sort_keys=False) + "\n"
