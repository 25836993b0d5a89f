"""Reports: each format renders the analysis dict (the JSON report) and nothing else."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from benchlab.errors import SpecError
from benchlab.report import csv_format, json_format, markdown, table

FORMATS: dict[str, Callable[[dict[str, Any]], str]] = {
    "table": table.render,
    "md": markdown.render,
    "json": json_format.render,
    "csv": csv_format.render,
}


def check_format(fmt: str) -> None:
    if fmt not in FORMATS:
        raise SpecError(f"unknown report format '{fmt}' (choose {', '.join(FORMATS)})", where="--format")


def render(report: dict[str, Any], fmt: str) -> str:
    check_format(fmt)
    return FORMATS[fmt](report)
