"""The `suite` section of a spec: which part of the CPU suite to run. Its model is spec syntax and
lives here with the others; the workloads it stands for are the suite's data, so the suite
expands it (`benchlab.suite.cpu.expand_spec`) before the spec is validated."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from benchlab.spec.models import Strict


class SuiteSpec(Strict):
    """Which part of the suite to run; every field has the full suite's default."""

    name: Literal["cpu"]
    """The suite: `"cpu"`, the one there is (`suite = "cpu"` is short for this table)."""
    workloads: list[str] = []
    """Only these tasks, by short or full name (`["html5", "sqlite"]`); empty: all of them."""
    single_core: bool = True
    """Run each task on one thread."""
    multi_core: bool = True
    """Run one copy of each task per thread (Geekbench 5)."""
    shared: bool = True
    """Run each task with natural parts as one task split among the threads (Geekbench 6)."""
    threads: Annotated[int, Field(ge=0, le=4096)] = 0
    """Multi-core threads; 0: one per CPU a run may use."""
    iterations: Annotated[int, Field(ge=0, le=1 << 40)] = 0
    """Rounds per copy; 0: each task's default x `rounds`."""
    rounds: Annotated[float, Field(gt=0, le=100)] = 1.0
    """A fraction (or multiple) of each task's default rounds, at least one: `0.5` (what `--quick`
    uses) gives the same throughput, noisier."""

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: object) -> object:
        """`suite = "cpu"` stands for `suite = { name = "cpu" }`."""
        return {"name": value} if isinstance(value, str) else value
