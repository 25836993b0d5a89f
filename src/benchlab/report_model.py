"""The report: one typed model that the analysis fills and every format renders.

The JSON report is this model serialised (schema `benchlab.report/2`), and its
JSON Schema, generated from these classes, is published as docs/report.schema.json,
so a reader of the table and a program reading the JSON see the same numbers
under the same names. How the report is drawn (the plain metric table, the CPU
scores, the sweep, the `--times` view) is chosen when rendering, never stored in it.

Numbers a report cannot give (no estimate, too few runs) are null, never NaN.
"""

from __future__ import annotations

import datetime
import json
import math
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, with_config
from typing_extensions import TypedDict  # pydantic needs this one before Python 3.12

SCHEMA: Final = "benchlab.report/2"

Number = float | None
Level = Literal["workload", "section", "overall", "suite"]  # of a CPU-suite score row
Pair = tuple[Number, Number]
LOG_SCALE = (
    "true: the change is a ratio, exp(mean or Hodges-Lehmann log ratio) - 1; false: the metric has zero or "
    "negative values, so the change is the raw shift divided by the baseline's median"
)


def number(x: float | None) -> Number:
    """NaN (no estimate) becomes None (JSON null)."""
    return None if x is None or math.isnan(x) else float(x)


def pair(p: tuple[float, float]) -> Pair:
    return number(p[0]), number(p[1])


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class Judgement(Model):
    """What every judged comparison carries: its change against the baseline (a fraction),
    the test, the corrected p and the verdict."""

    change: Number
    change_ci: Pair = Field(
        description="interval of the change at change_ci_level: for a judged row its family's corrected level, at "
        "which it excludes 0 exactly when the verdict is better or worse; 95% for a row not judged"
    )
    change_ci_level: Number = Field(
        default=None, description="confidence level of change_ci: 0.95 unadjusted, higher where a family's correction widens it"
    )
    change_ci95: Pair = Field(default=(None, None), description="the unadjusted 95% interval of the change")
    test: str
    p: Number
    q: Number = Field(description="p adjusted within its family, on alpha's scale: q < alpha decides")
    verdict: str = Field(description="better, worse, same, unclear, or - (not judged)")
    blocks_needed: int | None = Field(description="blocks likely to decide an unclear comparison")
    family: str
    note: str | None


class MetricRow(Judgement):
    """One metric of one workload, one variant against the baseline."""

    workload: str
    metric: str
    unit: str
    direction: str = Field(description="lower or higher is better, or none (a characteristic)")
    variant: str
    n: int = Field(description="the variant's runs")
    pairs: int = Field(description="runs paired with the baseline by block; 0: compared as two samples")
    median: Number
    median_ci: Pair
    baseline_median: Number
    baseline_n: int | None = Field(default=None, description="the baseline's runs")
    baseline_median_ci: Pair = Field(default=(None, None), description="95% interval of the baseline's median")
    change_ci90: Pair = Field(description="90% interval, the one compared with the margin for 'same'")
    log_scale: bool = Field(description=LOG_SCALE)
    spread: Number = Field(description="standard deviation of the differences, on the scale they are tested on")
    change_note: str | None = Field(
        default=None,
        description="why the change and the medians point opposite ways, where they do: the change is the paired "
        "estimate over blocks, not the ratio of the medians (the tables mark the change with a dagger)",
    )
    best: Number = Field(description="best of the variant's runs: the lowest, or the highest where higher is better")
    baseline_best: Number


class GeomeanRow(Judgement):
    """Per variant and direction, the geometric mean of the ratios of its primary metrics."""

    variant: str
    direction: str
    metrics: int
    blocks: int
    log_scale: Literal[True] = Field(default=True, description="a geometric mean is always of ratios")


