"""What a worker agrees to run: built-in workloads always, other programs only from its own
allow-list, and a shell only when its operator said so.

A task's spec is signed by the driver's key, but a worker's machine belongs to whoever runs the
worker: the allow-list is that owner's word on which programs a queue may start there. Every
program a spec names is checked (a workload's command or Google Benchmark binary, its setup
and clean steps, a variant's wrapper and background load) as this machine resolves it, so a
name on the list cannot be redirected by another folder on PATH; the dynamic loader's
variables, which would load any library into the run, are refused outright.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from benchlab.errors import SpecError
from benchlab.spec.models import ExperimentSpec

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "fish", "csh", "tcsh", "busybox"})
LOADER_VARIABLES = frozenset({"LD_PRELOAD", "LD_AUDIT", "LD_LIBRARY_PATH"})


class Refused(Exception):
    """A task this worker will not run; the reason is stored with the attempt and logged."""


def _resolved(program: str, cwd: str | None) -> Path | None:
    """Where a program named in a spec is on this machine, symlinks followed (None: nowhere)."""
    if "/" in program:
        path = Path(cwd or ".", program) if not program.startswith("/") else Path(program)
        return path.resolve() if path.is_file() else None
    found = shutil.which(program)
    return Path(found).resolve() if found else None


@dataclass(frozen=True)
class AllowList:
    programs: frozenset[Path]
    shell: bool = False  # `--allow-shell`: shells too, and so whatever text they are given

    @classmethod
    def of(cls, entries: Iterable[str], *, shell: bool = False) -> AllowList:
        """Entries as the operator gives them: paths, or names found on this worker's PATH."""
        programs = set()
        for entry in entries:
            path = _resolved(entry, None)
            if path is None or not os.access(path, os.X_OK):
                raise SpecError(f"{entry!r} is no executable program on this machine", where="--allow")
            programs.add(path)
        return cls(frozenset(programs), shell)

    def check(self, spec: ExperimentSpec) -> None:
        for where, program, cwd in _programs(spec):
            path = _resolved(program, cwd)
            if Path(program).name in SHELLS or (path is not None and path.name in SHELLS):
                if not self.shell:
                    raise Refused(f"{where} runs a shell ({program}); this worker was not started with --allow-shell")
                continue
            if path is None:
                raise Refused(f"{where} names {program!r}, which this machine does not have")
            if path not in self.programs:
                raise Refused(f"{where} runs {path}, which is not on this worker's --allow list")
        for i, variant in enumerate(spec.variants):
            loader = sorted(LOADER_VARIABLES & variant.env.keys())
            if loader:
                raise Refused(f"variants[{i}].env sets {loader[0]}, which would load any library into the run")
            if variant.environment.kind == "ssh":
                raise Refused(f"variants[{i}] runs on another host over ssh; a worker runs every variant on its own machine")


def _programs(spec: ExperimentSpec) -> Iterator[tuple[str, str, str | None]]:
    """(where in the spec, program, folder it is resolved in) for every program the spec starts."""
    for i, w in enumerate(spec.workloads):
        if w.gbench is not None:
            yield f"workloads[{i}].gbench", w.gbench, w.cwd
        for name, argv in (("command", w.command), ("setup", w.setup), ("clean", w.clean)):
            if argv:
                yield f"workloads[{i}].{name}", argv[0], w.cwd
    for i, v in enumerate(spec.variants):
        for name, argv in (("wrapper", v.wrapper), ("background", v.background)):
            if argv:
                yield f"variants[{i}].{name}", argv[0], None
