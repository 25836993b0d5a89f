"""The `knobs` field: sysfs/procfs values set before a run and restored after it.

Each original value is journalled to disk (and fsynced) before the write, so
that after a crash or `kill -9` `benchlab restore` can put the machine back,
and a new experiment refuses to start on a machine left modified.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path

from benchlab.errors import EnvironmentProblem, SpecError, StaleJournal

ALLOWED_ROOTS = ("/proc/sys/", "/sys/")
_SELECTED = re.compile(r"\[([^\]]+)\]")


def state_dir() -> Path:
    explicit = os.environ.get("BENCHLAB_STATE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "benchlab"


def validate_knob_path(path: str, where: str) -> str:
    """Only files under /proc/sys and /sys (cgroups included), with no `..`, that exist and that we may write."""
    if not os.path.isabs(path) or ".." in Path(path).parts:
        raise SpecError(f"'{path}' must be an absolute path without '..'", where=where)
    if not path.startswith(ALLOWED_ROOTS) or not os.path.realpath(path).startswith(ALLOWED_ROOTS):
        raise SpecError(f"'{path}' is not under /proc/sys or /sys", where=where)
    if not os.path.isfile(path):
        raise SpecError(f"no such knob: {path}", where=where)
    if not os.access(path, os.W_OK):
        raise SpecError(f"cannot write {path}", where=where, hint="knobs need root: run benchlab as root")
    return path


def read_knob(path: str) -> str:
    """The current value; for selector files such as THP's `always [madvise] never`, the selected word."""
    text = Path(path).read_text().strip()
    selected = _SELECTED.search(text)
    return selected.group(1) if selected else text


def _write(path: str, value: str) -> None:
    try:
        with open(path, "w") as f:
            f.write(value)
    except OSError as exc:
        raise EnvironmentProblem(f"writing '{value}' to {path} failed: {exc.strerror or exc}") from None


class KnobJournal:
    """An append-only record of original values, replayed in reverse to restore them."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or state_dir() / "knobs.journal"

    def entries(self) -> list[dict[str, str]]:
        if not self.path.exists():
            return []
        entries = []
        for line in self.path.read_text().splitlines():
            try:
                entries.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # a line torn by a crash mid-write: its knob was never written
        return entries

    def ensure_clean(self) -> None:
        stale = self.entries()
        if stale:
            raise StaleJournal(
                f"{len(stale)} knob value(s) from an interrupted experiment were never restored ({self.path})",
                hint="run `benchlab restore` first",
            )

    def apply(self, knobs: Mapping[str, str]) -> None:
        if not knobs:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a") as journal:
            for path, value in knobs.items():
                journal.write(json.dumps({"path": path, "original": read_knob(path)}) + "\n")
                journal.flush()
                os.fsync(journal.fileno())
                _write(path, value)

    def restore(self) -> list[tuple[str, str]]:
        """Writes every original value back, last change first; returns what was restored."""
        restored = []
        for entry in reversed(self.entries()):
            _write(entry["path"], entry["original"])
            restored.append((entry["path"], entry["original"]))
        self.path.unlink(missing_ok=True)
        return restored
