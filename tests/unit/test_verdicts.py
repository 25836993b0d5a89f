"""The whole judging pipeline on simulated experiments with known truth,
judged by `judge`, the function every report uses."""

from __future__ import annotations

import numpy as np
import pytest

from benchlab.analysis.simulation import run_until_decided, simulate
from benchlab.stats.families import CHARACTERISTIC, GEOMEAN, PRIMARY, SECONDARY, classify, shares
from benchlab.stats.judge import Sequential, Series, Settings, judge, pair_key
from benchlab.stats.sequential import paired_p, sequential_p
from benchlab.stats.test_choice import PARAMETRIC
from benchlab.stats.verdict import blocks_needed, verdict

SETTINGS = Settings(baseline="A", alpha=0.05, correction="bh", margin=0.01)


def test_a_a_experiments_rarely_show_any_difference() -> None:
    rng = np.random.default_rng(20261122)
    experiments = 800
    false = 0
    for _ in range(experiments):
        series = simulate(rng, metrics=20, blocks=10, noise=0.02, shifts=[0.0] * 20, drift=0.05)
        rows, geomeans = judge(series, ["A", "B"], SETTINGS)
        false += any(r.verdict in ("better", "worse") for r in [*rows, *geomeans])
    assert false / experiments <= 0.05 + 2.6 * np.sqrt(0.05 * 0.95 / experiments)


def test_a_three_percent_shift_is_found_with_ten_blocks() -> None:
    rng = np.random.default_rng(5)
    found = 0
    trials = 500
    for _ in range(trials):
        series = simulate(rng, metrics=1, blocks=10, noise=0.01, shifts=[np.log(1.03)], drift=0.05)
        rows, _ = judge(series, ["A", "B"], SETTINGS)
        found += rows[0].verdict == "worse"
    assert found / trials >= 0.90


def test_a_shift_across_all_metrics_is_found_despite_the_correction() -> None:
    rng = np.random.default_rng(6)
    found = 0
    trials = 200
    for _ in range(trials):
        series = simulate(rng, metrics=20, blocks=10, noise=0.01, shifts=[np.log(1.03)] * 20, drift=0.05)
        rows, geo = judge(series, ["A", "B"], SETTINGS)
        found += sum(r.verdict == "worse" for r in rows) / 20
        assert geo[0].change > 0
    assert found / trials >= 0.90


def test_the_true_change_lies_in_the_reported_interval() -> None:
    rng = np.random.default_rng(8)
    covered = 0
    trials = 300
    for _ in range(trials):
        series = simulate(rng, metrics=1, blocks=20, noise=0.02, shifts=[np.log(1.05)], drift=0.0)
        row = judge(series, ["A", "B"], SETTINGS)[0][0]
        covered += row.change_ci[0] <= 0.05 <= row.change_ci[1]
    assert covered / trials >= 0.92


def test_identical_runs_are_same_and_tiny_noise_is_same() -> None:
    rng = np.random.default_rng(9)
    series = simulate(rng, metrics=1, blocks=20, noise=0.001, shifts=[0.0], drift=0.0)
    row = judge(series, ["A", "B"], SETTINGS)[0][0]
    assert row.verdict == "same"


def test_verdict_rules() -> None:
    common = dict(ci90=(0.03, 0.07), margin=0.01)
    assert verdict(direction="lower", ci=(0.02, 0.08), **common) == "worse"
    assert verdict(direction="higher", ci=(0.02, 0.08), **common) == "better"
    assert verdict(direction="higher", ci=(-0.08, -0.02), **common) == "worse"
    assert verdict(direction="none", ci=(0.02, 0.08), **common) == "-"
    # the interval shown (at the corrected level) must exclude zero: touching it is not enough
    assert verdict(direction="lower", ci=(-0.01, 0.08), **common) == "unclear"
    assert verdict(direction="lower", ci=(0.0, 0.08), **common) == "unclear"
    assert verdict(direction="lower", ci=(-0.02, 0.02), ci90=(-0.005, 0.006), margin=0.01) == "same"


