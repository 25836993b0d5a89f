"""Whole-command times: best of N, median, and the change said as "Nx faster/slower"."""

from __future__ import annotations

import pytest

from benchlab.report import render
from benchlab.report.views.times_grid import grid, ratio
from benchlab.report_model import Experiment, MetricRow, Report
from benchlab.terms import PARAMETRIC


def row(variant: str, metric: str, median: float, best: float, change: float | None, ci: list[float | None], *,
        unit: str = "s", base: float = 10.0, workload: str = "build", pairs: int = 5, test: str = PARAMETRIC,
        log_scale: bool = True) -> MetricRow:  # fmt: skip
    return MetricRow(workload=workload, metric=metric, unit=unit, direction="lower", variant=variant, n=5, pairs=pairs,
                     median=median, median_ci=(None, None), best=best, baseline_median=base, baseline_best=base * 0.95,
                     change=change, change_ci=(ci[0], ci[1]), change_ci90=(None, None), log_scale=log_scale, test=test,
                     p=None, q=None, verdict="better", blocks_needed=None, family="primary", note=None, spread=None)  # fmt: skip


def report(rows: list[MetricRow]) -> Report:
    return REPORT.model_copy(update={"rows": rows})


REPORT = Report(
    experiment=Experiment(id=1, name="os", created_at=0.0, spec={}, host=None, hosts={}, workload_versions={}, calibration={}),
    baseline="linux", variants=["linux", "other@far"], alpha=0.05, margin=0.01, correction="bh",
    rows=[row("other@far", "sys", 1.0, 0.9, 0.25, [0.1, 0.4]), row("other@far", "wall", 8.77, 8.5, -0.1228, [-0.15, -0.09]),
          row("other@far", "max_rss", 1.0, 1.0, 0.0, [0.0, 0.0])],
    geomean=[], scores=None, sweep=None, failed_runs=[], failed_benchmarks=[], warnings=[], runs=[],
)  # fmt: skip


def test_a_change_reads_as_times_faster_or_slower_with_the_interval_turned_round() -> None:
    assert ratio(-0.1228, [-0.15, -0.09]) == "1.14x faster [1.10, 1.18]"  # 10 s against 8.77 s
    assert ratio(0.25, [0.1, 0.4]) == "1.25x slower [1.10, 1.40]"
    assert ratio(0.0, [None, None], missing="n/a: 2 blocks") == "1.00x faster [n/a: 2 blocks]"
    assert ratio(None, [None, None]) == "n/a"
    # a shift (times that can be 0) down to nothing is no ratio: it stays a change of the baseline's median
    assert ratio(-1.0, [None, None], log_scale=False, missing="n/a: 2 blocks") == "-100.0% [n/a: 2 blocks] shift"
    assert ratio(-0.5, [-1.2, 0.1], log_scale=False) == "-50.0% [-120.0, +10.0] shift"
    assert ratio(-0.5, [-0.6, 0.1], log_scale=False) == "2.00x faster [0.91, 2.50] shift"


def test_the_grid_has_times_only_in_real_user_sys_order_with_a_column_per_variant_or_host() -> None:
    g = grid(REPORT)
    assert g.header == ["workload", "time", "linux best", "linux median", "other@far best", "other@far median",
                        "other@far vs linux [CI]"]  # fmt: skip
    assert [r[1] for r in g.rows] == ["wall", "sys"]  # max_rss is not a time
    assert g.rows[0][2:] == ["9.500 s", "10.00 s", "8.500 s", "8.770 s", "1.14x faster [1.10, 1.18]"]


def test_a_row_without_an_interval_says_why_under_the_interval_header() -> None:
    """The paired t gives an interval from 3 blocks on (the signed-rank one from 6): below that,
    or where every block's difference is the same, the cell says so instead of leaving it out."""
    rows = [
        row("other@far", "wall", 8.77, 8.5, -0.1228, [None, None], pairs=2, test="wilcoxon"),
        row("other@far", "user", 8.77, 8.5, -0.1228, [-0.15, -0.09], pairs=3),
        row("other@far", "sys", 1.0, 1.0, 0.0, [None, None], pairs=4, test="wilcoxon", log_scale=False),
        row("other@far", "real_time", 8.77, 8.5, -0.1228, [None, None], pairs=0),  # hosts merged: runs unpaired
    ]
    cells = {r[1]: r[-1] for r in grid(report(rows)).rows}
    assert cells == {
        "wall": "1.14x faster [n/a: 2 blocks]",
        "user": "1.14x faster [1.10, 1.18]",  # 3 blocks: the paired t's interval
        "sys": "1.00x faster [n/a: all alike] shift",
        "real_time": "1.14x faster [n/a: 5 runs]",
    }
    zero = row("other@far", "sys", 0.01, 0.0, None, [None, None], base=0.0, log_scale=False)
    assert grid(report([zero])).rows[0][-1] == "n/a: baseline median 0"  # a shift over nothing is no change


def test_times_read_in_one_unit_per_table_and_an_operations_time_in_its_own() -> None:
    rows = [
        row("other@far", "wall", 1.2, 1.1, 0.1, [0.0, 0.2], workload="sys.build", base=1.13),
        row("other@far", "sys", 0.0004, 0.0003, 0.1, [0.0, 0.2], workload="sys.build", base=0.0005),
        row("other@far", "real_time", 1_134_895_790.0, 1e9, 0.1, [0.0, 0.2], unit="ns", workload="sys.build", base=1.1e9),
        row("other@far", "wall", 0.19, 0.18, 0.1, [0.0, 0.2], workload="alloc.churn", base=0.18),
        row("other@far", "real_time", 187.0, 180.0, 0.1, [0.0, 0.2], unit="ns", workload="alloc.churn", base=190.0),
    ]
    shown = {(r[0], r[1]): r[2:4] + r[5:6] for r in grid(report(rows)).rows}
    assert shown == {
        ("alloc.churn", "wall"): ["0.1710 s", "0.1800 s", "0.1900 s"],
        ("alloc.churn", "real_time"): ["180.5 ns", "190.0 ns", "187.0 ns"],  # one operation's time: another kind
        ("sys.build", "wall"): ["1.073 s", "1.130 s", "1.200 s"],
        ("sys.build", "sys"): ["0.000475 s", "0.000500 s", "0.000400 s"],
        ("sys.build", "real_time"): ["1.045 s", "1.100 s", "1.135 s"],  # the whole build's, beside its wall
    }
    quick = [row("b", m, 0.012, 0.011, 0.1, [0.0, 0.2], base=0.0121) for m in ("wall", "user", "sys")]
    assert {r[3] for r in grid(report(quick)).rows} == {"12.10 ms"}  # under a second: ms


@pytest.mark.parametrize("fmt", ["table", "md"])
def test_the_times_view_renders_in_every_text_format(fmt: str) -> None:
    text = render(REPORT, fmt, "times")
    assert "1.25x slower [1.10, 1.40]" in text and "best of N" in text


def test_an_interval_reaching_minus_100_percent_is_an_unbounded_speed_up_not_a_division_by_zero() -> None:
    # a log ratio's bound far enough below zero underflows to a change of exactly -100%
    assert ratio(-0.5, (-1.0, -0.2)) == "2.00x faster [1.25, inf]"
    assert ratio(0.5, (-1.0, 2.0)) == "1.50x slower [0.00, 3.00]"
