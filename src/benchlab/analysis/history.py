"""History: experiments re-run over time (a nightly job, a commit series) as one series per
workload, metric and variant, with the change points Otava finds in it (analysis/changepoints.py).

Which experiments: those of one database whose names match a glob, oldest first by creation
time (a spec has no field that orders runs of a series more naturally: a commit series is
created in its order too). Each point is one experiment's median of the variant's runs
(warm-ups, failures and runs of another workload version left out, as a report does) with its
95% order-statistic interval. A workload whose version changed is a new series: results of
different versions are never compared.

Change points are looked for among these medians, not among all runs: runs of one experiment
share its moment (the build, the machine's state that day), so the spread from one experiment
to the next is larger than the spread inside one, and a test over runs, counting each as
independent, would call almost every day a change. The size of a change is then measured on
the runs themselves: the two-sample Hodges-Lehmann shift of the logs of every run of the
segment after it over every run of the segment before it (segments end at the neighbouring
change points), with its 95% interval; that interval speaks for runs, so it is narrower than
the experiment-to-experiment spread (the detector's p speaks for that).
"""

from __future__ import annotations

import fnmatch
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal

import numpy as np
from pydantic import Field

from benchlab.analysis import changepoints
from benchlab.analysis.analyze import build_series
from benchlab.errors import SpecError
from benchlab.report_model import Model, Number, Pair, number, pair
from benchlab.stats.estimators import hodges_lehmann_two_sample, median_ci
from benchlab.stats.judge import as_fraction
from benchlab.store import ExperimentData, Store

SCHEMA: Final = "benchlab.history/1"
NAMES_SHOWN = 10  # stored names listed in a refusal


class Point(Model):
    """One experiment's median of the series' runs."""

    experiment: str
    created_at: float
    runs: int
    median: float
    median_ci: Pair = Field(description="95% order-statistic interval; null where too few runs reach the level")


class ChangePoint(Model):
    """Where the series changed: between `before` (the last experiment before) and `after` (the first after)."""

    index: int = Field(description="place of `after` in the series' points")
    before: str
    after: str
    before_median: float = Field(description="median of every run of the segment before")
    after_median: float = Field(description="median of every run of the segment after")
    change: Number = Field(description="after over before, a fraction: exp(two-sample Hodges-Lehmann shift of logs) - 1")
    change_ci: Pair = Field(description="95% interval of the change, from the runs of both segments")
    log_scale: bool = Field(description="false: zero or negative values, so the change is the raw shift over before_median")
    pvalue: float = Field(description="Otava's t-test between the experiment medians of the two segments")
    points_before: int
    points_after: int
    runs_before: int
    runs_after: int


class Series(Model):
    workload: str
    version: str = Field(description="the workload's version: another version is another series")
    metric: str
    unit: str
    direction: str = Field(description="lower, higher or none: which way is better")
    variant: str
    points: list[Point]
    change_points: list[ChangePoint]


class History(Model):
    """What `benchlab history` prints, and its JSON (schema `benchlab.history/1`)."""

    history_schema: Literal["benchlab.history/1"] = Field(default=SCHEMA, alias="schema")
    experiments: list[str] = Field(description="the experiments matched, oldest first")
    max_pvalue: float
    min_change: float
    window: int
    series: list[Series]
    warnings: list[str]

    def to_json(self) -> str:
        """json.dumps, as the report's JSON: every control and non-ASCII character in a stored name escaped."""
        return json.dumps(self.model_dump(mode="json", by_alias=True), indent=2) + "\n"


@dataclass(frozen=True)
class Selection:
    """Globs (fnmatch, case-sensitive) on experiment, workload, metric and variant names."""

    experiments: str = "*"
    workload: str = "*"
    metric: str = "*"
    variant: str = "*"


@dataclass
class _Collected:
    workload: str
    version: str
    metric: str
    unit: str
    direction: str
    variant: str
    points: list[Point] = field(default_factory=list)
    runs: list[np.ndarray] = field(default_factory=list)


def history(store: Store, selection: Selection, settings: changepoints.Settings) -> History:
    """The matched experiments' series with their change points."""
    check_settings(settings)
    loaded = [store.load(store.require_experiment(name)) for name in matched_experiments(store, selection.experiments)]
    collected, warnings = _collect(loaded, selection)
    return History(
        experiments=[d.experiment.name for d in loaded],
        max_pvalue=settings.max_pvalue,
        min_change=settings.min_change,
        window=settings.window,
        series=[_series(c, settings) for c in collected],
        warnings=warnings,
    )


