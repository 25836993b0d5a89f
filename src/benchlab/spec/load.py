"""Reading specs from TOML and turning validation failures into one line that names the place."""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from benchlab.errors import SpecError
from benchlab.spec.models import ExperimentSpec

M = TypeVar("M", bound=BaseModel)

_FRIENDLY = {
    "extra_forbidden": "unknown key",
    "missing": "required key is missing",
}


def error_place(loc: tuple[int | str, ...]) -> str:
    """('variants', 1, 'allocator') -> 'variants[1].allocator'."""
    place = ""
    for part in loc:
        if isinstance(part, int):
            place += f"[{part}]"
        elif part.startswith(("function-", "literal[", "list[", "dict[", "str", "int", "float", "bool", "tagged-")):
            continue  # pydantic names the union branch it tried; a user never wrote that
        else:
            place += f".{part}" if place else part
    return place or "spec"


def spec_error(exc: ValidationError, source: str, prefix: str = "") -> SpecError:
    """One line for the first problem; `prefix` places a sub-model's errors ("suite.")."""
    errors = exc.errors()
    first = errors[0]
    message = _FRIENDLY.get(first["type"], first["msg"])
    message = message.removeprefix("Value error, ")
    more = f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})" if len(errors) > 1 else ""
    return SpecError(f"{message}{more}", where=f"{source}: {prefix}{error_place(tuple(first['loc']))}")


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


def spec_from_dict(data: dict[str, Any], source: str = "spec") -> ExperimentSpec:
    from benchlab.spec.sweep import expand_sweep
    from benchlab.suite.cpu import expand_spec

    try:
        return ExperimentSpec.model_validate(expand_sweep(expand_spec(data, source), source))
    except ValidationError as exc:
        raise spec_error(exc, source) from None


def load_spec(path: Path) -> ExperimentSpec:
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise SpecError(f"no spec file at {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"cannot read {path}: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"{path}: not valid TOML: {exc}") from None
    return spec_from_dict(data, str(path))
