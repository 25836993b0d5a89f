"""Scores of a CPU-suite experiment, judged like any metric.

Per block (one run of every workload per variant), each run's throughput
becomes a score against the baseline; a section's score at that block is the
geometric mean of its workloads' scores, the overall score the weighted mean
of the sections, the suite's wall time the sum over its runs and its peak
memory the largest max RSS. Each of these is then a series with one value per
block, so the medians, intervals, paired tests, correction and verdicts are
exactly those of `stats.judge`.

The score a table shows follows Geekbench's arithmetic on those medians, so
anyone can recompute it from the raw throughputs: workload score = 1000 x
median throughput / baseline throughput; section = geometric mean of its
workload scores; overall = weighted mean of the section scores. The change
and its interval come from the per-block values, paired by block.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from benchlab.report_model import Level, ScoreRow, Scores, number, pair
from benchlab.spec.models import ExperimentSpec
from benchlab.stats.estimators import median_ci
from benchlab.stats.families import JUDGED
from benchlab.stats.judge import Row, Series, Settings
from benchlab.suite.baseline import SECTIONS, Baseline
from benchlab.suite.cpu import MODES, MULTI, SINGLE, SuiteWorkload, classify
from benchlab.terms import CHARACTERISTIC, PRIMARY, SCORED, SECONDARY, SECTION_TITLES
from benchlab.workloads.probe import probe_version

SUITE_TIME, SUITE_MEMORY = "suite wall time", "suite peak memory"
SCORES = "CPU scores"  # the group (family) every score row is corrected in


@dataclass(frozen=True)
class _Level:
    level: Level
    section: str | None = None
    covers: str | None = None  # a section or overall score of a subset: what it is over


def _aligned(parts: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Keys every part has, and the parts' values at those keys as rows of a matrix."""
    keys = functools.reduce(np.intersect1d, [k for k, _ in parts])
    rows = []
    for k, v in parts:
        order = np.argsort(k)
        rows.append(v[order[np.searchsorted(k[order], keys)]])
    return keys, np.vstack(rows) if rows else np.empty((0, 0))


def _combine(name: str, metric: str, unit: str, direction: str, members: list[Series], variants: list[str],
             reduce: Callable[[np.ndarray], np.ndarray]) -> Series:  # fmt: skip
    values = {}
    for v in variants:
        parts = [m.of(v) for m in members]
        if any(len(k) == 0 for k, _ in parts):
            continue
        keys, matrix = _aligned(parts)
        if len(keys):
            values[v] = (keys, reduce(matrix))
    return Series(name, metric, unit, direction, values)


def _geomean(matrix: np.ndarray) -> np.ndarray:
    return np.exp(np.log(matrix).mean(axis=0))


def _weighted_sum(matrix: np.ndarray, weights: np.ndarray) -> np.ndarray:
    return (matrix * weights).sum(axis=0)


@dataclass
class Suite:
    """The score series of an experiment's suite workloads, before judging: the analysis
    judges them with the experiment's other series, as one family of their own (SCORES)."""

    members: dict[str, SuiteWorkload]  # spec workload name -> task and mode
    by_metric: dict[tuple[str, str], Series]
    variants: list[str]
    series: list[Series]
    levels: dict[tuple[str, str], _Level]
    warnings: list[str]

    @property
    def overall(self) -> list[Series]:
        """Per mode, the overall score per block (what a sweep fits a line through)."""
        return [s for s in self.series if self.levels[(s.workload, s.metric)].level == "overall"]


def suite_series(spec: ExperimentSpec, versions: dict[str, str], series: list[Series], variants: list[str],
                 baseline: Baseline) -> Suite:  # fmt: skip
    """Score series of the suite workloads an experiment ran, with warnings about what could
    not be scored; the runs' own metrics of those workloads become SCORED (judged as scores)."""
    warnings: list[str] = []
    members = {}
    for w in spec.workloads:
        member = classify(w, baseline)
        if member is None:
            continue
        want = probe_version(member.task, baseline.tasks[member.task].version, baseline.suite_version)
        if versions.get(w.name) != want:
            warnings.append(f"{w.name}: ran {versions.get(w.name)}, the baseline is for {want}; not scored")
            continue
        members[w.name] = member
    suite = Suite(members, {(s.workload, s.metric): s for s in series}, variants, [], {}, warnings)
    if not members:
        return suite
    for s in series:
        if s.workload in members and s.family in JUDGED:
            s.family = SCORED
    _score_series(suite, baseline)
    tasks = {m.task for m in members.values()}
    if len(tasks) < len(baseline.tasks) and suite.overall:  # shared-task runs alone have no section scores
        warnings.append(
            f"{len(tasks)} of {len(baseline.tasks)} suite workloads ran: section and overall scores are over those "
            "(a missing section's weight shared among the others), labelled as a subset"
        )
    return suite


