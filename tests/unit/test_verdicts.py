"""The whole judging pipeline on simulated experiments with known truth,
judged by `judge`, the function every report uses."""

from __future__ import annotations

import numpy as np

from benchlab.stats.analysis import Settings, judge
from benchlab.stats.simulation import simulate
from benchlab.stats.verdict import runs_needed, verdict

SETTINGS = Settings(baseline="A", alpha=0.05, correction="bh", margin=0.01)


def test_a_a_experiments_rarely_show_any_difference() -> None:
    rng = np.random.default_rng(20261122)
    experiments = 2000
    false = 0
    for _ in range(experiments):
        series = simulate(rng, metrics=20, blocks=10, noise=0.02, shifts=[0.0] * 20, drift=0.05)
        rows, _ = judge(series, ["A", "B"], SETTINGS)
        false += any(r.verdict in ("better", "worse") for r in rows)
    assert false / experiments <= 0.05


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
    common = dict(ci90=(0.03, 0.07), q=0.001, alpha=0.05, margin=0.01)
    assert verdict(direction="lower", change=0.05, ci=(0.02, 0.08), **common) == "worse"
    assert verdict(direction="higher", change=0.05, ci=(0.02, 0.08), **common) == "better"
    assert verdict(direction="none", change=0.05, ci=(0.02, 0.08), **common) == "-"
    # significant p but an interval that touches zero is not enough
    assert verdict(direction="lower", change=0.05, ci=(-0.01, 0.08), **common) == "unclear"
    assert (
        verdict(direction="lower", change=0.0, ci=(-0.02, 0.02), ci90=(-0.005, 0.006), q=0.9, alpha=0.05, margin=0.01) == "same"
    )


def test_runs_needed_shrinks_with_a_larger_change() -> None:
    small = runs_needed(n=10, change=0.01, half_width=0.02, half_width90=0.017, margin=0.005, minimum=10)
    large = runs_needed(n=10, change=0.03, half_width=0.02, half_width90=0.017, margin=0.005, minimum=10)
    assert small is not None and large is not None and large < small
