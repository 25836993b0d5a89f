"""The interval shown beside a verdict agrees with it: better or worse exactly when it excludes
zero, on every path (paired t, signed rank, Mann-Whitney, raw shifts, ties, geometric means,
BH, Holm and none, sequential mode), checked over many seeded random experiments."""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

import numpy as np
import pytest

from benchlab.analysis.rows import metric_row
from benchlab.stats.estimators import (
    paired_t,
    paired_t_interval,
    rank_sum_interval,
    rank_sum_test,
    signed_rank_interval,
    signed_rank_test,
)
from benchlab.stats.families import PRIMARY, SECONDARY
from benchlab.stats.judge import GeomeanRow, Row, Sequential, Series, Settings, judge, pair_key, shown_threshold

DECIDED = ("better", "worse")


def _excludes_zero(ci: tuple[float, float]) -> bool:
    lo, hi = ci
    return not math.isnan(lo) and (lo > 0 or hi < 0)


def _experiment(rng: np.random.Generator) -> tuple[list[Series], list[str]]:
    """Workloads of 1-4 metrics each: log-normal, coarse (tied) or crossing zero (a raw shift);
    some unchanged, some shifted by a little or a lot; paired blocks or, now and then, runs of
    different hosts that cannot pair (the two-sample path); 2-10 blocks."""
    blocks = int(rng.integers(2, 11))
    variants = ["A", "B", "C"][: int(rng.integers(2, 4))]
    unpaired = rng.random() < 0.2
    series = []
    for w in range(int(rng.integers(1, 3))):
        for m in range(int(rng.integers(1, 5))):
            kind = rng.choice(["log", "tied", "shift"], p=[0.6, 0.2, 0.2])
            noise = float(rng.choice([0.01, 0.05, 0.2]))
            values = {}
            for i, v in enumerate(variants):
                n = int(rng.integers(2, 9)) if unpaired else blocks
                keys = pair_key(1 + i if unpaired else 1, 0) + np.arange(n, dtype=np.int64)
                effect = 0.0 if i == 0 else float(rng.choice([0.0, 0.0, 0.02, 0.1, 0.5]))
                if kind == "shift":
                    x = np.round(rng.normal(effect * 10, 3.0, n))
                else:
                    x = np.exp(3.0 + effect + rng.normal(0, noise, n))
                    x = np.round(x) if kind == "tied" else x
                values[v] = (keys, x)
            family = PRIMARY if rng.random() < 0.7 else SECONDARY
            series.append(Series(f"w{w}", f"m{m}", "s", str(rng.choice(["lower", "higher"])), values, family))
    return series, variants


def _check(row: Row | GeomeanRow, alpha: float) -> None:
    excludes = _excludes_zero(row.change_ci)
    assert excludes == (row.verdict in DECIDED), (row.verdict, row.change_ci, row.test, row.q)
    if row.verdict in DECIDED:
        assert row.q <= alpha, row  # the test decided it too, after the correction
        lo, hi = row.change_ci
        assert lo <= row.change <= hi
    assert row.change_ci_level >= 0.95 - 1e-12  # corrected: never narrower than the unadjusted 95%


@pytest.mark.parametrize("correction", ["bh", "holm", "none"])
def test_better_or_worse_exactly_when_the_shown_interval_excludes_zero(correction: str) -> None:
    rng = np.random.default_rng({"bh": 1, "holm": 2, "none": 3}[correction])
    decided = undecided = 0
    for _ in range(300):
        series, variants = _experiment(rng)
        settings = Settings(baseline="A", correction=correction, margin=float(rng.choice([0.01, 0.05])))
        rows, geomeans = judge(series, variants, settings)
        for row in [*rows, *geomeans]:
            if row.verdict == "-":
                continue
            _check(row, settings.alpha)
            decided += row.verdict in DECIDED
            undecided += row.verdict not in DECIDED
    assert decided > 100 and undecided > 100  # both sides of the rule were exercised


def test_sequential_intervals_agree_with_the_sequential_verdicts() -> None:
    rng = np.random.default_rng(4)
    settings = Settings(baseline="A", sequential=Sequential(first=3, last=15))
    decided = 0
    for _ in range(150):
        series, variants = _experiment(rng)
        rows, geomeans = judge(series, variants, settings)
        for row in [*rows, *geomeans]:
            if row.verdict != "-":
                _check(row, settings.alpha)
                decided += row.verdict in DECIDED
    assert decided > 30


