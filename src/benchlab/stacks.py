"""A profiled run's stacks, as the sampler writes them (`measure/perf_stacks.py`), the store keeps
them (compressed) and the analysis reads them back: one definition for all three, at the bottom
of the stack, validated whole wherever it is read (a database or bundle is not trusted to hold
what benchlab wrote).

A frame is a function where perf found its symbol; where it found none (a stripped program or
library) the frame is its library and address, `[libfoo.so]+0x1194`, or, where the fold could
not place the address, the library alone, `[libfoo.so]`: time in code without symbols is still
counted, by address or by library (`Costs.unsymbolized` says how much).
"""

from __future__ import annotations

import posixpath
import zlib
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Annotated

import orjson
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr, ValidationError, model_validator

MAX_FRAMES = 1_000_000
MAX_STACKS = 2_000_000
MAX_DEPTH = 4096  # perf's own limit on a callchain is 127 by default (kernel.perf_event_max_stack), at most 4096
MAX_DOCUMENT = 512 << 20  # bytes of JSON one profile may inflate to: a compressed bomb is refused, not inflated
OFF_CPU = "off-cpu"  # the event of a run's waits (StackDocument.waits)
TIME_EVENTS = {"cpu-clock": 1e-9, "task-clock": 1e-9, OFF_CPU: 1e-9}  # events whose period is nanoseconds

MAX_COUNTED = 64  # events counted over one run
Text = Annotated[StrictStr, Field(max_length=4096)]
Amount = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Count = Annotated[StrictInt, Field(ge=0, lt=2**63)]
Stack = tuple[Text, Annotated[list[Annotated[StrictInt, Field(ge=0)]], Field(max_length=MAX_DEPTH)], Count, Count]


class StackDocument(BaseModel):
    """One profiled run's samples folded into stacks: `frames` as [symbol, library, kernel?],
    `stacks` as [process name, frame indices from the root, summed periods, samples]."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    event: Annotated[StrictStr, Field(max_length=200)]
    frames: Annotated[list[tuple[Text | None, Text | None, StrictBool]], Field(max_length=MAX_FRAMES)]
    stacks: Annotated[list[Stack], Field(max_length=MAX_STACKS)]
    off_cpu: Annotated[list[Stack], Field(max_length=MAX_STACKS)] = []
    """Where the run's threads waited off the CPU: [process name, frame indices, nanoseconds, times]."""
    counters: Annotated[dict[Annotated[StrictStr, Field(max_length=200)], Amount], Field(max_length=MAX_COUNTED)] = {}
    """What perf stat counted over the run, by event (none where nothing was asked or counted)."""

    @model_validator(mode="after")
    def _frames_exist(self) -> StackDocument:
        count = len(self.frames)
        if any(i >= count for _, path, _, _ in (*self.stacks, *self.off_cpu) for i in path):
            raise ValueError("a stack names a frame the profile does not hold")
        return self

    def waits(self) -> StackDocument:
        """The run's off-CPU stacks as a profile of their own, weighed in seconds waited: what
        `costs` and the judging read of on-CPU time, they read of waiting."""
        return StackDocument(event=OFF_CPU, frames=self.frames, stacks=self.off_cpu)

    @property
    def unit(self) -> str:
        """What a stack's summed periods are in: seconds of CPU time, or the event's counts."""
        return "s" if self.event in TIME_EVENTS else self.event

    @property
    def scale(self) -> float:
        return TIME_EVENTS.get(self.event, 1.0)

    @property
    def samples(self) -> int:
        return sum(count for *_, count in self.stacks)


class DamagedProfile(ValueError):
    """A stored profile that is not what benchlab writes."""


def encode(document: StackDocument) -> bytes:
    return zlib.compress(orjson.dumps(document.model_dump(mode="json")), 6)


def decode(blob: bytes) -> StackDocument:
    """A stored profile read back, or DamagedProfile saying why not (never more than MAX_DOCUMENT inflated)."""
    try:
        inflater = zlib.decompressobj()
        raw = inflater.decompress(blob, MAX_DOCUMENT)
        if inflater.unconsumed_tail:
            raise DamagedProfile(f"it inflates past {MAX_DOCUMENT >> 20} MiB")
    except zlib.error as exc:
        raise DamagedProfile(f"it is not a compressed profile ({exc})") from None
    return read_document(raw)


def read_document(raw: bytes) -> StackDocument:
    """A profile's JSON, validated whole (JSON arrays as the document's tuples)."""
    try:
        return StackDocument.model_validate_json(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise DamagedProfile(f"{where}: {first['msg']}") from None


def library_name(dso: str | None) -> str:
    """A frame's library as reports name it: the file's name, `kernel` for the kernel image."""
    if dso is None:
        return "[unknown]"
    if dso.startswith("[kernel.kallsyms"):
        return "kernel"
    return posixpath.basename(dso) or dso


@dataclass(frozen=True, order=True)
class Function:
    """Where samples land: a symbol in a library, or (without a symbol) the library itself."""

    name: str
    library: str
    kernel: bool


def unsymbolized_name(symbol: str | None) -> bool:
    """Whether a frame's name is the fold's for code without a symbol (`[lib]+0x...`): no
    symbol a compiler writes starts with a bracket."""
    return symbol is None or symbol.startswith("[")


def function_of(symbol: str | None, dso: str | None, kernel: bool) -> Function:
    library = library_name(dso)
    unnamed = library if library.startswith("[") else f"[{library}]"
    return Function(symbol or unnamed, library, kernel)


@dataclass(frozen=True)
class Costs:
    """One profiled run's time per function (self: samples in it; inclusive: samples with it on
    the stack, once per stack), per library and kernel vs user, in the document's unit."""

    unit: str
    total: float
    samples: int
    self_time: dict[Function, float]
    inclusive: dict[Function, float]
    libraries: dict[str, float]
    kernel: float
    unsymbolized: float  # self time in frames without a symbol (counted by address or library)


def costs(document: StackDocument) -> Costs:
    functions = [function_of(*frame) for frame in document.frames]
    self_time: dict[Function, float] = defaultdict(float)
    inclusive: dict[Function, float] = defaultdict(float)
    libraries: dict[str, float] = defaultdict(float)
    kernel = unsymbolized = total = 0.0
    for _, path, period, _ in document.stacks:
        weight = period * document.scale
        total += weight
        if not path:
            continue
        leaf = functions[path[-1]]
        self_time[leaf] += weight
        libraries[leaf.library] += weight
        kernel += weight if leaf.kernel else 0.0
        unsymbolized += weight if unsymbolized_name(document.frames[path[-1]][0]) else 0.0
        for function in dict.fromkeys(functions[i] for i in path):  # once per stack, in a fixed order
            inclusive[function] += weight
    return Costs(document.unit, total, document.samples, dict(self_time), dict(inclusive), dict(libraries), kernel, unsymbolized)


def folded(documents: Iterable[StackDocument]) -> list[str]:
    """Stacks summed into the folded format flame graph tools read (`process;root;...;leaf
    samples`), kernel frames marked `_[k]` as inferno and FlameGraph mark them."""
    lines: dict[str, int] = defaultdict(int)
    for document in documents:
        functions = [function_of(*frame) for frame in document.frames]
        for comm, path, _, count in document.stacks:
            names = [
                comm or "[unknown]",
                *(f"{functions[i].name}_[k]" if functions[i].kernel else functions[i].name for i in path),
            ]
            lines[";".join(name.replace(";", ":").replace("\n", " ") for name in names)] += count
    return [f"{stack} {count}" for stack, count in sorted(lines.items())]
