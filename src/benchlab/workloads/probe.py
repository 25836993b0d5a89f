"""Built-in workloads, run by the `benchlab-probe` executable.

Besides its measurements the probe says things benchlab reads (notes, the
priority-inheritance result, why options cannot run here) as JSON fields of a
versioned protocol, `ProbeSaid`: never as text on stderr, which is for people.
"""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, ValidationError, model_validator

from benchlab.errors import EnvironmentProblem, SpecError, WorkloadFailed
from benchlab.histogram import HistogramsOf
from benchlab.locate import probe_path
from benchlab.measure.process import Finished
from benchlab.metrics import Metric
from benchlab.spec.load import shown
from benchlab.spec.models import WorkloadSpec
from benchlab.workloads.base import metric_directions
from benchlab.workloads.gbench_json import benchmark_metrics, parse_document

PROBE_PROTOCOL = 1  # the probe's `protocol::PROTOCOL`; both change together


class ProbeNote(BaseModel):
    """What a run could not do and says so (a skipped real-time half, no tracefs)."""

    topic: str  # fifo_skipped, trace_unavailable, trace_stopped, inheritance_skipped...
    text: str


class Inheritance(BaseModel):
    """The priority-inheritance check of an `ipc.*.latency` run."""

    lock: Literal["pi", "plain"]
    verdict: Literal["PASS", "FAIL", "SKIPPED"]
    holder_priority: int | None  # the real-time priority the lock's holder ran at; None: not boosted
    waiter_priority: int
    text: str


Count = Annotated[int, Field(ge=0)]


class Columns(BaseModel):
    """A table sent as columns (one list per field), which must all have one length."""

    @model_validator(mode="after")
    def _equal_columns(self) -> Columns:
        if len({len(column) for column in self.model_dump().values()}) > 1:
            raise ValueError(f"the {type(self).__name__.lower()} columns differ in length")
        return self


class Launches(Columns):
    """Every launch of a `memory.app_cycle` run: kept in the run's details, so a launch's own
    refaults, swap-ins and reclaim stall can be read back."""

    iteration: list[Count]
    app: list[Count]
    start: list[Literal["hot", "warm", "cold"]]
    latency_ns: list[Count | None]  # None: the app did not come up
    majflt: list[Count | None]
    stall_ns: list[Count | None]  # None: not traced
    refault_anon: list[Count | None]  # None: a counter this kernel lacks
    refault_file: list[Count | None]
    pswpin: list[Count | None]
    allocstall: list[Count | None]


class Apps(Columns):
    """Each app's own memory cgroup over the cycle, indexed by app (None: a file the kernel lacks)."""

    peak_bytes: list[Count | None]
    refault_anon: list[Count | None]
    refault_file: list[Count | None]
    majflt: list[Count | None]


class ZramSwap(BaseModel):
    device: str
    disksize: Count | None
    algorithm: str | None


class Reclaim(BaseModel):
    """What reclaim ran under, read by the probe where the cycle ran (inside a guest too); None:
    the kernel has no such setting (`lru_gen` on a kernel without MGLRU)."""

    lru_gen: str | None
    swappiness: Count | None
    swap_kib: Count | None
    zram: list[ZramSwap]


class Histograms(BaseModel):
    """Every timed transaction of an IPC run, per benchmark entry (named as its metrics are), on
    the probe's one fixed grid, so runs add up by adding counts: bucket k holds the samples in
    [2^(k/8), 2^((k+1)/8)) ns. The grid is named in every document and only this one is read:
    a probe counting on another grid is refused, not misdrawn."""

    per_octave: Literal[8]  # HISTOGRAM_PER_OCTAVE
    unit: Literal["ns"]
    of: HistogramsOf


class ProbeSaid(BaseModel):
    """benchlab's own fields of a probe document: `context.benchlab` in Google Benchmark
    JSON, `benchlab` in the Android latency JSON and in the answer of `--check`."""

    protocol: int
    notes: list[ProbeNote] = []
    inheritance: Inheritance | None = None  # None: the check was off, or not a latency run
    error: str | None = None  # `--check`: why the options cannot run here
    launches: Launches | None = None  # memory.app_cycle runs
    reclaim: Reclaim | None = None  # memory.app_cycle runs
    apps: Apps | None = None  # memory.app_cycle runs with per-app cgroups
    histograms: Histograms | None = None  # ipc.pipe.pingpong and ipc.*.latency runs


