"""Commands that run experiments: run (a spec), compare (the quick form), demo."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Annotated

import typer

from benchlab.cli.console import err, out
from benchlab.cli.options import Db, Format
from benchlab.cli.progress import BarProgress
from benchlab.report import check_format
from benchlab.spec import ExperimentSpec, load_spec
from benchlab.spec.quick import quick_spec


def execute(spec: ExperimentSpec, *, db: str | None, resume: bool, fmt: str) -> None:
    # Imported here so that a bad spec is refused without loading scipy and SQLAlchemy.
    from benchlab.cli.results import open_store, print_report
    from benchlab.runner import Prepared, Runner
    from benchlab.stats.experiment import analyze

    check_format(fmt)
    prepared = Prepared.from_spec(spec)  # every check against the machine happens before the first run
    store = open_store(db)
    with BarProgress() as progress:
        exp = Runner(store, progress=progress).run(prepared, resume=resume)
    analysis = analyze(store.load(exp))
    print_report(analysis.as_dict(with_runs=fmt == "json"), fmt)
    err.print(f"stored as '{exp.name}' in {store.target}", style="dim", highlight=False)


def run(
    spec: Annotated[Path, typer.Argument(help="experiment spec (TOML)")],
    db: Db = None,
    resume: Annotated[bool, typer.Option("--resume", help="continue a stopped experiment; stored runs are skipped")] = False,
    fmt: Format = "table",
) -> None:
    """Run the experiment a spec describes and print its verdict table."""
    execute(load_spec(spec), db=db, resume=resume, fmt=fmt)


def compare(
    workload: Annotated[list[str], typer.Option("-w", "--workload", help="built-in workload, e.g. 'alloc.churn threads=4'")] = [],  # noqa: B006
    cmd: Annotated[list[str], typer.Option("--cmd", help="a command to time as a whole process tree")] = [],  # noqa: B006
    gbench: Annotated[list[str], typer.Option("--gbench", help="a Google Benchmark binary")] = [],  # noqa: B006
    variant: Annotated[
        list[str], typer.Option("--variant", "-v", help="NAME or 'NAME: allocator=jemalloc cpus=0 env.X=1 wrapper=...'")
    ] = [],  # noqa: B006
    blocks: Annotated[int, typer.Option("-n", "--blocks", help="blocks (runs per variant)")] = 10,
    warmup: Annotated[int, typer.Option("--warmup", help="untimed warm-up runs per variant")] = 0,
    seed: Annotated[int, typer.Option("--seed")] = 0,
    baseline: Annotated[str | None, typer.Option("--baseline", help="variant the others are compared with")] = None,
    timeout: Annotated[float, typer.Option("--timeout", help="seconds before a run is killed")] = 600.0,
    name: Annotated[str | None, typer.Option("--name", help="experiment name (default: compare-DATE-TIME)")] = None,
    db: Db = None,
    resume: Annotated[bool, typer.Option("--resume")] = False,
    fmt: Format = "table",
) -> None:
    """Compare variants without a spec file."""
    spec = quick_spec(
        name=name or time.strftime("compare-%Y%m%d-%H%M%S"),
        builtins=workload, commands=cmd, gbench=gbench, variants=variant, blocks=blocks,
        warmup=warmup, seed=seed, baseline=baseline, timeout=timeout,
    )  # fmt: skip
    execute(spec, db=db, resume=resume, fmt=fmt)


DEMO_VARIANTS = [
    "base",
    "base-again",  # identical to base: an A/A comparison, which must never come out better or worse
    "one-cpu: cpus=0",  # the same work squeezed onto one CPU: a known slowdown for two threads
]


def demo(db: Db = None, blocks: Annotated[int, typer.Option("-n", "--blocks")] = 10) -> None:
    """A quick A/A plus A/B comparison on built-in workloads (about a minute)."""
    folder = None if db else tempfile.mkdtemp(prefix="benchlab-demo-")
    spec = quick_spec(
        name=time.strftime("demo-%Y%m%d-%H%M%S"),
        builtins=["alloc.churn threads=2 ops=1000000", "ipc.pipe.pingpong roundtrips=20000"],
        commands=[], gbench=[], variants=DEMO_VARIANTS, blocks=blocks, warmup=1, seed=1, baseline="base", timeout=120,
    )  # fmt: skip
    out.print(
        "demo: 'base-again' is identical to 'base' (A/A: expect same or unclear, never better/worse); "
        "'one-cpu' pins both workloads to CPU 0 (A/B: expect changes)",
        style="bold",
    )
    execute(spec, db=db or str(Path(folder or ".") / "demo.db"), resume=False, fmt="table")


def register(app: typer.Typer) -> None:
    app.command()(run)
    app.command()(compare)
    app.command()(demo)
