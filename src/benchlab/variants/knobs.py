"""The `knobs` field: sysfs/procfs values set before a run and restored after it.

Each original value is journalled to disk (and fsynced) before the write, so
that after a crash or `kill -9` `benchlab restore` can put the machine back,
and a new experiment refuses to start on a machine left modified. The same
journal records the swap changes and the ramfs ballast of the `memory` field as typed entries
(`variants/swap.py` and `variants/ballast.py` say what each is and how it is undone).

Machine state belongs to one experiment at a time (`MachineLock`): an
experiment that changes knobs holds the state directory exclusively for its
whole length, every other experiment holds it shared, so a second experiment
is refused, with the holder named, instead of writing the same knobs, sharing
the journal, or measuring runs under another experiment's values.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import re
import stat
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from benchlab import interrupts
from benchlab.errors import EnvironmentProblem, SpecError, StaleJournal
from benchlab.spec.models import KNOB_ROOTS, knob_spelling_problem
from benchlab.variants import ballast, swap

NOTE_WAIT_S = 1.0  # a holder writes its note within milliseconds of taking the lock
MAX_JOURNAL_BYTES = 64 << 20  # thousands of knobs; a larger journal is not one benchlab wrote
MAX_VALUE_CHARS = 65536  # far beyond any knob (cpu masks included); a longer journal value is not one we wrote
_SELECTED = re.compile(r"\[([^\]]+)\]")


def state_dir() -> Path:
    explicit = os.environ.get("BENCHLAB_STATE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "benchlab"


# Knobs that name a program the kernel starts as root, or make it start one: the core dump pipe,
# module loading, hotplug, power-off, cgroup v1's release agent (run for a cgroup whose
# `notify_on_release` is set: either is refused), binfmt_misc's interpreters, the capabilities
# every such helper gets, and modules' helper programs (nfsd's cltrack_prog, drbd's
# usermode_helper) and firmware path. cgroup v2 has no release agent. Matched by the knob's name
# and by where it really is, so no second spelling reaches one.
KERNEL_HELPER = "names a program the kernel runs as root (a kernel helper): benchlab never writes one"
_HELPER_NAMES = frozenset({
    "core_pattern", "modprobe", "hotplug", "uevent_helper", "poweroff_cmd", "release_agent", "notify_on_release",
    "cltrack_prog", "usermode_helper",
})  # fmt: skip
_HELPER_TREES = ("/proc/sys/kernel/usermodehelper", "/proc/sys/fs/binfmt_misc", "/sys/module/firmware_class/parameters")


def kernel_helper(path: str) -> bool:
    """Whether writing `path` could make the kernel start a program (see KERNEL_HELPER)."""
    for spelled in {path, os.path.realpath(path)}:
        name = os.path.basename(spelled)
        if name in _HELPER_NAMES or any(spelled == t or spelled.startswith(t + "/") for t in _HELPER_TREES):
            return True
    return False


def knob_path_problem(path: str) -> str | None:
    """Why `path` is no knob benchlab may write, or None: one rule for specs and for `restore`,
    which must not trust a journal any more than a spec."""
    spelling = knob_spelling_problem(path)
    if spelling is not None:
        return spelling
    if not os.path.realpath(path).startswith(KNOB_ROOTS):
        return "is not under /proc/sys or /sys"
    if kernel_helper(path):
        return KERNEL_HELPER
    if not os.path.isfile(path):
        return "no such knob"
    return None


def validate_knob_path(path: str, where: str) -> str:
    """Only files under /proc/sys and /sys (cgroups included), with no `..`, that exist, that we
    may write, and whose value can be read back (a write-only knob could never be restored)."""
    problem = knob_path_problem(path)
    if problem is not None:
        raise SpecError(f"'{path}': {problem}", where=where)
    if not os.access(path, os.W_OK):
        raise SpecError(f"cannot write {path}", where=where, hint="knobs need root: run benchlab as root")
    try:
        read_knob(path)
    except OSError as exc:
        raise SpecError(
            f"{path} cannot be read ({exc.strerror or exc}): a write-only knob's value could not be restored",
            where=where,
        ) from None
    return path


def read_knob(path: str) -> str:
    """The current value; for selector files such as THP's `always [madvise] never`, the selected word."""
    text = Path(path).read_text().strip()
    selected = _SELECTED.search(text)
    return selected.group(1) if selected else text


