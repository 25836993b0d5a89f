"""`benchlab history`: experiments re-run over time as series, with their change points."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console

from benchlab.analysis.changepoints import Settings  # no Otava in it: that loads only when points are looked for
from benchlab.cli.console import out
from benchlab.cli.options import Db, count_option
from benchlab.cli.results import open_store
from benchlab.errors import SpecError

FORMATS = ("table", "json")
WIDTH = 100  # a table written to a file or pipe is drawn this wide (a terminal's own width otherwise)


def history(
    pattern: Annotated[str, typer.Argument(help="glob of experiment names, e.g. 'nightly-*' (default: every experiment)")] = "*",
    workload: Annotated[str, typer.Option("--workload", "-w", help="glob of workload names")] = "*",
    metric: Annotated[str, typer.Option("--metric", help="glob of metric names")] = "*",
    variant: Annotated[str, typer.Option("--variant", help="glob of variant names")] = "*",
    points: Annotated[bool, typer.Option("--points", help="also a row per experiment of every series")] = False,
    max_pvalue: Annotated[
        float, typer.Option("--max-pvalue", help="a change point's largest t-test p between the medians either side")
    ] = Settings.max_pvalue,
    min_change: Annotated[
        float,
        typer.Option(
            "--min-change", help="a change point's smallest relative change (0.01: 1%, as the default equivalence margin)"
        ),
    ] = Settings.min_change,
    window: Annotated[int, count_option("--window", help="points per window the detector splits within")] = Settings.window,
    db: Db = None,
    fmt: Annotated[str, typer.Option("--format", "-f", help="table or json")] = "table",
) -> None:
    """Each workload, metric and variant over the matched experiments (oldest first), one point per
    experiment (its median), with the change points Apache Otava finds, their size and the
    experiments either side."""
    from benchlab.analysis.history import Selection, check_settings
    from benchlab.analysis.history import history as build
    from benchlab.report import history_grid, table

    if fmt not in FORMATS:
        raise SpecError(f"unknown history format '{fmt}' (choose {', '.join(FORMATS)})", where="--format")
    settings = Settings(max_pvalue=max_pvalue, min_change=min_change, window=window)
    check_settings(settings)  # before the database is opened: bad input is refused first
    store = open_store(db, create=False)
    result = build(store, Selection(pattern, workload, metric, variant), settings)
    if fmt == "json":
        out.file.write(result.to_json())
        out.file.flush()
        return
    console = out if out.is_terminal else Console(file=out.file, width=WIDTH, color_system=None, markup=False, emoji=False)
    console.print(table.group(*history_grid.grids(result, points=points), result.warnings, width=console.width))


def register(app: typer.Typer) -> None:
    app.command()(history)
