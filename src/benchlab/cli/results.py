"""Commands that read stored results: report, list, show, export, import."""

from __future__ import annotations

from collections import Counter

from benchlab.cli import options
from benchlab.cli.console import err, out
from benchlab.cli.options import EXPORTS, Exports, with_exports
from benchlab.cli.parser import Commands, Parser, file_path, option, switch
from benchlab.errors import EnvironmentProblem, SpecError
from benchlab.report import VIEWS, View, check_format, needs_runs, render, safe
from benchlab.report.choices import WHOLE

TYPE_CHECKING = False  # typing's flag without importing typing (3 ms of every start); mypy reads it alike
if TYPE_CHECKING:
    from pathlib import Path

    from benchlab.report_model import Report
    from benchlab.store import ExperimentData, ExperimentRecord, Store


def print_report(report: Report, fmt: str, view: View = "auto", output: Path | None = None) -> None:
    """The report on stdout (a terminal gets rich's colours and its width), or written whole to `output`."""
    if output is not None:
        from benchlab.cli.outputs import write_whole

        write_whole(output, render(report, fmt, view).encode(), where="--output")
        err().print(safe.text(f"wrote the {fmt} report to {output}", limit=safe.LINE_MAX), highlight=False)
    elif fmt == "table" and out().is_terminal:
        from benchlab.report.formats import table

        out().print(table.renderable(report, view, width=out().width))
    else:
        text = render(report, fmt, view)
        out().file.write(text)
        out().file.flush()


def _export_view(fmt: str, view: View) -> View:
    """The view an export draws: the printed report's, in a format that has views; `auto` in one
    that holds every view at once (JSON, hyperfine, gbench), which refuses any other."""
    return "auto" if fmt in WHOLE else view


def _export_flag(fmt: str) -> str:
    return next(f"--export-{name}" for name, (f, _) in EXPORTS.items() if f == fmt)


def check_exports(exports: Exports, view: View = "auto") -> None:
    """Before anything runs or is read: every export's format takes the view, no file is named
    twice, and every file's folder is there to write in, so that a long run is never made for
    an export that could not then be written."""
    seen: set[Path] = set()
    for fmt, paths in exports.items():
        check_format(fmt, _export_view(fmt, view))
        flag = _export_flag(fmt)
        for path in paths:
            if path.absolute() in seen:
                raise SpecError(f"{path} is named by two exports: give each its own file", where=flag)
            seen.add(path.absolute())
            from benchlab.cli.outputs import check_writable  # only where a file is named: its walk loads then

            check_writable(path, where=flag)


def write_exports(report: Report, exports: Exports, view: View = "auto", *, stored_as: str | None = None) -> None:
    """Every export, each file written whole (`write_whole`), once the report is complete: as
    hyperfine does, after the last run, so a file never holds part of an experiment. After an
    experiment ran (`stored_as` its name), a file that can no longer be written (its folder
    removed or a link planted during the run) is the machine's doing, exit 3, never the bad
    input of exit 2, which says nothing ran: the runs are stored and a report writes it again."""
    from benchlab.cli.outputs import write_whole

    for fmt, paths in exports.items():
        text = render(report, fmt, _export_view(fmt, view)).encode()
        flag = _export_flag(fmt)
        for path in paths:
            try:
                write_whole(path, text)
            except SpecError as exc:
                if stored_as is None:
                    raise
                raise EnvironmentProblem(
                    f"{exc.message}; the runs are stored as '{stored_as}': "
                    f"`benchlab report {stored_as} {flag} FILE` writes it again"
                ) from None
            err().print(safe.text(f"wrote {fmt} to {path}", limit=safe.LINE_MAX), style="dim", highlight=False)