def test_blocks_needed_grows_as_the_change_shrinks_and_counts_the_test_used() -> None:
    common = dict(n=4, spread=0.05, margin=0.01, level=0.04, same_level=0.05, paired=True)
    small = blocks_needed(effect=0.02, **common)
    large = blocks_needed(effect=0.2, **common)
    assert small is not None and large is not None and large < small
    assert large == 5  # a 20% change with 5% spread decides at the next block, under the t
    # from 6 pairs the signed-rank test needs 2^(1-n) <= level: at level 0.001 never below 11 blocks
    assert blocks_needed(effect=1.0, spread=0.05, n=6, margin=0.01, level=0.001, same_level=0.05, paired=True) == 11


def test_small_n_a_a_stays_within_alpha_with_and_without_outliers() -> None:
    rng = np.random.default_rng(11)
    for outliers in (0.0, 0.05):
        for blocks in (3, 4, 5, 6):
            experiments = 600
            false = sum(
                any(
                    r.verdict in ("better", "worse")
                    for r in judge(
                        simulate(rng, metrics=1, blocks=blocks, noise=0.05, shifts=[0.0], drift=0.05, outliers=outliers),
                        ["A", "B"], SETTINGS,
                    )[0]
                )
                for _ in range(experiments)
            )  # fmt: skip
            assert false / experiments <= 0.05 + 2.6 * np.sqrt(0.05 * 0.95 / experiments), (outliers, blocks)


def test_a_consistent_doubling_is_worse_at_three_blocks_with_an_interval() -> None:
    rng = np.random.default_rng(12)
    for _ in range(20):
        row = judge(simulate(rng, metrics=1, blocks=3, noise=0.05, shifts=[np.log(2)], drift=0.05), ["A", "B"], SETTINGS)[0][0]
        assert row.verdict == "worse" and row.test == PARAMETRIC
        assert 0 < row.change_ci[0] < row.change < row.change_ci[1] < np.inf


def _series(metric: str, family: str, a: list[float], b: list[float], workload: str = "w") -> Series:
    keys = np.array([pair_key(1, i) for i in range(len(a))], dtype=np.int64)
    return Series(workload, metric, "s", "lower", {"A": (keys, np.array(a)), "B": (keys, np.array(b))}, family)


def test_rows_that_cannot_reach_alpha_leave_the_family_and_say_why() -> None:
    n = 8
    wall = _series("wall", PRIMARY, [1.0 + 0.01 * i for i in range(n)], [2.0 + 0.01 * i for i in range(n)])
    zeros = _series("errors", PRIMARY, [0.0] * n, [0.0] * n)
    rows, _ = judge([wall, zeros], ["A", "B"], SETTINGS)
    by = {r.metric: r for r in rows}
    assert by["wall"].verdict == "worse"
    assert by["wall"].q == pytest.approx(by["wall"].p)  # one testable row, the family's whole share
    assert np.isnan(by["errors"].q) and "every difference is zero" in by["errors"].note


def test_characteristics_are_shown_but_not_judged_and_do_not_dilute() -> None:
    n = 6
    wall = _series("wall", PRIMARY, [1.0 + 0.01 * i for i in range(n)], [1.5 + 0.01 * i for i in range(n)])
    rss = _series("max_rss", CHARACTERISTIC, [100.0 + i for i in range(n)], [300.0 + i for i in range(n)])
    rows, geo = judge([wall, rss], ["A", "B"], SETTINGS)
    by = {r.metric: r for r in rows}
    assert by["max_rss"].verdict == "-" and by["max_rss"].change > 1.5
    assert by["wall"].q == pytest.approx(by["wall"].p)
    assert geo == []  # one primary metric: its row already says it


