"""Bisection over ordered variants: which one first made a metric worse, with a stated error rate.

The variants are ordered (commits, versions): the first is known good, the last known bad,
as in `git bisect`. Every decision is one paired experiment judged by the verdict rules
(stats/judge.py), run sequentially until its one watched row is decided or its budget of
blocks runs out, and the search is driven by the verdicts alone:

1. the ends: the last variant against the first. Only `worse` starts a search; `same` or
   `better` mean there is nothing to bisect, `unclear` that no change could be shown;
2. each step: the middle candidate of the open range against the good end. `worse` makes it
   bad; `same` or `better` (not worse) make it good; `unclear` is never guessed: the search
   stops and says which range still holds the first bad variant;
3. the boundary: the last good and the first bad variant compared directly, with fresh runs.

The error budget: at most `decisions(n)` experiments are judged (the ends, ceil(log2(n-1))
steps, the boundary), each at alpha / decisions(n) (Bonferroni), so the chance that any one
of them is wrong, and with it the answer, is at most alpha. A step calls a candidate good
only when its change lies within a margin that is smaller than the change between the ends
(half of it on the log scale, and never beyond the ends' interval), so a candidate as bad as
the bad end is called good only by an error of its interval; one whose change lies within the
margin but is shown worse is bad: the answer is the first variant *worse* than the good end.

The search is hand-written (a binary search is a few lines) and takes the experiment as an
injected `Judge`, so that it is tested and simulated without timing anything; benchlab.bisect
judges each pair with a real experiment.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from benchlab.stats.verdict import BETTER, DECIDED, SAME, UNCLEAR, WORSE

Role = Literal["ends", "step", "boundary"]
ROLES: tuple[Role, ...] = ("ends", "step", "boundary")
StepOutcome = Literal["good", "bad", "unclear", "confirmed", "not confirmed", "contradicted", "change", "no change"]
Status = Literal["found", "unconfirmed", "contradicted", "stopped", "no change", "improved", "ends unclear"]
MAX_MARGIN = 0.5  # a candidate 50% slower is never "same", whatever the ends' change


@dataclass(frozen=True)
class Pair:
    """One experiment to judge: `candidate` against `baseline`, at `alpha`; `margin` is the
    equivalence margin of the watched metric (None: the spec's own, as for the ends)."""

    role: Role
    baseline: str
    candidate: str
    alpha: float
    margin: float | None = None


@dataclass(frozen=True)
class Judgement:
    """The watched row of a pair's experiment: its verdict, change (a fraction) and intervals
    (the one better/worse is read from, and the narrower one 'same' is: see stats/judge.py),
    how many blocks decided it, and where it is stored."""

    verdict: str
    change: float = math.nan
    change_ci: tuple[float, float] = (math.nan, math.nan)
    change_ci90: tuple[float, float] = (math.nan, math.nan)
    blocks: int = 0
    experiment: str = ""
    note: str = ""


Judge = Callable[[Pair], Judgement]


@dataclass(frozen=True)
class Step:
    """A decision made: the pair, what its experiment said, and what the search made of it."""

    pair: Pair
    judgement: Judgement
    outcome: StepOutcome


@dataclass
class Outcome:
    """Where the search ended. `last_good`/`first_bad` bound the range that holds the first bad
    variant (adjacent once found); `margin` is the steps' equivalence margin."""

    status: Status
    variants: list[str]
    alpha: float
    steps: list[Step] = field(default_factory=list)
    last_good: str | None = None
    first_bad: str | None = None
    margin: float | None = None

    @property
    def decisions(self) -> int:
        return decisions(len(self.variants))

    @property
    def per_decision(self) -> float:
        return self.alpha / self.decisions

    @property
    def remaining(self) -> list[str]:
        """The variants that may still be the first bad one."""
        if self.last_good is None or self.first_bad is None:
            return []
        lo, hi = self.variants.index(self.last_good), self.variants.index(self.first_bad)
        return self.variants[lo + 1 : hi + 1]


def decisions(n: int) -> int:
    """The most experiments a bisection of n variants judges: the ends, ceil(log2(n - 1))
    steps (each halves the n - 1 places the first bad one may be), the boundary."""
    return math.ceil(math.log2(n - 1)) + 2 if n >= 2 else 0


def _half(change: float) -> float:
    """Half a change on the log scale, as a fraction: +100% (2x) gives +41%, -50% gives -29%."""
    return abs(math.expm1(math.log1p(change) / 2) if change > -1 else change / 2)


def _nearest_bound(ci: tuple[float, float]) -> float:
    return min(abs(b) for b in ci) if all(math.isfinite(b) for b in ci) else 0.0


def step_margin(change: float, ci: tuple[float, float]) -> float:
    """The margin within which a candidate counts as the good end's equal: half the ends' change
    on the log scale (a 2x slowdown gives +-41%), no wider than the bound of the ends' interval
    nearest zero (so that the true change between the ends lies beyond it whenever that interval
    holds), and at most MAX_MARGIN. (A `worse` verdict always comes with a finite interval; were
    one missing, half the change stands alone rather than a margin of zero, which decides nothing.)"""
    return min(_half(change), _nearest_bound(ci) or _half(change), MAX_MARGIN)


def settled(role: Role, verdict: str, change: float, ci: tuple[float, float]) -> bool:
    """Whether a pair's experiment may stop before its budget: its watched row decided, and where
    the ends are worse, their change measured well enough to give the steps their whole margin
    (the interval's bound nearest zero beyond half the change). Stopping the ends at their first
    `worse` would leave an interval reaching down to nearly zero, and every step a margin too
    narrow to call anything good. Any stopping rule keeps the sequential thresholds and the
    repeated intervals valid (stats/sequential.py): they hold at every look at once."""
    if verdict not in DECIDED:
        return False
    return role != "ends" or verdict != WORSE or _nearest_bound(ci) >= min(_half(change), MAX_MARGIN)


def bisect(variants: list[str], judge: Judge, *, alpha: float, on_step: Callable[[Step], None] = lambda step: None) -> Outcome:
    """Searches `variants` (first good, last bad) for the first bad one; `on_step` hears of
    every decision as it is made (progress)."""
    if len(variants) < 2:
        raise ValueError("a bisection needs two variants at least: the good one first, the bad one last")
    result = Outcome("stopped", list(variants), alpha)
    level = result.per_decision

    def decide(pair: Pair, outcome_of: Callable[[str], StepOutcome]) -> Step:
        judged = judge(pair)
        step = Step(pair, judged, outcome_of(judged.verdict))
        result.steps.append(step)
        on_step(step)
        return step

    good, bad = variants[0], variants[-1]
    ends = decide(Pair("ends", good, bad, level), lambda v: "change" if v == WORSE else "no change")
    verdict = ends.judgement.verdict
    if verdict != WORSE:
        result.status = "improved" if verdict == BETTER else "no change" if verdict == SAME else "ends unclear"
        return result
    margin = result.margin = step_margin(ends.judgement.change, ends.judgement.change_ci)
    lo, hi = 0, len(variants) - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        step = decide(
            Pair("step", good, variants[mid], level, margin),
            lambda v: "bad" if v == WORSE else "good" if v in (SAME, BETTER) else "unclear",
        )
        if step.outcome == "unclear":
            result.last_good, result.first_bad = variants[lo], variants[hi]
            return result
        lo, hi = (lo, mid) if step.outcome == "bad" else (mid, hi)
    result.last_good, result.first_bad = variants[lo], variants[hi]
    boundary = decide(
        Pair("boundary", variants[lo], variants[hi], level, margin),
        lambda v: "confirmed" if v == WORSE else "not confirmed" if v == UNCLEAR else "contradicted",
    )
    statuses: dict[StepOutcome, Status] = {"confirmed": "found", "not confirmed": "unconfirmed"}
    result.status = statuses.get(boundary.outcome, "contradicted")
    return result
