"""Swap areas and zram devices as machine state: the changes `memory.zram` makes at a run's
start, each journalled (`KnobJournal.change`) as an entry that says how to undo it, and the
checks a journal's entries pass before `restore` undoes anything.

Two kinds of entry: `{"kind": "swapoff", "device": PATH, "priority": N}`, a swap area benchlab
turned off (undone: `swapon -p N`), and `{"kind": "zram", "device": "zramN", "added": BOOL,
"algorithm": ALG}`, a free zram device benchlab made swap (undone: `swapoff`, `reset`, its
algorithm back, and `hot_remove` where benchlab hot-added it). A journal is trusted no more than a
spec: an entry names a swap file or block device by its one real path, or a zram device by name.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchlab.errors import EnvironmentProblem
from benchlab.measure.host import swap_areas

SYS_BLOCK = Path("/sys/block")
ZRAM_CONTROL = Path("/sys/class/zram-control")
ZRAM_NAME = re.compile(r"zram([0-9]{1,4})")
ALGORITHM = re.compile(r"[a-z0-9][a-z0-9-]{0,31}")
MAX_PRIORITY = 32767  # swapon's highest; a negative priority is the kernel's to give
NODE_WAIT_S = 2.0  # for devtmpfs to make a hot-added device's node


def run_tool(argv: list[str]) -> None:
    """Runs mkswap, swapon, swapoff, mount or umount; a failure is one line with the tool's last words."""
    try:
        proc = subprocess.run(argv, capture_output=True, text=True)
    except OSError as exc:  # the tool itself is missing
        problem = f"`{argv[0]}` cannot run: {exc.strerror or exc}"
        raise EnvironmentProblem(problem, hint="apt-get install util-linux mount") from None
    if proc.returncode != 0:
        said = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        raise EnvironmentProblem(f"`{' '.join(argv)}` failed: {said}")


def write_sysfs(path: Path, value: str) -> None:
    try:
        path.write_text(value)
    except OSError as exc:
        raise EnvironmentProblem(f"writing '{value}' to {path} failed: {exc.strerror or exc}") from None


def zram_algorithms(device: str) -> tuple[list[str], str]:
    """The algorithms a zram device offers and the one it has (`lzo [lz4] zstd`)."""
    words = (SYS_BLOCK / device / "comp_algorithm").read_text().split()
    current = next((w.strip("[]") for w in words if w.startswith("[")), words[0] if words else "")
    return [w.strip("[]") for w in words], current


def zram_devices() -> list[str]:
    return sorted((p.name for p in SYS_BLOCK.glob("zram*") if ZRAM_NAME.fullmatch(p.name)), key=lambda n: int(n[4:]))


def free_zram() -> str | None:
    """A zram device nobody uses: no disk size, no swap on it."""
    on = swap_areas()
    return next(
        (d for d in zram_devices() if (SYS_BLOCK / d / "disksize").read_text().strip() == "0" and f"/dev/{d}" not in on), None
    )


def hot_add_zram() -> str:
    """A new zram device (reading hot_add makes it and says its number), once its node exists."""
    try:
        device = f"zram{int((ZRAM_CONTROL / 'hot_add').read_text())}"
    except (OSError, ValueError) as exc:
        raise EnvironmentProblem(f"no free zram device, and none could be added: {exc}") from None
    deadline = time.monotonic() + NODE_WAIT_S
    while not os.path.exists(f"/dev/{device}") and time.monotonic() < deadline:
        time.sleep(0.01)
    return device


@dataclass(frozen=True)
class SwapOff:
    """A swap area benchlab turned off; undone by turning it on with its priority."""

    device: str
    priority: int

    def entry(self) -> dict[str, Any]:
        return {"kind": "swapoff", "device": self.device, "priority": self.priority}

    def make(self) -> None:
        run_tool(["swapoff", self.device])

    def undo(self) -> None:
        if self.device not in swap_areas():
            # a negative priority is the kernel's own choice: swapon takes 0..32767 only
            run_tool(["swapon", *(["-p", str(self.priority)] if self.priority >= 0 else []), self.device])

    def __str__(self) -> str:
        return f"swap on {self.device} (priority {self.priority})"


