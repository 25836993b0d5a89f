"""A metric value as every layer sees it: measured by `measure`, stored by `store`, judged by `stats`;
and the names of the metrics the launcher records for every run, which `stats` judges by family."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Direction = Literal["lower", "higher", "none"]


@dataclass(frozen=True)
class Metric:
    name: str
    value: float
    unit: str
    direction: Direction


# the launcher's metrics, every name `measure.rusage.usage_metrics` gives: a workload's own metric of one of these names is stored
# under its benchmark's name (`sys.build:user`), never beside the launcher's
RESERVED = frozenset({
    "wall", "user", "sys", "max_rss", "minor_faults", "major_faults", "voluntary_switches", "involuntary_switches",
    "tree_peak", "rss_mean", "pss_mean", "pss_peak", "task_clock", "page_faults", "context_switches",
    "cpu_migrations", "instructions", "ipc", "branch_miss_rate", "cache_miss_rate",
})  # fmt: skip

# the process's CPU time: what explains a change of its outcome (judged as a secondary family)
PROCESS_TIMES = frozenset({"user", "sys"})
# memory, faults, context switches and perf counts describe how the work ran: shown with their
# change, judged only where a spec gives them a direction (see stats/families.py)
CHARACTERISTICS = RESERVED - PROCESS_TIMES - {"wall"}
