"""The metrics every run records from the launcher, whatever the workload: the kernel's
wait4() account, the tree's memory (its cgroup's peak; RSS and PSS over time where
sampled), and the perf counters that describe how the work ran."""

from __future__ import annotations

from collections.abc import Mapping

from benchlab.measure.process import Usage
from benchlab.metrics import Metric


def usage_metrics(u: Usage) -> list[Metric]:
    return [
        Metric("wall", u.wall_s, "s", "lower"),
        Metric("user", u.user_s, "s", "lower"),
        Metric("sys", u.sys_s, "s", "lower"),
        Metric("max_rss", float(u.max_rss_kib), "KiB", "lower"),
        Metric("minor_faults", float(u.minor_faults), "count", "lower"),
        Metric("major_faults", float(u.major_faults), "count", "lower"),
        Metric("voluntary_switches", float(u.voluntary_switches), "count", "lower"),
        Metric("involuntary_switches", float(u.involuntary_switches), "count", "lower"),
        *memory_metrics(u),
        *characteristics(u.counters),
    ]


def memory_metrics(u: Usage) -> list[Metric]:
    """The footprint of the whole tree: its peak together (max_rss is one process's), and
    where sampled, its mean RSS and PSS over the run (what a decay setting trades for time)."""
    found = [
        ("tree_peak", u.tree_peak_kib),
        ("rss_mean", u.memory.get("rss_mean_kib")),
        ("pss_mean", u.memory.get("pss_mean_kib")),
        ("pss_peak", u.memory.get("pss_peak_kib")),
    ]
    return [Metric(name, float(value), "KiB", "lower") for name, value in found if value is not None]


def _ratio(counts: Mapping[str, float], part: str, whole: str) -> float | None:
    if part in counts and counts.get(whole, 0) > 0:
        return counts[part] / counts[whole]
    return None


def characteristics(counts: Mapping[str, float]) -> list[Metric]:
    """Perf counts as workload characteristics. They carry no direction: they explain a
    change in the outcome (a drop in IPC, more migrations) rather than being the outcome,
    and judging them would only widen the correction over the metrics that are."""
    found = [
        ("task_clock", counts["task_clock_ns"] / 1e9 if "task_clock_ns" in counts else None, "s"),
        ("page_faults", counts.get("page_faults"), "count"),
        ("context_switches", counts.get("context_switches"), "count"),
        ("cpu_migrations", counts.get("cpu_migrations"), "count"),
        ("instructions", counts.get("instructions"), "count"),
        ("ipc", _ratio(counts, "instructions", "cycles"), "instr/cycle"),
        ("branch_miss_rate", _ratio(counts, "branch_misses", "branches"), "fraction"),
        ("cache_miss_rate", _ratio(counts, "cache_misses", "cache_references"), "fraction"),
    ]
    return [Metric(name, float(value), unit, "none") for name, value, unit in found if value is not None]
