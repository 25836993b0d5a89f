"""Variants: each field of a variant spec turned into what the runner needs to launch under it."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from benchlab.errors import SpecError
from benchlab.measure.process import Launch, child_environment
from benchlab.spec.models import VariantSpec
from benchlab.variants.allocator import mapped_allocator, preload_for
from benchlab.variants.background import background_argv
from benchlab.variants.cpus import affinity_for
from benchlab.variants.environment import PreparedEnvironment
from benchlab.variants.knobs import KnobJournal, validate_knob_path
from benchlab.variants.memory import PreparedMemory, machine_memory
from benchlab.variants.shim import shim_environment, shim_preload, shim_report_environment
from benchlab.variants.tunables import options_from_env, tunable_environment
from benchlab.variants.wrapper import wrapper_argv


@dataclass(frozen=True)
class PreparedVariant:
    """A variant checked against this machine and resolved to concrete paths."""

    spec: VariantSpec
    env: dict[str, str]
    wrapper: list[str]
    background: list[str]  # the load started beside each run; empty: none
    cpus: frozenset[int] | None
    knobs: dict[str, str]
    preload: tuple[str, ...] = ()  # libraries it preloads: the shim, the allocator
    environment: PreparedEnvironment | None = None  # None: local
    overrides: dict[str, str] = field(default_factory=dict)  # the variant's own environment, all a remote host gets
    options: dict[str, str] = field(default_factory=dict)  # environment that carries allocator and shim settings
    memory: PreparedMemory | None = None  # the `memory` field on this machine (in a guest it is the guest's)

    @classmethod
    def prepare(cls, spec: VariantSpec, where: str) -> PreparedVariant:
        # the shim goes first, so that the allocator it passes calls on to is the variant's
        shim, allocator = shim_preload(spec.shim), preload_for(spec.allocator, f"{where}.allocator")
        preload = [*shim, *allocator]
        cpus = affinity_for(spec.cpus, f"{where}.cpus")
        usable = len(cpus if cpus is not None else os.sched_getaffinity(0))
        tunables, env = options_from_env(spec.allocator, spec.tunables, spec.env, preloads=bool(preload), where=where)
        given = "tunables" if spec.tunables else "env.MALLOC_CONF"
        tuned = tunable_environment(spec.allocator, tunables, f"{where}.{given}", cpus=usable)
        written = {**tuned, **shim_environment(spec.shim)}
        if spec.environment.kind == "ssh" and spec.knobs:
            raise SpecError("knobs are written on this machine; they cannot apply to a remote host", where=f"{where}.knobs")
        if spec.environment.kind == "ssh" and spec.background:
            raise SpecError("a background load runs on this machine; it cannot load a remote host", where=f"{where}.background")
        clash = sorted(set(written) & set(env))
        if clash:
            raise SpecError(f"env sets {', '.join(clash)}, which tunables or the shim write", where=f"{where}.env")
        knobs = {validate_knob_path(p, f"{where}.knobs"): v for p, v in spec.knobs.items()}
        memory, environment = machine_memory(spec, where)
        twice = sorted(set(knobs) & set(memory.knobs if memory else {}))
        if twice:
            raise SpecError(f"knobs sets {', '.join(twice)}, which memory sets too", where=f"{where}.knobs")
        return cls(
            spec=spec,
            preload=tuple(preload),
            environment=PreparedEnvironment.prepare(environment, next(iter(shim), None), allocator, f"{where}.environment"),
            options=written,
            overrides=child_environment({}, {**env, **written}, preload),
            env=child_environment(os.environ, {**env, **written}, preload),
            wrapper=wrapper_argv(spec.wrapper, f"{where}.wrapper"),
            background=background_argv(spec.background, f"{where}.background"),
            cpus=cpus,
            knobs=knobs,
            memory=memory,
        )

    @property
    def changes_machine(self) -> bool:
        """Whether its runs change this machine's state (knobs, swap, memory): then the experiment
        holds the machine alone."""
        return bool(self.knobs) or self.memory is not None

    def change_machine(self, journal: KnobJournal) -> None:
        """What the variant changes on this machine before a run, each change journalled: swap
        first, then the knobs, then the ballast (last, so that memory.free is measured with zram
        in place). The journal's `restore` undoes them, last first."""
        if self.memory is not None:
            self.memory.set_swap(journal)
        journal.apply({**self.knobs, **(self.memory.knobs if self.memory else {})})
        if self.memory is not None:
            self.memory.take_ballast(journal)

    def inspect(self, mapped: Sequence[str] | None) -> tuple[dict[str, Any], str | None]:
        """What a run really ran under (its allocator, the options in force) and, where that is
        not what the variant asks for, why the run must not be measured: a preload the loader
        skipped, a wrapper that dropped LD_PRELOAD, a static program that ignores it."""
        details: dict[str, Any] = {"options": self.options} if self.options else {}
        if mapped is None:
            return details, None
        allocator, library = mapped_allocator(mapped)
        details.update(allocator=allocator, allocator_library=library)
        # on another host the same libraries lie elsewhere (benchlab's copies): match by file name there
        key = os.path.basename if self.spec.environment.kind == "ssh" else (lambda p: p)
        # resolved only where there is a preload to look for: a path resolved is system calls, on every run
        real = {key(os.path.realpath(p)) for p in mapped} if self.preload else set()
        missing = [p for p in self.preload if key(os.path.realpath(p)) not in real]
        if missing:
            return details, f"the process never mapped {', '.join(missing)} (it ran {allocator}'s malloc)"
        if self.spec.allocator == "glibc" and allocator != "glibc":
            return details, f"the variant asks for glibc's malloc but the process ran {allocator}'s ({library})"
        return details, None

    def launch(
        self,
        argv: list[str],
        *,
        cwd: str | None,
        timeout: float,
        perf_counters: bool = False,
        memory_interval: float | None = None,
    ) -> Launch:
        full = (*self.wrapper, *argv)
        remote = self.spec.environment.kind == "ssh"
        report = shim_report_environment(self.spec.shim)  # the shim's findings of this run
        return Launch(
            argv=full, env={**(self.overrides if remote else self.env), **report}, cwd=cwd, cpus=self.cpus, timeout=timeout,
            perf_counters=perf_counters, memory_interval=memory_interval,
            container=self.environment.container(full, cwd, [os.path.dirname(p) for p in report.values()])
            if self.environment else None,
        )  # fmt: skip
