"""Built-in workloads, run by the `benchlab-probe` executable."""

from __future__ import annotations

import functools
import json
import subprocess
from dataclasses import dataclass
from typing import Any

from benchlab.errors import EnvironmentProblem, SpecError, WorkloadFailed
from benchlab.locate import probe_path
from benchlab.measure.process import Finished
from benchlab.metrics import Metric
from benchlab.spec.models import WorkloadSpec
from benchlab.workloads.base import metric_directions
from benchlab.workloads.gbench_json import benchmark_metrics, parse_document


@functools.cache
def catalogue() -> dict[str, dict[str, Any]]:
    """The probe's own description of its workloads: names, versions, options, metrics."""
    path = probe_path()
    try:
        out = subprocess.run([path, "list", "--format", "json"], capture_output=True, check=True, timeout=60).stdout
        return {w["name"]: w for w in json.loads(out)["workloads"]}
    except (OSError, subprocess.SubprocessError, ValueError, KeyError) as exc:
        raise EnvironmentProblem(f"{path} did not list its workloads: {exc}") from None


NOTE_PREFIX = "benchlab-probe: note: "


def probe_notes(stderr: bytes) -> list[str]:
    """What a built-in workload could not do and said so (a skipped real-time half, no tracefs)."""
    lines = stderr.decode(errors="replace").splitlines()
    return [line.removeprefix(NOTE_PREFIX) for line in lines if line.startswith(NOTE_PREFIX)]


def probe_version(name: str, version: int) -> str:
    """How a built-in workload's version is stored: runs of other versions are never compared."""
    return f"probe:{name}:{version}"


def _option_value(value: object) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


@dataclass
class ProbeWorkload:
    spec: WorkloadSpec
    info: dict[str, Any]

    @classmethod
    def resolve(cls, spec: WorkloadSpec, where: str) -> ProbeWorkload:
        known = catalogue()
        if spec.builtin not in known:
            raise SpecError(
                f"no built-in workload '{spec.builtin}'", where=f"{where}.builtin", hint="`benchlab workloads` lists them"
            )
        info = known[spec.builtin]
        option_names = {o["name"] for o in info["options"]}
        for key in spec.options:
            if key not in option_names:
                raise SpecError(
                    f"{spec.builtin} has no option '{key}' (it has: {', '.join(sorted(option_names))})",
                    where=f"{where}.options.{key}",
                )
        return cls(spec, info)

    @property
    def version(self) -> str:
        return probe_version(self.info["name"], self.info["version"])

    def argv(self) -> list[str]:
        argv = [probe_path(), str(self.spec.builtin)]
        for key, value in self.spec.options.items():
            argv += [f"--{key}", _option_value(value)]
        return [*argv, "--format", "json"]

    def metrics(self, finished: Finished) -> list[Metric]:
        doc = parse_document(finished.stdout)
        reported = doc.get("context", {}).get("workload_version")
        if reported != self.info["version"]:
            raise WorkloadFailed(f"the probe ran version {reported} of {self.spec.builtin}, expected {self.info['version']}")
        return benchmark_metrics(doc, metric_directions(self.spec))  # type: ignore[arg-type]