def test_each_rank_interval_excludes_zero_exactly_when_its_test_reaches_the_threshold() -> None:
    """The tests are read off the intervals: p <= b and 'the interval at b excludes zero' are
    the same statement for every b, with ties and zeros, at the exact and the normal sizes."""
    rng = np.random.default_rng(7)
    for _ in range(400):
        n = int(rng.choice([3, 6, 9, 14, 40, 230]))
        d = rng.normal(float(rng.choice([0.0, 0.3, 1.0])), 1.0, n)
        d = np.round(d, 1) if rng.random() < 0.4 else d
        p, p_min = signed_rank_test(d)
        assert p_min <= p
        y = rng.normal(0, 1, int(rng.integers(2, 40)))
        q, q_min = rank_sum_test(d, y)
        assert q_min <= q
        for b in (0.001, 0.01, 0.0125, 0.05, 0.1, *(x for x in (p, q) if x < 0.2)):
            assert _excludes_zero(signed_rank_interval(d, b)) == (p <= b)
            assert _excludes_zero(rank_sum_interval(d, y, b)) == (q <= b)
        if 3 <= n < 6:
            _, _, t_p = paired_t(d)
            for b in (0.01, 0.05, t_p * 0.999, t_p * 1.001):
                assert _excludes_zero(paired_t_interval(d, b)) == (t_p <= b)


def test_without_ties_the_signed_rank_p_is_wilcoxons_exact_p() -> None:
    from scipy import stats

    rng = np.random.default_rng(8)
    for n in (6, 9, 15):
        d = rng.normal(0.5, 1, n)
        assert signed_rank_test(d)[0] == pytest.approx(float(stats.wilcoxon(d, method="exact").pvalue), rel=1e-9)


def test_the_shown_threshold_is_the_false_coverage_level_of_the_selected() -> None:
    p = [0.001, 0.02, 0.03, 0.5]
    # BH at 0.05 over 4: 0.0125, 0.025, 0.0375, 0.05 -> three selected, intervals at 1 - 3 x 0.05 / 4
    assert shown_threshold(p, 0.05, "bh") == pytest.approx(0.0375)
    # nothing selected: Bonferroni's level, at which every interval holds zero
    assert shown_threshold([0.2, 0.6], 0.05, "bh") == pytest.approx(0.025)
    # Holm: 0.001 <= 0.05/4, 0.02 > 0.05/3 -> one selected; min(1 x 0.05/4, 0.05/3)
    assert shown_threshold(p, 0.05, "holm") == pytest.approx(0.0125)
    assert shown_threshold([0.001, 0.002], 0.05, "holm") == pytest.approx(0.05)
    assert shown_threshold(p, 0.05, "none") == 0.05


def test_selected_intervals_keep_the_false_coverage_rate() -> None:
    """Benjamini and Yekutieli's promise: per experiment, the share of the rows called better or
    worse whose shown interval misses the true change (0 where none is called) averages at most
    alpha; the unadjusted 95% intervals of the same rows miss more."""
    rng = np.random.default_rng(9)
    settings = Settings(baseline="A")
    fcr = fcr95 = 0.0
    called = 0
    experiments = 300
    truth = np.log(np.array([1.0] * 6 + [1.01, 1.02, 1.03, 1.05]))
    for _ in range(experiments):
        keys = pair_key(1, 0) + np.arange(12, dtype=np.int64)
        series = [
            Series("w", f"m{i}", "s", "lower", {"A": (keys, np.exp(rng.normal(0, 0.01, 12))),
                                               "B": (keys, np.exp(t + rng.normal(0, 0.01, 12)))})
            for i, t in enumerate(truth)
        ]  # fmt: skip
        rows, _ = judge(series, ["A", "B"], settings)
        chosen = [(r, t) for r, t in zip(rows, np.expm1(truth), strict=True) if r.verdict in DECIDED]
        if chosen:
            called += len(chosen)
            fcr += np.mean([not r.change_ci[0] <= t <= r.change_ci[1] for r, t in chosen])
            fcr95 += np.mean([not r.change_ci95[0] <= t <= r.change_ci95[1] for r, t in chosen])
    assert called > 300
    assert fcr / experiments <= 0.05
    assert fcr95 > fcr


