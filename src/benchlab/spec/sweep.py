"""Sweeps: a `[sweep]` section expands one or two variant fields over values into
variants, before validation, so the stored spec lists plain variants, each with the
`sweep` values it stands for (what the report's sweep table and fit read).

```toml
[sweep]
base = { allocator = "jemalloc" }      # fields every swept variant shares
fit = "value"                          # fit the change against the value, its "reciprocal", or "none"
[[sweep.parameters]]
field = "tunables.dirty_decay_ms"
values = [5000, 15000, 20000, 30000]   # or: range = { start = 1, stop = 1e6, steps = 7, scale = "log" }
```
"""

from __future__ import annotations

import copy
import itertools
import math
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field, ValidationError, model_validator

from benchlab.errors import SpecError
from benchlab.spec.fields import Finite, Line
from benchlab.spec.load import shown, take_section
from benchlab.spec.models import MAX_VARIANTS, Scalar, Strict, VariantSpec
from benchlab.spec.variant_fields import set_field

if TYPE_CHECKING:
    import numpy as np


class RangeSpec(Strict):
    """Values spread evenly from `start` to `stop`, instead of a list."""

    start: Finite
    """The first value."""
    stop: Finite
    """The last value."""
    steps: Annotated[int, Field(ge=2, le=1000)]
    """How many values, both ends included."""
    scale: Literal["linear", "log"] = "linear"
    """Even steps (`linear`) or even ratios (`log`)."""
    integer: bool = True
    """Round each step to an integer (most tunables take one); steps that round together are refused."""

    @model_validator(mode="after")
    def _usable(self) -> RangeSpec:
        if self.scale == "log" and min(self.start, self.stop) <= 0:
            raise ValueError("a log range needs a positive start and stop")
        import numpy as np  # a range's steps: loaded for a spec with a sweep, not for every spec

        points = self._points()
        if not np.isfinite(points).all() or (self.integer and np.abs(points).max() >= 2**63):
            raise ValueError("the range's steps overflow (give a start and stop of sane size)")
        distinct = len(self.values())
        if distinct < self.steps:  # never fewer variants than asked for, silently
            raise ValueError(f"its {self.steps} steps round to {distinct} whole numbers (fewer steps, or integer = false)")
        return self

    def _points(self) -> np.ndarray:
        import numpy as np

        space = np.geomspace if self.scale == "log" else np.linspace
        with np.errstate(all="ignore"):  # an overflow is reported above, not warned about on stderr
            return space(self.start, self.stop, self.steps)

    def values(self) -> list[Scalar]:
        points = self._points()
        if self.integer:
            return list(dict.fromkeys(int(round(p)) for p in points))  # rounding may merge log steps
        return [float(p) for p in points]


class ParameterSpec(Strict):
    """One swept field and its values: exactly one of `values` or `range`."""

    field: Line
    """The variant field: `allocator`, `cpus`, `wrapper`, `environment`, `env.VAR`, `tunables.NAME`,
    `knobs.PATH`, `shim.sampling` or `memory.FIELD` (`memory.zram`)."""
    values: Annotated[list[Scalar], Field(min_length=1, max_length=MAX_VARIANTS)] | None = None
    """The values, one variant each."""
    range: RangeSpec | None = None
    """Values spread over a range."""

    @model_validator(mode="after")
    def _one_source(self) -> ParameterSpec:
        if (self.values is None) == (self.range is None):
            raise ValueError("give exactly one of values or range")
        return self

    def points(self) -> list[Scalar]:
        return list(self.values) if self.values is not None else self.range.values()  # type: ignore[union-attr]


class SweepSpec(Strict):
    """Expands one or two variant fields into variants, one per value (two: every combination),
    added after the spec's own variants, which stay the references."""

    parameters: Annotated[list[ParameterSpec], Field(min_length=1, max_length=2)]
    """The swept fields (`[[sweep.parameters]]`), one or two."""
    base: dict[str, Any] = {}
    """Variant fields every swept variant shares (`{ allocator = "jemalloc" }`)."""
    fit: Literal["value", "reciprocal", "none"] = "value"
    """Fit each metric's change against the value, its reciprocal (1/N rates, 0 standing for never), or not."""

    @model_validator(mode="after")
    def _distinct(self) -> SweepSpec:
        if len({p.field for p in self.parameters}) < len(self.parameters):
            raise ValueError(f"the field {self.parameters[0].field!r} is swept twice")
        made = next((key for key in ("name", "sweep") if key in self.base), None)
        if made is not None:
            raise ValueError(f"base.{made} is made by the sweep for each variant; remove it")
        return self


def _label(value: Scalar) -> str:
    """A value as a variant name takes it: `25%` (a zram share) reads `25pct`, not `25_`."""
    text = f"{value:g}" if isinstance(value, float) else str(value).lower().replace("%", "pct")
    return re.sub(r"[^A-Za-z0-9._+-]", "_", text)


def _short(field: str) -> str:
    return re.sub(r"[^A-Za-z0-9._+-]", "_", field.rsplit(".", 1)[-1].rsplit("/", 1)[-1])


def _check_point(variant: object, where: str) -> None:
    """A stored swept variant carries the point it stands for (`sweep`), which the fit reads; a
    point that its own fields contradict (written by hand: `sweep = { "env.X" = 5 }` beside
    `env.X = "1"`, or beside no env.X at all) would put its runs at a place they never ran."""
    if not isinstance(variant, dict) or not isinstance(variant.get("sweep"), dict) or not variant["sweep"]:
        return
    claimed = copy.deepcopy(variant)
    for field, value in variant["sweep"].items():
        set_field(claimed, str(field), value, where)
    try:
        agrees = VariantSpec.model_validate(claimed) == VariantSpec.model_validate(variant)
    except ValidationError:
        return  # the variant's own errors are reported where the spec is validated
    if not agrees:
        raise SpecError("is not what the variant's fields hold (a sweep point is written by [sweep])", where=where)


def expand_sweep(data: Mapping[str, Any], source: str) -> dict[str, Any]:
    """The spec with its `sweep` section replaced by the variants it stands for."""
    out, sweep = take_section(data, "sweep", SweepSpec, source)
    variants = out.get("variants") or []
    if not isinstance(variants, list):
        raise SpecError(f"a list of variants, not {type(variants).__name__} {shown(variants)}", where=f"{source}: variants")
    for i, given in enumerate(variants):
        _check_point(given, f"{source}: variants[{i}].sweep")
    if sweep is None:
        return out
    grid = [p.points() for p in sweep.parameters]
    count = math.prod(map(len, grid))  # counted before a single variant is built
    if count + len(variants) > MAX_VARIANTS:
        raise SpecError(
            f"the sweep expands into {' x '.join(str(len(g)) for g in grid)} = {count} variants"
            f"{f' beside {len(variants)} others' if variants else ''}; at most {MAX_VARIANTS} are allowed",
            where=f"{source}: sweep.parameters",
        )
    variants = list(variants)
    for point in itertools.product(*grid):
        variant: dict[str, Any] = {k: (dict(v) if isinstance(v, dict) else v) for k, v in sweep.base.items()}
        for i, (parameter, value) in enumerate(zip(sweep.parameters, point, strict=True)):
            set_field(variant, parameter.field, value, f"{source}: sweep.parameters[{i}].field")
        variant["name"] = "_".join(f"{_short(p.field)}-{_label(v)}" for p, v in zip(sweep.parameters, point, strict=True))
        variant["sweep"] = {p.field: v for p, v in zip(sweep.parameters, point, strict=True)}
        variants.append(variant)
    out["variants"] = variants
    out["fit"] = sweep.fit
    return out