class ScoreRow(Judgement):
    """A CPU-suite score (a workload, a section, the overall score) or a suite total, of one variant."""

    level: Level
    name: str
    section: str | None
    mode: str = Field(description="single-core, multi-core or shared; for suite totals the total's name")
    variant: str
    unit: str
    n: int
    score: Number
    score_ci: Pair = Field(
        description="95% interval of the score: a workload's, of its median (order statistics); a section's or the "
        "overall score's, a percentile bootstrap over blocks of Geekbench's arithmetic on the workload medians; a suite "
        "total's, of its median; null under 6 blocks"
    )
    log_scale: bool | None = Field(description=LOG_SCALE + "; null where the row is not compared")
    peak_memory_kib: Number = None
    threads: Number = None
    scaling: Number = Field(default=None, description="score / single-core score / threads")
    spread: Number = Field(
        default=None,
        description="run-to-run spread of the per-block scores: their median absolute deviation scaled to a normal "
        "standard deviation (x 1.4826), / their median (a robust coefficient of variation); null under 3 blocks",
    )
    covers: str | None = Field(
        default=None,
        description="on a section or overall row of a subset of the suite, what it is over (`3 of 9 workloads`); "
        "null where every workload of it ran",
    )


class Scores(Model):
    suite: str
    suite_version: int
    baseline_machine: dict[str, Any]
    baseline_measured: dict[str, Any]
    weights: dict[str, float]
    reference: str
    variants: list[str]
    modes: list[str]
    workloads: list[str]
    rows: list[ScoreRow]


class SweepModel(Model):
    """One model fitted through a metric's log changes along a sweep (see stats/fit.py)."""

    model: str = Field(
        description="line (in x), log (linear in ln(value)), additive (the change itself linear in x: "
        "y = reference x (1 + a + slope x)) or piecewise (a line that bends at `knot`)"
    )
    intercept: Number = Field(description="the change at x = 0, a fraction (log: at value 1)")
    intercept_ci: Pair
    slope: Number = Field(
        description="log change per unit of x (log: per unit of ln(value); additive: the change, a fraction, per unit of x)"
    )
    slope_ci: Pair
    knot: Number = Field(default=None, description="piecewise: the x past which the slope changes")
    slope_after: Number = Field(default=None, description="piecewise: the change of slope past the knot")
    slope_after_ci: Pair = (None, None)
    parameters: int = Field(description="its parameters, the block effects left out (a knot counts)")
    aic: Number
    lack_of_fit_p: Number = Field(
        description="p of the F test of the model against a mean per sweep point; null where there are too few points"
    )
    fits: bool = Field(description="lack_of_fit_p is at least 0.05, or there was no test")


class MeasuredPoint(Model):
    """A variant measured where the swept value is 0 (a no-op shim: installed, never sampling)."""

    variant: str
    change: Number
    change_ci: Pair = Field(description="its unadjusted 95% interval, as the fits' intervals are")
    verdict: str


class SweepFit(Model):
    """The line fitted through one metric's log changes along a one-parameter sweep, whether it
    describes the points, the other models tried, and the change at x = 0 a reader should use."""

    workload: str
    metric: str
    direction: str
    x: str = Field(description="value or reciprocal: what the slope is per unit of")
    intercept: Number = Field(description="the line's change at x = 0, a fraction")
    intercept_ci: Pair
    slope: Number = Field(description="the line's log change per unit of x")
    slope_ci: Pair
    n: int
    blocks: int
    lack_of_fit_p: Number = Field(default=None, description="the line's lack-of-fit p (models[0].lack_of_fit_p)")
    model: str = Field(
        default="line",
        description="the model chosen: the line where it fits, else the lowest AIC among models that fit, else none",
    )
    models: list[SweepModel] = Field(default_factory=list, description="every model fitted, the line first")
    measured_at_0: MeasuredPoint | None = Field(default=None, description="a variant measured at x = 0, if any")
    change_at_0: Number = Field(
        default=None,
        description="the change at x = 0 to read (for a shim, the cost of being installed): the line's intercept where "
        "it fits and agrees with the measured point, else the measured point's change, else the intercept of the "
        "additive or piecewise model chosen; null where none is sound",
    )
    change_at_0_ci: Pair = (None, None)
    change_at_0_from: str | None = Field(default=None, description="line, measured (VARIANT), additive or piecewise")
    measured_agrees: bool | None = Field(
        default=None,
        description="whether the line's change at 0 and the measured one agree (a z test of their difference at 5%, "
        "each from its unadjusted 95% interval); where they do not, or cannot be compared (null: a raw shift, a point "
        "without an interval), the measured one is read; null without a measured point",
    )

    @property
    def line_fits(self) -> bool:
        """Whether the line describes the points (its lack-of-fit test passed, or there was none)."""
        return not self.models or self.models[0].fits


