"""Workload kinds: built-in (the probe), any Google Benchmark binary, any command."""

from __future__ import annotations

import os

from benchlab.errors import SpecError
from benchlab.spec.models import WorkloadSpec
from benchlab.workloads.base import Workload
from benchlab.workloads.command import CommandWorkload, find_executable
from benchlab.workloads.gbench import GbenchWorkload
from benchlab.workloads.probe import ProbeWorkload


def resolve_workload(spec: WorkloadSpec, where: str) -> Workload:
    """Checks a workload against the machine (binary present, options known) before anything runs."""
    if spec.cwd is not None and not os.path.isdir(spec.cwd):
        raise SpecError(f"no directory {spec.cwd}", where=f"{where}.cwd")
    for step in ("setup", "clean"):
        argv = getattr(spec, step)
        if argv is not None:
            find_executable(argv[0], f"{where}.{step}", spec.cwd)
    if spec.builtin is not None:
        return ProbeWorkload.resolve(spec, where)
    if spec.gbench is not None:
        return GbenchWorkload.resolve(spec, where)
    return CommandWorkload.resolve(spec, where)


def check_fits(workload: Workload, cpus: frozenset[int] | None, where: str) -> None:
    """Refuses a built-in workload whose options cannot run on a variant's CPUs (the probe says
    why); other workloads run on whatever they are given."""
    if isinstance(workload, ProbeWorkload):
        workload.fits(cpus, where)


__all__ = ["Workload", "check_fits", "resolve_workload"]
