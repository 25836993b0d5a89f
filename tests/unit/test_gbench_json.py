from __future__ import annotations

import json
import math

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
    from benchlab.measure.rusage import usage_metrics
    from benchlab.metrics import RESERVED

    counts = {k: 1.0 for k in ("task_clock_ns", "page_faults", "context_switches", "cpu_migrations", "instructions",
                               "cycles", "branches", "branch_misses", "cache_references", "cache_misses")}  # fmt: skip
    full = Usage(1, 1, 1, 1, 1, 1, 1, 1, counters=counts, tree_peak_kib=1,
                 memory={"rss_mean_kib": 1, "pss_mean_kib": 1, "pss_peak_kib": 1})  # fmt: skip
    assert {m.name for m in usage_metrics(full)} == RESERVED  # the list is every name a run records
    names = {m.name for m in benchmark_metrics({"benchmarks": [entry("sys.build", 5.0, user=3.0, tasks=7.0)]})}
    assert names == {"real_time", "cpu_time", "sys.build:user", "tasks"}


def test_a_failed_benchmark_loses_only_its_own_metrics() -> None:
    from benchlab.workloads.gbench_json import benchmark_results

    doc = {"benchmarks": [entry("BM_a", 10.0), {**entry("BM_b", 0.0), "error_occurred": True, "error_message": "no device"}]}
    metrics, failed = benchmark_results(doc)
    assert {m.name for m in metrics} == {"BM_a:real_time", "BM_a:cpu_time"}  # named as when BM_b runs
    assert failed == {"BM_b": "no device"}
    with pytest.raises(WorkloadFailed, match="BM_b reported an error: no device"):
        benchmark_metrics(doc)  # the probe's workloads: one benchmark each, any error fails the run


def test_a_failed_repetition_fails_its_benchmark_and_all_failed_fails_the_run() -> None:
    from benchlab.workloads.gbench_json import benchmark_results

    doc = {"benchmarks": [entry("BM_a", 10.0), {**entry("BM_a", 1.0), "skipped": True, "skip_message": "flaky"}, entry("c", 1.0)]}
    metrics, failed = benchmark_results(doc)
    assert failed == {"BM_a": "flaky"} and {m.name for m in metrics} == {"c:real_time", "c:cpu_time"}
    with pytest.raises(WorkloadFailed, match="BM_a reported an error: flaky \\(and 1 other"):
        benchmark_results({"benchmarks": [doc["benchmarks"][1], {**entry("d", 1.0), "error_occurred": True}]})


def test_control_characters_in_a_message_are_still_json() -> None:
    raw = b'{"benchmarks": [{"name": "x", "error_occurred": true, "error_message": "no \x1b[31mdevice"}]}'
    assert parse_document(raw)["benchmarks"][0]["error_message"] == "no \x1b[31mdevice"


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan])
def test_a_value_no_statistic_can_use_fails_only_its_benchmark(value: float) -> None:
    from benchlab.workloads.gbench_json import benchmark_results

    doc = {"benchmarks": [entry("BM_a", 10.0), entry("BM_b", 1.0, rate=value)]}
    metrics, failed = benchmark_results(doc)
    assert {m.name for m in metrics} == {"BM_a:real_time", "BM_a:cpu_time"}
    assert failed == {"BM_b": f"reported rate = {value}, not a finite number"}
    with pytest.raises(WorkloadFailed, match="not a finite number"):
        benchmark_results({"benchmarks": [entry("x", value)]})


def test_names_a_binary_prints_become_labels_every_database_takes() -> None:
    from benchlab.spec.fields import METRIC_NAME_MAX

    long_a, long_b = "BM_" + "t" * 300 + "a", "BM_" + "t" * 300 + "b"
    doc = {"benchmarks": [entry("BM_\x1b[31mred", 1.0), entry(long_a, 2.0), entry(long_b, 3.0)]}
    names = {m.name for m in benchmark_metrics(doc)}
    assert "BM_\\x1b[31mred:real_time" in names
    assert all(len(n) <= METRIC_NAME_MAX and n.isprintable() for n in names)
    assert len(names) == 6  # two long names that differ at the end stay two (a digest of the whole)
    assert names == {m.name for m in benchmark_metrics(doc)}  # the same labels in every run


@pytest.mark.parametrize("unit", ["minutes", 3, None])
def test_a_time_unit_google_benchmark_never_writes_is_a_malformed_entry(unit: object) -> None:
    with pytest.raises(WorkloadFailed, match="malformed entry .*time_unit"):
        benchmark_metrics({"benchmarks": [{**entry("x", 1.0), "time_unit": unit}]})
