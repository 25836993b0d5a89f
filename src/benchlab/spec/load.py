"""Reading spec files from TOML and turning validation failures into one line that names the place.

What a spec file holds is raw data until its sections (the CPU suite's, the sweep's) are expanded
and the whole validated (`benchlab.spec.validate`); these helpers sit below both so that each
section's expansion can place its errors the same way."""

from __future__ import annotations

import errno
import fcntl
import os
import re
import stat
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from benchlab.errors import SpecError

M = TypeVar("M", bound=BaseModel)

_FRIENDLY = {
    "extra_forbidden": "unknown key",
    "missing": "required key is missing",
}


_STRICT_TYPES = {"int_type", "float_type", "bool_type", "string_type", "list_type", "dict_type", "model_type"}


def shown(value: object) -> str:
    """A short, one-line rendering of a value a user wrote, for an error message."""
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:37]}..."


# how pydantic names a union's branch in an error's location: `int`, `constrained-int`, `list[str]`,
# `function-after[_one_line(), str]`; a key a user wrote that merely starts so (`int_x`) is kept
_UNION_BRANCH = re.compile(r"(str|int|float|bool|none|constrained-[a-z]+|[a-z-]+\[.*\])", re.DOTALL)


def error_place(loc: tuple[int | str, ...]) -> str:
    """('variants', 1, 'allocator') -> 'variants[1].allocator'."""
    place = ""
    for part in loc:
        if isinstance(part, int):
            place += f"[{part}]"
        elif _UNION_BRANCH.fullmatch(part):
            continue  # pydantic names the union branch it tried; a user never wrote that
        elif part == "[key]":
            place += part  # the key itself is what is wrong
        elif not re.fullmatch(r"[\w./+-]+", part):
            place += f"[{shown(part)}]"  # a key a user wrote, with odd characters: quoted, on one line
        else:
            place += f".{part}" if place else part
    return place or "spec"


def spec_error(exc: ValidationError, source: str, prefix: str = "") -> SpecError:
    """One line for the first problem; `prefix` places a sub-model's errors ("suite.")."""
    errors = exc.errors()
    first = errors[0]
    message = _FRIENDLY.get(first["type"], first["msg"])
    if first["type"] in _STRICT_TYPES:  # strict mode's own words ("Input should be a valid integer") miss the reason
        message += f", not {type(first['input']).__name__} {shown(first['input'])}"
    message = message.removeprefix("Value error, ")
    more = f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})" if len(errors) > 1 else ""
    place = f"{prefix}{error_place(tuple(first['loc']))}" if first["loc"] or not prefix else prefix.rstrip(".")
    return SpecError(f"{message}{more}", where=f"{source}: {place}")


def take_section(data: Mapping[str, Any], key: str, model: type[M], source: str) -> tuple[dict[str, Any], M | None]:
    """The spec without its `key` section, and that section validated (errors placed under it):
    the suite and sweep sections stand for workloads and variants, expanded before validation."""
    out = dict(data)
    raw = out.pop(key, None)
    if raw is None:
        return out, None
    try:
        return out, model.model_validate(raw)
    except ValidationError as exc:
        raise spec_error(exc, source, prefix=f"{key}.") from None


MAX_SPEC_BYTES = 1 << 20  # a spec is a page or two of TOML; a bigger file is something else


def read_capped(path: Path, cap: int) -> bytes:
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


def read_spec(path: Path) -> dict[str, Any]:
    """A spec file's data, its sections not yet expanded; every way reading it fails is one line."""
    try:
        raw = read_capped(path, MAX_SPEC_BYTES)
        if len(raw) > MAX_SPEC_BYTES:
            raise SpecError(f"{path}: larger than {MAX_SPEC_BYTES >> 20} MiB, not a spec")
        if not raw.strip():
            raise SpecError(f"{path}: empty, not a spec")
        data = tomllib.loads(raw.decode())
    except FileNotFoundError:
        raise SpecError(f"no spec file at {path}") from None
    except OSError as exc:
        raise SpecError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise SpecError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"{path}: not valid TOML: {exc}") from None
    except RecursionError:  # tomllib recurses once per nested array or inline table
        raise SpecError(f"{path}: nested too deeply to be a spec") from None
    return data
