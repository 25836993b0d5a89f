"""Options shared by several commands."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

Db = Annotated[
    str | None,
    typer.Option("--db", help="results database: a SQLite path or a postgresql:// URL [env: BENCHLAB_DB]"),
]
Format = Annotated[str, typer.Option("--format", "-f", help="table, md, json, csv or html (a page with plots)")]
Output = Annotated[
    Path | None, typer.Option("-o", "--output", help="write the report to this file (whole or not at all) instead of stdout")
]
UntilDecided = Annotated[
    bool,
    typer.Option(
        "--until-decided",
        help="add blocks one at a time until every judged row is better, worse or same (thresholds calibrated for the looks)",
    ),
]
MinBlocks = Annotated[int | None, typer.Option("--min-blocks", help="with --until-decided: the first look (default 3)")]
MaxBlocks = Annotated[int | None, typer.Option("--max-blocks", help="with --until-decided: the budget (default 40)")]
