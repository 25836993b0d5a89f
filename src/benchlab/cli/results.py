"""Commands that read stored results: report, list, show, export, import."""

from __future__ import annotations

import datetime
import json
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from benchlab.cli.console import err, out
from benchlab.cli.options import Db, Format
from benchlab.report import check_format, render
from benchlab.report import table as table_report

if TYPE_CHECKING:
    from benchlab.store import Store


def print_report(report: dict[str, Any], fmt: str) -> None:
    if fmt == "table" and out.is_terminal:
        out.print(table_report.renderable(report))
    else:
        text = render(report, fmt)
        out.file.write(text)
        out.file.flush()


def open_store(db: str | None) -> Store:
    from benchlab.store import Store  # SQLAlchemy loads only for commands that need the database

    return Store(db)


def _when(ts: float | None) -> str:
    return datetime.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M") if ts else "-"


def report(
    name: Annotated[str, typer.Argument(help="experiment name")],
    db: Db = None,
    fmt: Format = "table",
    reference: Annotated[
        str | None,
        typer.Option("--reference", help="host whose baseline the others are judged against, where several ran it"),
    ] = None,
    times: Annotated[
        bool, typer.Option("--times", help="real/user/sys as best of N and median, with 'Nx faster' ratios")
    ] = False,
) -> None:
    """Print an experiment's verdict table (table, md, json or csv); runs from several hosts
    (merged with `benchlab import`) get a column per variant and host."""
    from benchlab.stats.experiment import analyze  # scipy loads only for commands that judge

    check_format(fmt)
    store = open_store(db)
    analysis = analyze(store.load(store.require_experiment(name)), reference_host=reference)
    document = analysis.as_dict(with_runs=fmt == "json")
    if times:
        document["view"] = "times"
    print_report(document, fmt)


def list_(db: Db = None) -> None:
    """List stored experiments."""
    store = open_store(db)
    rows = store.list_experiments()
    table = Table(title=f"experiments in {store.target}", title_justify="left")
    for col in ("name", "created", "runs", "failed", "last run"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["name"], _when(r["created_at"]), str(r["runs"] or 0), str(r["failed"] or 0), _when(r["last"]))
    out.print(table)


def show(name: Annotated[str, typer.Argument()], db: Db = None) -> None:
    """Show an experiment's spec, hosts and runs."""
    store = open_store(db)
    data = store.load(store.require_experiment(name))
    out.print_json(json.dumps(data.experiment.spec))
    for host_id, fp in data.hosts.items():
        out.print(
            f"host {host_id}: {fp.get('hostname')} {fp.get('cpu_model')}, {fp.get('cpus_online')} CPUs, kernel {fp.get('kernel')}"
        )
    table = Table(title="runs", title_justify="left")
    for col in ("workload", "variant", "ok", "failed", "timeout", "warm-up"):
        table.add_column(col)
    counts: Counter[tuple[str, str, str]] = Counter()
    for run in data.runs:
        counts[(run.workload, run.variant, "warm-up" if run.warmup else run.status)] += 1
    for w in data.experiment.workload_ids:
        for v in data.experiment.variant_ids:
            table.add_row(w, v, *(str(counts[(w, v, s)]) for s in ("ok", "failed", "timeout", "warm-up")))
    out.print(table)
    for run in data.runs:
        if run.status != "ok":
            out.print(f"failed: {run.workload}/{run.variant} block {run.block}: {run.message}", markup=False)


def export(
    name: Annotated[str, typer.Argument()],
    output: Annotated[Path | None, typer.Option("-o", "--output", help="file to write (default: NAME.benchlab.json)")] = None,
    db: Db = None,
) -> None:
    """Write an experiment, raw values included, to a JSON bundle."""
    from benchlab.store.bundle import export_bundle

    bundle = export_bundle(open_store(db), name)
    path = output or Path(f"{name}.benchlab.json")
    path.write_text(json.dumps(bundle))
    err.print(f"wrote {len(bundle['runs'])} runs to {path}", highlight=False)


def import_(bundle: Annotated[Path, typer.Argument(help="a bundle written by `benchlab export`")], db: Db = None) -> None:
    """Merge a bundle from another machine into this database."""
    from benchlab.store.bundle import import_bundle, read_bundle

    name, added = import_bundle(open_store(db), read_bundle(bundle))
    err.print(f"imported {added} runs into '{name}'", highlight=False)


def register(app: typer.Typer) -> None:
    app.command()(report)
    app.command("list")(list_)
    app.command()(show)
    app.command()(export)
    app.command("import")(import_)
