"""Every file benchlab writes at a name its user gives (`report -o`, `export -o` and its default
name, every `--export-*`), written whole and never through a link another user planted.

benchlab runs as root, often in folders others can write in (/tmp): a link planted at the name,
`report.csv -> /root/.ssh/authorized_keys`, would have root replace its target. So the folder is
opened once and everything happens inside it (`openat`, `renameat`): the temporary file is
created with O_EXCL|O_NOFOLLOW under a fresh name, so it is always a new file of the mode a new
file gets (the umask's, or the mode of the file it replaces), and renamed over the name, which a
rename never follows. A link at the name, or on the way to its folder, is refused, unless it is one that root or this user
made (`benchlab.links`), which is written through as before; what
is not a regular file (a pipe, /dev/null) is written into, never replaced, and only if it is
root's or this user's.
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
from benchlab.links import trusted, untrusted_link_above

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
    planted = untrusted_link_above(path)
    if planted is not None:
        raise _refused(path, f"its folder is reached through {planted}, a symbolic link of another user", where)
    try:
        folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        raise _refused(path, f"{path.parent} is no folder this user can write in", where) from None
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
