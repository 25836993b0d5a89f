"""Estimators and tests against published worked examples and known distributions."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from benchlab.stats.correction import adjust
from benchlab.stats.estimators import (
    _median_rank,
    _signed_rank_cdf,
    hodges_lehmann_paired,
    hodges_lehmann_two_sample,
    median_ci,
    paired_t,
    paired_t_interval,
    rank_sum_test,
    signed_rank_count,
    signed_rank_test,
)
from benchlab.stats.sequential import paired_p
from benchlab.terms import SMALL_N

# Hollander, Wolfe & Chicken, Example 3.1 (Hamilton depression scale, before x and after y).
X = np.array([1.83, 0.50, 1.62, 2.48, 1.68, 1.88, 1.55, 3.06, 1.30])
Y = np.array([0.878, 0.647, 0.598, 2.05, 1.06, 1.29, 1.06, 3.14, 1.29])


def test_hodges_lehmann_matches_the_worked_example() -> None:
    est, [(lo, hi)] = hodges_lehmann_paired(Y - X, (0.95,))
    assert est == pytest.approx(-0.46)
    assert (lo, hi) == pytest.approx((-0.786, -0.010))  # the textbook's interval for this n


def test_signed_rank_p_matches_the_worked_example() -> None:
    assert signed_rank_test(Y - X)[0] == pytest.approx(0.0391, abs=1e-4)


def test_signed_rank_distribution_matches_brute_force() -> None:
    n = 8
    sums = [sum(r + 1 for r in range(n) if mask >> r & 1) for mask in range(2**n)]
    counts = np.bincount(sums) / 2**n
    assert np.allclose(_signed_rank_cdf(n), np.cumsum(counts))


def test_signed_rank_critical_values_match_tables() -> None:
    # Two-sided 5%: published lower critical values T <= c-1 (n=6..10: 0, 2, 3, 5, 8)
    assert [signed_rank_count(n, 0.05) - 1 for n in range(6, 11)] == [0, 2, 3, 5, 8]
    assert signed_rank_count(5, 0.05) == 0  # no 95% interval with five pairs


def test_paired_interval_covers_the_true_shift_95_percent_of_the_time() -> None:
    rng = np.random.default_rng(7)
    hits = 0
    trials = 2000
    for _ in range(trials):
        d = rng.standard_t(df=4, size=12) + 0.3
        _, [(lo, hi)] = hodges_lehmann_paired(d, (0.95,))
        hits += lo <= 0.3 <= hi
    assert 0.93 <= hits / trials <= 0.985  # discrete intervals are slightly conservative


def test_median_interval_coverage_on_a_skewed_distribution() -> None:
    rng = np.random.default_rng(3)
    true_median = np.exp(0.0)  # lognormal(0, 1)
    hits = sum(lo <= true_median <= hi for lo, hi in (median_ci(rng.lognormal(0, 1, size=25))[1:] for _ in range(2000)))
    assert 0.94 <= hits / 2000 <= 0.99


def test_median_interval_is_nan_when_too_few_samples() -> None:
    med, lo, hi = median_ci(np.array([1.0, 2.0, 3.0, 4.0, 5.0]))
    assert med == 3.0 and np.isnan(lo) and np.isnan(hi)


def test_two_sample_shift_recovers_a_known_shift() -> None:
    rng = np.random.default_rng(11)
    x = rng.normal(5.0, 1.0, 60)
    y = rng.normal(4.0, 1.0, 60)
    est, [(lo, hi)] = hodges_lehmann_two_sample(x, y)
    assert lo < 1.0 < hi
    assert est == pytest.approx(np.median(np.subtract.outer(x, y)))


def test_the_smallest_rank_sum_p_is_finite_for_thousands_of_runs_and_out_of_reach_for_three() -> None:
    def smallest(m: int, n: int) -> float:
        return rank_sum_test(np.arange(m) + 1000.0, np.arange(n, dtype=float))[1]

    assert smallest(3, 3) > 0.05  # three runs a side can never decide
    assert 0.0 < smallest(10, 12) < 1e-3
    assert 0.0 <= smallest(600, 600) < 1e-100  # tiny, never an error
    x = np.arange(10) + 100.0
    assert rank_sum_test(x, np.arange(12, dtype=float)) == (smallest(10, 12), smallest(10, 12))  # complete separation


def test_benjamini_hochberg_and_holm_by_hand() -> None:
    p = [0.01, 0.04, 0.03, 0.005]
    # BH: sorted 0.005, 0.01, 0.03, 0.04 -> 0.02, 0.02, 0.04, 0.04
    assert adjust(p, "bh") == pytest.approx([0.02, 0.04, 0.04, 0.02])
    # Holm: 4*0.005=0.02, 3*0.01=0.03, 2*0.03=0.06, 1*0.04 -> max-accumulated 0.06
    assert adjust(p, "holm") == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert adjust(p, "none") == p


def test_scipy_agrees_with_our_exact_distribution() -> None:
    d = np.array([0.3, -0.1, 0.5, 0.7, 0.2, 0.9, -0.4, 0.6, 0.8, 1.1])
    ranks = stats.rankdata(np.abs(d))
    t_plus = ranks[d > 0].sum()
    t_min = min(t_plus, len(d) * (len(d) + 1) / 2 - t_plus)
    exact = min(1.0, 2 * _signed_rank_cdf(len(d))[int(t_min)])
    assert signed_rank_test(d)[0] == pytest.approx(exact)


@pytest.mark.parametrize("n", [40, 700, 2500])
def test_selection_of_pairwise_order_statistics_is_exact(n: int) -> None:
    from benchlab.stats.selection import difference_order_statistics, walsh_order_statistics

    rng = np.random.default_rng(n)
    d = np.round(rng.standard_t(3, size=n), 2)  # ties included
    i, j = np.triu_indices(n)
    walsh = np.sort((d[i] + d[j]) / 2)
    ranks = [1, 2, len(walsh) // 3, len(walsh) // 2, len(walsh) // 2 + 1, len(walsh) - 5, len(walsh)]
    assert walsh_order_statistics(d, ranks) == [walsh[r - 1] for r in ranks]
    x, y = rng.lognormal(size=n), rng.normal(size=n + 3)
    diffs = np.sort(np.subtract.outer(x, y).ravel())
    ranks = [1, len(diffs) // 7, len(diffs) // 2, len(diffs)]
    assert difference_order_statistics(x, y, ranks) == [diffs[r - 1] for r in ranks]


@pytest.mark.parametrize("n", [1200, 4000])
def test_narrowing_a_bracket_by_counting_never_changes_the_values_selected(n: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The brackets around each wanted rank are narrowed by counting before their values are formed;
    what is selected is the same to the last bit as without narrowing, and as sorting every sum."""
    from benchlab.stats import selection

    d = np.round(np.random.default_rng(n + 1).normal(0, 0.03, n), 3)
    i, j = np.triu_indices(n)
    walsh = np.sort((d[i] + d[j]) / 2)
    total = len(walsh)
    c95, c90 = signed_rank_count(n, 0.05), signed_rank_count(n, 0.10)
    ranks = [c95, c90, total // 2, total // 2 + 1, total - c90 + 1, total - c95 + 1]
    narrowed = selection.walsh_order_statistics(d, ranks)
    assert narrowed == [walsh[r - 1] for r in ranks]
    monkeypatch.setattr(selection, "NARROW_TO", total)
    assert narrowed == selection.walsh_order_statistics(d, ranks)


@pytest.mark.parametrize("seed", range(4))
def test_tied_sums_that_differ_in_their_last_bit_are_selected_as_formed(seed: int) -> None:
    """Rounded data (timings to a millisecond) form equal sums from many pairs, some of which round
    one bit apart (0.009 and 0.009000000000000001): a count by binary search for d_j <= 2v - d_i
    puts such a pair on the wrong side of v, and where a bracket's end fell on such a value the
    rank selected was its neighbour's. Each rank across the middle of the Walsh averages and of
    two samples' differences, asked alone (so that brackets end in many places), must be the one
    sorting every formed value gives, to the last bit."""
    from benchlab.stats.selection import difference_order_statistics, walsh_order_statistics

    rng = np.random.default_rng(seed)
    d = np.round(rng.normal(0.01, 0.02, 1500), 3)
    i, j = np.triu_indices(len(d))
    walsh = np.sort((d[i] + d[j]) / 2)
    for rank in np.linspace(0.3 * len(walsh), 0.7 * len(walsh), 25).astype(int).tolist():
        assert walsh_order_statistics(d, [rank]) == [walsh[rank - 1]], rank
    x, y = np.round(rng.normal(0.1, 0.03, 900), 3), np.round(rng.normal(0.1, 0.03, 800), 3)
    diffs = np.sort(np.subtract.outer(x, y).ravel())
    for rank in np.linspace(0.3 * len(diffs), 0.7 * len(diffs), 25).astype(int).tolist():
        assert difference_order_statistics(x, y, [rank]) == [diffs[rank - 1]], rank


def test_the_normal_signed_rank_p_is_scipys_within_its_continuity_correction() -> None:
    rng = np.random.default_rng(5)
    for n in (201, 900, 5000):
        d = rng.normal(0.001, 0.03, n)
        approx = float(stats.wilcoxon(d, alternative="two-sided", method="approx").pvalue)
        assert signed_rank_test(d)[0] == pytest.approx(approx, rel=0.05, abs=1e-3)
        assert signed_rank_test(d)[0] >= approx  # a count of continuity: the cautious side


def test_tied_and_zero_differences_keep_the_level() -> None:
    """Counts give ties and zeros; a Walsh average at zero counts against a verdict on both
    sides, so under no change the test rejects at most its level."""
    rng = np.random.default_rng(3)
    trials = 3000
    d = rng.integers(-3, 4, size=(trials, 9)).astype(float)
    rejected = sum(signed_rank_test(row)[0] <= 0.05 for row in d)
    assert rejected / trials <= 0.05
    assert signed_rank_test(np.ones(6))[0] == pytest.approx(2 / 64)
    assert signed_rank_test(np.zeros(6)) == (1.0, 1.0)


def test_the_t_test_the_median_ranks_and_bh_equal_scipy_stats_to_the_last_bit() -> None:
    """The core computes them on scipy.special so that judging need not import scipy.stats: the
    same arithmetic, so every p, interval and rank is scipy.stats's, bit for bit."""
    rng = np.random.default_rng(7)
    for n in range(2, 30):
        for scale in (1e-6, 1.0, 1e6):
            d = rng.normal(rng.normal(), 1.0, n) * scale
            mean, intervals, p = paired_t(d, (0.95, 0.9))
            ref = stats.ttest_1samp(d, 0.0)
            assert (mean, p) == (float(np.mean(d)), float(ref.pvalue))
            for level, (low, high) in zip((0.95, 0.9), intervals, strict=True):
                ci = ref.confidence_interval(confidence_level=level)
                assert (low, high) == (float(ci.low), float(ci.high))
            ci = ref.confidence_interval(confidence_level=1 - 0.013)
            assert paired_t_interval(d, 0.013) == (float(ci.low), float(ci.high))
        paths = rng.normal(size=(200, n))
        se = paths.std(axis=1, ddof=1) / np.sqrt(n)
        if n < SMALL_N:  # where the sequential p is the t-test's
            assert np.array_equal(paired_p(paths), 2 * stats.t.sf(np.abs(paths.mean(axis=1)) / se, n - 1))
        p_values = rng.uniform(size=n) ** 3
        assert adjust(list(p_values), "bh") == [float(q) for q in stats.false_discovery_control(p_values, method="bh")]
    for n in (*range(1, 60), 500, 5000, 20000):
        for level in (0.5, 0.9, 0.95, 0.99):
            tail = (1 - level) / 2
            expected = next(k for k in range(n + 1) if stats.binom.cdf(k, n, 0.5) > tail)
            assert _median_rank(n, level) == expected, (n, level)
