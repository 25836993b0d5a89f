"""`benchlab explain`: where a stored experiment's time went, from its profiled runs."""

from __future__ import annotations

import json

from benchlab.cli import options
from benchlab.cli.console import err, out
from benchlab.cli.parser import Commands, Parser, file_path, option
from benchlab.cli.results import open_store, refuse_unknown_experiment
from benchlab.errors import SpecError
from benchlab.report import safe

TYPE_CHECKING = False  # typing's flag without importing typing; mypy reads it alike
if TYPE_CHECKING:
    from pathlib import Path

    from benchlab.analysis.profiles import Profiled
    from benchlab.store import ProfiledRun

FORMATS = ("table", "json", "csv")
WIDTH = 100  # a table written to a file or pipe is drawn this wide (a terminal's own width otherwise)


def explain(
    name: str,
    *,
    variant: str | None,
    workload: str | None,
    db: str | None,
    fmt: str,
    folded: Path | None,
    speedscope: Path | None,
) -> None:
    """Print where each variant's time went against the baseline: per workload its functions,
    libraries and kernel vs user time from the profiled runs (`run --profile`), each function's
    change judged with its interval, ranked by the share of the workload's change it explains;
    with --folded and --speedscope, also write the stacks for other profilers."""
    if fmt not in FORMATS:
        raise SpecError(f"unknown explain format '{fmt}' (choose {', '.join(FORMATS)})", where="--format")
    from benchlab.cli.outputs import check_writable

    for path, flag in ((folded, "--folded"), (speedscope, "--speedscope")):
        if path is not None:
            check_writable(path, where=flag)
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
    data = store.load(exp)
    profiles = analyze(data).profiles
    if profiles is None:
        raise SpecError(
            f"experiment '{name}' has no profiled runs",
            hint="run it with profiling: `benchlab run SPEC --profile` (or `profile = true`)",
        )
    if folded is not None or speedscope is not None:
        _write_stacks(data.profiled, name, workload, variant, folded, speedscope)
    shown = profiles.model_copy(update={"rows": [
        r for r in profiles.rows if variant in (None, r.variant) and workload in (None, r.workload)
    ]})  # fmt: skip
    if fmt in ("json", "csv"):
        from benchlab.report.formats.csv_format import profile_rows

        out().file.write(shown.model_dump_json(indent=2) + "\n" if fmt == "json" else profile_rows(shown))
        out().file.flush()
        return
    console = out() if out().is_terminal else Console(file=out().file, width=WIDTH, color_system=None, markup=False, emoji=False)
    grids = profile_grid.grids(profiles, workload=workload, variant=variant, limit=None)
    console.print(table.group(grids, profile_grid.footer(profiles), width=console.width))


def _write_stacks(
    runs: list[ProfiledRun], name: str, workload: str | None, variant: str | None, folded: Path | None, speedscope: Path | None
) -> None:
    """The selected profiled runs' stacks: folded (one workload and variant, the format has no
    room for more) and as a speedscope document (a profile per workload and variant)."""
    from benchlab.analysis.profile_exports import speedscope_document
    from benchlab.analysis.profiles import read_profiles
    from benchlab.cli.outputs import write_whole
    from benchlab.stacks import folded as folded_lines

    chosen, _ = read_profiles(r for r in runs if workload in (None, r.workload) and variant in (None, r.variant))
    pairs: dict[tuple[str, str], list[Profiled]] = {}
    for p in chosen:
        pairs.setdefault((p.run.workload, p.run.variant), []).append(p)
    if folded is not None:
        if len(pairs) != 1:
            raise SpecError(
                f"folded stacks are of one workload and variant; these profiled runs are of {len(pairs)}: "
                "give --workload and --variant",
                where="--folded",
            )
        text = "".join(f"{line}\n" for line in folded_lines(p.document for p in chosen))
        write_whole(folded, text.encode(), where="--folded")
        err().print(safe.text(f"wrote folded stacks to {folded}", limit=safe.LINE_MAX), style="dim", highlight=False)
    if speedscope is not None:
        write_whole(speedscope, json.dumps(speedscope_document(name, pairs)).encode(), where="--speedscope")
        err().print(safe.text(f"wrote a speedscope profile to {speedscope}", limit=safe.LINE_MAX), style="dim", highlight=False)


def register(commands: Commands) -> None:
    commands.command("explain", explain, _explain_options)


def _explain_options(parser: Parser) -> None:
    parser.add_argument("name", help="a stored experiment with profiled runs")
    option(parser, "--variant", help="only this variant against the baseline")
    option(parser, "--workload", "-w", help="only this workload")
    option(
        parser,
        "--folded",
        type=file_path,
        metavar="FILE",
        help="write the stacks of one workload and variant, folded (flame graph tools)",
    )
    option(
        parser,
        "--speedscope",
        type=file_path,
        metavar="FILE",
        help="write every selected profile as a speedscope file (speedscope.app)",
    )
    options.db(parser)
    options.report_format(parser, help="table, json or csv")