def test_families_are_classified_by_workload_kind_and_spec() -> None:
    command = {"name": "c", "command": ["true"]}
    builtin = {"name": "b", "builtin": "alloc.churn", "metrics": {"tree_peak": {"direction": "lower"}}}
    assert classify(command, "wall", "lower") == (PRIMARY, "lower")
    assert classify(builtin, "wall", "lower") == (SECONDARY, "lower")
    assert classify(command, "user", "lower") == (SECONDARY, "lower")
    assert classify(command, "minor_faults", "lower") == (CHARACTERISTIC, "lower")
    assert classify(builtin, "tree_peak", "lower") == (PRIMARY, "lower")
    assert classify(builtin, "cpu_time", "lower") == (PRIMARY, "lower")
    assert classify(builtin, "migrations", "none") == (CHARACTERISTIC, "none")


def test_family_shares_add_up_to_alpha() -> None:
    levels = shares(0.05, [PRIMARY, SECONDARY, PRIMARY, SECONDARY, GEOMEAN])
    assert sum(levels) == pytest.approx(0.05) and levels[0] == pytest.approx(4 * levels[1])


def test_a_geomean_that_disagrees_with_its_rows_says_why() -> None:
    n = 10
    base = [1.0 + 0.01 * i for i in range(n)]
    faster = _series("a", PRIMARY, base, [x * 0.5 for x in base])
    slower = _series("b", PRIMARY, base, [x * 1.2 for x in base])
    rows, geo = judge([faster, slower], ["A", "B"], SETTINGS)
    assert {r.verdict for r in rows} == {"better", "worse"}
    assert geo[0].verdict == "better" and "disagree" in geo[0].note


SEQUENTIAL = Settings(baseline="A", sequential=Sequential(first=3, last=15))


def test_until_decided_keeps_a_a_within_alpha_over_every_look() -> None:
    rng = np.random.default_rng(13)
    experiments = 300
    false = 0
    for _ in range(experiments):
        series = simulate(rng, metrics=1, blocks=15, noise=0.05, shifts=[0.0], drift=0.05, outliers=0.05)
        _, rows = run_until_decided(series, SEQUENTIAL)
        false += any(r.verdict in ("better", "worse") for r in rows)
    assert false / experiments <= 0.05 + 2.6 * np.sqrt(0.05 * 0.95 / experiments)


def test_nominal_looks_would_inflate_the_a_a_rate_that_calibration_holds() -> None:
    """The reason for the calibration: the same looks at nominal alpha go wrong far more often."""
    rng = np.random.default_rng(14)
    d = rng.standard_normal((4000, 15))
    nominal = np.zeros(4000, dtype=bool)
    for n in range(3, 16):
        nominal |= paired_p(d[:, :n]) < 0.05
    assert nominal.mean() > 0.15
    calibrated = np.zeros(4000, dtype=bool)
    for n in range(3, 16):
        calibrated |= sequential_p(paired_p(d[:, :n]), 3, 15) < 0.05
    assert calibrated.mean() <= 0.05 + 2.6 * np.sqrt(0.05 * 0.95 / 4000)


def test_until_decided_stops_early_on_a_doubling_and_never_calls_a_short_budget_same() -> None:
    rng = np.random.default_rng(15)
    stops = []
    for _ in range(20):
        series = simulate(rng, metrics=1, blocks=15, noise=0.05, shifts=[np.log(2)], drift=0.05)
        blocks, rows = run_until_decided(series, SEQUENTIAL)
        assert rows[0].verdict == "worse"
        stops.append(blocks)
    assert max(stops) <= 5
    # a 1% change in 10% noise cannot be decided in 15 blocks: it ends unclear, not same
    series = simulate(rng, metrics=1, blocks=15, noise=0.10, shifts=[np.log(1.01)], drift=0.0)
    blocks, rows = run_until_decided(series, SEQUENTIAL)
    assert blocks == 15 and rows[0].verdict == "unclear"


def test_a_metric_below_zero_keeps_its_direction() -> None:
    """Raw shifts are relative to the size of the baseline median, whatever its sign."""
    n = 8
    s = _series("offset", PRIMARY, [-10.0 - 0.01 * i for i in range(n)], [-5.0 - 0.01 * i for i in range(n)])
    row = judge([s], ["A", "B"], SETTINGS)[0][0]
    assert row.change > 0 and 0 < row.change_ci[0] <= row.change_ci[1] and row.verdict == "worse"
