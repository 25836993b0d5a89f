"""Google Benchmark JSON into metrics, for the probe and for any third-party binary.

Repetitions inside one process are reduced to their median (aggregate rows
are not samples). A benchmark with `error_occurred` or `skipped` entries
(`SkipWithError`, `SkipWithMessage`) gives no metrics: `benchmark_results` keeps
the binary's other benchmarks and returns the failures beside them, to be
recorded with the run and shown in reports; `benchmark_metrics` (the probe's
workloads, one benchmark each) fails the run instead.
"""

from __future__ import annotations

import json
import math
import statistics
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from benchlab.errors import WorkloadFailed
from benchlab.metrics import RESERVED, Direction, Metric
from benchlab.spec.fields import UNIT_MAX, storable_label, without_nul

MESSAGE_MAX = 1000  # of a failed benchmark's message, as stored with the run
TIME_UNITS = ("ns", "us", "ms", "s")  # what Google Benchmark writes as `time_unit`
_NOT_COUNTERS = {
    "name", "family_index", "per_family_instance_index", "run_name", "run_type", "repetitions",
    "repetition_index", "threads", "iterations", "real_time", "cpu_time", "time_unit",
    "aggregate_name", "aggregate_unit", "error_occurred", "error_message", "skipped", "skip_message",
    "label", "checksum", "benchlab", "items_per_second", "bytes_per_second", "big_o", "rms",
}  # fmt: skip


def parse_document(stdout: bytes) -> dict[str, Any]:
    text = stdout.decode(errors="replace")
    start = text.find("{")  # some binaries print a banner before the JSON
    try:
        # strict=False: Google Benchmark writes a message's control characters unescaped (shown escaped later)
        doc = json.loads(text[start:], strict=False) if start >= 0 else None
    except json.JSONDecodeError as exc:
        raise WorkloadFailed(f"the benchmark's output is not Google Benchmark JSON: {exc}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("benchmarks"), list):
        raise WorkloadFailed("the benchmark's output has no 'benchmarks' array")
    return doc


class _NotFinite(ValueError):
    """A value that no statistic can use (inf, NaN): the benchmark reporting it failed."""


def _finite(field: str, value: Any) -> float:
    number = float(value)
    if not math.isfinite(number):
        raise _NotFinite(f"reported {field} = {number}, not a finite number")
    return number


def _standard_fields(entry: Mapping[str, Any]) -> list[tuple[str, float, str, Direction]]:
    unit = entry.get("time_unit", "ns")
    if unit not in TIME_UNITS:
        raise ValueError(f"time_unit {str(unit)[:20]!r} is none of {', '.join(TIME_UNITS)}")
    fields: list[tuple[str, float, str, Direction]] = [
        ("real_time", _finite("real_time", entry["real_time"]), unit, "lower"),
        ("cpu_time", _finite("cpu_time", entry["cpu_time"]), unit, "lower"),
    ]
    for rate, rate_unit in (("items_per_second", "1/s"), ("bytes_per_second", "B/s")):
        if isinstance(entry.get(rate), int | float):
            fields.append((rate, _finite(rate, entry[rate]), rate_unit, "higher"))
    raw_extras = entry.get("benchlab")
    extras: dict[str, Any] = raw_extras if isinstance(raw_extras, dict) else {}
    for key, value in entry.items():
        declared = key in extras  # the probe declares some standard fields (threads) as metrics too
        if (key in _NOT_COUNTERS and not declared) or not isinstance(value, int | float) or isinstance(value, bool):
            continue
        raw_info = extras.get(key)
        info: dict[str, Any] = raw_info if isinstance(raw_info, dict) else {}
        direction = info.get("direction", "none")
        unit = storable_label(str(info.get("unit", "")), UNIT_MAX) if info.get("unit") else ""
        fields.append((key, _finite(key, value), unit, direction if direction in ("lower", "higher") else "none"))
    return fields


def benchmark_metrics(doc: Mapping[str, Any], directions: Mapping[str, Direction] | None = None) -> list[Metric]:
    """The metrics of every benchmark (see `benchmark_results`); any failed benchmark fails the run."""
    metrics, failed = benchmark_results(doc, directions)
    if failed:
        name, reason = next(iter(failed.items()))
        raise WorkloadFailed(f"benchmark {name} reported an error: {reason}")
    return metrics


def benchmark_results(
    doc: Mapping[str, Any], directions: Mapping[str, Direction] | None = None
) -> tuple[list[Metric], dict[str, str]]:
    """One metric per (benchmark, field) of the benchmarks that ran, and the message of each one that
    reported an error or a skip; the benchmark prefix is dropped when there is only one benchmark and
    the field does not share a name with what benchlab measures of every run. The run fails only
    when no benchmark gave a result."""
    directions = directions or {}
    per_run: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    failed: dict[str, str] = {}
    for entry in doc["benchmarks"]:
        if not isinstance(entry, dict) or entry.get("run_type") == "aggregate":
            continue
        name = storable_label(str(entry.get("run_name") or entry.get("name")))
        if entry.get("error_occurred") or entry.get("skipped"):
            reason = entry.get("error_message") or entry.get("skip_message") or "no reason given"
            failed[name] = str(without_nul(str(reason)[:MESSAGE_MAX]))
        else:
            per_run[name].append(entry)
    alone = len({*per_run, *failed}) == 1  # a failed benchmark still counts: metric names stay the same run to run
    collected: dict[str, dict[str, list[float]]] = {}
    units: dict[str, tuple[str, Direction]] = {}
    for name, entries in per_run.items():
        if name in failed:  # a repetition failed
            continue
        try:
            fields = [field for entry in entries for field in _standard_fields(entry)]
        except _NotFinite as exc:
            failed[name] = str(exc)
            continue
        except (KeyError, TypeError, ValueError) as exc:
            raise WorkloadFailed(f"benchmark {name} has a malformed entry ({str(exc)[:200]})") from None
        collected[name] = defaultdict(list)
        for field, value, unit, direction in fields:
            metric = storable_label(field if alone and field not in RESERVED else f"{name}:{field}")
            collected[name][metric].append(value)
            units[metric] = (unit, directions.get(metric, direction))
    if not collected:
        if failed:
            name, reason = next(iter(failed.items()))
            more = f" (and {len(failed) - 1} other benchmark(s))" if len(failed) > 1 else ""
            raise WorkloadFailed(f"benchmark {name} reported an error: {reason}{more}")
        raise WorkloadFailed("the benchmark reported no results (check its filter)")
    metrics = [
        Metric(metric, statistics.median(values), *units[metric])
        for per_metric in collected.values()
        for metric, values in per_metric.items()
    ]
    return metrics, failed
