from __future__ import annotations

import json

import pytest

from benchlab.errors import WorkloadFailed
from benchlab.workloads.gbench_json import benchmark_metrics, parse_document


def entry(name: str, real: float, **extra: object) -> dict[str, object]:
    return {"name": name, "run_name": name, "run_type": "iteration", "iterations": 100, "real_time": real,
            "cpu_time": real * 0.9, "time_unit": "ns", **extra}  # fmt: skip


def test_repetitions_reduce_to_their_median_and_aggregates_are_ignored() -> None:
    doc = {"benchmarks": [
        entry("BM_a", 10.0), entry("BM_a", 30.0), entry("BM_a", 20.0),
        {**entry("BM_a", 999.0), "run_type": "aggregate", "aggregate_name": "mean"},
        entry("BM_b/64", 5.0, bytes_per_second=1e9, my_counter=3.0),
    ]}  # fmt: skip
    metrics = {m.name: m for m in benchmark_metrics(doc)}
    assert metrics["BM_a:real_time"].value == 20.0
    assert metrics["BM_a:real_time"].direction == "lower"
    assert metrics["BM_b/64:bytes_per_second"].direction == "higher"
    assert metrics["BM_b/64:my_counter"].direction == "none"


def test_spec_directions_and_probe_extras_apply() -> None:
    doc = {"benchmarks": [entry("x", 1.0, lat=5.0, benchlab={"lat": {"unit": "ns", "direction": "lower"}}, other=2.0)]}
    metrics = {m.name: m for m in benchmark_metrics(doc, {"other": "higher"})}
    assert metrics["lat"].unit == "ns" and metrics["lat"].direction == "lower"
    assert metrics["other"].direction == "higher"


@pytest.mark.parametrize(
    "bad",
    [
        {**entry("x", 1.0), "error_occurred": True, "error_message": "boom"},
        {**entry("x", 1.0), "skipped": True, "skip_message": "not here"},
    ],
)
def test_errors_and_skips_fail_the_run(bad: dict[str, object]) -> None:
    with pytest.raises(WorkloadFailed, match="boom|not here"):
        benchmark_metrics({"benchmarks": [bad]})


def test_banner_before_json_is_tolerated_and_garbage_fails() -> None:
    doc = parse_document(b"some banner\n" + json.dumps({"benchmarks": [entry("x", 1.0)]}).encode())
    assert benchmark_metrics(doc)[0].name == "real_time"
    with pytest.raises(WorkloadFailed):
        parse_document(b"not json at all")
    with pytest.raises(WorkloadFailed, match="no results"):
        benchmark_metrics({"benchmarks": []})


def test_a_counter_named_like_a_run_metric_keeps_its_benchmark_name() -> None:
    from benchlab.measure.process import Usage
    from benchlab.measure.rusage import RESERVED, usage_metrics

    counts = {k: 1.0 for k in ("task_clock_ns", "page_faults", "context_switches", "cpu_migrations", "instructions",
                               "cycles", "branches", "branch_misses", "cache_references", "cache_misses")}  # fmt: skip
    full = Usage(1, 1, 1, 1, 1, 1, 1, 1, counters=counts, tree_peak_kib=1,
                 memory={"rss_mean_kib": 1, "pss_mean_kib": 1, "pss_peak_kib": 1})  # fmt: skip
    assert {m.name for m in usage_metrics(full)} == RESERVED  # the list is every name a run records
    names = {m.name for m in benchmark_metrics({"benchmarks": [entry("sys.build", 5.0, user=3.0, tasks=7.0)]})}
    assert names == {"real_time", "cpu_time", "sys.build:user", "tasks"}