class Sweep(Model):
    parameters: list[str]
    fit: str
    reference: str
    points: dict[str, dict[str, Any]] = Field(description="variant -> the swept values it stands for")
    fits: list[SweepFit]


class CalibrationNote(Model):
    """The latest `benchlab calibrate` of a workload on the experiment's main host."""

    host_id: int
    workload_key: str
    metric: str
    spread: Number
    experiments: int
    false_verdicts: int
    blocks: int
    created_at: float


class Side(Model):
    """One side of `benchlab diff A B`: what was read, from where, and when and where its runs ran,
    so that a reader of an unpaired comparison can weigh the drift between the two sessions."""

    label: str = Field(description="the argument as given: NAME, NAME:VARIANT or a bundle's path")
    source: str = Field(description="the database or bundle file it was read from")
    experiment: str
    variants: list[str] = Field(description="the variants compared")
    runs: int = Field(description="its runs used as samples")
    created_at: float = Field(description="when its experiment was created (seconds since 1970)")
    last_run: Number = Field(description="when its last run ended")
    hosts: dict[str, dict[str, Any]]
    workload_versions: dict[str, str]

    def summary(self) -> str:
        """One line a reader weighs the side by: what, from where, how many runs, on which
        machines, when (in UTC: the two sides may be of two time zones)."""
        machines = "; ".join(
            f"{h.get('hostname') or 'host ' + key} ({h.get('cpu_model') or 'CPU unknown'}, kernel {h.get('kernel') or '?'})"
            for key, h in self.hosts.items()
        )
        return (
            f"{self.label}: experiment {self.experiment} ({', '.join(self.variants)}) from {self.source}, "
            f"{self.runs} runs on {machines or 'an unrecorded host'}, {_utc(self.created_at)} to {_utc(self.last_run)}"
        )


