"""Variant fields addressed by name, as the quick form and sweeps write them:
`allocator`, `cpus`, `wrapper`, `background`, `environment`, and `env.VAR`, `tunables.NAME`, `knobs.PATH`,
`shim.SETTING`, `memory.FIELD` (`memory.zram=25%`), `environment.FIELD` (`environment.memory`,
`environment.modules` as a comma list, `environment.knobs.PATH`)."""

from __future__ import annotations

from typing import Any

from benchlab.errors import SpecError
from benchlab.spec.load import shown
from benchlab.spec.models import EnvironmentSpec

PLAIN = ("allocator", "cpus", "wrapper", "background", "environment")
MAPPED = ("env", "tunables", "knobs", "shim", "memory")
KEYS_HELP = (
    "allocator, cpus, wrapper, background, environment, environment.FIELD, env.VAR, tunables.NAME, knobs.PATH, "
    "shim.sampling, shim.scope, memory.FIELD"
)
ENVIRONMENT_FIELDS = tuple(name for name in EnvironmentSpec.model_fields if name != "kind")


def set_field(variant: dict[str, Any], key: str, value: Any, where: str) -> None:
    """Sets `key` in a variant's raw dict, before validation checks the value."""
    field, dot, sub = key.partition(".")
    if field == "environment":
        _set_environment(variant, sub if dot else None, value, where)
    elif field in MAPPED and dot and sub:
        table = variant.setdefault(field, {})
        if not isinstance(table, dict):
            raise SpecError(f"{field} is {type(table).__name__} {shown(table)}, not a table to set {shown(sub)} in", where=where)
        table[sub] = value
    elif field in PLAIN and not dot:
        variant[field] = value
    else:
        raise SpecError(f"unknown variant field {shown(key)} (use {KEYS_HELP})", where=where)


def _set_environment(variant: dict[str, Any], sub: str | None, value: Any, where: str) -> None:
    """`environment=vm` and `environment.memory=2G` in either order make one table; a field of an
    environment written as text (`vm`, `container`) turns the text into the table's kind."""
    current = variant.get("environment")
    if sub is None:
        if isinstance(current, dict):
            if not isinstance(value, str) or "://" in value:
                raise SpecError(f"environment {shown(value)} takes no environment.FIELD; write it as a table", where=where)
            current["kind"] = value
        else:
            variant["environment"] = value
        return
    if isinstance(current, str) and "://" not in current:
        current = {"kind": current}
    elif current is None:
        current = {}
    if not isinstance(current, dict):
        raise SpecError(f"environment is {shown(current)}, not a table to set {shown(sub)} in", where=where)
    variant["environment"] = current
    name, dot, rest = sub.partition(".")
    if name == "knobs" and dot and rest:
        knobs = current.setdefault("knobs", {})
        if not isinstance(knobs, dict):
            raise SpecError(f"environment.knobs is {shown(knobs)}, not a table", where=where)
        knobs[rest] = value
    elif name == "modules" and not dot and isinstance(value, str):
        current["modules"] = [m for m in value.split(",") if m]
    elif name in ENVIRONMENT_FIELDS and not dot:
        current[name] = value
    else:
        raise SpecError(f"unknown environment field {shown(sub)} (use {', '.join(ENVIRONMENT_FIELDS)}, knobs.PATH)", where=where)
