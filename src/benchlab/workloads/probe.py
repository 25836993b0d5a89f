"""Built-in workloads, run by the `benchlab-probe` executable."""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
from dataclasses import dataclass
from typing import Any

from benchlab.errors import EnvironmentProblem, SpecError, WorkloadFailed
from benchlab.locate import probe_path
from benchlab.measure.process import Finished
from benchlab.metrics import Metric
from benchlab.spec.load import shown
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


_SIZE = re.compile(r"([0-9]{1,20})([kKmMgG]?)")


def option_value(option: dict[str, Any], value: object, where: str) -> str:
    """`value` as the probe's command line takes it, checked against the kind and bounds the
    probe declares for the option (`benchlab-probe list --format json`), so a bad value is
    refused before anything runs instead of failing every run."""
    kind, low, high = option["kind"], option.get("min", 0), option.get("max", 0)
    integer = isinstance(value, int) and not isinstance(value, bool)
    number: int | None = None
    if kind == "bool" and (isinstance(value, bool) or value in (0, 1)) and not isinstance(value, float):
        return "1" if value else "0"
    if kind in ("int", "size") and integer:
        number = int(value)  # type: ignore[call-overload]
    elif kind == "size" and isinstance(value, str) and (found := _SIZE.fullmatch(value)):
        number = int(found[1]) * 1024 ** " kmg".index(found[2].lower() or " ")
    elif (kind == "choice" and value in option["choices"]) or (kind == "text" and (integer or isinstance(value, str))):
        return str(value)
    if number is not None and low <= number <= high:
        return str(number)
    wanted = {
        "int": f"an integer in {low}..{high}",
        "size": f"a size in bytes in {low}..{high} (k, m, g suffixes)",
        "bool": "true or false",
        "choice": f"one of {', '.join(option.get('choices', []))}",
        "text": "text",
    }.get(kind, kind)
    raise SpecError(f"{shown(value)} is not {wanted}", where=where)


@dataclass
class ProbeWorkload:
    spec: WorkloadSpec
    info: dict[str, Any]
    values: dict[str, str]  # option -> value as the probe's command line takes it

    @classmethod
    def resolve(cls, spec: WorkloadSpec, where: str) -> ProbeWorkload:
        known = catalogue()
        if spec.builtin not in known:
            raise SpecError(
                f"no built-in workload '{spec.builtin}'", where=f"{where}.builtin", hint="`benchlab workloads` lists them"
            )
        info = known[spec.builtin]
        declared = {o["name"]: o for o in info["options"]}
        values = {}
        for key, value in spec.options.items():
            if key not in declared:
                raise SpecError(
                    f"{spec.builtin} has no option '{key}' (it has: {', '.join(sorted(declared))})",
                    where=f"{where}.options.{key}",
                )
            values[key] = option_value(declared[key], value, f"{where}.options.{key}")
        return cls(spec, info, values)

    def fits(self, cpus: frozenset[int] | None, where: str) -> None:
        """Asks the probe whether these options can run on `cpus` (two pairs pinned apart need
        four CPUs), so a variant with too few is refused before running rather than failing
        every run."""

        def pin() -> None:
            if cpus is not None:
                os.sched_setaffinity(0, cpus)

        try:
            proc = subprocess.run([*self.argv()[:-2], "--check"], capture_output=True, timeout=60, preexec_fn=pin)
        except (OSError, subprocess.SubprocessError) as exc:
            raise EnvironmentProblem(f"{probe_path()} could not check {self.spec.builtin}'s options: {exc}") from None
        if proc.returncode != 0:
            said = proc.stderr.decode(errors="replace").strip().splitlines() or [f"exit {proc.returncode}"]
            reason = said[0].removeprefix(f"benchlab-probe {self.spec.builtin}: ")
            raise SpecError(f"{self.spec.builtin} cannot run with these options here: {reason}", where=where)

    @property
    def version(self) -> str:
        return probe_version(self.info["name"], self.info["version"])

    def argv(self) -> list[str]:
        options = [f"--{key}={value}" for key, value in self.values.items()]  # `=`: a value may start with '-'
        return [probe_path(), str(self.spec.builtin), *options, "--format", "json"]

    def metrics(self, finished: Finished) -> list[Metric]:
        doc = parse_document(finished.stdout)
        reported = doc.get("context", {}).get("workload_version")
        if reported != self.info["version"]:
            raise WorkloadFailed(f"the probe ran version {reported} of {self.spec.builtin}, expected {self.info['version']}")
        return benchmark_metrics(doc, metric_directions(self.spec))  # type: ignore[arg-type]
