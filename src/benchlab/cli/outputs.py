"""Every file benchlab writes at a name its user gives (`report -o`, `export -o` and its default
name, every `--export-*`), written whole and never through a link another user planted.

benchlab runs as root, often in folders others can write in (/tmp): a link planted at the name,
`report.csv -> /root/.ssh/authorized_keys`, would have root replace its target. So the folder is
opened one component at a time, each with O_NOFOLLOW from the one opened before (`_open_folder`),
and everything then happens inside it (`openat`, `renameat`): a folder swapped for a link after
it was looked at is never entered, since nothing is looked at apart from what is opened. The
temporary file is created with O_EXCL|O_NOFOLLOW under a fresh name, so it is always a new file
of the mode a new file gets (the umask's, or the mode of the file it replaces), and renamed over
the name, which a rename never follows. A link at the name, or on the way to its folder, is
refused, unless it is one that root or this user made (`benchlab.links`: `/dev/stdout`, a user's
own link to their file), which is followed as before; what is not a regular file (a pipe, /dev/null) is written
into, never replaced, and only if it is root's or this user's. Python's standard library opens
paths whole, so this walk is written here (as `openat2`'s RESOLVE_NO_SYMLINKS would do it, which
Python does not expose and which would refuse a trusted link too).
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path

from benchlab.errors import EnvironmentProblem, SpecError
from benchlab.links import trusted

_ATTEMPTS = 8  # fresh temporary names tried before giving up (each is 64 random bits)


@dataclass
class _Target:
    """An output's folder, held open, and what its name is now."""

    folder: int  # a file descriptor of the folder
    name: str
    now: os.stat_result | None  # None: no such file yet

    def close(self) -> None:
        os.close(self.folder)


def _refused(path: Path, why: str, where: str | None) -> SpecError:
    return SpecError(f"cannot write {path}: {why}", where=where)


def _open_target(path: Path, where: str | None) -> tuple[_Target | None, Path]:
    """The folder and the name to write; (None, PATH) where PATH is a stream to write into as it
    is; a trusted link is followed to where it points (once: what it names is checked again)."""
    if path.name in ("", ".", ".."):
        raise _refused(path, "give a file name", where)
    folder = _open_folder(path, where)
    try:
        now: os.stat_result | None = os.stat(path.name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        now = None
    except OSError as exc:
        os.close(folder)
        raise _refused(path, exc.strerror or str(exc), where) from None
    if now is None or stat.S_ISREG(now.st_mode):
        return _Target(folder, path.name, now), path
    os.close(folder)
    if stat.S_ISDIR(now.st_mode):
        raise _refused(path, "it is a folder (give a file name)", where)
    if not trusted(now):
        kind = "a symbolic link" if stat.S_ISLNK(now.st_mode) else "no regular file"
        raise _refused(path, f"it is {kind} of another user (uid {now.st_uid}); remove it or name another file", where)
    if stat.S_ISLNK(now.st_mode):
        return _open_followed(path, where)
    return None, path  # root's or this user's pipe or device: written into, never replaced


_MAX_LINKS = 40  # links followed on one path, as the kernel's own limit (ELOOP)
_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _open_folder(path: Path, where: str | None) -> int:
    """A descriptor of the folder `path` names, opened one component at a time from the current
    folder (or /), never following a link another user made; a trusted link is read and its
    target walked the same way. A component that is swapped for a link between two steps fails
    its O_NOFOLLOW open and is looked at again, so no check is separate from its use."""
    pending = list(path.parent.parts)
    shown = Path(pending.pop(0)) if path.is_absolute() else Path()
    fd = os.open("/" if path.is_absolute() else ".", _FOLDER)
    links = 0
    try:
        while pending:
            name = pending.pop(0)
            if name in ("", "."):
                continue
            try:
                following = os.open(name, _FOLDER, dir_fd=fd)
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.ENOTDIR) or links >= _MAX_LINKS:
                    raise _refused(path, f"{shown / name} is no folder this user can write in", where) from None
                target = _trusted_link(fd, name, shown / name, path, where)
                links += 1
                if target.startswith("/"):
                    os.close(fd)
                    fd, shown = os.open("/", _FOLDER), Path("/")
                pending[:0] = [part for part in Path(target).parts if part != "/"]
                continue
            os.close(fd)
            fd, shown = following, shown / name
    except BaseException:
        os.close(fd)
        raise
    return fd


