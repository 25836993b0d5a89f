"""The benchstat format: Go benchstat's layout for any report, with benchlab's verdicts deciding what
is shown as a change."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from benchlab.analysis.analyze import analyze
from benchlab.errors import SpecError
from benchlab.metrics import Metric
from benchlab.report import render
from benchlab.report.benchstat import _number
from benchlab.report_model import Report
from benchlab.store import NewRun, Store
from tests.conftest import experiment_rows


def experiment(tmp_path: Path) -> Report:
    """Two workloads, 8 blocks; variant `slow` is 1.5x the baseline on `a`, and on `b` the same in every block."""
    store = Store(str(tmp_path / "r.db"))
    spec = {
        "name": "e", "blocks": 8, "workloads": [{"name": "a", "command": ["true"]}, {"name": "b", "command": ["true"]}],
        "variants": [{"name": "base"}, {"name": "slow"}],
    }  # fmt: skip
    exp = store.create_experiment(**experiment_rows(spec, "1"))
    host = store.host_id({"hostname": "lab", "cpu_model": "cpu", "kernel": "6.1"})
    noise = np.exp(np.random.default_rng(1).normal(0, 0.01, 8))
    for block in range(8):
        for position, (workload, variant, factor) in enumerate(
            [("a", "base", 1.0), ("a", "slow", 1.5), ("b", "base", 0.2), ("b", "slow", 0.2)]
        ):
            store.record_run(exp, NewRun(host_id=host, workload=workload, variant=variant, block=block, warmup=False, position=position, status="ok", started_at=1.0, ended_at=2.0, metrics=[Metric("wall", float(factor * noise[block]), "s", "lower"), Metric("max_rss", 2048.0, "KiB", "none")]))  # fmt: skip
    return analyze(store.load(exp)).report()


def test_the_layout_is_benchstats(tmp_path: Path) -> None:
    lines = render(experiment(tmp_path), "benchstat").splitlines()
    assert lines[:4] == ["experiment: e", "host: lab", "cpu: cpu", "kernel: 6.1"]
    top, second, a, b, geomean = lines[5:10]
    assert top.split("│")[1].strip() == "base" and top.split("│")[2].strip() == "slow"
    assert [m for m, c in enumerate(top) if c == "│"] == [m for m, c in enumerate(second) if c == "│"]
    assert second.split("│")[1].strip() == "wall (s)" and second.split("│")[2].split() == ["wall", "(s)", "vs", "base"]
    assert a.split()[:7] == ["a", "1.004", "±", "2%", "1.506", "±", "2%"]
    assert a.endswith("+50.00% (p=0.008 n=8)")  # decided (worse), paired by block: n is the pairs
    assert b.split()[:4] == ["b", "200.8m", "±", "2%"] and b.endswith("~ (p=1.000 n=8) ¹")  # equal in every block
    assert geomean.split()[:3] == ["geomean", "449.0m", "549.9m"] and geomean.endswith("+22.47%")
    same = "¹ same: the 90% interval of the change lies within the margin (±1.0% unless the metric sets its own)"
    assert lines[10:12] == ["", same]
    rss = lines[lines.index(next(line for line in lines if "max_rss (B)" in line)) + 1]
    assert rss.split()[:4] == ["a", "2.000Mi", "±", "0%"] and rss.endswith("~ (p=1.000 n=8) ¹")
    assert "¹ not judged: a characteristic (memory, faults, switches), or the only variant" in lines


def test_only_the_metric_rows_are_drawn(tmp_path: Path) -> None:
    report = experiment(tmp_path)
    assert render(report, "benchstat", "metrics") == render(report, "benchstat")
    with pytest.raises(SpecError, match="the benchstat format draws the metric rows only: it has no 'times' view"):
        render(report, "benchstat", "times")


@pytest.mark.parametrize(
    ("value", "unit", "shown"),
    [
        (0.01243, "s", ("12.43m", "s")),
        (1.5e9, "ns", ("1.500", "s")),
        (1638.4, "KiB", ("1.600Mi", "B")),
        (154.0, "count", ("154.0", "count")),
        (2.5e6, "1/s", ("2.500M", "1/s")),
        (0.0, "s", ("0", "s")),
    ],
)
def test_numbers_take_four_digits_and_a_prefix_of_a_base_unit(value: float, unit: str, shown: tuple[str, str]) -> None:
    assert _number(value, unit) == shown