def score_report(suite: Suite, rows: list[Row], settings: Settings, baseline: Baseline) -> Scores | None:
    """The `scores` part of the report from the judged score rows; None without suite workloads."""
    if not suite.members:
        return None
    judged = {(r.workload, r.metric, r.variant): r for r in rows}
    out_rows = []
    for s in suite.series:
        for v in suite.variants:
            _, values = s.of(v)
            if len(values) == 0:
                continue
            med, lo, hi = median_ci(values)
            row = judged.get((s.workload, s.metric, v)) if v != settings.baseline else None
            out_rows.append(_score_row(s, suite.levels[(s.workload, s.metric)], v, values, (med, lo, hi), row))
    _point_scores(out_rows, baseline)
    _point_intervals(out_rows, suite, baseline)
    _extras(out_rows, suite)
    return Scores(
        suite="cpu",
        suite_version=baseline.suite_version,
        baseline_machine=baseline.machine,
        baseline_measured=baseline.measured,
        weights=baseline.weights,
        reference=settings.baseline,
        variants=suite.variants,
        modes=sorted({m.mode for m in suite.members.values()}, key=MODES.index),
        workloads=sorted(suite.members),
        rows=out_rows,
    )


def _score_series(suite: Suite, baseline: Baseline) -> None:
    """Fills the suite's score series: workload, section and overall scores are its primary
    family, the suite's wall time secondary, its peak memory a characteristic."""

    def add(series: Series, level: _Level) -> None:
        series.group = SCORES
        series.family = {SUITE_TIME: SECONDARY, SUITE_MEMORY: CHARACTERISTIC}.get(series.metric, PRIMARY)
        suite.series.append(series)
        suite.levels[(series.workload, series.metric)] = level

    per_mode_section: dict[tuple[str, str], list[Series]] = defaultdict(list)
    for name, member in suite.members.items():
        ips = suite.by_metric.get((name, "items_per_second"))
        if ips is None:
            suite.warnings.append(f"{name}: no successful run to score")
            continue
        base = baseline.tasks[member.task].items_per_second
        values = {v: (k, 1000.0 * x / base) for v, (k, x) in ips.values.items()}
        s = Series(member.task, member.mode, "points", "higher", values)
        section = baseline.tasks[member.task].section
        add(s, _Level("workload", section))
        per_mode_section[(member.mode, section)].append(s)
    for mode in (SINGLE, MULTI):  # only some tasks split, so a shared-task section would compare unlike sets
        sections = []
        for section in SECTIONS:
            parts = per_mode_section.get((mode, section))
            if not parts:
                continue
            s = _combine(SECTION_TITLES[section], mode, "points", "higher", parts, suite.variants, _geomean)
            add(s, _Level("section", section, _covers(len(parts), baseline.in_section(section))))
            sections.append((section, s))
        if sections:
            weights = section_weights(baseline, [sec for sec, _ in sections])
            s = _combine("Overall", mode, "points", "higher", [s for _, s in sections], suite.variants,
                         functools.partial(_weighted_sum, weights=np.array(list(weights.values()))[:, None]))  # fmt: skip
            scored = sum(len(per_mode_section[(mode, sec)]) for sec, _ in sections)
            add(s, _Level("overall", None, _covers(scored, len(baseline.tasks))))
    totals: tuple[tuple[str, str, str, Callable[[np.ndarray], np.ndarray]], ...] = (
        (SUITE_TIME, "s", "wall", functools.partial(np.sum, axis=0)),
        (SUITE_MEMORY, "KiB", "max_rss", functools.partial(np.max, axis=0)),
    )
    for metric, unit, source, reduce in totals:
        parts = [suite.by_metric[(n, source)] for n in suite.members if (n, source) in suite.by_metric]
        if parts:
            add(_combine("suite", metric, unit, "lower", parts, suite.variants, reduce), _Level("suite"))


def section_weights(baseline: Baseline, sections: list[str]) -> dict[str, float]:
    """The weights of the sections that ran, scaled to sum to 1: a subset's overall score is the
    weighted mean over what ran (Integer and Floating Point only: 65/95 and 30/95)."""
    total = sum(baseline.weights[s] for s in sections)
    return {s: baseline.weights[s] / total for s in sections}


def _covers(ran: int, of: int) -> str | None:
    return None if ran >= of else f"{ran} of {of} workloads"


def spread(values: np.ndarray) -> float | None:
    """Run-to-run spread of per-block scores: a robust coefficient of variation (the median
    absolute deviation scaled to estimate the standard deviation of normal noise, / the median),
    which one slow block cannot inflate; None under 3 blocks."""
    if len(values) < 3:
        return None
    from scipy.stats import median_abs_deviation  # scipy.stats's import (0.3 s) only where a suite is scored

    med = float(np.median(values))
    return float(median_abs_deviation(values, scale="normal")) / med if med > 0 else None


