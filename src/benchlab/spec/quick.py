"""The spec-free quick form: `benchlab compare -w alloc.churn --variant 'je: allocator=jemalloc'`.

A variant is `NAME` or `NAME: key=value key=value ...` (shell quoting allowed
inside), with keys `allocator`, `cpus`, `wrapper`, `background`, `environment`, `environment.FIELD`,
`env.VAR`, `tunables.NAME`, `knobs./proc/sys/...` and `memory.FIELD`; a workload is `BUILTIN key=value ...`.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

from pydantic import ValidationError

from benchlab.errors import SpecError
from benchlab.spec.load import shown
from benchlab.spec.models import EnvironmentSpec, ExperimentSpec, VariantSpec
from benchlab.spec.validate import spec_from_dict
from benchlab.spec.variant_fields import set_field

_TYPED_FIELDS = ("tunables.", "shim.")  # variant fields whose values are numbers or flags, not text
# memory's sizes, shares and algorithm stay text (`memory.zram_algorithm=842` is a name)
_TYPED_KEYS = (
    "environment.cpus", "environment.fresh", "environment.port", "memory.swappiness", "memory.min_free_kbytes",
    "memory.watermark_scale_factor", "memory.lru_gen", "memory.lru_gen_min_ttl_ms",
)  # fmt: skip


def typed(text: str) -> int | float | bool | str:
    """A value typed on the command line as TOML would read it: 12 an integer, 0.5 a number,
    true a flag, anything else text. Strict validation then judges it as if a spec held it."""
    if text in ("true", "false"):
        return text == "true"
    if re.fullmatch(r"[+-]?[0-9]{1,20}", text):  # ASCII digits: int() would read "٢" as 2
        return int(text)
    if re.fullmatch(r"[+-]?([0-9]+\.[0-9]*|\.[0-9]+|[0-9]+(\.[0-9]*)?[eE][+-]?[0-9]{1,3})", text):
        return float(text)
    return text


def _pairs(text: str, where: str) -> list[tuple[str, str]]:
    try:
        tokens = shlex.split(text)
    except ValueError as exc:
        raise SpecError(f"cannot split {shown(text)}: {exc}", where=where) from None
    pairs: dict[str, str] = {}
    for token in tokens:
        key, sep, value = token.partition("=")
        if not sep or not key:
            raise SpecError(f"{shown(token)} is not key=value", where=where)
        if key in pairs:  # which one was meant is the user's to say, not the last one's to win
            raise SpecError(f"{shown(key)} is given twice", where=where)
        pairs[key] = value
    return list(pairs.items())


def parse_variant(text: str) -> dict[str, Any]:
    where = f"--variant {shown(text)}"
    name, _, rest = text.partition(":")
    variant: dict[str, Any] = {"name": name.strip()}
    for key, value in _pairs(rest, where):
        set_field(variant, key, typed(value) if key.startswith(_TYPED_FIELDS) or key in _TYPED_KEYS else value, where)
    return variant


def parse_environment(text: str) -> EnvironmentSpec:
    """`--environment 'vm memory=2G kernel=6.1.0-56'`: a kind, then its fields as key=value words
    (as `environment.FIELD=` writes them in a variant), checked as a spec's would be."""
    where = f"--environment {shown(text)}"
    kind, _, rest = text.strip().partition(" ")
    variant: dict[str, Any] = {"name": "environment", "environment": kind}
    for key, value in _pairs(rest, where):
        full = f"environment.{key}"
        set_field(variant, full, typed(value) if full in _TYPED_KEYS else value, where)
    try:
        return VariantSpec.model_validate(variant).environment
    except ValidationError as exc:
        error = exc.errors()[0]
        raise SpecError(f"{error['msg'].removeprefix('Value error, ')}", where=where) from None


def parse_builtin(text: str) -> dict[str, Any]:
    name, _, rest = text.strip().partition(" ")
    options = {key: typed(value) for key, value in _pairs(rest, f"-w {shown(text)}")}
    return {"name": name, "builtin": name, "options": options}


def quick_spec(
    *,
    name: str,
    builtins: list[str],
    commands: list[str],
    gbench: list[str],
    variants: list[str],
    blocks: int,
    warmup: int,
    seed: int,
    baseline: str | None,
    timeout: float,
) -> ExperimentSpec:
    """Builds the same spec a TOML file would give, so both forms share every check."""
    workloads: list[dict[str, Any]] = [parse_builtin(b) for b in builtins]
    workloads += [{"name": f"cmd{i + 1}" if len(commands) > 1 else "cmd", "command": c} for i, c in enumerate(commands)]
    workloads += [{"name": f"gbench{i + 1}" if len(gbench) > 1 else "gbench", "gbench": g} for i, g in enumerate(gbench)]
    if not workloads:
        raise SpecError("give at least one workload: -w BUILTIN, --cmd 'COMMAND' or --gbench BINARY")
    data: dict[str, Any] = {
        "name": name,
        "workloads": workloads,
        "variants": [parse_variant(v) for v in variants] or [{"name": "base"}],
        "blocks": blocks,
        "warmup": warmup,
        "seed": seed,
        "timeout": timeout,
    }
    if baseline is not None:
        data["baseline"] = baseline
    return spec_from_dict(data, "command line")