def load_for_report(store: Store, experiment: ExperimentRecord, *, every_record: bool) -> ExperimentData:
    """An experiment's stored runs, for the one report this process draws. Every record (JSON,
    HTML, exports) is hundreds of thousands of objects that live until the process ends: they are
    moved out of the garbage collector's sight, which would otherwise rescan them on every burst of
    allocation while judging and drawing (the HTML of 100,000 IPC runs with their histograms:
    7.2 s, 4.9 s without the rescans; bench/html_report.py)."""
    if not every_record:
        return store.load(experiment)
    import gc

    gc.disable()  # nothing loaded is garbage: a collection during the load would only rescan it
    try:
        data = store.load(experiment, every_record=True)
    finally:
        gc.enable()
    gc.freeze()
    return data


def refuse_unknown_experiment(db: str | None, name: str) -> None:
    """A name the database surely does not hold, refused with the standard library's sqlite3 alone:
    SQLAlchemy, numpy and scipy cost sixty times a bare Python's start (`benchlab.store.files`)."""
    from benchlab.store.files import refuse_unknown_experiment as refuse

    refuse(db, name)


def open_store(db: str | None, *, create: bool = True) -> Store:
    """The results database; commands that only read pass `create=False`, so a mistyped
    --db path or a first `benchlab report` is refused (exit 4) instead of leaving an empty file."""
    from benchlab.store import Store  # SQLAlchemy loads only for commands that need the database

    return Store(db, create=create)


def _when(ts: float | None) -> str:
    import datetime

    return datetime.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M") if ts else "-"


@with_exports
def report(
    name: str,
    *,
    db: str | None,
    fmt: str,
    reference: str | None,
    baseline: str | None,
    times: bool,
    view: str,
    output: Path | None,
    raw_intervals: bool,
    exports: Exports,
) -> None:
    """Print an experiment's verdict table (table, md, json, csv, hyperfine, gbench, or an HTML page
    with plots); runs from several hosts (merged with `benchlab import`) get a column per variant and host."""
    if times and view not in ("auto", "times"):
        raise SpecError(f"--times is --view times, not --view {view}: give one of them", where="--times")
    checked = check_format(fmt, "times" if times else view)
    check_exports(exports, checked)
    if output is not None:
        from benchlab.cli.outputs import check_writable

        check_writable(output, where="--output")
    refuse_unknown_experiment(db, name)  # a mistyped name, before what reading it needs loads (store/files.py)
    from benchlab.analysis.analyze import analyze  # scipy loads only for commands that judge

    store = open_store(db, create=False)
    data = load_for_report(store, store.require_experiment(name), every_record=needs_runs(fmt, *exports))
    drawn = analyze(data, reference_host=reference, baseline=baseline).report()
    drawn = drawn.with_raw_intervals() if raw_intervals else drawn
    print_report(drawn, fmt, checked, output)
    write_exports(drawn, exports, checked)


def list_(*, db: str | None) -> None:
    """List stored experiments."""
    from rich.table import Table

    store = open_store(db, create=False)
    rows = store.list_experiments()
    table = Table(title=safe.text(f"experiments in {store.target}", limit=safe.LINE_MAX), title_justify="left")
    for col in ("name", "created", "runs", "failed", "last run"):
        table.add_column(col, overflow="fold")  # a name is never cut to an ellipsis
    for r in rows:
        table.add_row(safe.text(r["name"]), _when(r["created_at"]), str(r["runs"] or 0), str(r["failed"] or 0), _when(r["last"]))
    out().print(table)


