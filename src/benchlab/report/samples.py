"""The runs as peers' tools count them: per workload and variant, the successful timed runs in
the order they ran, which is what hyperfine calls a command's runs and Google Benchmark a
benchmark's repetitions. The formats that peers read (hyperfine_json, gbench_format) draw
these groups, so they name and order them alike.

Warm-up runs are left out (hyperfine and Google Benchmark leave theirs out too), and so are
failed runs, which have no metrics: benchlab's own report lists them. Groups are the report's
columns: where runs came from several hosts (merged with `benchlab import`) the analysis has
named each run's variant `variant@host` already (`analysis.environments.split_by_host`), and a
virtual machine's guest is one column with its machine's native runs.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from benchlab.report_model import Report, Run


@dataclass(frozen=True)
class Sample:
    workload: str
    variant: str  # as the report's columns name it
    runs: list[Run]


def workload_order(report: Report) -> list[str]:
    """The spec's workloads in its order, then any other workload the runs name (an imported
    bundle's), in the order they first ran."""
    named = [str(w.get("name")) for w in report.experiment.spec.get("workloads", []) if isinstance(w, dict)]
    return list(dict.fromkeys([*named, *(run["workload"] for run in report.runs)]))


def samples(report: Report) -> list[Sample]:
    """Every workload x variant with at least one successful timed run: workloads in the spec's
    order, variants in the report's (the baseline first), runs in the order they ran."""
    grouped: dict[tuple[str, str], list[Run]] = defaultdict(list)
    for run in report.runs:
        if run["status"] == "ok" and not run["warmup"]:
            grouped[(run["workload"], run["variant"])].append(run)
    variants = list(dict.fromkeys([*report.variants, *(v for _, v in grouped)]))
    return [
        Sample(workload, variant, grouped[(workload, variant)])
        for workload in workload_order(report)
        for variant in variants
        if (workload, variant) in grouped
    ]