def _utc(ts: float | None) -> str:
    if ts is None:
        return "?"
    return datetime.datetime.fromtimestamp(ts, datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")


def side_lines(experiment: Experiment) -> list[str]:
    """`A = ...` and `B = ...`: a diff's two sides, as its notes and benchstat's header give them."""
    return [f"{letter} = {side.summary()}" for letter, side in zip("AB", experiment.sides, strict=False)]


class FunctionRow(Judgement):
    """Where a workload's time changed (`benchlab explain`): one function, library, or the kernel
    or user space, of one variant against the baseline, from the profiled runs paired by block.
    A function's change is its shift in time as a fraction of the baseline's whole profiled
    time (a function may run in one variant only); functions are judged in a family of their
    own per workload, libraries and spaces are shown, not judged."""

    workload: str
    variant: str
    level: Literal["function", "inclusive", "library", "space", "total", "off-cpu", "off-cpu total"] = Field(
        description="function: its self time, judged; inclusive: its time with its callees' (the functions most on the "
        "stack, shown); library, space (kernel or user) and total: shown; off-cpu: the time waited off the CPU with it "
        "on the stack (profile.off_cpu), judged in a family of its own; off-cpu total: all waits, shown"
    )
    name: str = Field(description="the function's symbol, `[library]` where it has none, the library, kernel or user, or all")
    library: str | None = Field(description="the function's library (`kernel` for the kernel image)")
    kernel: bool | None
    unit: str = Field(description="s (CPU seconds, cpu-clock) or the sampled event's count (cycles)")
    pairs: int
    self_median: Number = Field(
        description="the variant's median time in it per profiled run (self: samples where it is the leaf)"
    )
    baseline_self_median: Number
    inclusive_median: Number = Field(default=None, description="functions: the median time with it anywhere on the stack")
    baseline_inclusive_median: Number = None
    shift: Number = Field(description="the paired change in its time, in unit (change x the baseline's whole time)")
    share: Number = Field(description="shift / the workload's whole shift: how much of the total change it explains")


class ProfileCost(Model):
    """What profiling costs a workload under a variant: the profiled runs' wall time against the
    timed runs' of the same blocks."""

    workload: str
    variant: str
    pairs: int
    change: Number = Field(description="profiled over unprofiled wall time, minus 1 (mean log ratio over blocks)")
    change_ci: Pair = Field(description="its 95% interval (paired t over blocks)")


class CounterRow(Model):
    """An event perf stat counted over a workload's profiled runs under a variant, against the
    baseline's: shown with its interval, not judged (the workload's metrics say whether it
    changed; this says how). Instructions say whether the variant did more work, cycles per
    instruction whether it did its work more slowly: their log changes add up to that of cycles."""

    workload: str
    variant: str
    counter: str = Field(description="the event as perf names it, or `cycles per instruction`")
    meaning: str | None = Field(
        description="cycles: the whole; instructions: more work; cycles per instruction: slower work; else null"
    )
    unit: str = Field(description="s for a time event (task-clock), else count (a ratio for cycles per instruction)")
    pairs: int = Field(description="blocks with both variants counted; 0 in a diff, whose sides are two samples")
    baseline_median: Number
    median: Number
    change: Number = Field(
        description="variant over baseline, minus 1: exp of the mean log ratio over blocks "
        "(a diff: of the Hodges-Lehmann shift of the logs)"
    )
    change_ci: Pair = Field(description="its 95% interval (paired t over blocks; a diff: rank-sum)")


class FlameFrame(Model):
    """One frame of a flame graph: a function at a depth of the merged stacks, spanning
    [start, start + width) of the whole (fractions)."""

    name: str
    library: str | None = Field(description="null for the process-name frames at the root")
    depth: int
    start: float
    width: float


class FlameGraph(Model):
    """A variant's profiled runs of a workload merged into one flame graph (frames narrower than
    a thousandth of the whole left out); a differential one (`against` the baseline) spans the
    mean of both variants' time per run, each frame coloured by its function's judged change."""

    workload: str
    variant: str
    against: str | None = Field(default=None, description="the baseline, in a differential graph; null in a variant's own")
    total: float = Field(description="the time the graph spans, in unit (per run; a differential graph's, both variants' mean)")
    unit: str
    runs: int
    frames: list[FlameFrame]


class Profiles(Model):
    """The profiled runs of an experiment, judged (`benchlab explain`)."""

    event: str = Field(description="the event sampled: cycles where the machine has a PMU, else cpu-clock")
    runs: int = Field(description="profiled runs that yielded a profile")
    failed: int = Field(description="profiled runs that did not (their messages are in notes)")
    rows: list[FunctionRow]
    cost: list[ProfileCost]
    flames: list[FlameGraph] = Field(default_factory=list, description="per workload and variant, its merged stacks")
    counters: list[CounterRow] = Field(
        default_factory=list, description="per workload and variant, what perf stat counted (profile.counters)"
    )
    notes: list[str]


class Experiment(Model):
    id: int = Field(description="0 for a diff, which is of two experiments (see sides)")
    name: str
    created_at: float
    spec: dict[str, Any]
    host: dict[str, Any] | None
    hosts: dict[str, dict[str, Any]]
    workload_versions: dict[str, str]
    calibration: dict[str, CalibrationNote]
    sides: list[Side] = Field(default_factory=list, description="a diff's two sides, A (the baseline) then B; else empty")


# Runs are plain dicts, not models: a report of 100,000 runs must not build and dump
# 100,000 objects (see `Report.with_runs`).
@with_config(ConfigDict(extra="forbid"))
class RunSummary(TypedDict):
    """A run as stored: where it ran, in which block, and how it ended."""

    workload: str
    variant: str
    block: int
    warmup: bool
    host: int
    status: str
    exit_code: int | None
    message: str | None
    stderr_tail: str | None
    started_at: float | None
    ended_at: float | None
    details: dict[str, Any] | None


class Run(RunSummary):
    metrics: dict[str, float]


class FailedBenchmark(Model):
    """A benchmark of a binary that failed inside runs that otherwise succeeded."""

    workload: str
    benchmark: str
    variants: dict[str, int] = Field(description="variant -> runs in which it failed")
    message: str
    failed: int
    runs: int = Field(description="the workload's successful runs")


class Report(Model):
    report_schema: Literal["benchlab.report/2"] = Field(default=SCHEMA, alias="schema")
    experiment: Experiment
    baseline: str
    variants: list[str]
    alpha: float
    margin: float
    correction: str
    rows: list[MetricRow]
    geomean: list[GeomeanRow]
    scores: Scores | None
    sweep: Sweep | None
    failed_runs: list[RunSummary]
    failed_benchmarks: list[FailedBenchmark]
    profiles: Profiles | None = Field(
        default=None, description="where the time went: the profiled runs judged; null without them"
    )
    warnings: list[str]
    runs: list[Run] = Field(description="every run with its metrics; empty where only a table was drawn")
    intervals: Literal["corrected", "raw"] = Field(
        default="corrected",
        description="which interval change_ci holds: corrected (a judged row's at its family's corrected level, the "
        "one its verdict reads) or raw (the unadjusted 95% one, `report --raw-intervals`)",
    )

    def with_raw_intervals(self) -> Report:
        """The report with every metric's, geometric mean's and score's change shown with its
        unadjusted 95% interval (change_ci95) in place of the one its verdict reads."""
        raw = {"change_ci_level": 0.95}
        return self.model_copy(
            update={
                "rows": [r.model_copy(update={**raw, "change_ci": r.change_ci95}) for r in self.rows],
                "geomean": [g.model_copy(update={**raw, "change_ci": g.change_ci95}) for g in self.geomean],
                "scores": self.scores.model_copy(
                    update={"rows": [r.model_copy(update={**raw, "change_ci": r.change_ci95}) for r in self.scores.rows]}
                )
                if self.scores
                else None,
                "intervals": "raw",
            }
        )

    def with_runs(self, runs: list[Run]) -> Report:
        """The report with every run, unchecked: they come straight from the store, whose columns
        have these types, and validating 100,000 of them would cost more than the analysis."""
        return self.model_copy(update={"runs": runs})

    def document(self, runs: list[Run]) -> dict[str, Any]:
        """The JSON report as plain values, with `runs` as its runs (all of them, or those a page
        embeds). The runs, plain JSON values already, are passed as they are."""
        document = self.model_dump(mode="json", by_alias=True, exclude={"runs"})
        document["runs"] = runs
        return document

    def to_json(self) -> str:
        """The JSON report; json.dumps (not pydantic's writer) so that every control and
        non-ASCII character in stored text is escaped (see report/safe.py)."""
        return json.dumps(self.document(self.runs), indent=2) + "\n"


# `benchlab history`: experiments re-run over time as series (analysis/history.py fills it,
# report/views/history_grid.py draws it)
HISTORY_SCHEMA: Final = "benchlab.history/1"


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

    history_schema: Literal["benchlab.history/1"] = Field(default=HISTORY_SCHEMA, alias="schema")
    experiments: list[str] = Field(description="the experiments matched, oldest first")
    max_pvalue: float
    min_change: float
    window: int
    series: list[Series]
    warnings: list[str]

    def to_json(self) -> str:
        """json.dumps, as the report's JSON: every control and non-ASCII character in a stored name escaped."""
        return json.dumps(self.model_dump(mode="json", by_alias=True), indent=2) + "\n"


def json_schema() -> dict[str, Any]:
    """The JSON Schema of the report, generated from the models, so it cannot drift from them."""
    schema = Report.model_json_schema(by_alias=True, mode="serialization")
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA, **schema}


def schema_text() -> str:
    """The text of the published schema file, docs/report.schema.json (tests/unit/test_report_model.py
    checks that the committed file is this, and says how to rewrite it)."""
    return json.dumps(json_schema(), indent=2) + "\n"
