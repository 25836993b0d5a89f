"""`benchlab explain`: where a stored experiment's time went, from its profiled runs."""

from __future__ import annotations

from benchlab.cli import options
from benchlab.cli.console import out
from benchlab.cli.parser import Commands, Parser, option
from benchlab.cli.results import open_store, refuse_unknown_experiment
from benchlab.errors import SpecError

FORMATS = ("table", "json")
WIDTH = 100  # a table written to a file or pipe is drawn this wide (a terminal's own width otherwise)


def explain(name: str, *, variant: str | None, workload: str | None, db: str | None, fmt: str) -> None:
    """Print where each variant's time went against the baseline: per workload its functions,
    libraries and kernel vs user time from the profiled runs (`run --profile`), each function's
    change judged with its interval, ranked by the share of the workload's change it explains."""
    if fmt not in FORMATS:
        raise SpecError(f"unknown explain format '{fmt}' (choose {', '.join(FORMATS)})", where="--format")
    refuse_unknown_experiment(db, name)
    from rich.console import Console

    from benchlab.analysis.analyze import analyze
    from benchlab.report.formats import table
    from benchlab.report.views import profile_grid

    store = open_store(db, create=False)
    exp = store.require_experiment(name)
    for given, known, flag in ((variant, exp.variant_ids, "--variant"), (workload, exp.workload_ids, "--workload")):
        if given is not None and given not in known:
            raise SpecError(f"experiment '{name}' has no {flag[2:]} '{given}' (it has {', '.join(known)})", where=flag)
    profiles = analyze(store.load(exp)).profiles
    if profiles is None:
        raise SpecError(
            f"experiment '{name}' has no profiled runs",
            hint="run it with profiling: `benchlab run SPEC --profile` (or `profile = true`)",
        )
    if fmt == "json":
        shown = profiles.model_copy(update={"rows": [
            r for r in profiles.rows if variant in (None, r.variant) and workload in (None, r.workload)
        ]})  # fmt: skip
        out().file.write(shown.model_dump_json(indent=2) + "\n")
        out().file.flush()
        return
    console = out() if out().is_terminal else Console(file=out().file, width=WIDTH, color_system=None, markup=False, emoji=False)
    grids = profile_grid.grids(profiles, workload=workload, variant=variant, limit=None)
    console.print(table.group(grids, profile_grid.footer(profiles), width=console.width))


def register(commands: Commands) -> None:
    commands.command("explain", explain, _explain_options)


def _explain_options(parser: Parser) -> None:
    parser.add_argument("name", help="a stored experiment with profiled runs")
    option(parser, "--variant", help="only this variant against the baseline")
    option(parser, "--workload", "-w", help="only this workload")
    options.db(parser)
    options.report_format(parser, help="table or json")