def test_a_change_against_the_medians_is_marked_and_says_why() -> None:
    """The futex case: throughput (higher is better) over 4 blocks, one baseline run disturbed
    (5 M in a block where the variant ran 24 M). The medians fall (24.35 M to 23.2 M) while the
    mean per-block log ratio, pulled by that block, rises by about 40%."""
    from benchlab.report.views import cells

    keys = pair_key(1, 0) + np.arange(4, dtype=np.int64)
    base, variant = np.array([24.0, 25.0, 24.7, 5.0]) * 1e6, np.array([23.0, 23.3, 23.1, 24.0]) * 1e6
    series = [Series("futex", "throughput", "ops/s", "higher", {"A": (keys, base), "B": (keys, variant)})]
    (row,), _ = judge(series, ["A", "B"], Settings(baseline="A"))
    assert row.median < row.baseline_median and row.change > 0.3
    assert row.verdict == "unclear" and not _excludes_zero(row.change_ci)
    assert "medians of the runs move the other way" in row.change_note and "mean of the 4 per-block" in row.change_note
    exported = metric_row(row)
    assert cells.row_change(exported).endswith(cells.AGAINST_MEDIANS)
    (line,) = cells.change_notes([exported, plain_row := exported.model_copy(update={"change_note": None})])
    assert line.startswith(f"{cells.AGAINST_MEDIANS} the change points against the medians of the runs: futex throughput (B).")
    assert cells.change_notes([plain_row]) == []
    # medians and change the same way: no mark
    same_way = [Series("w", "t", "s", "lower", {"A": (keys, base), "B": (keys, base * 1.1)})]
    (plain,), _ = judge(same_way, ["A", "B"], Settings(baseline="A"))
    assert plain.change_note == "" and not cells.row_change(metric_row(plain)).endswith(cells.AGAINST_MEDIANS)


def test_the_table_names_the_intervals_it_shows_and_raw_intervals_shows_the_unadjusted(tmp_path: Path) -> None:
    from benchlab.analysis.analyze import analyze
    from benchlab.report import render
    from benchlab.store import Store
    from tests.unit.test_runner import FakeExecutor, runner, spec

    store = Store(str(tmp_path / "r.db"))
    exp = runner(store, FakeExecutor()).run(spec(variants=[{"name": "a", "env": {"FAKE_WALL": "1.0"}},
                                                           {"name": "b", "env": {"FAKE_WALL": "1.1"}}]))  # fmt: skip
    report = analyze(store.load(exp)).report()
    text = render(report, "table")
    assert "b change [CI]" in text and "corrected level" in text and "95% CI" not in text
    for row in [*report.rows, *report.geomean]:
        if row.verdict != "-":
            lo, hi = row.change_ci
            assert (lo is not None and (lo > 0 or hi < 0)) == (row.verdict in DECIDED)
            assert row.change_ci95 != (None, None) and row.change_ci_level >= 0.95
    lines = [line for line in csv.DictReader(io.StringIO(render(report, "csv"))) if line["verdict"] != "-"]
    assert lines and all(float(line["change_ci_level"]) >= 0.95 and line["change_ci95_low"] for line in lines)
    raw = report.with_raw_intervals()
    assert raw.intervals == "raw" and all(r.change_ci == r.change_ci95 for r in raw.rows)
    assert "b change [95% CI]" in render(raw, "table") and "--raw-intervals" in render(raw, "table")


def test_rows_judged_on_threads_are_the_rows_judged_one_by_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows, and then their intervals once every family's threshold is known, are worked out on a
    thread per CPU where there are many: what they hold is what judging them in turn gives."""
    from benchlab.stats import judge as judging

    rng = np.random.default_rng(7)
    cases = []
    while len(cases) < 20:
        series, variants = _experiment(rng)
        if len(series) * (len(variants) - 1) > 8:  # enough rows for threads
            cases.append((series, variants))
    settings = Settings(baseline="A", correction="bh", margin=0.02)
    threaded = [judge(series, variants, settings) for series, variants in cases]
    monkeypatch.setattr(judging, "_each", lambda work, items: [work(item) for item in items])
    in_turn = [judge(series, variants, settings) for series, variants in cases]
    fields = ("workload", "metric", "variant", "change", "change_ci", "change_ci_level", "p", "q", "verdict", "note")
    for (rows_a, geo_a), (rows_b, geo_b) in zip(threaded, in_turn, strict=True):
        for a, b in zip([*rows_a, *geo_a], [*rows_b, *geo_b], strict=True):
            assert repr([getattr(a, f, None) for f in fields]) == repr([getattr(b, f, None) for f in fields])  # NaN too
