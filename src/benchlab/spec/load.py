"""Turning validation failures into one line that names the place.

What a spec file holds (`benchlab.spec.files`) is raw data until its sections (the CPU suite's,
the sweep's) are expanded and the whole validated (`benchlab.spec.validate`); these helpers sit
below both so that each section's expansion can place its errors the same way."""

from __future__ import annotations

import re
from collections.abc import Mapping
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
