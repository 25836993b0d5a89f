"""Where the time went: an experiment's profiled runs judged like its metrics (`benchlab explain`,
and the `profiles` section of every report).

Each profiled run's stacks become its time per function (self: where the function is the leaf),
per library and kernel vs user. A variant's profiled run pairs with the baseline's of the same
block on the same host, as timed runs do, and each function's time is one more series for the
one judge every metric goes through (`stats.judge`): the paired change with its interval, the
correction, the verdict. Functions are judged as raw shifts in time, as a fraction of the
workload's whole profiled time on the baseline (a function may run in one variant only: an
allocator's), in a family of their own per workload, so that under A/A at most alpha of
experiments name any function (bench/profile_aa.py measures it). Which functions are judged is
fixed before any difference is looked at: those holding at least MIN_SHARE of the time pooled
over every variant, at most MAX_FUNCTIONS. Libraries, kernel vs user and the whole are shown
with their unadjusted intervals and not judged: they restate the functions' changes, and the
workload's own metrics say whether it changed.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import cast

import numpy as np

from benchlab import report_model as model
from benchlab.errors import StoreError
from benchlab.stacks import (
    TIME_EVENTS,
    Costs,
    DamagedProfile,
    Function,
    StackDocument,
    costs,
    decode,
    function_of,
    unsymbolized_name,
)
from benchlab.stats.estimators import hodges_lehmann_two_sample, paired_t
from benchlab.stats.judge import Row, Series, Settings, judge, pair_key
from benchlab.store import ExperimentData, ProfiledRun
from benchlab.terms import CHARACTERISTIC, PRIMARY

MIN_SHARE = 0.01  # a function judged holds at least this share of the workload's pooled time
MAX_FUNCTIONS = 30
MAX_LIBRARIES = 12
MAX_INCLUSIVE = 15  # the functions most on the stack, shown with their callees' time
EVERYWHERE = 0.95  # a function on this share of the stacks or more (`main`) says nothing of where
ALL = "all"
CYCLES, INSTRUCTIONS, CPI = "cycles", "instructions", "cycles per instruction"
MEANING = {CYCLES: "the whole", INSTRUCTIONS: "more work", CPI: "slower work"}  # cycles = instructions x CPI
MIN_FRAME = 0.001  # a flame graph's narrowest frame, a fraction of the whole
MAX_FRAMES = 10_000  # a flame graph's frames at most (the widest kept)


@dataclass(frozen=True)
class Profiled:
    """One profiled run that yielded a profile, read back."""

    run: ProfiledRun
    costs: Costs
    document: StackDocument

    @property
    def key(self) -> int:
        return pair_key(self.run.host_id, self.run.block)


def read_profiles(runs: Iterable[ProfiledRun]) -> tuple[list[Profiled], str]:
    """The profiles of the runs that yielded one, and the event they sampled. A stored profile
    that is not what benchlab writes is refused in one line, naming its run."""
    read: list[Profiled] = []
    events: set[str] = set()
    for run in runs:
        if run.status != "ok" or run.profile is None:
            continue
        try:
            document = decode(run.profile)
        except DamagedProfile as exc:
            raise StoreError(
                f"profiled run {run.uuid} ({run.workload}/{run.variant} block {run.block + 1}) is damaged: {exc}"
            ) from None
        events.add(document.event)
        read.append(Profiled(run, costs(document), document))
    return read, ", ".join(sorted(events))


def _series(
    workload: str,
    name: str,
    unit: str,
    profiled: list[Profiled],
    value: dict[int, float],
    *,
    family: str,
    whole: float,
    group: str,
) -> Series:
    """One quantity of every profiled run of a workload (`value`: by the run's place in
    `profiled`, 0 where absent) as a series per variant, keyed for pairing."""
    per_variant: dict[str, tuple[list[int], list[float]]] = defaultdict(lambda: ([], []))
    for i, p in enumerate(profiled):
        keys, values = per_variant[p.run.variant]
        keys.append(p.key)
        values.append(value.get(i, 0.0))
    arrays = {v: (np.asarray(k, dtype=np.int64), np.asarray(x, dtype=float)) for v, (k, x) in per_variant.items()}
    return Series(workload, name, unit, "lower", arrays, family, group=group, raw_fraction_of=whole, parametric=True)


@dataclass(frozen=True)
class _Quantity:
    level: str
    name: str
    library: str | None
    kernel: bool | None
    self_time: dict[int, float]
    inclusive: dict[int, float] | None = None


def _cold_addresses(pooled: dict[Function, float], threshold: float) -> dict[Function, Function]:
    """Each address of code without a symbol (`[lib]+0x...`) holding less than `threshold`, to its
    library's `[lib]`: a stripped function is one row per hot instruction, and the rest of a
    stripped library's time, spread over addresses each too small to judge, is judged together
    (an allocator's internals, `[libjemalloc.so.2]`). Their time with callees is not summed:
    one stack may hold several of them."""
    return {
        f: Function(f"[{f.library}]", f.library, f.kernel)
        for f, t in pooled.items()
        if t < threshold and unsymbolized_name(f.name) and f.name != f"[{f.library}]"
    }


def _quantities(profiled: list[Profiled]) -> list[_Quantity]:
    """The functions judged (by self time), then those most on the stack (by inclusive time,
    leaving out those on nearly every stack: `main`, a thread's entry), the libraries, kernel and
    user, and the whole, each by run."""
    pooled_total = sum(p.costs.total for p in profiled)
    pooled: dict[Function, float] = defaultdict(float)
    on_stack: dict[Function, float] = defaultdict(float)
    libraries: dict[str, float] = defaultdict(float)
    for p in profiled:
        for function, t in p.costs.self_time.items():
            pooled[function] += t
        for function, t in p.costs.inclusive.items():
            on_stack[function] += t
        for library, t in p.costs.libraries.items():
            libraries[library] += t
    rest = _cold_addresses(pooled, MIN_SHARE * pooled_total)
    grouped: dict[Function, float] = defaultdict(float)
    for function, t in pooled.items():
        grouped[rest.get(function, function)] += t
    chosen = sorted((f for f, t in grouped.items() if t >= MIN_SHARE * pooled_total), key=lambda f: (-grouped[f], f))[
        :MAX_FUNCTIONS
    ]
    members = {f: [m for m, group in rest.items() if group == f] for f in chosen if f in rest.values()}
    out = [
        _Quantity(
            "function", f.name, f.library, f.kernel,
            {i: sum(p.costs.self_time.get(m, 0.0) for m in [f, *members.get(f, [])]) for i, p in enumerate(profiled)},
            None if f in members else {i: p.costs.inclusive.get(f, 0.0) for i, p in enumerate(profiled)},
        )
        for f in chosen
    ]  # fmt: skip
    callers = [f for f, t in on_stack.items() if MIN_SHARE * pooled_total <= t < EVERYWHERE * pooled_total and pooled[f] < t]
    out += [
        _Quantity("inclusive", f.name, f.library, f.kernel, {i: p.costs.inclusive.get(f, 0.0) for i, p in enumerate(profiled)})
        for f in sorted(callers, key=lambda f: (-on_stack[f], f))[:MAX_INCLUSIVE]
    ]
    top = sorted(libraries, key=lambda lib: (-libraries[lib], lib))[:MAX_LIBRARIES]
    out += [
        _Quantity("library", lib, lib, None, {i: p.costs.libraries.get(lib, 0.0) for i, p in enumerate(profiled)}) for lib in top
    ]
    out.append(_Quantity("space", "kernel", None, True, {i: p.costs.kernel for i, p in enumerate(profiled)}))
    out.append(_Quantity("space", "user", None, False, {i: p.costs.total - p.costs.kernel for i, p in enumerate(profiled)}))
    out.append(_Quantity("total", ALL, None, None, {i: p.costs.total for i, p in enumerate(profiled)}))
    return out


def _wait_quantities(waits: list[Profiled]) -> list[_Quantity]:
    """Where the workload waited off the CPU: the functions most on its waits' stacks, by
    inclusive time (the scheduler is every wait's leaf, so a wait is told apart by what called
    it), leaving out those on nearly every wait (the scheduler itself); then all waits."""
    total = sum(p.costs.total for p in waits)
    on_stack: dict[Function, float] = defaultdict(float)
    for p in waits:
        for function, t in p.costs.inclusive.items():
            on_stack[function] += t
    telling = [f for f, t in on_stack.items() if MIN_SHARE * total <= t < EVERYWHERE * total]
    chosen = sorted(telling, key=lambda f: (-on_stack[f], f))
    out = [
        _Quantity("off-cpu", f.name, f.library, f.kernel, {i: p.costs.inclusive.get(f, 0.0) for i, p in enumerate(waits)})
        for f in chosen[:MAX_FUNCTIONS]
    ]
    return [*out, _Quantity("off-cpu total", ALL, None, None, {i: p.costs.total for i, p in enumerate(waits)})]


def _judged_series(
    workload: str, profiled: list[Profiled], baseline: str, quantities: list[_Quantity], *, group: str
) -> list[tuple[Series, _Quantity, list[Profiled]]]:
    """Each quantity as a series, as a fraction of the workload's whole on the baseline (its
    median): the judged levels in the family of `group`, the rest shown."""
    base = [p for p in profiled if p.run.variant == baseline] or profiled
    whole, unit = _median(p.costs.total for p in base), profiled[0].costs.unit
    return [
        (
            _series(
                workload, f"{q.level}:{q.name}:{q.library}", unit, profiled, q.self_time,
                family=PRIMARY if q.level in JUDGED else CHARACTERISTIC, whole=whole, group=group,
            ),
            q,
            profiled,
        )
        for q in quantities
    ]  # fmt: skip


def _median(values: Iterable[float]) -> float:
    found = list(values)
    return float(np.median(found)) if found else math.nan


def _function_row(
    row: Row, quantity: _Quantity, profiled: list[Profiled], baseline: str, total_shift: float
) -> model.FunctionRow:
    shift = row.change * row.fraction_of if not math.isnan(row.change) else math.nan
    inclusive = quantity.inclusive

    def inclusive_median(variant: str) -> float | None:
        if inclusive is None:
            return None
        return model.number(_median(inclusive[i] for i, p in enumerate(profiled) if p.run.variant == variant))

    return model.FunctionRow(
        workload=row.workload, variant=row.variant, level=quantity.level,  # type: ignore[arg-type]
        name=quantity.name, library=quantity.library, kernel=quantity.kernel, unit=row.unit, pairs=row.pairs,
        self_median=model.number(row.median), baseline_self_median=model.number(row.baseline_median),
        inclusive_median=inclusive_median(row.variant), baseline_inclusive_median=inclusive_median(baseline),
        shift=model.number(shift), share=model.number(shift / total_shift if total_shift else math.nan),
        change=model.number(row.change), change_ci=model.pair(row.change_ci), change_ci_level=model.number(row.change_ci_level),
        change_ci95=model.pair(row.change_ci95), test=row.test, p=model.number(row.p), q=model.number(row.q),
        verdict=row.verdict, blocks_needed=row.blocks_needed, family=row.family, note=row.note or None,
    )  # fmt: skip


def _log_change(logs: list[float]) -> tuple[float, tuple[float, float]]:
    """A ratio from its per-block log ratios: exp(mean) - 1 with its 95% paired-t interval (none
    below 2 pairs; a point where every pair gives the same ratio)."""
    if len(logs) < 2 or np.ptp(logs) == 0:
        change = math.expm1(logs[0]) if logs else math.nan
        return change, (change, change) if len(logs) > 1 else (math.nan, math.nan)
    mean, (ci,), _ = paired_t(np.asarray(logs))
    return math.expm1(mean), (math.expm1(ci[0]), math.expm1(ci[1]))


def _cost(workload: str, variant: str, profiled: list[Profiled], wall: Series | None) -> model.ProfileCost:
    """Profiled against unprofiled wall time of one variant, paired by block: the mean log ratio
    with its 95% paired-t interval (too few pairs: none)."""
    keys, values = wall.of(variant) if wall is not None else (np.empty(0, dtype=np.int64), np.empty(0))
    timed: dict[int, float] = dict(zip(cast(list[int], keys.tolist()), cast(list[float], values.tolist()), strict=True))
    ratios = [
        math.log(p.run.wall_s / timed[p.key])
        for p in profiled
        if p.run.variant == variant and p.run.wall_s and timed.get(p.key, 0) > 0
    ]
    change, ci = _log_change(ratios)
    return model.ProfileCost(
        workload=workload, variant=variant, pairs=len(ratios), change=model.number(change),
        change_ci=model.pair(ci),
    )  # fmt: skip


def _counted(profiled: list[Profiled]) -> dict[str, list[float | None]]:
    """Each event perf stat counted, by run (None where the run did not count it), with cycles
    per instruction where both are counted: cycles, instructions and their ratio first, then the
    rest by name."""
    events = {event for p in profiled for event in p.document.counters}
    values = {e: [p.document.counters.get(e) for p in profiled] for e in events}
    if CYCLES in values and INSTRUCTIONS in values:
        values[CPI] = [c / i if c is not None and i else None for c, i in zip(values[CYCLES], values[INSTRUCTIONS], strict=True)]
    first = list(MEANING)
    return {e: values[e] for e in sorted(values, key=lambda e: (first.index(e) if e in first else len(first), e))}


def _counter_rows(workload: str, variants: list[str], baseline: str, profiled: list[Profiled]) -> list[model.CounterRow]:
    """Per variant and counted event, its change against the baseline: paired by block where
    both were counted in the same blocks, else (a diff) as two samples of logs. A count of 0 has
    no ratio and is left out."""
    rows = []
    for event, per_run in _counted(profiled).items():
        by_variant: dict[str, dict[int, float]] = defaultdict(dict)
        for p, value in zip(profiled, per_run, strict=True):
            if value is not None and value > 0:
                by_variant[p.run.variant][p.key] = value
        base = by_variant.get(baseline, {})
        for variant in variants:
            mine = by_variant.get(variant, {})
            if variant == baseline or not mine or not base:
                continue
            shared = sorted(base.keys() & mine.keys())
            if shared:
                change, ci = _log_change([math.log(mine[k] / base[k]) for k in shared])
            else:
                shift, (logs_ci,) = hodges_lehmann_two_sample(np.log(list(mine.values())), np.log(list(base.values())))
                change, ci = math.expm1(shift), (math.expm1(logs_ci[0]), math.expm1(logs_ci[1]))
            rows.append(model.CounterRow(
                workload=workload, variant=variant, counter=event, meaning=MEANING.get(event),
                unit="s" if event in TIME_EVENTS else "count", pairs=len(shared),
                baseline_median=model.number(_median(base.values())), median=model.number(_median(mine.values())),
                change=model.number(change), change_ci=model.pair(ci),
            ))  # fmt: skip
    return rows


@dataclass
class _Node:
    weight: float = 0.0
    children: dict[tuple[str, str | None], _Node] = field(default_factory=dict)


def flame_graph(
    workload: str, variant: str, profiled: list[Profiled], baseline: list[Profiled] | None = None
) -> model.FlameGraph:
    """A variant's profiled runs merged into one flame graph: every stack from its process name
    down, frames merged by (function, library) along the path, siblings in name order as
    FlameGraph draws them, each frame's width its inclusive time over the whole. With `baseline`
    (a differential graph), the widths are the mean of the two variants' time per run, so that
    what only the baseline ran (an allocator replaced) has frames to colour as well as what only
    the variant runs.

    Laid out here, not drawn by a flame graph tool, because the page draws it as plain SVG with
    no script (the tools' SVG carries its own) and a renderer runs no program: what the layout
    needs is one prefix-tree walk."""
    weighted = [(p, 1 / len(profiled)) for p in profiled]
    if baseline:
        weighted = [(p, w / 2) for p, w in weighted] + [(p, 1 / (2 * len(baseline))) for p in baseline]
    root = _Node()
    for p, share in weighted:
        functions = [function_of(*frame) for frame in p.document.frames]
        for comm, path, period, _ in p.document.stacks:
            weight = period * p.document.scale * share
            node = root
            for key in ((comm or "[unknown]", None), *((functions[i].name, functions[i].library) for i in path)):
                node = node.children.setdefault(key, _Node())
                node.weight += weight
    total = sum(child.weight for child in root.children.values())
    frames: list[model.FlameFrame] = []
    pending = [(root, -1, 0.0)]
    while pending and total > 0:
        node, depth, start = pending.pop()
        for (name, library), child in sorted(node.children.items(), key=lambda item: (item[0][0], item[0][1] or "")):
            width = child.weight / total
            if width >= MIN_FRAME:
                frames.append(model.FlameFrame(name=name, library=library, depth=depth + 1, start=start, width=width))
                pending.append((child, depth + 1, start))
            start += width
    frames = sorted(frames, key=lambda f: -f.width)[:MAX_FRAMES]
    return model.FlameGraph(
        workload=workload, variant=variant, total=total, unit=profiled[0].costs.unit, runs=len(profiled), frames=frames,
        against=baseline[0].run.variant if baseline else None,
    )  # fmt: skip


def _flame_graphs(workload: str, variants: list[str], baseline: str, mine: list[Profiled]) -> list[model.FlameGraph]:
    """Each variant's differential graph against the baseline (its own, where the baseline has no
    profiled run), then the baseline's own."""
    runs = {v: [p for p in mine if p.run.variant == v] for v in variants}
    base = runs.get(baseline, [])
    graphs = [flame_graph(workload, v, runs[v], base or None) for v in variants if v != baseline and runs[v]]
    return graphs + ([flame_graph(workload, baseline, base)] if base else [])


def explain(data: ExperimentData, settings: Settings, variants: list[str], series: list[Series]) -> model.Profiles | None:
    """The `profiles` section of the report: None where the experiment has no profiled runs.
    `series`: the experiment's metric series, whose wall times the profiling cost is measured against."""
    if not data.profiled:
        return None
    walls = {s.workload: s for s in series if s.metric == "wall"}
    return judge_profiles(data.profiled, [w.name for w in data.experiment.spec.workloads], variants, settings, walls)


def judge_profiles(
    runs: list[ProfiledRun], workloads: list[str], variants: list[str], settings: Settings, walls: dict[str, Series]
) -> model.Profiles:
    """Profiled runs judged: per workload (in this order) and variant against the baseline."""
    profiled, event = read_profiles(runs)
    failed = [r for r in runs if r.status != "ok"]
    notes = [f"{r.workload}/{r.variant} block {r.block + 1}: no profile: {r.message}" for r in failed[:5]]
    if len(failed) > 5:
        notes.append(f"... and {len(failed) - 5} more profiled runs without a profile")
    rows: list[model.FunctionRow] = []
    cost: list[model.ProfileCost] = []
    flames: list[model.FlameGraph] = []
    counters: list[model.CounterRow] = []
    judged: list[tuple[Series, _Quantity, list[Profiled]]] = []
    for workload in workloads:
        mine = [p for p in profiled if p.run.workload == workload]
        if not mine:
            continue
        judged += _judged_series(workload, mine, settings.baseline, _quantities(mine), group=f"{workload} profile")
        waits = [Profiled(p.run, costs(document), document) for p in mine if (document := p.document.waits()).stacks]
        if waits:
            judged += _judged_series(workload, waits, settings.baseline, _wait_quantities(waits), group=f"{workload} off-cpu")
        cost += [_cost(workload, v, mine, walls.get(workload)) for v in variants]
        flames += _flame_graphs(workload, variants, settings.baseline, mine)
        counters += _counter_rows(workload, variants, settings.baseline, mine)
        unsymbolized = sum(p.costs.unsymbolized for p in mine) / max(sum(p.costs.total for p in mine), 1e-300)
        if unsymbolized >= MIN_SHARE:
            notes.append(
                f"{workload}: {unsymbolized:.0%} of the time is in code without symbols, counted by library and address "
                "([lib]+0x...: the address objdump and addr2line take) or, where its mapping was not seen, by library ([lib])"
            )
    found, _ = judge([s for s, _, _ in judged], variants, settings)
    by_series = {(r.workload, r.metric, r.variant): r for r in found}
    # a share of a change not shown to exist is noise: only where the whole's 95% interval excludes zero
    totals = {
        (r.workload, r.variant, r.group): r.change * r.fraction_of
        for r in found
        if r.metric.startswith(("total:", "off-cpu total:")) and (r.change_ci95[0] > 0 or r.change_ci95[1] < 0)
    }
    for s, quantity, mine in judged:
        for variant in variants:
            row = by_series.get((s.workload, s.metric, variant))
            if row is None or variant == settings.baseline and len(variants) > 1:
                continue
            total = totals.get((s.workload, variant, s.group), math.nan)
            rows.append(_function_row(row, quantity, mine, settings.baseline, total))
    rows.sort(key=lambda r: (r.workload, r.variant, _LEVELS.index(r.level), -abs(r.shift or 0.0), r.name, r.library or ""))
    if event == "cpu-clock":
        notes.append(
            "no hardware counters here: time is sampled as cpu-clock, and cycles, instructions and misses are not counted"
        )
    return model.Profiles(
        event=event, runs=len(profiled), failed=len(failed), rows=rows, cost=cost, flames=flames, counters=counters, notes=notes
    )


_LEVELS = ("function", "inclusive", "library", "space", "total", "off-cpu", "off-cpu total")
JUDGED = ("function", "off-cpu")  # the levels judged, each workload's in a family of its own
