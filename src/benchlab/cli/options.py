"""Options shared by several commands."""

from __future__ import annotations

from typing import Annotated

import typer

Db = Annotated[
    str | None,
    typer.Option("--db", help="results database: a SQLite path or a postgresql:// URL [env: BENCHLAB_DB]"),
]
Format = Annotated[str, typer.Option("--format", "-f", help="table, md, json or csv")]
