"""Judging an experiment: per workload x metric x variant, the centre, the change against
the baseline with its interval, the test, the correction and the verdict.

Changes are estimated on the log scale (ratios, so a 5% change means the
same on every metric) and reported as fractions: exp(x) - 1. Runs pair up
within a block on one host; where they cannot pair (results merged from
different hosts, partners missing), the two-sample test and shift are used.
Metrics with zero or negative values cannot be logged; their change is the
shift of the raw values relative to the baseline median.
"""

from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from benchlab.stats.correction import adjust
from benchlab.stats.estimators import (
    NAN,
    hodges_lehmann_paired,
    hodges_lehmann_two_sample,
    median_ci,
    rank_sum_p,
    signed_rank_p,
)
from benchlab.stats.verdict import NOT_JUDGED, min_pairs_to_decide, runs_needed, verdict

LEVELS = (0.95, 0.90)  # the change's interval, and the one TOST compares with the margin

KEY_SHIFT = 32  # pairing key = host << 32 | block


def pair_key(host: int, block: int) -> int:
    return (host << KEY_SHIFT) | block


@dataclass(frozen=True)
class Settings:
    baseline: str
    alpha: float = 0.05
    correction: str = "bh"
    margin: float = 0.01
    margins: dict[tuple[str, str], float] = field(default_factory=dict)  # (workload, metric) -> margin


@dataclass
class Series:
    """All sample values of one metric of one workload: per variant, pairing keys and values
    as arrays (keys unique per variant), so that 100,000 runs judge in a blink."""

    workload: str
    metric: str
    unit: str
    direction: str
    values: dict[str, tuple[np.ndarray, np.ndarray]]

    def of(self, variant: str) -> tuple[np.ndarray, np.ndarray]:
        return self.values.get(variant, (np.empty(0, dtype=np.int64), np.empty(0)))

    def paired(self, baseline: str, variant: str) -> tuple[np.ndarray, np.ndarray]:
        """Baseline and variant values of the keys both have, aligned."""
        kb, vb = self.of(baseline)
        kv, vv = self.of(variant)
        _, ib, iv = np.intersect1d(kb, kv, assume_unique=True, return_indices=True)
        return vb[ib], vv[iv]


@dataclass
class Row:
    workload: str
    metric: str
    unit: str
    direction: str
    variant: str
    n: int
    median: float
    median_ci: tuple[float, float]
    baseline_median: float
    change: float
    change_ci: tuple[float, float]
    change_ci90: tuple[float, float]
    pairs: int
    test: str
    p: float
    q: float = NAN
    verdict: str = NOT_JUDGED
    runs_needed: int | None = None
    log_scale: bool = True
    best: float = NAN  # best of the variant's runs (the lowest, or the highest where higher is better)
    baseline_best: float = NAN

    def as_dict(self) -> dict[str, Any]:
        return {
            "workload": self.workload, "metric": self.metric, "unit": self.unit, "direction": self.direction,
            "variant": self.variant, "n": self.n, "pairs": self.pairs, "median": json_number(self.median),
            "median_ci": json_pair(self.median_ci), "baseline_median": json_number(self.baseline_median),
            "change": json_number(self.change), "change_ci": json_pair(self.change_ci),
            "change_ci90": json_pair(self.change_ci90), "test": self.test, "p": json_number(self.p),
            "q": json_number(self.q), "verdict": self.verdict, "runs_needed": self.runs_needed,
            "best": json_number(self.best), "baseline_best": json_number(self.baseline_best),
        }  # fmt: skip


@dataclass
class GeomeanRow:
    variant: str
    direction: str
    metrics: int
    blocks: int
    change: float
    change_ci: tuple[float, float]
    p: float
    verdict: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "variant": self.variant, "direction": self.direction, "metrics": self.metrics, "blocks": self.blocks,
            "change": json_number(self.change), "change_ci": json_pair(self.change_ci), "p": json_number(self.p),
            "verdict": self.verdict,
        }  # fmt: skip


def json_number(x: float | None) -> float | None:
    """NaN (no estimate) becomes JSON null."""
    return None if x is None or math.isnan(x) else float(x)


def json_pair(p: tuple[float, float]) -> list[float | None]:
    return [json_number(p[0]), json_number(p[1])]


def _to_fraction(x: float) -> float:
    return math.expm1(x) if not math.isnan(x) else NAN


def _best(values: np.ndarray, direction: str) -> float:
    """Best of N, as people quote whole-command timings ("best of 5 runs")."""
    if not len(values):
        return NAN
    return float(values.max() if direction == "higher" else values.min())


