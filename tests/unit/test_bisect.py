"""The bisection's search and error budget (stats/bisection.py), with judges that know the truth:
a fake one that answers from it exactly, and a simulated one whose every pair is a noisy
sequential experiment judged as a real one is."""

from __future__ import annotations

import math

import numpy as np
import pytest

from benchlab.analysis.simulation import bisect_judge
from benchlab.stats.bisection import MAX_MARGIN, Judgement, Pair, bisect, decisions, step_margin
from benchlab.stats.verdict import BETTER, SAME, UNCLEAR, WORSE

ALPHA = 0.05


class Fake:
    """Answers from the truth: variant i's metric is levels[i] (lower is better); a pair is worse
    when the candidate is above the baseline by `step` or more, same otherwise; `unclear` names
    candidates whose steps stay unclear. Every pair asked is kept."""

    def __init__(self, levels: list[float], *, step: float = 1.0, unclear: frozenset[str] = frozenset()) -> None:
        self.levels, self.step, self.unclear = levels, step, unclear
        self.asked: list[Pair] = []

    def __call__(self, pair: Pair) -> Judgement:
        self.asked.append(pair)
        diff = self.levels[int(pair.candidate)] - self.levels[int(pair.baseline)]
        if pair.role == "step" and pair.candidate in self.unclear:
            return Judgement(UNCLEAR, blocks=40)
        verdict = WORSE if diff >= self.step else BETTER if diff <= -self.step else SAME
        return Judgement(verdict, change=diff, change_ci=(diff * 0.8, diff * 1.2), blocks=5)


def names(n: int) -> list[str]:
    return [str(i) for i in range(n)]


def test_the_error_budget_counts_the_ends_every_halving_and_the_boundary() -> None:
    assert [decisions(n) for n in (2, 3, 4, 5, 9, 17, 18)] == [2, 3, 4, 4, 5, 6, 7]


@pytest.mark.parametrize("n", range(2, 18))
def test_the_first_bad_is_found_at_every_position_within_the_budget(n: int) -> None:
    for first_bad in range(1, n):
        fake = Fake([0.0 if i < first_bad else 1.0 for i in range(n)])
        out = bisect(names(n), fake, alpha=ALPHA)
        assert (out.status, out.first_bad, out.last_good) == ("found", str(first_bad), str(first_bad - 1))
        assert len(fake.asked) <= decisions(n)
        assert all(p.alpha == pytest.approx(ALPHA / decisions(n)) for p in fake.asked)
        ends, *steps, boundary = fake.asked
        assert (ends.role, ends.baseline, ends.candidate, ends.margin) == ("ends", "0", str(n - 1), None)
        assert all(p.role == "step" and p.baseline == "0" and p.margin == out.margin for p in steps)
        assert (boundary.role, boundary.baseline, boundary.candidate) == ("boundary", str(first_bad - 1), str(first_bad))
        assert [s.pair for s in out.steps] == fake.asked


def test_an_unclear_step_is_never_guessed_and_says_which_range_remains() -> None:
    fake = Fake([0, 0, 0, 0, 0, 0, 1, 1, 1], unclear=frozenset({"4"}))  # the first step asks about 4
    out = bisect(names(9), fake, alpha=ALPHA)
    assert out.status == "stopped"
    assert (out.last_good, out.first_bad) == ("0", "8")
    assert out.remaining == names(9)[1:]
    assert [p.role for p in fake.asked] == ["ends", "step"]  # stopped there: no boundary, no guess

    fake = Fake([0, 0, 0, 0, 0, 0, 1, 1, 1], unclear=frozenset({"6"}))  # 4 good, then 6 unclear
    out = bisect(names(9), fake, alpha=ALPHA)
    assert out.status == "stopped" and out.remaining == ["5", "6", "7", "8"]


def test_a_flat_list_has_nothing_to_bisect_and_runs_one_experiment() -> None:
    fake = Fake([0.0] * 7)
    out = bisect(names(7), fake, alpha=ALPHA)
    assert out.status == "no change" and out.first_bad is None and len(fake.asked) == 1
    out = bisect(names(7), Fake([0, 0, 0, 0, 0, 0, -1]), alpha=ALPHA)
    assert out.status == "improved"
    out = bisect(names(7), lambda pair: Judgement(UNCLEAR, blocks=40), alpha=ALPHA)
    assert out.status == "ends unclear" and out.remaining == []


def test_a_non_monotone_list_ends_at_a_real_good_to_bad_boundary() -> None:
    levels = [0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0]
    fake = Fake(levels)
    out = bisect(names(8), fake, alpha=ALPHA)
    assert out.status == "found"
    lo, hi = int(out.last_good or ""), int(out.first_bad or "")
    assert hi == lo + 1 and levels[lo] == 0.0 and levels[hi] == 1.0