def _current(path: str) -> str | None:
    try:
        return read_knob(path)
    except OSError:
        return None


def _write(path: str, value: str) -> None:
    """Writes a knob in one write(2); a value the kernel rejects as such (EINVAL, ERANGE) is bad
    input, anything else (a vanished file, a refused privilege) a problem of the machine. An empty
    value is written as a newline: no bytes would be no write at all, and the knob would keep
    what it holds (sysfs, procfs and cgroup files all read a lone newline as empty)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
        try:
            os.write(fd, value.encode() or b"\n")
        finally:
            os.close(fd)
    except OSError as exc:
        if exc.errno in (errno.EINVAL, errno.ERANGE, errno.EOVERFLOW):
            raise SpecError(
                f"the kernel refused {value[:80]!r} for {path}: {exc.strerror}", hint="give a value it takes"
            ) from None
        if exc.errno in (errno.EACCES, errno.EPERM) and os.geteuid() == 0:  # read-only for everyone (0444 in sysfs)
            raise SpecError(f"{path} cannot be written, even by root: {exc.strerror}") from None
        raise EnvironmentProblem(f"writing '{value}' to {path} failed: {exc.strerror or exc}") from None


def _entry_problem(entry: Any) -> str | None:
    """Why a journal line is not an entry benchlab wrote, or None."""
    if not isinstance(entry, dict) or not isinstance(entry.get("path"), str) or not isinstance(entry.get("original"), str):
        return "a malformed journal entry"
    if "\0" in entry["original"] or len(entry["original"]) > MAX_VALUE_CHARS:
        return "a malformed original value"
    problem = knob_path_problem(entry["path"])
    if problem is None and os.geteuid() == 0 and not os.access(entry["path"], os.W_OK):
        return "cannot be written even by root, so no experiment changed it"
    return problem


def _shown(entry: Any) -> str:
    """An entry as a note names it: its knob or device, or the line itself."""
    keys = ("device", "mount") if isinstance(entry, dict) and "kind" in entry else ("path",)
    named = next((entry[k] for k in keys if k in entry), None) if isinstance(entry, dict) else None
    return repr(named)[:200] if isinstance(named, str) else f"the line {str(entry)[:60]!r}"


def _undo_knob(entry: Any) -> str:
    """Writes a knob's original value back and says so; ValueError: why it never can be."""
    problem = _entry_problem(entry)
    if problem is not None:
        raise ValueError(f"{_shown(entry)}: {problem}")
    path, original = entry["path"], entry["original"]
    try:
        if _current(path) != original:  # one whose write never happened needs none
            _write(path, original)
    except SpecError as exc:  # the kernel refuses the value (or any write): it was never this knob's
        raise ValueError(exc.message) from None
    now = _current(path)
    if now != original:  # exactly what it held, or it stays journalled and `restore` says so
        raise EnvironmentProblem(f"{path} reads {now!r} after writing back {original!r}")
    return f"{path} = {original!r}" if not original else f"{path} = {original}"


def _undo_typed(entry: dict[str, Any]) -> str:
    """Undoes a swap change or a ramfs ballast and says what it put back; ValueError: an entry
    benchlab never wrote."""
    try:
        change: swap.Change | ballast.RamfsBallast = (
            ballast.change_of(entry) if entry["kind"] == ballast.KIND else swap.change_of(entry)
        )
    except ValueError as exc:
        raise ValueError(f"{_shown(entry)}: {exc}") from None
    change.undo()
    return str(change)


@dataclass
class Restoration:
    """What `KnobJournal.restore` did: what it put back (`PATH = VALUE` for a knob); entries
    dropped because they can never be restored (a vanished knob, a path no spec could name, a
    malformed line); and changes whose undoing failed, which stay in the journal so that nothing
    is forgotten."""

    restored: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


def _read_own(path: Path) -> str:
    """A state file's text: a regular file only, opened without following a link or waiting for
    the writer of a named pipe (which would hang `restore` and every experiment)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        return f.read(MAX_JOURNAL_BYTES).decode(errors="replace")


def _open_own(path: Path, flags: int) -> IO[str]:
    """A state file opened for writing, never through a symlink: a link planted in the state
    directory must not make root append to, or replace, a file elsewhere."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | flags, 0o600)
    return os.fdopen(fd, "w")


