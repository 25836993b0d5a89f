"""Any command as a workload, timed as a whole process tree by wait4()."""

from __future__ import annotations

import hashlib
import os
import shutil
from dataclasses import dataclass
from typing import Any

from benchlab.errors import SpecError
from benchlab.measure.process import Finished
from benchlab.metrics import Metric
from benchlab.spec.models import WorkloadSpec


def find_executable(program: str, where: str, cwd: str | None = None) -> str:
    """Resolves a program as the shell would, so a typo fails before anything runs."""
    if "/" in program:
        path = os.path.join(cwd or ".", program) if not os.path.isabs(program) else program
        if not os.path.isfile(path):
            raise SpecError(f"no file at {path}", where=where)
        if not os.access(path, os.X_OK):
            raise SpecError(f"{path} is not executable", where=where, hint=f"chmod +x {path}")
        return os.path.abspath(path)
    found = shutil.which(program)
    if not found:
        raise SpecError(f"'{program}' is not on PATH", where=where)
    return found


@dataclass
class CommandWorkload:
    spec: WorkloadSpec
    program: str

    @classmethod
    def resolve(cls, spec: WorkloadSpec, where: str) -> CommandWorkload:
        assert spec.command is not None
        return cls(spec, find_executable(spec.command[0], f"{where}.command", spec.cwd))

    @property
    def version(self) -> str:
        text = "\0".join([self.program, *self.argv()[1:]])
        return f"command:{hashlib.sha256(text.encode()).hexdigest()[:16]}"

    def argv(self) -> list[str]:
        assert self.spec.command is not None
        return [self.program, *self.spec.command[1:], *self.spec.args]

    def metrics(self, finished: Finished) -> list[Metric]:
        return []

    def details(self, finished: Finished) -> dict[str, Any]:
        return {}