def _compare(series: Series, variant: str, settings: Settings) -> Row:
    _, b_all = series.of(settings.baseline)
    _, v_all = series.of(variant)
    b, v = series.paired(settings.baseline, variant)
    med, lo, hi = median_ci(v_all)
    base_med = float(np.median(b_all)) if len(b_all) else NAN
    paired = len(b) >= 2 and len(b) >= 0.5 * min(len(b_all), len(v_all))
    log_scale = bool(len(b_all) and len(v_all) and b_all.min() > 0 and v_all.min() > 0)
    if paired:
        d = np.log(v) - np.log(b) if log_scale else v - b
        est, (ci, ci90) = hodges_lehmann_paired(d, LEVELS)
        p, test = signed_rank_p(d), "wilcoxon"
    else:
        x = np.log(v_all) if log_scale else v_all
        y = np.log(b_all) if log_scale else b_all
        est, (ci, ci90) = hodges_lehmann_two_sample(x, y, LEVELS)
        p, test = rank_sum_p(x, y), "mann-whitney"
    if log_scale:
        to_frac = _to_fraction
    else:
        scale = base_med if base_med and not math.isnan(base_med) else NAN

        def to_frac(x: float) -> float:
            if x == 0:
                return 0.0
            return x / scale if not math.isnan(scale) else NAN

    return Row(
        workload=series.workload, metric=series.metric, unit=series.unit, direction=series.direction,
        variant=variant, n=len(v_all), median=med, median_ci=(lo, hi), baseline_median=base_med,
        change=to_frac(est), change_ci=(to_frac(ci[0]), to_frac(ci[1])), change_ci90=(to_frac(ci90[0]), to_frac(ci90[1])),
        pairs=len(b) if paired else 0, test=test, p=p, log_scale=log_scale,
        best=_best(v_all, series.direction), baseline_best=_best(b_all, series.direction),
    )  # fmt: skip


def _describe(series: Series, variant: str) -> Row:
    _, values = series.of(variant)
    med, lo, hi = median_ci(values)
    return Row(
        workload=series.workload, metric=series.metric, unit=series.unit, direction=series.direction,
        variant=variant, n=len(values), median=med, median_ci=(lo, hi), baseline_median=med,
        change=NAN, change_ci=(NAN, NAN), change_ci90=(NAN, NAN), pairs=0, test="none", p=NAN,
        best=_best(values, series.direction), baseline_best=_best(values, series.direction),
    )  # fmt: skip


def _geomeans(series_list: list[Series], settings: Settings, variants: list[str]) -> list[GeomeanRow]:
    """Per variant and direction: the mean log ratio over judged metrics within each pairing key
    (keys where every such metric has a pair), then the same paired estimate and test as a metric gets."""
    out = []
    for variant in variants:
        for direction in ("lower", "higher"):
            keys, ratios = [], []
            for s in series_list:
                if s.direction != direction:
                    continue
                kb, vb = s.of(settings.baseline)
                kv, vv = s.of(variant)
                common, ib, iv = np.intersect1d(kb, kv, assume_unique=True, return_indices=True)
                if len(common) < 2 or min(vb[ib].min(), vv[iv].min()) <= 0:
                    continue
                keys.append(common)
                ratios.append(np.log(vv[iv]) - np.log(vb[ib]))
            if not keys:
                continue
            unique, inverse = np.unique(np.concatenate(keys), return_inverse=True)
            counts = np.bincount(inverse, minlength=len(unique))
            sums = np.bincount(inverse, weights=np.concatenate(ratios), minlength=len(unique))
            d = (sums / np.maximum(counts, 1))[counts == len(keys)]
            if len(d) < 2:
                continue
            est, (ci_log, ci90_log) = hodges_lehmann_paired(d, LEVELS)
            p = signed_rank_p(d)
            ci = (_to_fraction(ci_log[0]), _to_fraction(ci_log[1]))
            v = verdict(
                direction=direction, change=_to_fraction(est), ci=ci,
                ci90=(_to_fraction(ci90_log[0]), _to_fraction(ci90_log[1])), q=p, alpha=settings.alpha,
                margin=settings.margin,
            )  # fmt: skip
            out.append(GeomeanRow(variant, direction, len(keys), len(d), _to_fraction(est), ci, p, v))
    return out


def judge(series_list: list[Series], variants: list[str], settings: Settings) -> tuple[list[Row], list[GeomeanRow]]:
    """Rows for every non-baseline variant of every series, corrected together, with verdicts."""
    others = [v for v in variants if v != settings.baseline]
    if not others:  # a lone variant is measured, not compared
        return [_describe(s, settings.baseline) for s in series_list], []
    pairs = [(s, v) for s in series_list for v in others]
    if len(pairs) > 8:  # numpy's selection and sorting release the GIL: rows judge in parallel
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            rows = list(pool.map(lambda pair: _compare(pair[0], pair[1], settings), pairs))
    else:
        rows = [_compare(s, v, settings) for s, v in pairs]
    judged = [r for r in rows if r.direction != "none"]
    for row, q in zip(judged, adjust([r.p for r in judged], settings.correction), strict=True):
        row.q = q
    minimum = min_pairs_to_decide(settings.alpha, len(judged) if settings.correction != "none" else 1)
    for row in judged:
        margin = settings.margins.get((row.workload, row.metric), settings.margin)
        row.verdict = verdict(
            direction=row.direction, change=row.change, ci=row.change_ci, ci90=row.change_ci90,
            q=row.q, alpha=settings.alpha, margin=margin,
        )  # fmt: skip
        if row.verdict == "unclear":
            row.runs_needed = runs_needed(
                n=max(row.pairs, row.n), change=row.change,
                half_width=(row.change_ci[1] - row.change_ci[0]) / 2,
                half_width90=(row.change_ci90[1] - row.change_ci90[0]) / 2,
                margin=margin, minimum=minimum,
            )  # fmt: skip
    return rows, _geomeans(series_list, settings, others)