def show(name: str, *, db: str | None) -> None:
    """Show an experiment's spec, hosts and runs."""
    refuse_unknown_experiment(db, name)
    import json

    from rich.table import Table

    store = open_store(db, create=False)
    data = store.load(store.require_experiment(name), every_record=True)
    out().print_json(json.dumps(data.experiment.spec_document), ensure_ascii=True)  # JSON escapes: no control character survives
    for host_id, fp in data.hosts.items():
        line = (
            f"host {host_id}: {fp.get('hostname')} {fp.get('cpu_model')}, {fp.get('cpus_online')} CPUs, kernel {fp.get('kernel')}"
        )
        out().print(safe.text(line, limit=safe.LINE_MAX), highlight=False)
    table = Table(title="runs", title_justify="left")
    for col in ("workload", "variant", "ok", "failed", "timeout", "warm-up"):
        table.add_column(col, overflow="fold")
    counts: Counter[tuple[str, str, str]] = Counter()
    for run in data.records:
        counts[(run.workload, run.variant, "warm-up" if run.warmup else run.status)] += 1
    for w in data.experiment.workload_ids:
        for v in data.experiment.variant_ids:
            table.add_row(safe.text(w), safe.text(v), *(str(counts[(w, v, s)]) for s in ("ok", "failed", "timeout", "warm-up")))
    out().print(table)
    for run in data.records:
        if run.status != "ok":
            line = f"failed: {run.workload}/{run.variant} block {run.block}: {run.message}"
            out().print(safe.text(line, limit=safe.LINE_MAX), highlight=False)


def export(name: str, *, output: Path | None, db: str | None) -> None:
    """Write an experiment, raw values included, to a JSON bundle."""
    import json
    from pathlib import Path

    refuse_unknown_experiment(db, name)
    from benchlab.cli.outputs import check_writable, write_whole
    from benchlab.store import export_bundle

    # a stored name may come from another machine's bundle: it names a file here, never a folder
    path = output or Path(safe.file_name(name) + ".benchlab.json")
    check_writable(path, where="--output" if output else None)  # before reading every run
    store = open_store(db, create=False)
    bundle = export_bundle(store, name)
    write_whole(path, json.dumps(bundle).encode(), where="--output" if output else None)
    err().print(safe.text(f"wrote {len(bundle['runs'])} runs to {path}", limit=safe.LINE_MAX), highlight=False)


def import_(bundle: Path, *, db: str | None) -> None:
    """Merge a bundle from another machine into this database."""
    from benchlab.store import import_bundle, read_bundle

    checked = read_bundle(bundle)  # before opening the database: a refused bundle must not create one
    name, added = import_bundle(open_store(db), checked)
    err().print(safe.text(f"imported {added} runs into '{name}'", limit=safe.LINE_MAX), highlight=False)


def register(commands: Commands) -> None:
    commands.command("report", report, _report_options)
    commands.command("list", list_, options.db)
    commands.command("show", show, _show_options)
    commands.command("export", export, _export_options)
    commands.command("import", import_, _import_options)


def _report_options(parser: Parser) -> None:
    parser.add_argument("name", help="experiment name")
    options.db(parser)
    options.report_format(parser)
    option(parser, "--reference", help="host whose baseline the others are judged against, where several ran it")
    option(parser, "--baseline", help="variant the others are judged against, instead of the spec's baseline")
    switch(parser, "--times", help="real/user/sys as best of N and median, with 'Nx faster' ratios (--view times)")
    option(parser, "--view", default="auto", help=f"{', '.join(VIEWS)}: which tables to draw (auto: what the experiment is)")
    option(parser, "-o", "--output", type=file_path, help="write the report to this file (whole or not at all) instead of stdout")
    switch(
        parser,
        "--raw-intervals",
        help="show every metric's change with its unadjusted 95% interval, not the one its verdict reads (at its family's "
        "corrected level); JSON holds both",
    )
    options.exports(parser)


def _show_options(parser: Parser) -> None:
    parser.add_argument("name", help="experiment name")
    options.db(parser)


def _export_options(parser: Parser) -> None:
    parser.add_argument("name", help="experiment name")
    option(parser, "-o", "--output", type=file_path, help="file to write (default: NAME.benchlab.json in this folder)")
    options.db(parser)


def _import_options(parser: Parser) -> None:
    parser.add_argument("bundle", type=file_path, help="a bundle written by `benchlab export`")
    options.db(parser)
