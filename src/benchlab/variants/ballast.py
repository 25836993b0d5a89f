"""The part of a ballast that huge pages could not take: a ramfs file filled with `bytes`.

A hugetlb reservation needs free 2 MiB blocks, and after a machine has run for a while a few
dozen of them are missing even after compaction (measured here after a full test suite: 11,208
of 11,250 pages). Rather than stop the experiment, or run it with more memory free than `free`
says, the shortfall is taken in 4 KiB pages: a file on a private ramfs. Ramfs, not tmpfs: its
pages are unevictable (neither swapped to zram nor scanned by reclaim, just as huge pages are
not), and they leave MemAvailable as huge pages do. No process holds them, so a `kill -9`
leaves only a mount, which `restore` unmounts.

The journal entry is `{"kind": "ramfs", "mount": PATH}`, PATH a folder of `RAMFS_ROOT` named
`ballast-*`; before unmounting, `restore` checks that PATH is a ramfs mounted under
`RAMFS_SOURCE`, benchlab's name, so that a journal can unmount nothing else.
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchlab.errors import EnvironmentProblem
from benchlab.variants import swap

KIND = "ramfs"
RAMFS_ROOT = Path("/run/benchlab")
RAMFS_SOURCE = "benchlab-ballast"
MOUNTINFO = Path("/proc/self/mountinfo")
_MOUNT_NAME = re.compile(r"ballast-[0-9a-f]{16}")
_CHUNK = 1 << 20


def _ramfs_mounts() -> set[str]:
    """Mount points of the ramfs mounts benchlab made (mountinfo: point is field 5, then after
    ' - ' the type and the source)."""
    points: set[str] = set()
    for line in MOUNTINFO.read_text().splitlines():
        before, _, after = line.partition(" - ")
        fields, tail = before.split(), after.split()
        if len(fields) >= 5 and tail[:2] == [KIND, RAMFS_SOURCE]:
            points.add(fields[4].encode().decode("unicode_escape"))
    return points


@dataclass(frozen=True)
class RamfsBallast:
    """A ramfs benchlab mounted and filled; undone by unmounting it and removing its folder."""

    mount: str

    @classmethod
    def new(cls) -> RamfsBallast:
        return cls(str(RAMFS_ROOT / f"ballast-{secrets.token_hex(8)}"))

    def entry(self) -> dict[str, Any]:
        return {"kind": KIND, "mount": self.mount}

    def make(self, size: int) -> None:
        """Mounts the ramfs and writes `size` bytes of zeros into it (each page touched once), in
        a folder of `RAMFS_ROOT` that is this user's own real folder: nobody else may swap the
        mount point for a link between its making and the mount."""
        try:
            RAMFS_ROOT.mkdir(mode=0o700, exist_ok=True)
            root = os.lstat(RAMFS_ROOT)
            if not stat.S_ISDIR(root.st_mode) or root.st_uid != os.geteuid() or root.st_mode & 0o022:
                raise EnvironmentProblem(f"{RAMFS_ROOT} is not a folder only this user may write", hint="remove it")
            os.mkdir(self.mount, 0o700)
        except OSError as exc:
            raise EnvironmentProblem(f"cannot make {self.mount} for a ballast: {exc.strerror or exc}") from None
        swap.run_tool(["mount", "-t", KIND, "-o", "mode=0700", RAMFS_SOURCE, self.mount])
        zeros = bytes(_CHUNK)
        try:
            with open(os.path.join(self.mount, "ballast"), "wb", buffering=0) as f:
                for start in range(0, size, _CHUNK):
                    f.write(zeros[: min(_CHUNK, size - start)])
        except OSError as exc:
            raise EnvironmentProblem(f"filling a ramfs ballast at {self.mount} failed: {exc.strerror or exc}") from None

    def undo(self) -> None:
        if self.mount in _ramfs_mounts():
            swap.run_tool(["umount", self.mount])
        try:
            os.rmdir(self.mount)
        except FileNotFoundError:
            pass
        except OSError as exc:
            if exc.errno != errno.ENOTEMPTY:
                raise EnvironmentProblem(f"removing {self.mount} failed: {exc.strerror or exc}") from None

    def __str__(self) -> str:
        return f"the ramfs ballast at {self.mount} unmounted"


def change_of(entry: Mapping[str, Any]) -> RamfsBallast:
    """The ballast a journal entry records; ValueError: no mount benchlab could have made."""
    mount = entry.get("mount")
    if set(entry) != {"kind", "mount"} or not isinstance(mount, str):
        raise ValueError("a malformed journal entry")
    path = Path(mount)
    if str(path) != mount or path.parent != RAMFS_ROOT or not _MOUNT_NAME.fullmatch(path.name):
        raise ValueError(f"is no ramfs ballast benchlab mounts (a ballast-* folder of {RAMFS_ROOT})")
    return RamfsBallast(mount)
