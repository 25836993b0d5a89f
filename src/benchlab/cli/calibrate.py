"""`benchlab calibrate`: batches of A/A experiments that say how this machine behaves."""

from __future__ import annotations

import time

from benchlab.cli import options
from benchlab.cli.console import err, out
from benchlab.cli.experiment import check_failures
from benchlab.cli.parser import Commands, Parser, count
from benchlab.errors import SpecError
from benchlab.report import safe

MAX_EXPERIMENTS = 10_000  # a batch's specs are built before its first run: bounded, and days of work already


def calibrate(
    *,
    workload: list[str],
    cmd: list[str],
    gbench: list[str],
    blocks: int,
    experiments: int,
    seed: int,
    timeout: float,
    db: str | None,
    allow_failures: bool,
) -> None:
    """Run A/A experiments (two identical variants) of the given workloads on this machine and store,
    per workload, its run-to-run spread and how many experiments gave a false verdict; reports of
    that workload on this host show both beside its verdicts."""
    if not 1 <= experiments <= MAX_EXPERIMENTS:
        raise SpecError(f"give 1 to {MAX_EXPERIMENTS} experiments (a batch is run and stored whole)", where="--experiments")
    if any(w.split()[0].startswith("cpu.") for w in workload if w.strip()):
        raise SpecError(
            "the CPU suite's workloads are judged as scores, which calibrate does not batch yet",
            where="--workload",
            hint="calibrate other workloads; run `benchlab score` twice for a score A/A",
        )
    from benchlab.analysis.analyze import analyze
    from benchlab.analysis.calibration import calibration_key, outcomes, summarise
    from benchlab.cli.progress import BarProgress
    from benchlab.cli.results import open_store
    from benchlab.runner import Prepared, Runner
    from benchlab.spec.quick import quick_spec
    from benchlab.store import Calibration

    stem = time.strftime("calibrate-%Y%m%d-%H%M%S")
    specs = [
        quick_spec(
            name=f"{stem}-{i + 1:03d}",
            builtins=workload,
            commands=cmd,
            gbench=gbench,
            variants=["a", "a-again"],
            blocks=blocks,
            warmup=0,
            seed=seed + i,
            baseline="a",
            timeout=timeout,
        )  # fmt: skip
        for i in range(experiments)
    ]
    prepared = [Prepared.from_spec(spec) for spec in specs]  # every check before the first run
    store = open_store(db)
    free = store.unused_name(stem, suffix="-001")  # a batch started in the same second holds the stem
    prepared = [p.renamed(f"{free}-{i + 1:03d}") for i, p in enumerate(prepared)]
    found, analyses, any_false, host_id = [], [], 0, None
    for i, p in enumerate(prepared):
        err().print(f"A/A experiment {i + 1} of {experiments}", style="dim", highlight=False)
        with BarProgress() as progress:
            exp = Runner(store, progress=progress).run(p)
        data = store.load(exp)
        analysis = analyze(data)
        analyses.append(analysis)
        batch = outcomes(analysis.rows)
        found.append(batch)
        any_false += any(o.false_verdict for o in batch) or any(g.verdict in ("better", "worse") for g in analysis.geomean)
        host_id = int(data.runs.host_id[0]) if len(data.runs) else host_id
    # every experiment of the batch ran the same workloads at the same versions: the last one names them
    keys = {w.name: calibration_key(w, exp.workload_versions[w.name]) for w in exp.spec.workloads}
    summary = summarise(found)
    for name, (metric, spread, runs, false) in summary.items():
        if host_id is not None:
            store.record_calibration(Calibration(host_id, keys[name], metric, spread, runs, false, blocks, time.time()))
        out().print(
            f"{name}: spread {'n/a' if spread is None else f'{spread:.2%}'} of {metric} run to run; "
            f"A/A {false} of {runs} with a false verdict",
            highlight=False,
        )
    out().print(
        f"experiments with any better/worse row: {any_false} of {experiments} ({any_false / experiments:.1%}; "
        f"by design at most 5% in the long run)",
        highlight=False,
    )
    err().print(safe.text(f"stored in {store.target} for this host", limit=safe.LINE_MAX), style="dim", highlight=False)
    check_failures(analyses, f"the {experiments} A/A experiments", allow=allow_failures)


def register(commands: Commands) -> None:
    commands.command("calibrate", calibrate, _calibrate_options)


def _calibrate_options(parser: Parser) -> None:
    options.sources(parser)
    count(parser, "-n", "--blocks", default=10, help="blocks per A/A experiment")
    count(parser, "--experiments", default=20, help="A/A experiments in the batch")
    count(parser, "--seed", default=0, help="seeds the first experiment's run order (each next one the seed plus one)")
    options.timeout(parser)
    options.db(parser)
    options.allow_failures(parser)
