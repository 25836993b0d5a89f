"""`benchlab bisect`: which of an ordered list of variants first made a metric worse."""

from __future__ import annotations

from benchlab.cli import options
from benchlab.cli.console import out
from benchlab.cli.parser import Commands, Parser, count, number, option, switch
from benchlab.errors import Interrupted, SpecError, Undecided

ANSWERED = ("found", "no change", "improved")  # exit 0: the list was bisected, or there was nothing to bisect


def bisect(
    spec: str,
    *,
    workload: str | None,
    metric: str | None,
    alpha: float | None,
    min_blocks: int | None,
    max_blocks: int | None,
    db: str | None,
    resume: bool,
) -> None:
    """Find the first variant that made a metric worse, each step decided by the verdict rules."""
    from benchlab.cli.experiment import load_spec, sequential
    from benchlab.cli.progress import BarProgress
    from benchlab.cli.results import open_store
    from benchlab.report.bisect_lines import answer, header, step_line

    loaded = load_spec(spec)
    if alpha is not None and not 0 < alpha < 0.5:
        raise SpecError(f"{alpha:g} is no error rate: give one between 0 and 0.5", where="--alpha")
    until = sequential(loaded, True, min_blocks, max_blocks, where="--min-blocks/--max-blocks").until_decided
    assert until is not None
    from benchlab.bisect import StepExperiments, default_metric, watched_workload  # loads the runner and scipy
    from benchlab.stats.bisection import Step, decisions
    from benchlab.stats.bisection import bisect as search

    watched = watched_workload(loaded, workload)
    metric = metric or default_metric(loaded, watched)
    rate = loaded.alpha if alpha is None else alpha
    variants = [v.name for v in loaded.variants]
    if len(variants) < 2:
        raise SpecError("bisect needs two variants at least: the good one first, the bad one last", where="variants")
    judge = StepExperiments(
        lambda: open_store(db), loaded, workload=watched, metric=metric, until=until, resume=resume, progress=BarProgress
    )
    out().print(header(variants, watched, metric, rate, decisions(len(variants))), highlight=False, soft_wrap=True)
    steps = 0

    def show(step: Step) -> None:
        nonlocal steps
        steps += step.pair.role == "step"
        out().print(step_line(step, steps), highlight=False, soft_wrap=True)

    try:
        outcome = search(variants, judge, alpha=rate, on_step=show)
    except Interrupted:  # the runner's own line names `benchlab run`
        raise Interrupted(
            "interrupted; every finished run is stored, knobs restored; continue with `benchlab bisect SPEC --resume`"
        ) from None
    lines = answer(outcome, metric)
    for line in lines:
        out().print(line, highlight=False, soft_wrap=True)
    if outcome.status not in ANSWERED:
        raise Undecided(f"no confirmed answer ({outcome.status}); every step is stored: `benchlab report NAME` shows its runs")


def register(commands: Commands) -> None:
    commands.command("bisect", bisect, _bisect_options)


def _bisect_options(parser: Parser) -> None:
    parser.add_argument("spec", help="experiment spec (TOML): its variants in order, the first good, the last bad")
    option(parser, "-w", "--workload", help="the workload to bisect (default: the spec's only one)")
    option(parser, "--metric", help="the metric to watch (default: wall for a command, else real_time)")
    option(parser, "--alpha", type=number, help="the chance that any decision is wrong, at most (default: the spec's alpha)")
    count(parser, "--min-blocks", help="the first look of every step (default 3)")
    count(parser, "--max-blocks", help="every step's budget of blocks (default 40)")
    options.db(parser)
    switch(parser, "--resume", help="reuse the steps stored by an earlier bisection of this spec")