def _score_row(s: Series, level: _Level, variant: str, values: np.ndarray, median: tuple[float, float, float],
               judged: Row | None) -> ScoreRow:  # fmt: skip
    med, lo, hi = median
    return ScoreRow(
        level=level.level, name=s.workload, section=level.section, mode=s.metric, variant=variant, unit=s.unit,
        n=len(values), score=number(med), score_ci=pair((lo, hi)), spread=number(spread(values)),
        covers=level.covers, change=number(judged.change) if judged else None,
        change_ci=pair(judged.change_ci) if judged else (None, None), log_scale=judged.log_scale if judged else None,
        change_ci_level=judged.change_ci_level if judged else None,
        change_ci95=pair(judged.change_ci95) if judged else (None, None),
        test=judged.test if judged else "none", p=number(judged.p) if judged else None,
        q=number(judged.q) if judged else None, verdict=judged.verdict if judged else "-",
        blocks_needed=judged.blocks_needed if judged else None, family=judged.family if judged else s.family,
        note=(judged.note or None) if judged else None,
    )  # fmt: skip


def _point_scores(rows: list[ScoreRow], baseline: Baseline) -> None:
    """Section and overall scores from the workload medians, as Geekbench computes them."""
    by_key: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        if r.level == "workload" and r.score and r.section is not None:
            by_key[(r.variant, r.mode)][r.section].append(r.score)
    for r in rows:
        sections = by_key.get((r.variant, r.mode), {})
        if r.level == "section" and r.section is not None:
            r.score = float(np.exp(np.mean(np.log(sections[r.section]))))
        elif r.level == "overall":
            geo = {sec: float(np.exp(np.mean(np.log(v)))) for sec, v in sections.items()}
            r.score = sum(w * geo[sec] for sec, w in section_weights(baseline, list(geo)).items())


BOOTSTRAP = 2000  # resamples of the blocks behind a section's or the overall score's interval


def _point_intervals(rows: list[ScoreRow], suite: Suite, baseline: Baseline) -> None:
    """The 95% interval of each section and overall score as `_point_scores` computes it, by a
    percentile bootstrap over blocks: the blocks are drawn again with replacement (all of a
    block's workloads together, so their correlation stays), and Geekbench's arithmetic is done
    on the medians of each draw. Where its workloads' medians have no interval (under 6 blocks,
    see `median_ci`), neither has it. Seeded: a report reads the same every time."""
    rng = np.random.default_rng(0)
    members: dict[tuple[str, str], list[Series]] = defaultdict(list)  # (mode, section) -> workload series
    for s in suite.series:
        level = suite.levels[(s.workload, s.metric)]
        if level.level == "workload" and level.section is not None:
            members[(s.metric, level.section)].append(s)
    for r in rows:
        if r.level not in ("section", "overall"):
            continue
        sections = [r.section] if r.level == "section" and r.section else [sec for mode, sec in members if mode == r.mode]
        parts = [(sec, s.of(r.variant)) for sec in sections for s in members.get((r.mode, sec), [])]
        r.score_ci = (None, None)
        if not parts or any(len(k) == 0 for _, (k, _) in parts):
            continue
        keys, matrix = _aligned([p for _, p in parts])
        if len(keys) == 0 or np.isnan(median_ci(matrix[0])[1]):
            continue
        medians = np.median(matrix[:, rng.integers(0, len(keys), size=(BOOTSTRAP, len(keys)))], axis=2)
        owner = np.array([sec for sec, _ in parts])
        by_section = {sec: np.exp(np.log(medians[owner == sec]).mean(axis=0)) for sec in dict.fromkeys(owner.tolist())}
        weights = section_weights(baseline, list(by_section))
        drawn = by_section[sections[0]] if r.level == "section" else sum(w * by_section[sec] for sec, w in weights.items())
        lo, hi = np.percentile(drawn, [2.5, 97.5])
        r.score_ci = pair((float(lo), float(hi)))


def _extras(rows: list[ScoreRow], suite: Suite) -> None:
    """Peak memory and threads (medians over runs) on workload rows, and on workload, section
    and overall rows the scaling efficiency of multi-core and shared runs: score / single-core
    score / threads (a section's threads: the median over its workloads)."""
    names = {(m.task, m.mode): n for n, m in suite.members.items()}

    def median_of(task: str, mode: str, metric: str, variant: str) -> float | None:
        s = suite.by_metric.get((names.get((task, mode), ""), metric))
        values = s.of(variant)[1] if s else np.empty(0)
        return float(np.median(values)) if len(values) else None

    threads_of: dict[tuple[str, str, str], list[float]] = defaultdict(list)  # (variant, mode, section) -> threads
    for r in rows:
        if r.level == "workload":
            r.peak_memory_kib = median_of(r.name, r.mode, "max_rss", r.variant)
            r.threads = median_of(r.name, r.mode, "threads", r.variant)
            if r.threads:
                threads_of[(r.variant, r.mode, r.section or "")].append(r.threads)
                threads_of[(r.variant, r.mode, "")].append(r.threads)
    for r in rows:
        if r.level in ("section", "overall"):
            found = threads_of.get((r.variant, r.mode, r.section or ""))
            r.threads = float(np.median(found)) if found else None
    single = {(r.name, r.variant): r.score for r in rows if r.mode == SINGLE}
    for r in rows:
        base = single.get((r.name, r.variant))
        parallel = r.level != "suite" and r.mode != SINGLE
        r.scaling = r.score / base / r.threads if parallel and base and r.threads and r.score else None
