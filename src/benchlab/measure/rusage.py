"""The metrics every run records from wait4(), whatever the workload."""

from __future__ import annotations

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
    ]
