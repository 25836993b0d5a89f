"""Variant fields addressed by name, as the quick form and sweeps write them:
`allocator`, `cpus`, `wrapper`, `background`, `environment`, and `env.VAR`, `tunables.NAME`, `knobs.PATH`,
`shim.SETTING`."""

from __future__ import annotations

from typing import Any

from benchlab.errors import SpecError
from benchlab.spec.load import shown

PLAIN = ("allocator", "cpus", "wrapper", "background", "environment")
MAPPED = ("env", "tunables", "knobs", "shim")
KEYS_HELP = "allocator, cpus, wrapper, background, environment, env.VAR, tunables.NAME, knobs.PATH, shim.sampling, shim.scope"


def set_field(variant: dict[str, Any], key: str, value: Any, where: str) -> None:
    """Sets `key` in a variant's raw dict, before validation checks the value."""
    field, dot, sub = key.partition(".")
    if field in MAPPED and dot and sub:
        table = variant.setdefault(field, {})
        if not isinstance(table, dict):
            raise SpecError(f"{field} is {type(table).__name__} {shown(table)}, not a table to set {shown(sub)} in", where=where)
        table[sub] = value
    elif field in PLAIN and not dot:
        variant[field] = value
    else:
        raise SpecError(f"unknown variant field {shown(key)} (use {KEYS_HELP})", where=where)
