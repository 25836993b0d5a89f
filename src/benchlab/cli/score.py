"""`benchlab score`: the CPU suite, single- and multi-core, as a stored experiment."""

from __future__ import annotations

import time
from typing import Annotated, Any

import typer

from benchlab.cli.experiment import QUICK_BLOCKS, AllowFailures, execute
from benchlab.cli.options import Db, Exports, Format, KeepFailed, Resume, Seed, count_option, with_exports
from benchlab.errors import EnvironmentProblem
from benchlab.spec.quick import parse_variant

QUICK_ROUNDS = 0.5  # quick runs do half of each task's rounds (at least one): the same throughput, noisier
FULL_BLOCKS = 7  # the signed-rank test with room to decide


def check_suite_version() -> None:
    """Scores only mean something against a baseline of the same suite: refuse before running."""
    from benchlab.suite.baseline import load_baseline
    from benchlab.workloads.probe import catalogue

    baseline, probe = load_baseline(), catalogue()
    for name, task in baseline.tasks.items():
        info = probe.get(name)
        if info is None or info["version"] != task.version or info.get("suite_version") != baseline.suite_version:
            found = f"version {info['version']} of suite {info.get('suite_version')}" if info else "no such workload"
            raise EnvironmentProblem(
                f"the probe has {found} for {name}, the score baseline is for version {task.version} of suite "
                f"{baseline.suite_version}",
                hint="rebuild the baseline with `uv run python bench/cpu_baseline.py` or install the matching benchlab",
            )


@with_exports
def score(
    quick: Annotated[
        bool,
        typer.Option("--quick", help=f"{QUICK_BLOCKS} blocks of half-length runs, no shared-task runs (about 20 s on 2 cores)"),
    ] = False,
    variant: Annotated[
        list[str], typer.Option("--variant", "-V", help="NAME or 'NAME: allocator=jemalloc cpus=0 env.X=1 wrapper=...'")
    ] = [],  # noqa: B006
    workload: Annotated[list[str], typer.Option("-w", "--workload", help="only these suite workloads (e.g. aes_xts)")] = [],  # noqa: B006
    threads: Annotated[
        int,
        count_option("--threads", help="multi-core threads (0: every CPU a run may use)"),
    ] = 0,
    blocks: Annotated[
        int | None,
        count_option(
            "-n",
            "--blocks",
            help=f"blocks (default {FULL_BLOCKS}, --quick {QUICK_BLOCKS})",
        ),
    ] = None,
    baseline: Annotated[str | None, typer.Option("--baseline", help="reference variant of the comparison")] = None,
    seed: Seed = 0,
    name: Annotated[str | None, typer.Option("--name", help="experiment name (default: score-DATE-TIME)")] = None,
    db: Db = None,
    resume: Resume = False,
    keep_failed: KeepFailed = False,
    fmt: Format = "table",
    allow_failures: AllowFailures = False,
    exports: Exports | None = None,
) -> None:
    """Run the CPU suite and print single-core, multi-core and section scores (baseline machine = 1000)."""
    from benchlab.spec import spec_from_dict
    from benchlab.suite.cpu import expand_spec

    data: dict[str, Any] = {
        "name": time.strftime("score-%Y%m%d-%H%M%S") if name is None else name,
        "suite": {
            "name": "cpu",
            "workloads": workload,
            "threads": threads,
            "shared": not quick,
            "rounds": QUICK_ROUNDS if quick else 1.0,
        },  # fmt: skip
        "workloads": [],
        "variants": [parse_variant(v) for v in variant] or [{"name": "base"}],
        "blocks": (QUICK_BLOCKS if quick else FULL_BLOCKS) if blocks is None else blocks,
        "seed": seed,
    }
    if baseline is not None:
        data["baseline"] = baseline
    spec = spec_from_dict(expand_spec(data, "command line"), "command line")
    check_suite_version()
    execute(spec, db=db, resume=resume, fmt=fmt, allow_failures=allow_failures, exports=exports, keep_failed=keep_failed)


def register(app: typer.Typer) -> None:
    app.command()(score)
