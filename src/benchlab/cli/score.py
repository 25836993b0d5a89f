"""`benchlab score`: the CPU suite, single- and multi-core, as a stored experiment."""

from __future__ import annotations

import time

from benchlab.cli import options
from benchlab.cli.experiment import QUICK_BLOCKS, execute
from benchlab.cli.options import Exports, with_exports
from benchlab.cli.parser import Commands, Parser, count, option, repeated, switch
from benchlab.errors import EnvironmentProblem

TYPE_CHECKING = False  # typing's flag without importing typing (3 ms of every start); mypy reads it alike
if TYPE_CHECKING:
    from typing import Any

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
    *,
    quick: bool,
    variant: list[str],
    workload: list[str],
    threads: int,
    blocks: int | None,
    baseline: str | None,
    seed: int,
    name: str | None,
    db: str | None,
    resume: bool,
    keep_failed: bool,
    fmt: str,
    allow_failures: bool,
    exports: Exports,
    profile: bool,
) -> None:
    """Run the CPU suite and print single-core, multi-core and section scores (baseline machine = 1000)."""
    from benchlab.spec.quick import parse_variant
    from benchlab.spec.validate import spec_from_dict
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
    execute(
        spec, db=db, resume=resume, fmt=fmt, allow_failures=allow_failures, exports=exports, keep_failed=keep_failed,
        named=name is not None, profile=profile,
    )  # fmt: skip


def register(commands: Commands) -> None:
    commands.command("score", score, _score_options)


def _score_options(parser: Parser) -> None:
    switch(parser, "--quick", help=f"{QUICK_BLOCKS} blocks of half-length runs, no shared-task runs (about 20 s on 2 cores)")
    options.variants(parser)
    repeated(parser, "-w", "--workload", help="only these suite workloads (e.g. aes_xts)")
    count(parser, "--threads", default=0, help="multi-core threads (0: every CPU a run may use)")
    count(parser, "-n", "--blocks", help=f"blocks (default {FULL_BLOCKS}, --quick {QUICK_BLOCKS})")
    option(parser, "--baseline", help="reference variant of the comparison")
    options.seed(parser)
    option(parser, "--name", help="experiment name (default: score-DATE-TIME)")
    options.db(parser)
    options.resume(parser)
    options.keep_failed(parser)
    options.profile(parser)
    options.report_format(parser)
    options.allow_failures(parser)
    options.exports(parser)
