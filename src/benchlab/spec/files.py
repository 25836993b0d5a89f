"""Reading a spec file: bounded, whatever the path names, TOML, every failure one line. Kept apart
from the models and their errors (pydantic) so that a missing or malformed file is refused before
either loads."""

from __future__ import annotations

import errno
import fcntl
import os
import stat

from benchlab.errors import SpecError

TYPE_CHECKING = False  # typing's flag without importing typing (3 ms of every start); mypy reads it alike
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

MAX_SPEC_BYTES = 1 << 20  # a spec is a page or two of TOML; a bigger file is something else


def read_capped(path: str | Path, cap: int) -> bytes:
    """At most `cap + 1` bytes of a file a user named, which may be anything: /dev/zero, a huge
    file, a directory, or a named pipe. A pipe is opened without waiting for a writer (a FIFO
    nobody writes reads as empty, as `<(command)` still reads whole), since a plain open would
    block until one came, perhaps forever."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            raise IsADirectoryError(errno.EISDIR, "is a directory")
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read(cap + 1)
    finally:
        os.close(fd)


def read_spec(path: str | Path) -> dict[str, Any]:
    """A spec file's data, its sections not yet expanded; every way reading it fails is one line.
    tomllib (with typing and datetime) loads once there is text to parse."""
    if not str(path):  # the command line's text, which pathlib would have read as "."
        raise SpecError("the spec's path is empty: name a TOML file")
    try:
        raw = read_capped(path, MAX_SPEC_BYTES)
    except FileNotFoundError:
        raise SpecError(f"no spec file at {path}") from None
    except OSError as exc:
        raise SpecError(f"cannot read {path}: {exc.strerror or exc}") from None
    if len(raw) > MAX_SPEC_BYTES:
        raise SpecError(f"{path}: larger than {MAX_SPEC_BYTES >> 20} MiB, not a spec")
    if not raw.strip():
        raise SpecError(f"{path}: empty, not a spec")
    import tomllib

    try:
        return tomllib.loads(raw.decode())
    except UnicodeDecodeError as exc:
        raise SpecError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"{path}: not valid TOML: {exc}") from None
    except RecursionError:  # tomllib recurses once per nested array or inline table
        raise SpecError(f"{path}: nested too deeply to be a spec") from None
