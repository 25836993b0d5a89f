"""Google Benchmark's JSON (what `--benchmark_out_format=json` writes), so that Google's
tools/compare.py, and anything else that reads a benchmark binary's output, read benchlab's runs.

A benchmark is a workload's benchmark under one variant, named `WORKLOAD/variant:VARIANT`
(`WORKLOAD/BENCHMARK/variant:VARIANT` for a binary of several benchmarks, such as
`sys.spawn`'s methods). Each successful timed run is one repetition (`run_type`
"iteration"), in the order they ran, followed by the `mean`, `median` and `stddev` aggregates
of the runs, as a binary run with `--benchmark_repetitions` writes them. Built-in workloads
and Google Benchmark binaries give the values the binary reported in the run (`real_time`,
`cpu_time` in its `time_unit`, rates and counters); a command gives its wall time as
`real_time` and its user plus system time as `cpu_time`, in nanoseconds. `iterations` is 1: a
run's value is stored, not how many iterations the binary made of it.

Google Benchmark reduces nothing across processes; neither does this format: one run is one
repetition, so `compare.py filters FILE 'variant:base$' 'variant:new$'` runs its U test on the
runs benchlab judged (benchlab's own verdicts pair them by block, which the U test cannot).
"""

from __future__ import annotations

import datetime
import json
import statistics
from collections.abc import Callable, Sequence
from typing import Any

from benchlab.metrics import RESERVED
from benchlab.report.choices import View
from benchlab.report.samples import Sample, samples
from benchlab.report_model import Report

TIMES = ("real_time", "cpu_time")
NS_PER_S = 1e9
AGGREGATES: dict[str, Callable[[Sequence[float]], float]] = {
    "mean": statistics.fmean,
    "median": statistics.median,
    "stddev": statistics.stdev,
}
# what an entry says of itself: a counter of the same name would overwrite it, so it is left out
ENTRY = frozenset({
    "name", "family_index", "per_family_instance_index", "run_name", "run_type", "repetitions", "repetition_index",
    "threads", "iterations", "real_time", "cpu_time", "time_unit", "aggregate_name", "aggregate_unit",
})  # fmt: skip


def _fields(names: list[str]) -> dict[str, dict[str, str]]:
    """Benchmark -> its fields -> the stored metric, from the metric names a workload's runs have:
    `real_time` and the rest for a binary's only benchmark, `BENCHMARK:real_time` and the rest for
    each of several (a field goes to the longest benchmark name it starts with); a workload
    without `real_time` (a command) gives its wall time and CPU time instead."""
    benchmarks = [m.removesuffix(":real_time") for m in names if m.endswith(":real_time")]
    if benchmarks:
        found: dict[str, dict[str, str]] = {b: {} for b in benchmarks}
        longest_first = sorted(benchmarks, key=len, reverse=True)
        for metric in names:
            owner = next((b for b in longest_first if metric.startswith(f"{b}:")), None)
            if owner is not None:
                found[owner][metric.removeprefix(f"{owner}:")] = metric
        return found
    if "real_time" in names:
        return {"": {m: m for m in names if m not in RESERVED}}
    return {"": {}} if "wall" in names else {}


def _values(run_metrics: dict[str, float], fields: dict[str, str]) -> dict[str, float]:
    """A run's values of one benchmark, by field; a command's wall and CPU time as its times, in
    nanoseconds (Google Benchmark's default unit, which compare.py shows as whole numbers)."""
    if not fields:
        cpu = run_metrics.get("user", 0.0) + run_metrics.get("sys", 0.0)
        return {"real_time": run_metrics["wall"] * NS_PER_S, "cpu_time": cpu * NS_PER_S}
    return {field: run_metrics[metric] for field, metric in fields.items() if metric in run_metrics}


def _numbers(values: dict[str, float], unit: str) -> dict[str, Any]:
    """The fields an entry carries beside its identity: the times and their unit, `threads` as
    Google writes it (an integer) where the binary reported it, and every rate and counter."""
    shown: dict[str, Any] = {**{k: values[k] for k in TIMES}, "time_unit": unit}
    if "threads" in values:
        shown["threads"] = round(values["threads"])
    return shown | {k: v for k, v in values.items() if k not in ENTRY}


def _name(sample: Sample, benchmark: str) -> str:
    """`WORKLOAD[/BENCHMARK]/variant:VARIANT`; a built-in's benchmarks are named after it already
    (`sys.spawn/fork`), so its name is not said twice."""
    named = benchmark if benchmark.startswith(f"{sample.workload}/") else "/".join(p for p in (sample.workload, benchmark) if p)
    return f"{named}/variant:{sample.variant}"


def _entries(sample: Sample, identity: dict[str, Any], fields: dict[str, str], unit: str) -> list[dict[str, Any]]:
    """The runs of one benchmark as repetitions, then their aggregates."""
    name = identity["name"]
    per_run = [_values(run["metrics"], fields) for run in sample.runs]
    per_run = [values for values in per_run if all(k in values for k in TIMES)]
    entries = [
        {**identity, "run_type": "iteration", "repetitions": len(per_run), "repetition_index": i, "threads": 1,
         "iterations": 1, **_numbers(values, unit)}
        for i, values in enumerate(per_run)
    ]  # fmt: skip
    if len(per_run) < 2:  # Google Benchmark writes aggregates of repetitions only
        return entries
    keys = [k for k in per_run[0] if all(k in values for values in per_run)]
    for aggregate, reduce in AGGREGATES.items():
        values = {k: reduce([v[k] for v in per_run]) for k in keys}
        entries.append(
            {**identity, "name": f"{name}_{aggregate}", "run_type": "aggregate", "repetitions": len(per_run), "threads": 1,
             "aggregate_name": aggregate, "aggregate_unit": "time", "iterations": len(per_run), **_numbers(values, unit)}
        )  # fmt: skip
    return entries


def _context(report: Report) -> dict[str, Any]:
    """What Google Benchmark says of the machine, from the fingerprint of the host that ran most."""
    host = report.experiment.host or {}
    created = datetime.datetime.fromtimestamp(report.experiment.created_at, datetime.UTC)
    context: dict[str, Any] = {"date": created.isoformat(timespec="seconds"), "executable": "benchlab"}
    if host.get("hostname"):
        context["host_name"] = host["hostname"]
    if isinstance(host.get("cpus_online"), int):
        context["num_cpus"] = host["cpus_online"]
    return context | {"library_build_type": "release", "experiment": report.experiment.name}


def document(report: Report) -> dict[str, Any]:
    units = {(row.workload, row.metric): row.unit for row in report.rows}
    entries: list[dict[str, Any]] = []
    families: dict[tuple[str, str], int] = {}
    instances: dict[int, int] = {}
    for sample in samples(report):
        names = list(dict.fromkeys(metric for run in sample.runs for metric in run["metrics"]))
        by_benchmark = _fields(names)
        for benchmark, fields in by_benchmark.items():
            unit = units.get((sample.workload, fields["real_time"]), "ns") if fields else "ns"
            family = families.setdefault((sample.workload, benchmark), len(families))
            instance = instances[family] = instances.get(family, -1) + 1
            name = _name(sample, benchmark)
            identity = {"name": name, "family_index": family, "per_family_instance_index": instance, "run_name": name}
            entries += _entries(sample, identity, fields, unit)
    return {"context": _context(report), "benchmarks": entries}


def render(report: Report, view: View = "auto") -> str:
    return json.dumps(document(report), indent=2) + "\n"
