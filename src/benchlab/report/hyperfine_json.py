"""hyperfine's `--export-json` document, so that the scripts shipped beside hyperfine
(plot_whisker.py, plot_histogram.py, plot_progression.py, advanced_statistics.py,
plot_parametrized.py, welch_ttest.py) draw benchlab's runs as they draw hyperfine's.

The schema is hyperfine's `BenchmarkResult` (src/benchmark/benchmark_result.rs) as its JSON
exporter writes it: `{"results": [{"command", "mean", "stddev", "median", "user", "system",
"min", "max", "times", "memory_usage_byte", "exit_codes", "parameters"}]}`, every time in
seconds. One result per workload x variant (`samples`), its command `variant: workload`; its
times are the wall times of the successful timed runs in the order they ran, `exit_codes`
theirs, one per time (failed runs have no wall time: benchlab's report lists them); `user`
and `system` are the mean user and system CPU times, `stddev` the sample standard deviation
(null for a single run, as hyperfine writes it), `memory_usage_byte` every run's peak
resident memory (hyperfine 1.19 and later write it; left out when a run lacks it), and
`parameters` a sweep point's values as text (left out for other variants, as hyperfine
leaves it out without `--parameter-scan`).
"""

from __future__ import annotations

import json
import statistics
from typing import Any

from benchlab.report.choices import View
from benchlab.report.samples import Sample, samples
from benchlab.report_model import Report

KIB = 1024


def _result(sample: Sample, parameters: dict[str, Any]) -> dict[str, Any]:
    timed = [run for run in sample.runs if "wall" in run["metrics"]]
    times = [run["metrics"]["wall"] for run in timed]
    result: dict[str, Any] = {
        "command": f"{sample.variant}: {sample.workload}",
        "mean": statistics.fmean(times),
        "stddev": statistics.stdev(times) if len(times) > 1 else None,
        "median": statistics.median(times),
        "user": statistics.fmean(run["metrics"].get("user", 0.0) for run in timed),
        "system": statistics.fmean(run["metrics"].get("sys", 0.0) for run in timed),
        "min": min(times),
        "max": max(times),
        "times": times,
    }
    if all("max_rss" in run["metrics"] for run in timed):
        result["memory_usage_byte"] = [round(run["metrics"]["max_rss"] * KIB) for run in timed]
    result["exit_codes"] = [run["exit_code"] for run in timed]
    if parameters:
        result["parameters"] = {name: str(value) for name, value in parameters.items()}
    return result


def results(report: Report) -> list[dict[str, Any]]:
    """One hyperfine result per workload x variant that has a timed run with a wall time."""
    points = report.sweep.points if report.sweep else {}
    return [
        _result(sample, points.get(sample.variant, {}))
        for sample in samples(report)
        if any("wall" in run["metrics"] for run in sample.runs)
    ]


def render(report: Report, view: View = "auto") -> str:
    return json.dumps({"results": results(report)}, indent=2) + "\n"