def test_a_change_spread_over_several_variants_is_contradicted_at_the_boundary() -> None:
    """A creeping slowdown: each variant a little slower, only two apart a visible change. The
    steps find where it became visible, the direct comparison shows no step there."""
    fake = Fake([0.0, 0.6, 1.2, 1.8, 2.4])
    out = bisect(names(5), fake, alpha=ALPHA)
    assert (out.status, out.last_good, out.first_bad) == ("contradicted", "1", "2")

    unclear_boundary = Fake([0, 0, 1, 1])

    def judge(pair: Pair) -> Judgement:
        return Judgement(UNCLEAR, blocks=40) if pair.role == "boundary" else unclear_boundary(pair)

    out = bisect(names(4), judge, alpha=ALPHA)
    assert (out.status, out.first_bad) == ("unconfirmed", "2")


def test_the_step_margin_is_half_the_ends_change_inside_their_interval() -> None:
    assert step_margin(1.0, (0.8, 1.2)) == pytest.approx(math.sqrt(2) - 1)  # 2x: +-41%
    assert step_margin(0.10, (0.02, 0.18)) == pytest.approx(0.02)  # barely shown: its interval's bound
    assert step_margin(-0.5, (-0.6, -0.4)) == pytest.approx(1 - math.sqrt(0.5))  # half the throughput: +-29%
    assert step_margin(3.0, (2.5, 3.5)) == MAX_MARGIN
    out = bisect(names(3), Fake([0.0, 0.0, 1.0]), alpha=ALPHA)
    assert out.margin == pytest.approx(step_margin(1.0, (0.8, 1.2)))
    with pytest.raises(ValueError, match="two variants"):
        bisect(["only"], Fake([0.0]), alpha=ALPHA)


def _wrong(out_status: str, first_bad: str | None, remaining: list[str], truth: int | None) -> bool:
    """Whether a bisection's answer is wrong: it names (or points at) another variant than the
    first bad one, keeps a range without it, or finds a change where none is (or none where one is)."""
    if truth is None:
        return out_status not in ("no change", "ends unclear")
    if out_status in ("found", "unconfirmed", "contradicted"):
        return first_bad != str(truth)
    if out_status == "stopped":
        return str(truth) not in remaining
    return out_status != "ends unclear"  # "no change" or "improved" where the list got worse


@pytest.mark.slow
def test_simulated_bisections_are_wrong_less_often_than_alpha() -> None:
    """Noisy sequential experiments (3% lognormal noise, drift), as `benchlab bisect` runs them:
    flat lists and lists with a 10% or 2x step at a random place. bench/bisect_calibration.py
    prints the same rates over more bisections and beside a bisection that looks at nominal alpha."""
    rng = np.random.default_rng(20261127)
    wrong = total = found = 0
    for step in (None, np.log(1.10), np.log(2.0)):
        for _ in range(40):
            n = int(rng.integers(3, 12))
            truth = None if step is None else int(rng.integers(1, n))
            levels = [0.0 if truth is None or i < truth else float(step) for i in range(n)]
            out = bisect(names(n), bisect_judge(rng, levels, noise=0.03, first=3, last=30), alpha=ALPHA)
            wrong += _wrong(out.status, out.first_bad, out.remaining, truth)
            found += out.status == "found" and step is not None and step > 0.5
            total += 1
    assert wrong <= ALPHA * total
    assert found >= 36  # a 2x step against 3% noise is found (and confirmed) nearly always


def test_the_lines_say_the_answer_the_range_left_and_the_error_rate() -> None:
    from benchlab.report.bisect_lines import answer, header, step_line

    out = bisect(names(9), Fake([0, 0, 0, 0, 0, 1, 1, 1, 1]), alpha=ALPHA)
    assert header(names(9), "app", "wall", ALPHA, out.decisions).endswith("at most 5 decisions, each at alpha 0.01 (0.05 / 5)")
    lines = [step_line(step, i) for i, step in enumerate(out.steps)]
    assert lines[0].startswith("ends     8 vs 0: worse +100.0% [+80.0, +120.0] in 5 blocks -> change")
    assert lines[1].startswith("step 1   4 vs 0: same +0.0% [n/a] (TOST) in 5 blocks -> good")
    assert lines[-1].startswith("boundary 5 vs 4: worse +100.0%") and lines[-1].endswith("-> confirmed  ()")
    said = answer(out, "wall")
    assert said[0] == "first bad: 5 (last good: 4), confirmed by comparing the two directly"
    assert (
        said[-1] == "error rate: every decision at alpha 0.01, at most 5 of them: the chance that any was wrong is at most 0.05"
    )

    stopped = answer(bisect(names(9), Fake([0, 0, 0, 0, 0, 0, 1, 1, 1], unclear=frozenset({"6"})), alpha=ALPHA), "wall")
    assert stopped[0].startswith(
        "stopped: 6 stayed unclear after 40 blocks; the first bad variant is one of 5, 6, 7, 8 (after 4)"
    )
    assert answer(bisect(names(3), Fake([0, 0, 0]), alpha=ALPHA), "wall")[0] == "nothing to bisect: 2 is the same as 0 on wall"
