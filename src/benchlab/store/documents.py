"""The JSON documents a database and a bundle hold beside their columns: a host's fingerprint
and a run's details. One model of each serves both, since both are files another program can
write: a bundle is checked against them before it is imported, a database's rows as they are
read (`checks.document`)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, JsonValue, model_validator

from benchlab.spec.fields import Blob, Label, Line, Name

VALUE_MAX = 1e30  # a metric value beyond this would overflow the statistics' sums of squares
Value = Annotated[float, Field(ge=-VALUE_MAX, le=VALUE_MAX, allow_inf_nan=False)]
Fact = Annotated[Line, Field(max_length=4096)] | Annotated[int, Field(ge=-(2**62), le=2**62)] | Value | bool | None
# a group of facts under one name: a guest kernel's build switches (`kernel_switches`)
Facts = Annotated[dict[Annotated[str, Field(max_length=64)], Fact], Field(max_length=64)]


class HostFacts(BaseModel):
    """A host's fingerprint: the facts benchlab reads and shows typed, any others plain scalars
    or one group of them (a guest's `kernel_switches`)."""

    model_config = ConfigDict(extra="allow", frozen=True, strict=True)
    __pydantic_extra__: dict[str, Fact | Facts]

    hostname: Line | None = None
    cpu_model: Line | None = None
    cpus_online: Annotated[int, Field(ge=1, le=1 << 20)] | None = None
    kernel: Line | None = None
    memory_kib: Annotated[int, Field(ge=0, le=1 << 50)] | None = None
    swap_kib: Annotated[int, Field(ge=0, le=1 << 50)] | None = None
    smt: bool | None = None
    remote: bool | None = None
    guest_of: Line | None = None  # a guest's: the identity hash of the host row of the machine it ran on
    allocators: Annotated[list[Name], Field(max_length=16)] = []

    @model_validator(mode="after")
    def _few_named_facts(self) -> HostFacts:
        extra = self.__pydantic_extra__ or {}
        if len(extra) > 64:
            raise ValueError(f"{len(extra)} unknown facts; a fingerprint has a few dozen")
        bad = next((key for key in extra if not (0 < len(key) <= 64 and key.isidentifier())), None)
        if bad is not None:
            raise ValueError(f"{bad[:40]!r} is not a fact's name")
        return self


class RunDetails(BaseModel):
    """What a run ran under (see `Runner._run_one`): the fields reports read are typed; others,
    from newer versions, are kept as plain JSON."""

    model_config = ConfigDict(extra="allow", frozen=True, strict=True)
    __pydantic_extra__: dict[Annotated[str, Field(max_length=100)], JsonValue]

    options: dict[Annotated[str, Field(max_length=100)], JsonValue] | None = None
    allocator: Line | None = None
    allocator_library: Line | None = None
    failed_benchmarks: Annotated[dict[Label, Blob], Field(max_length=100_000)] | None = None
    machine: dict[Annotated[str, Field(max_length=64)], Fact] | None = None
