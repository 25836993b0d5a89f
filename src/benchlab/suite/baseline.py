"""The score baseline: the throughputs a fixed machine measured, one per suite workload.

A workload's score is 1000 x its throughput / the baseline's, so the baseline
machine scores 1000 on every workload. The file keeps the raw samples the
baseline figures are medians of, the suite and workload versions they were
measured on (scores of other versions are never computed), the section weights,
and how and where it was measured. `bench/cpu_baseline.py` writes it.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from benchlab.errors import EnvironmentProblem
from benchlab.terms import SECTION_TITLES

BASELINE_FILE = "cpu-baseline.json"
SECTIONS = tuple(SECTION_TITLES)  # crypto, integer, floating_point: what a task's section may be


@dataclass(frozen=True)
class TaskBaseline:
    name: str
    section: str
    version: int
    work_unit: str
    modes: tuple[str, ...]
    iterations: int  # the probe's default rounds per run (how long a run is)
    samples: tuple[float, ...]

    @property
    def items_per_second(self) -> float:
        return statistics.median(self.samples)


@dataclass(frozen=True)
class Baseline:
    suite_version: int
    weights: dict[str, float]
    machine: dict[str, Any]
    measured: dict[str, Any]
    tasks: dict[str, TaskBaseline]

    def score(self, task: str, items_per_second: float) -> float:
        return 1000.0 * items_per_second / self.tasks[task].items_per_second

    def in_section(self, section: str) -> int:
        """How many of the suite's workloads the section has."""
        return sum(1 for t in self.tasks.values() if t.section == section)

    def task(self, name: str) -> TaskBaseline | None:
        """A task by its full (cpu.aes_xts) or short (aes_xts) name."""
        return self.tasks.get(name) or self.tasks.get(f"cpu.{name}")


def parse_baseline(data: dict[str, Any]) -> Baseline:
    try:
        tasks = {
            name: TaskBaseline(
                name=name,
                section=t["section"],
                version=int(t["version"]),
                work_unit=t["work_unit"],
                modes=tuple(t["modes"]),
                iterations=int(t["iterations"]),
                samples=tuple(float(x) for x in t["samples"]),
            )  # fmt: skip
            for name, t in data["workloads"].items()
        }
        weights = {k: float(v) for k, v in data["weights"].items()}
        baseline = Baseline(int(data["suite_version"]), weights, data["machine"], data["measured"], tasks)
    except (KeyError, TypeError, ValueError) as exc:
        raise EnvironmentProblem(f"the score baseline is malformed ({exc!r})") from None
    if set(weights) != set(SECTIONS) or abs(sum(weights.values()) - 1) > 1e-9:
        raise EnvironmentProblem(f"the score baseline's section weights must cover {', '.join(SECTIONS)} and sum to 1")
    for t in tasks.values():
        if t.section not in SECTIONS or not t.samples or min(t.samples) <= 0:
            raise EnvironmentProblem(f"the score baseline of {t.name} needs a known section and positive samples")
    return baseline


def load_baseline(path: Path | None = None) -> Baseline:
    """The baseline shipped with benchlab, or another file (to score against another machine)."""
    try:
        text = path.read_text() if path else resources.files("benchlab.suite").joinpath(BASELINE_FILE).read_text()
        data = json.loads(text)
    except (OSError, ValueError) as exc:
        raise EnvironmentProblem(f"cannot read the score baseline: {exc}") from None
    return parse_baseline(data)