class KnobJournal:
    """An append-only record of original values, replayed in reverse to restore them."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or state_dir() / "knobs.journal"

    def entries(self) -> list[Any]:
        """Every whole line of the journal, parsed (not yet checked: see `restore`)."""
        try:
            lines = _read_own(self.path).splitlines()
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise EnvironmentProblem(f"cannot read the knob journal {self.path}: {exc.strerror or exc}") from None
        entries: list[Any] = []
        for line in lines:
            try:
                entries.append(json.loads(line))
            except json.JSONDecodeError:  # a line torn by a crash mid-write (its knob was never written) or
                entries.append(line)  # not benchlab's: `restore` drops it and says so
        return entries

    def ensure_clean(self) -> None:
        stale = self.entries()
        if stale:
            raise StaleJournal(
                f"{len(stale)} journalled change(s) (knobs, swap) of an interrupted experiment were never undone ({self.path})",
                hint="run `benchlab restore` first",
            )

    def apply(self, knobs: Mapping[str, str]) -> None:
        """Journals each original value (fsynced) before writing the knob: a journal that
        cannot be written stops the experiment before that knob changes."""
        if not knobs:
            return
        with interrupts.deferred(), self._open() as journal:  # a knob is never written without its record
            for path, value in knobs.items():
                try:
                    original = read_knob(path)
                except OSError as exc:
                    raise EnvironmentProblem(f"cannot read {path}: {exc.strerror or exc}") from None
                self._append(journal, {"path": path, "original": original})
                _write(path, value)

    def change(self, entry: dict[str, Any], make: Callable[[], None]) -> None:
        """Journals a typed entry (`swap.Change.entry`, `RamfsBallast.entry`), fsynced, then makes the change it undoes."""
        with interrupts.deferred(), self._open() as journal:
            self._append(journal, entry)
            make()

    def _append(self, journal: IO[str], entry: dict[str, Any]) -> None:
        try:
            journal.write(json.dumps(entry) + "\n")
            journal.flush()
            os.fsync(journal.fileno())
        except OSError as exc:
            raise self._unwritable(exc) from None

    def _open(self) -> IO[str]:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            return _open_own(self.path, os.O_APPEND)
        except OSError as exc:
            raise self._unwritable(exc) from None

    def _unwritable(self, exc: OSError) -> EnvironmentProblem:
        return EnvironmentProblem(
            f"cannot write the knob journal {self.path} ({exc.strerror or exc}); no knob was changed without a record"
        )

    def restore(self) -> Restoration:
        """Undoes every change, last first. Each entry is checked as a spec's would be; what can
        never be restored is dropped with a note, and only changes whose undoing failed stay
        journalled, so one vanished knob blocks neither the others nor later experiments."""
        with interrupts.deferred():  # a Ctrl-C waits until every knob is back
            return self._restore()

    def _restore(self) -> Restoration:
        done = Restoration()
        kept: list[Any] = []
        entries = self.entries()
        if not entries:  # nothing to do, and nothing written: a read-only state directory is fine
            return done
        for entry in reversed(entries):
            typed = isinstance(entry, dict) and "kind" in entry
            try:
                restored = _undo_typed(entry) if typed else _undo_knob(entry)
            except ValueError as exc:  # never an entry benchlab wrote, or one that can never be undone
                done.dropped.append(f"{exc}; not restored")
                continue
            except EnvironmentProblem as exc:
                done.failed.append(exc.message)
                kept.append(entry)
                continue
            done.restored.append(restored)
        self._keep(list(reversed(kept)))
        return done

    def _keep(self, entries: list[Any]) -> None:
        """The journal with only `entries` (none: no journal), replaced whole."""
        if not entries:
            try:
                self.path.unlink(missing_ok=True)
            except OSError as exc:
                raise EnvironmentProblem(
                    f"the knobs are back, but the journal {self.path} cannot be cleared ({exc.strerror or exc}); "
                    "remove it by hand"
                ) from None
            return
        part = self.path.with_name(self.path.name + ".part")
        try:
            part.unlink(missing_ok=True)
            with _open_own(part, os.O_EXCL) as f:
                f.writelines(json.dumps(e) + "\n" for e in entries)
                f.flush()
                os.fsync(f.fileno())
            part.replace(self.path)
        except OSError:  # the journal stays whole: everything in it is retried next time
            part.unlink(missing_ok=True)


@dataclass(frozen=True)
class Holder:
    pid: int
    experiment: str
    knobs: bool

    def __str__(self) -> str:
        return f"experiment {self.experiment!r} (pid {self.pid}{', changing knobs' if self.knobs else ''})"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class MachineLock:
    """flock(2) on the state directory, held for a whole experiment: exclusive by one that changes
    knobs, shared by any other (and exclusive by `benchlab restore`). Each holder leaves a note
    (`running/PID.json`, removed when it ends) so that a refusal can name who holds the machine.
    The kernel drops the lock of a killed process, so a `kill -9` never leaves the machine locked."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root or state_dir()

    def holders(self) -> list[Holder]:
        found = []
        for note in sorted((self.root / "running").glob("*.json")):
            with contextlib.suppress(OSError, ValueError, TypeError, KeyError):
                data = json.loads(note.read_text())
                holder = Holder(int(data["pid"]), str(data["experiment"])[:200], bool(data["knobs"]))
                if holder.pid != os.getpid() and _alive(holder.pid):
                    found.append(holder)
        return found

    @contextlib.contextmanager
    def hold(self, experiment: str, *, exclusive: bool, purpose: str = "changes knobs", writes: bool = True) -> Iterator[None]:
        """`purpose` says why the lock is exclusive, for the refusal of whoever comes second;
        `writes=False` for a holder that must go on where the state directory takes no writes
        (`restore` puts knobs back even then)."""
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY)
        except OSError as exc:
            if not exclusive:  # no state directory, so no experiment that changes knobs either
                yield
                return
            raise EnvironmentProblem(f"cannot use the state directory {self.root}: {exc.strerror or exc}") from None
        try:
            try:
                fcntl.flock(fd, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
            except BlockingIOError:
                raise self._refusal(experiment, exclusive, purpose) from None
            note = self._leave_note(experiment, exclusive, required=exclusive and writes)
            try:
                yield
            finally:
                if note is not None:
                    with contextlib.suppress(OSError):  # a folder made read-only meanwhile: the note
                        note.unlink(missing_ok=True)  # names a dead pid, which `holders` skips
        finally:
            os.close(fd)

    def _leave_note(self, experiment: str, exclusive: bool, *, required: bool) -> Path | None:
        """The holder's note; where `required` also the proof that the state directory takes writes
        (the journal's), so a full file system is refused before any knob changes."""
        note = self.root / "running" / f"{os.getpid()}.json"
        try:
            note.parent.mkdir(exist_ok=True)
            if note.parent.is_symlink():  # its stale notes are removed below: never through a link
                raise OSError(errno.ELOOP, f"{note.parent} is a symbolic link")
            if exclusive:  # notes of holders killed before they could remove them
                for stale in note.parent.glob("*.json"):
                    stale.unlink(missing_ok=True)
            with _open_own(note, os.O_TRUNC) as f:
                f.write(json.dumps({"pid": os.getpid(), "experiment": experiment, "knobs": exclusive}))
                f.flush()
                os.fsync(f.fileno())
        except OSError as exc:
            with contextlib.suppress(OSError):
                note.unlink(missing_ok=True)
            if not required:
                return None  # only a name for someone else's refusal
            raise EnvironmentProblem(f"cannot write to the state directory {self.root}: {exc.strerror or exc}") from None
        return note

    def _refusal(self, experiment: str, exclusive: bool, purpose: str) -> EnvironmentProblem:
        holders = self.holders()
        deadline = time.monotonic() + NOTE_WAIT_S
        while not holders and time.monotonic() < deadline:  # it took the lock and is writing its note
            time.sleep(0.01)
            holders = self.holders()
        named = ", ".join(map(str, holders)) or "another experiment"
        if exclusive:
            why = f"{named} is running; {experiment!r} {purpose} and needs the machine to itself"
        else:
            why = f"{named} is running and owns this machine's knobs; runs of {experiment!r} would be measured under its values"
        return EnvironmentProblem(why, hint="wait for it to end")