@dataclass(frozen=True)
class Zram:
    """A free zram device benchlab made swap (`added`: one it hot-added); undone by turning the
    swap off, resetting the device, putting its `algorithm` back, and removing it if added."""

    device: str
    added: bool
    algorithm: str

    def entry(self) -> dict[str, Any]:
        return {"kind": "zram", "device": self.device, "added": self.added, "algorithm": self.algorithm}

    def make_swap(self, size: int, algorithm: str | None) -> None:
        node, folder = f"/dev/{self.device}", SYS_BLOCK / self.device
        write_sysfs(folder / "reset", "1")
        write_sysfs(folder / "comp_algorithm", algorithm or self.algorithm)
        write_sysfs(folder / "disksize", str(size))
        run_tool(["mkswap", node])
        run_tool(["swapon", node])

    def undo(self) -> None:
        node, folder = f"/dev/{self.device}", SYS_BLOCK / self.device
        if node in swap_areas():
            run_tool(["swapoff", node])
        write_sysfs(folder / "reset", "1")
        if self.added:
            write_sysfs(ZRAM_CONTROL / "hot_remove", self.device.removeprefix("zram"))
        else:
            write_sysfs(folder / "comp_algorithm", self.algorithm)

    def __str__(self) -> str:
        return f"zram device {self.device} reset{' and removed' if self.added else f' ({self.algorithm})'}"


Change = SwapOff | Zram
ENTRY_KEYS = {"swapoff": {"kind", "device", "priority"}, "zram": {"kind", "device", "added", "algorithm"}}
SWAP_MAGIC = b"SWAPSPACE2"  # the last bytes of a swap area's first page, which mkswap writes


def swap_path_problem(path: object) -> str | None:
    """Why `path` is no swap area benchlab could have turned off, or None: one real path (no `..`,
    no link on the way) to a block device or a regular file that carries mkswap's signature."""
    if not isinstance(path, str) or "\0" in path or not path.startswith("/") or len(path) > 4096:
        return "is no absolute path"
    if ".." in path.split("/") or os.path.normpath(path) != path or os.path.realpath(path) != path:
        return "is not the device's one real path (a '..', a link or a second spelling)"
    try:  # never waiting on a named pipe, never through a link
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        return "no such swap device or file" if exc.errno == errno.ENOENT else f"cannot be read ({exc.strerror or exc})"
    try:
        mode = os.fstat(fd).st_mode
        if not (stat.S_ISBLK(mode) or stat.S_ISREG(mode)):
            return "is neither a block device nor a regular file"
        magic = os.pread(fd, len(SWAP_MAGIC), os.sysconf("SC_PAGE_SIZE") - len(SWAP_MAGIC))
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    finally:
        os.close(fd)
    return None if magic == SWAP_MAGIC else "is no swap area (mkswap's signature is missing)"


def _zram_problem(entry: Mapping[str, Any]) -> str | None:
    device = entry.get("device")
    if not isinstance(device, str) or not ZRAM_NAME.fullmatch(device):
        return "names no zram device (zramN)"
    if not isinstance(entry.get("added"), bool):
        return "a malformed journal entry"
    algorithm = entry.get("algorithm")
    if not isinstance(algorithm, str) or not ALGORITHM.fullmatch(algorithm):
        return "a malformed compression algorithm"
    if os.path.realpath(SYS_BLOCK / device) != f"/sys/devices/virtual/block/{device}":
        return "no such zram device"
    return None


def change_of(entry: Mapping[str, Any]) -> Change:
    """The change a typed journal entry records, checked as strictly as a spec; ValueError says
    why it is none benchlab wrote (it is then dropped, never undone)."""
    kind = entry["kind"]
    if not isinstance(kind, str) or set(entry) != ENTRY_KEYS.get(kind):
        raise ValueError("a malformed journal entry")
    if entry["kind"] == "swapoff":
        priority = entry["priority"]
        if isinstance(priority, bool) or not isinstance(priority, int) or not -(2**31) <= priority <= MAX_PRIORITY:
            raise ValueError("a malformed swap priority")
        problem = swap_path_problem(entry["device"])
        if problem is not None:
            raise ValueError(problem)
        return SwapOff(entry["device"], priority)
    problem = _zram_problem(entry)
    if problem is not None:
        raise ValueError(problem)
    return Zram(entry["device"], entry["added"], entry["algorithm"])
