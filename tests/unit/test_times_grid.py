"""Whole-command times: best of N, median, and the change said as "Nx faster/slower"."""

from __future__ import annotations

import pytest

from benchlab.report import render
from benchlab.report.times_grid import grid, ratio
from benchlab.stats.report_model import Experiment, MetricRow, Report


def row(variant: str, metric: str, median: float, best: float, change: float | None, ci: list[float | None]) -> MetricRow:
    return MetricRow(workload="build", metric=metric, unit="s", direction="lower", variant=variant, n=5, pairs=5,
                     median=median, median_ci=(None, None), best=best, baseline_median=10.0, baseline_best=9.5,
                     change=change, change_ci=(ci[0], ci[1]), change_ci90=(None, None), log_scale=True, test="wilcoxon",
                     p=None, q=None, verdict="better", blocks_needed=None, family="primary", note=None, spread=None)  # fmt: skip


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
    assert ratio(0.0, [None, None]) == "1.00x faster"
    assert ratio(None, [None, None]) == "n/a"


def test_the_grid_has_times_only_in_real_user_sys_order_with_a_column_per_variant_or_host() -> None:
    g = grid(REPORT)
    assert g.header == ["workload", "time", "linux best", "linux median", "other@far best", "other@far median",
                        "other@far vs linux [95% CI]"]  # fmt: skip
    assert [r[1] for r in g.rows] == ["wall", "sys"]  # max_rss is not a time
    assert g.rows[0][2:] == ["9.500 s", "10.00 s", "8.500 s", "8.770 s", "1.14x faster [1.10, 1.18]"]


@pytest.mark.parametrize("fmt", ["table", "md"])
def test_the_times_view_renders_in_every_text_format(fmt: str) -> None:
    text = render(REPORT, fmt, "times")
    assert "1.25x slower [1.10, 1.40]" in text and "best of N" in text