def check_settings(settings: changepoints.Settings) -> None:
    if not 0 < settings.max_pvalue < 1:
        raise SpecError(f"must be above 0 and below 1, not {settings.max_pvalue}", where="--max-pvalue")
    if not 0 <= settings.min_change < math.inf:
        raise SpecError(f"must be a fraction of 0 or more, not {settings.min_change}", where="--min-change")
    if settings.window < 2:
        raise SpecError(f"must be 2 points or more, not {settings.window}", where="--window")


def matched_experiments(store: Store, pattern: str) -> list[str]:
    """Names matching `pattern`, oldest first (the store lists them by creation time)."""
    names = [row["name"] for row in store.list_experiments() if fnmatch.fnmatchcase(row["name"], pattern)]
    if not names:
        raise SpecError(f"no experiment in {store.target} matches '{pattern}'", hint="`benchlab list` shows what is stored")
    return names


def _collect(loaded: Sequence[ExperimentData], selection: Selection) -> tuple[list[_Collected], list[str]]:
    """The selected series' points, in experiment order; a filter that matches no stored name is refused."""
    seen: dict[str, set[str]] = {"workload": set(), "metric": set(), "variant": set()}
    collected: dict[tuple[str, str, str, str], _Collected] = {}
    warnings = []
    for data in loaded:
        series, notes = build_series(data)
        warnings += [f"{data.experiment.name}: {note}" for note in notes]
        for s in series:
            version = data.experiment.workload_versions.get(s.workload, "")
            for variant, (_, values) in s.values.items():
                names = {"workload": s.workload, "metric": s.metric, "variant": variant}
                for kind, name in names.items():
                    seen[kind].add(name)
                if not all(fnmatch.fnmatchcase(name, getattr(selection, kind)) for kind, name in names.items()):
                    continue
                key = (s.workload, version, s.metric, variant)
                if key not in collected:
                    collected[key] = _Collected(s.workload, version, s.metric, s.unit, s.direction, variant)
                med, lo, hi = median_ci(values)
                collected[key].points.append(
                    Point(experiment=data.experiment.name, created_at=data.experiment.created_at, runs=len(values),
                          median=med, median_ci=pair((lo, hi)))
                )  # fmt: skip
                collected[key].runs.append(values)
    for kind in seen:
        _check_filter(kind, getattr(selection, kind), seen[kind])
    if not collected:
        warnings.append("the matched experiments hold no successful run: there is no series to show")
    ordered = sorted(collected.values(), key=lambda c: (c.workload, c.points[0].created_at, c.metric, c.variant))
    return ordered, warnings  # a workload's versions in the order they first ran


def _check_filter(kind: str, pattern: str, stored: Iterable[str]) -> None:
    names = sorted(stored)
    if pattern == "*" or any(fnmatch.fnmatchcase(name, pattern) for name in names):
        return
    listed = ", ".join(names[:NAMES_SHOWN]) + (f" and {len(names) - NAMES_SHOWN} more" if len(names) > NAMES_SHOWN else "")
    raise SpecError(f"no stored {kind} matches '{pattern}' (stored: {listed or 'none'})", where=f"--{kind}")


def _series(c: _Collected, settings: changepoints.Settings) -> Series:
    found = changepoints.change_points([p.median for p in c.points], settings)
    bounds = [0, *(f.index for f in found), len(c.points)]
    return Series(
        workload=c.workload, version=c.version, metric=c.metric, unit=c.unit, direction=c.direction, variant=c.variant,
        points=c.points,
        change_points=[_change_point(c, bounds[i], f, bounds[i + 2]) for i, f in enumerate(found)],
    )  # fmt: skip


def _change_point(c: _Collected, start: int, found: changepoints.Found, end: int) -> ChangePoint:
    """The change at `found.index`, measured on the runs of the segments [start, index) and [index, end)."""
    before = np.concatenate(c.runs[start : found.index])
    after = np.concatenate(c.runs[found.index : end])
    before_median = float(np.median(before))
    log_scale = bool(before.min() > 0 and after.min() > 0)
    if log_scale:
        shift, ((lo, hi),) = hodges_lehmann_two_sample(np.log(after), np.log(before))
    else:
        shift, ((lo, hi),) = hodges_lehmann_two_sample(after, before)
    to_frac = as_fraction(log_scale, before_median)
    change, ci = to_frac(shift), (to_frac(lo), to_frac(hi))
    return ChangePoint(
        index=found.index, before=c.points[found.index - 1].experiment, after=c.points[found.index].experiment,
        before_median=before_median, after_median=float(np.median(after)), change=number(change), change_ci=pair(ci),
        log_scale=log_scale, pvalue=found.pvalue, points_before=found.index - start, points_after=end - found.index,
        runs_before=len(before), runs_after=len(after),
    )  # fmt: skip
