"""What a worker agrees to run: built-in workloads always, other programs only from its own
allow-list, a shell only when its operator said so, and machine state only when allowed.

A task's spec is signed by the driver's key, but a worker's machine belongs to whoever runs the
worker: the allow-list is that owner's word on what a queue may start there. Every program a
spec names is checked (a workload's command or Google Benchmark binary, its setup and clean
steps, a variant's wrapper and background load) as this machine resolves it on the worker's own
PATH, which a spec may not change. Only the program itself is checked: allowing one that runs
others (`env`, `make`, `python3`, `taskset`) allows what it runs, as `--allow-shell` does.
Variables that make a loader or an interpreter run code of the spec's choosing are refused
outright, and so are knobs that name a program the kernel starts as root. Knobs, memory
pressure and swap, containers (a root file system of the spec's choosing) and vm guests (a
kernel, its command line and modules of the spec's choosing) need `--allow-machine-state`.
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
CODE_VARIABLES = frozenset({
    "PATH", "IFS", "BASH_ENV", "ENV", "GCONV_PATH", "NODE_OPTIONS", "NODE_PATH", "PERL5OPT", "PERL5LIB", "PERLLIB",
    "PYTHONSTARTUP", "PYTHONPATH", "PYTHONHOME", "PYTHONWARNINGS", "PYTHONINSPECT", "BROWSER", "RUBYOPT", "RUBYLIB",
})  # fmt: skip
LOADER_PREFIX = "LD_"
KERNEL_HELPERS = ("core_pattern", "modprobe", "uevent_helper", "hotplug", "poweroff_cmd", "usermodehelper")


def unfleetable(spec: ExperimentSpec) -> str | None:
    """Why a fleet cannot run a spec, if it cannot: asked by the driver before publishing and by
    each worker before running."""
    if spec.until_decided is not None:
        return "a fleet runs a fixed number of blocks; --until-decided runs on one machine"
    for i, variant in enumerate(spec.variants):
        if variant.environment.kind == "ssh":
            return f"variants[{i}] runs over ssh; on a fleet each worker runs every variant itself"
    return None


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
    machine_state: bool = False  # `--allow-machine-state`: knobs, memory and swap, containers

    @classmethod
    def of(cls, entries: Iterable[str], *, shell: bool = False, machine_state: bool = False) -> AllowList:
        """Entries as the operator gives them: paths, or names found on this worker's PATH."""
        programs = set()
        for entry in entries:
            path = _resolved(entry, None)
            if path is None or not os.access(path, os.X_OK):
                raise SpecError(f"{entry!r} is no executable program on this machine", where="--allow")
            programs.add(path)
        return cls(frozenset(programs), shell, machine_state)

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
            code = sorted(name for name in variant.env if name in CODE_VARIABLES or name.startswith(LOADER_PREFIX))
            if code:
                raise Refused(f"variants[{i}].env sets {code[0]}, which would make the run load code of the spec's choosing")
            helper = next((knob for knob in variant.knobs if any(name in knob for name in KERNEL_HELPERS)), None)
            if helper is not None:
                raise Refused(f"variants[{i}].knobs writes {helper}, which names a program the kernel runs as root")
            kind = variant.environment.kind
            needs = "knobs" if variant.knobs else "memory" if variant.memory else None
            needs = needs or ("environment" if kind in ("container", "vm") else None)
            if needs and not self.machine_state:
                raise Refused(
                    f"variants[{i}].{needs} needs --allow-machine-state on this worker "
                    "(knobs, memory and swap, containers, vm guests)"
                )
        reason = unfleetable(spec)
        if reason:
            raise Refused(reason)


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
