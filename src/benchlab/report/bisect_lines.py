"""A bisection as a person reads it: one line per decision as it is made, then the answer with
the error rate it is held to. Every name passes through `safe`: variant names come from specs."""

from __future__ import annotations

import math

from benchlab.report import safe
from benchlab.report.views.cells import change
from benchlab.stats.bisection import Outcome, Step
from benchlab.terms import SAME

ROLE_WIDTH = 8


def _number(x: float) -> float | None:
    return x if math.isfinite(x) else None


def step_line(step: Step, number: int) -> str:
    """`step 2   v3 vs v0: worse +48.1% [+40.2, +55.0] in 6 blocks -> bad  (exp-bisect-at-v3)`; a
    'same' shows the interval it was decided by, the TOST's (90%, or its sequential level)."""
    pair, judged = step.pair, step.judgement
    role = f"step {number}" if pair.role == "step" else pair.role
    same = judged.verdict == SAME  # decided by the narrower interval: show that one, marked
    lo, hi = judged.change_ci90 if same else judged.change_ci
    measured = change(_number(judged.change), (_number(lo), _number(hi))) + (" (TOST)" if same else "")
    blocks = f" in {judged.blocks} blocks" if judged.blocks else ""
    note = f"; {judged.note}" if judged.note else ""
    line = (
        f"{role:<{ROLE_WIDTH}} {pair.candidate} vs {pair.baseline}: {judged.verdict} {measured}{blocks} -> "
        f"{step.outcome}  ({judged.experiment}{note})"
    )
    return safe.text(line, limit=safe.LINE_MAX)


def header(variants: list[str], workload: str, metric: str, alpha: float, decisions: int) -> str:
    shown = ", ".join(variants) if len(variants) <= 6 else f"{', '.join(variants[:3])}, ..., {', '.join(variants[-2:])}"
    return safe.text(
        f"bisecting {len(variants)} variants ({shown}) on {metric} of {workload}: at most {decisions} decisions, "
        f"each at alpha {alpha / decisions:.3g} ({alpha:g} / {decisions})",
        limit=safe.LINE_MAX,
    )


def answer(outcome: Outcome, metric: str) -> list[str]:
    """The answer, or why there is none and what remains, then the error rate it is held to."""
    good, bad = outcome.variants[0], outcome.variants[-1]
    steps = outcome.steps
    last = steps[-1] if steps else None
    blocks = last.judgement.blocks if last else 0
    lines: list[str] = []
    if outcome.status == "found":
        lines.append(f"first bad: {outcome.first_bad} (last good: {outcome.last_good}), confirmed by comparing the two directly")
    elif outcome.status == "unconfirmed":
        lines.append(
            f"the steps point at {outcome.first_bad} (last good: {outcome.last_good}), but comparing the two directly "
            f"stayed unclear after {blocks} blocks: the change may be spread over several variants, or needs more blocks"
        )
    elif outcome.status == "contradicted":
        lines.append(
            f"the steps point at {outcome.first_bad} (last good: {outcome.last_good}), but comparing the two directly "
            f"shows no change ({last.judgement.verdict if last else ''}): the change is spread over several variants, "
            "or the list is not ordered from good to bad"
        )
    elif outcome.status == "stopped" and last and not blocks:
        lines.append(
            f"stopped: {last.pair.candidate} could not be measured ({last.judgement.note}: `benchlab report "
            f"{last.judgement.experiment}` says why); the first bad variant is one of {', '.join(outcome.remaining)} "
            f"(after {outcome.last_good})"
        )
    elif outcome.status == "stopped":
        lines.append(
            f"stopped: {last.pair.candidate if last else ''} stayed unclear after {blocks} blocks; the first bad variant "
            f"is one of {', '.join(outcome.remaining)} (after {outcome.last_good}); --resume with a larger --max-blocks "
            "continues it"
        )
    elif outcome.status == "no change":
        lines.append(f"nothing to bisect: {bad} is the same as {good} on {metric}")
    elif outcome.status == "improved":
        lines.append(f"nothing to bisect: {bad} is better than {good} on {metric} (are the ends the wrong way round?)")
    else:
        lines.append(
            f"nothing bisected: {bad} against {good} stayed unclear after {blocks} blocks (no change could be shown; "
            "--resume with a larger --max-blocks continues it)"
        )
    if outcome.margin is not None:
        lines.append(
            f"a step is good when not worse than {good}: same within +-{outcome.margin:.1%} or better (the margin: half "
            "the ends' change on the log scale, inside their interval, at most 50%)"
        )
    lines.append(
        f"error rate: every decision at alpha {outcome.per_decision:.3g}, at most {outcome.decisions} of them: "
        f"the chance that any was wrong is at most {outcome.alpha:g}"
    )
    return [safe.text(line, limit=safe.LINE_MAX) for line in lines]
