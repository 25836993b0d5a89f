"""Each format's renderer, by the name `choices.FORMATS` gives it."""

from __future__ import annotations

from collections.abc import Callable

from benchlab.report import benchstat, csv_format, gbench_format, html, hyperfine_json, json_format, markdown, table
from benchlab.report.choices import View
from benchlab.report_model import Report

RENDERERS: dict[str, Callable[[Report, View], str]] = {
    "table": table.render,
    "md": markdown.render,
    "json": json_format.render,
    "csv": csv_format.render,
    "hyperfine": hyperfine_json.render,
    "gbench": gbench_format.render,
    "benchstat": benchstat.render,
    "html": html.render,
}
