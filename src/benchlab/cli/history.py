"""`benchlab history`: experiments re-run over time as series, with their change points."""

from __future__ import annotations

from benchlab.cli import options
from benchlab.cli.console import out
from benchlab.cli.parser import Commands, Parser, count, number, option, switch
from benchlab.cli.results import open_store
from benchlab.errors import SpecError

FORMATS = ("table", "json")
WIDTH = 100  # a table written to a file or pipe is drawn this wide (a terminal's own width otherwise)


def history(
    pattern: str,
    *,
    workload: str,
    metric: str,
    variant: str,
    points: bool,
    max_pvalue: float | None,
    min_change: float | None,
    window: int | None,
    db: str | None,
    fmt: str,
) -> None:
    """Each workload, metric and variant over the matched experiments (oldest first), one point per
    experiment (its median), with the change points Apache Otava finds, their size and the
    experiments either side."""
    if fmt not in FORMATS:
        raise SpecError(f"unknown history format '{fmt}' (choose {', '.join(FORMATS)})", where="--format")
    from rich.console import Console

    from benchlab.analysis.changepoints import Settings  # no Otava in it: that loads only when points are looked for
    from benchlab.analysis.history import Selection, check_settings
    from benchlab.analysis.history import history as build
    from benchlab.report import history_grid, table

    default = Settings()
    settings = Settings(
        max_pvalue=default.max_pvalue if max_pvalue is None else max_pvalue,
        min_change=default.min_change if min_change is None else min_change,
        window=default.window if window is None else window,
    )
    check_settings(settings)  # before the database is opened: bad input is refused first
    store = open_store(db, create=False)
    result = build(store, Selection(pattern, workload, metric, variant), settings)
    if fmt == "json":
        out().file.write(result.to_json())
        out().file.flush()
        return
    console = out() if out().is_terminal else Console(file=out().file, width=WIDTH, color_system=None, markup=False, emoji=False)
    console.print(table.group(*history_grid.grids(result, points=points), result.warnings, width=console.width))


def register(commands: Commands) -> None:
    commands.command("history", history, _history_options)


def _history_options(parser: Parser) -> None:
    """The detector's settings default to `changepoints.Settings`' own (docs/commands/history.md
    says them): importing it for the help would load dataclasses, a third of the start's budget."""

    parser.add_argument(
        "pattern", nargs="?", default="*", help="glob of experiment names, e.g. 'nightly-*' (default: every experiment)"
    )
    option(parser, "--workload", "-w", default="*", help="glob of workload names")
    option(parser, "--metric", default="*", help="glob of metric names")
    option(parser, "--variant", default="*", help="glob of variant names")
    switch(parser, "--points", help="also a row per experiment of every series")
    option(
        parser,
        "--max-pvalue",
        type=number,
        help="a change point's largest t-test p between the medians either side (default 0.001, Otava's own)",
    )
    option(
        parser,
        "--min-change",
        type=number,
        help="a change point's smallest relative change (default 0.01: 1%, as the default equivalence margin)",
    )
    count(parser, "--window", help="points per window the detector splits within (default 50, Otava's own)")
    options.db(parser)
    options.report_format(parser, help="table or json")