def probe_said(fields: object, where: str) -> ProbeSaid:
    """The fields, once their protocol is the one this benchlab reads: a probe of another
    build is refused in one line rather than misread."""
    version = fields.get("protocol") if isinstance(fields, dict) else None
    if version != PROBE_PROTOCOL:
        raise EnvironmentProblem(
            f"{where} speaks probe protocol {version}, this benchlab reads {PROBE_PROTOCOL}",
            hint="reinstall benchlab so that its probe is built from the same source",
        )
    try:
        return ProbeSaid.model_validate(fields)
    except ValidationError as exc:
        raise WorkloadFailed(f"{where} sent malformed protocol fields: {exc.errors()[0]['msg']}") from None


@functools.cache
def catalogue() -> dict[str, dict[str, Any]]:
    """The probe's own description of its workloads: names, versions, options, metrics."""
    path = probe_path()
    try:
        out = subprocess.run([path, "list", "--format", "json"], capture_output=True, check=True, timeout=60).stdout
        listing = json.loads(out)
        workloads = {w["name"]: w for w in listing["workloads"]}
    except (OSError, subprocess.SubprocessError, ValueError, KeyError) as exc:
        raise EnvironmentProblem(f"{path} did not list its workloads: {exc}") from None
    probe_said({"protocol": listing.get("protocol")}, path)
    return workloads


def probe_version(name: str, version: int, suite_version: int | None = None) -> str:
    """How a built-in workload's version is stored: runs of other versions are never compared.
    A CPU-suite task's carries the suite's version too (`probe:cpu.hdr:1/suite2`): a new suite
    (new sections, tasks, baseline) is never compared with runs of an old one, even of a task
    that itself did not change."""
    return f"probe:{name}:{version}" + (f"/suite{suite_version}" if suite_version is not None else "")


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
            error = check_options(self.argv()[:-2], str(self.spec.builtin), pin)
        except (OSError, subprocess.SubprocessError) as exc:
            raise EnvironmentProblem(f"{probe_path()} could not check {self.spec.builtin}'s options: {exc}") from None
        if error is not None:
            raise SpecError(f"{self.spec.builtin} cannot run with these options here: {error}", where=where)

    @property
    def version(self) -> str:
        return probe_version(self.info["name"], self.info["version"], self.info.get("suite_version"))

    def argv(self) -> list[str]:
        options = [f"--{key}={value}" for key, value in self.values.items()]  # `=`: a value may start with '-'
        return [probe_path(), str(self.spec.builtin), *options, "--format", "json"]

    def _document(self, finished: Finished) -> tuple[dict[str, Any], ProbeSaid]:
        doc = parse_document(finished.stdout)
        context = doc.get("context", {})
        said = probe_said(context.get("benchlab"), str(self.spec.builtin))
        reported = context.get("workload_version")
        if reported != self.info["version"]:
            raise WorkloadFailed(f"the probe ran version {reported} of {self.spec.builtin}, expected {self.info['version']}")
        return doc, said

    def metrics(self, finished: Finished) -> list[Metric]:
        doc, _ = self._document(finished)
        return benchmark_metrics(doc, metric_directions(self.spec))  # type: ignore[arg-type]

    def details(self, finished: Finished) -> dict[str, Any]:
        """What a run keeps besides its metrics: an app cycle's launches, each app's accounting,
        and what reclaim ran under; an IPC run's latency histograms."""
        said = self._document(finished)[1]
        kept = {"launches": said.launches, "apps": said.apps, "reclaim": said.reclaim, "histograms": said.histograms}
        return {key: value.model_dump() for key, value in kept.items() if value is not None}

    def notes(self, finished: Finished) -> list[str]:
        """What the run could not do and said so, each naming the workload."""
        return [f"{self.spec.builtin}: {note.text}" for note in self._document(finished)[1].notes]


def check_options(argv: list[str], workload: str, preexec_fn: Callable[[], None] | None = None) -> str | None:
    """Why the probe cannot run `argv` (a workload and its options) here, None where it can:
    its `--check` answer, read from the JSON it prints, never from its words on stderr."""
    proc = subprocess.run(
        [*argv, "--check", "--format", "json"], capture_output=True, timeout=60, preexec_fn=preexec_fn, check=False
    )
    try:
        answer = json.loads(proc.stdout)
    except ValueError:
        tail = proc.stderr.decode(errors="replace").strip()[-300:]
        return f"{workload} --check gave no answer (exit {proc.returncode}){': ' + tail if tail else ''}"
    said = probe_said(answer.get("benchlab") if isinstance(answer, dict) else None, workload)
    if proc.returncode == 0:
        return None
    return said.error or f"{workload} --check failed (exit {proc.returncode})"