def _trusted_link(folder: int, name: str, shown: Path, path: Path, where: str | None) -> str:
    """What the link `name` in `folder` points to, where root or this user made it. It is read
    between two looks at it that must find the same link: a link is never changed, only replaced."""
    try:
        info = os.stat(name, dir_fd=folder, follow_symlinks=False)
        if not stat.S_ISLNK(info.st_mode):
            raise _refused(path, f"{shown} is no folder this user can write in", where)
        if not trusted(info):
            raise _refused(path, f"its folder is reached through {shown}, a symbolic link of another user", where)
        target = os.readlink(name, dir_fd=folder)
        again = os.stat(name, dir_fd=folder, follow_symlinks=False)
    except OSError:
        raise _refused(path, f"{shown} is no folder this user can write in", where) from None
    if (again.st_dev, again.st_ino) != (info.st_dev, info.st_ino):
        raise _refused(path, f"{shown} was replaced while it was read", where)
    return target


def _open_followed(link: Path, where: str | None) -> tuple[_Target | None, Path]:
    """Where a trusted link points: a regular file (or none yet) is replaced as any output is, at
    its real path; anything else (/dev/stdout's pipe) is written into through the link."""
    try:
        pointed = os.stat(link)
    except FileNotFoundError:
        pointed = None
    except OSError as exc:
        raise _refused(link, exc.strerror or str(exc), where) from None
    if pointed is not None and stat.S_ISDIR(pointed.st_mode):
        raise _refused(link, "it links to a folder (give a file name)", where)
    if pointed is None or stat.S_ISREG(pointed.st_mode):
        return _open_target(Path(os.path.realpath(link)), where)
    return None, link


def _create_temporary(target: _Target) -> tuple[int, str]:
    """A new file beside the name, made by this call (O_EXCL), never through a link."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    for _ in range(_ATTEMPTS):
        name = f".{target.name[:200]}.{secrets.token_hex(8)}.part"
        try:
            return os.open(name, flags, 0o666, dir_fd=target.folder), name
        except FileExistsError:
            continue
    raise OSError(errno.EEXIST, "no fresh temporary name")


def check_writable(path: Path, *, where: str | None = None) -> None:
    """Refuses, before anything runs, an output that could not be written: a folder, a link of
    another user, a folder where no file can be made (tried: as root every access check passes,
    /proc included)."""
    target, _ = _open_target(path, where)
    if target is None:
        return
    try:
        fd, name = _create_temporary(target)
        os.close(fd)
        os.unlink(name, dir_fd=target.folder)
    except OSError as exc:
        raise _refused(path, exc.strerror or str(exc), where) from None
    finally:
        target.close()


def write_whole(path: Path, data: bytes, *, where: str | None = None) -> None:
    """`data` at `path` whole or not at all: a new file is written beside it and renamed into
    place, so a full disk or a kill leaves no truncated bundle that a later import would take for
    a whole one; a stream (/dev/stdout, a pipe) is written into as it is."""
    target, at = _open_target(path, where)
    if target is None:
        try:
            with open(at, "wb") as f:
                f.write(data)
        except OSError as exc:
            raise _failed(path, exc, where) from None
        return
    name = None
    try:
        fd, name = _create_temporary(target)
        with os.fdopen(fd, "wb") as f:
            if target.now is not None:  # the file it replaces keeps its mode: a root-only file stays one
                os.fchmod(f.fileno(), stat.S_IMODE(target.now.st_mode) & 0o777)
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.rename(name, target.name, src_dir_fd=target.folder, dst_dir_fd=target.folder)
        name = None
    except OSError as exc:
        raise _failed(path, exc, where) from None
    finally:
        if name is not None:
            with contextlib.suppress(OSError):
                os.unlink(name, dir_fd=target.folder)
        target.close()


def _failed(path: Path, exc: OSError, where: str | None) -> SpecError | EnvironmentProblem:
    if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EIO):
        return EnvironmentProblem(f"cannot write {path}: {exc.strerror or exc}")
    return _refused(path, exc.strerror or str(exc), where)
