"""Variants: each field of a variant spec turned into what the runner needs to launch under it."""

from __future__ import annotations

import os
from dataclasses import dataclass

from benchlab.errors import SpecError
from benchlab.measure.process import Launch, environment
from benchlab.spec.models import VariantSpec
from benchlab.variants.allocator import preload_for
from benchlab.variants.cpus import affinity_for
from benchlab.variants.knobs import validate_knob_path
from benchlab.variants.shim import shim_environment, shim_preload
from benchlab.variants.tunables import tunable_environment
from benchlab.variants.wrapper import wrapper_argv


@dataclass(frozen=True)
class PreparedVariant:
    """A variant checked against this machine and resolved to concrete paths."""

    spec: VariantSpec
    env: dict[str, str]
    wrapper: list[str]
    cpus: frozenset[int] | None
    knobs: dict[str, str]

    @classmethod
    def prepare(cls, spec: VariantSpec, where: str) -> PreparedVariant:
        # the shim goes first, so that the allocator it passes calls on to is the variant's
        preload = [*shim_preload(spec.shim), *preload_for(spec.allocator, f"{where}.allocator")]
        written = {**tunable_environment(spec.allocator, spec.tunables, f"{where}.tunables"), **shim_environment(spec.shim)}
        clash = sorted(set(written) & set(spec.env))
        if clash:
            raise SpecError(f"env sets {', '.join(clash)}, which tunables or the shim write", where=f"{where}.env")
        return cls(
            spec=spec,
            env=environment(os.environ, {**spec.env, **written}, preload),
            wrapper=wrapper_argv(spec.wrapper, f"{where}.wrapper"),
            cpus=affinity_for(spec.cpus, f"{where}.cpus"),
            knobs={validate_knob_path(p, f"{where}.knobs"): v for p, v in spec.knobs.items()},
        )

    def launch(self, argv: list[str], *, cwd: str | None, timeout: float, perf_counters: bool = False) -> Launch:
        return Launch(
            argv=(*self.wrapper, *argv), env=self.env, cwd=cwd, cpus=self.cpus, timeout=timeout,
            perf_counters=perf_counters,
        )  # fmt: skip
