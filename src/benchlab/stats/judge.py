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

import functools
import math
import os
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np

from benchlab.stats.correction import adjust
from benchlab.stats.estimators import (
    NAN,
    Interval,
    hodges_lehmann_paired,
    hodges_lehmann_two_sample,
    median_ci,
    paired_t,
    paired_t_interval,
    rank_sum_interval,
    rank_sum_test,
    signed_rank_interval,
    signed_rank_test,
)
from benchlab.stats.families import JUDGED, shares
from benchlab.stats.sequential import nominal_level, nominal_threshold, sequential_p
from benchlab.stats.verdict import DECIDED, blocks_needed, verdict
from benchlab.terms import FIRST_LOOK, GEOMEAN, NOT_JUDGED, PARAMETRIC, PRIMARY, SMALL_N, UNCLEAR

Item = TypeVar("Item")
Result = TypeVar("Result")

LEVELS = (0.95, 0.90)  # the change's unadjusted interval, and the one TOST compares with the margin
RAW_LEVEL = LEVELS[0]

KEY_SHIFT = 32  # pairing key = host << 32 | block


def pair_key(host: int, block: int) -> int:
    return (host << KEY_SHIFT) | block


@dataclass(frozen=True)
class Sequential:
    """An experiment run with --until-decided: looks after every block from `first` to `last`."""

    first: int = FIRST_LOOK
    last: int = 40


@dataclass(frozen=True)
class Settings:
    baseline: str
    alpha: float = 0.05
    correction: str = "bh"
    margin: float = 0.01
    margins: dict[tuple[str, str], float] = field(default_factory=dict)  # (workload, metric) -> margin
    sequential: Sequential | None = None

    def levels(self) -> tuple[float, float]:
        """The change's unadjusted interval (95%) and the TOST interval: 90%, or in sequential
        mode the repeated interval at the per-look level that keeps any false 'same' at alpha.
        The interval shown beside a verdict is another: its family's corrected one (`decide`)."""
        if self.sequential is None:
            return LEVELS
        c = nominal_level(self.alpha, self.sequential.first, self.sequential.last)
        return (RAW_LEVEL, 1 - 2 * c)


@dataclass
class Series:
    """All sample values of one metric of one workload: per variant, pairing keys and values
    as arrays (keys unique per variant), so that 100,000 runs judge in a blink. `family` says
    how it is judged (stats/families.py); rows of one `group` and family are corrected together
    (the group is the workload, or the CPU scores)."""

    workload: str
    metric: str
    unit: str
    direction: str
    values: dict[str, tuple[np.ndarray, np.ndarray]]
    family: str = PRIMARY
    group: str = ""
    # A profile's time in a function is judged as a raw shift (a function may run in one variant
    # only), as a fraction of the workload's whole time rather than of the function's own
    raw_fraction_of: float | None = None
    # the paired t at every n, not only below SMALL_N: for sums of many samples (a function's time
    # in a profile), near normal by construction, where the signed-rank test's smallest p (2^(1-n))
    # would keep a family of functions from any verdict between 6 and 9 blocks
    parametric: bool = False

    def of(self, variant: str) -> tuple[np.ndarray, np.ndarray]:
        return self.values.get(variant, (np.empty(0, dtype=np.int64), np.empty(0)))

    def paired(self, baseline: str, variant: str) -> tuple[np.ndarray, np.ndarray]:
        """Baseline and variant values of the keys both have, aligned."""
        kb, vb = self.of(baseline)
        kv, vv = self.of(variant)
        _, ib, iv = np.intersect1d(kb, kv, assume_unique=True, return_indices=True)
        return vb[ib], vv[iv]


@dataclass
class Estimate:
    """A change on the scale it is tested on (log ratio, or raw shift), with its intervals,
    the test's p, the smallest p that test could give these data, and the spread of the
    differences (what the blocks-needed hint extrapolates from). `interval_at(b)` is the
    interval that excludes zero exactly when p <= b: the test inverted, read at the threshold
    its family's correction sets (`decide`)."""

    value: float
    ci: tuple[float, float]
    ci90: tuple[float, float]
    p: float
    p_min: float
    test: str
    spread: float
    paired: bool
    interval_at: Callable[[float], Interval]


def paired_estimate(d: np.ndarray, levels: tuple[float, float], *, parametric: bool = False) -> Estimate:
    """The test chosen in advance by the number of pairs: below SMALL_N the paired t on the
    differences (labelled parametric: no signed-rank test can reject there), from SMALL_N on
    the exact signed-rank test with the Hodges-Lehmann estimate and interval; `parametric`: the
    paired t at every n (a series whose differences are near normal by construction)."""
    spread = float(np.std(d, ddof=1)) if len(d) > 1 else NAN
    if len(d) >= FIRST_LOOK and (parametric or len(d) < SMALL_N) and np.ptp(d) > 0:
        est, (ci, ci90), p = paired_t(d, levels)
        return Estimate(est, ci, ci90, p, 0.0, PARAMETRIC, spread, True, functools.partial(paired_t_interval, d))
    est, (ci, ci90) = hodges_lehmann_paired(d, levels)
    p, p_min = signed_rank_test(d)
    return Estimate(est, ci, ci90, p, p_min, "wilcoxon", spread, True, functools.partial(signed_rank_interval, d))


def two_sample_estimate(x: np.ndarray, y: np.ndarray, levels: tuple[float, float]) -> Estimate:
    """The two-sample Hodges-Lehmann shift and the Mann-Whitney test read off its interval."""
    est, (ci, ci90) = hodges_lehmann_two_sample(x, y, levels)
    spread = float(np.sqrt((np.var(x, ddof=1) + np.var(y, ddof=1)) / 2)) if min(len(x), len(y)) > 1 else NAN
    p, p_min = rank_sum_test(x, y)
    return Estimate(est, ci, ci90, p, p_min, "mann-whitney", spread, False, functools.partial(rank_sum_interval, x, y))


@dataclass
class Judged:
    """What every judged comparison (a metric row or a geometric mean) carries through the
    correction: its family, test results on the tested scale, and the outcome."""

    family: str = PRIMARY
    group: str = ""
    p: float = NAN
    q: float = NAN
    verdict: str = NOT_JUDGED
    blocks_needed: int | None = None
    note: str = ""
    estimate: Estimate | None = None
    margin: float = NAN  # the equivalence margin, a fraction as the change is
    change: float = NAN
    change_ci: tuple[float, float] = (NAN, NAN)  # the interval shown: at change_ci_level
    change_ci90: tuple[float, float] = (NAN, NAN)
    change_ci95: tuple[float, float] = (NAN, NAN)  # unadjusted
    change_ci_level: float = RAW_LEVEL  # a judged row's: its family's corrected level (`decide`)

    @property
    def margin_tested(self) -> float:
        """The margin on the scale the change is tested on (the log ratio, or the raw shift)."""
        return math.log1p(self.margin)

    def as_fraction(self, x: float) -> float:
        """A change on the tested scale as the fraction the report shows."""
        return _to_fraction(x)


@dataclass
class Row(Judged):
    workload: str = ""
    metric: str = ""
    unit: str = ""
    direction: str = "none"
    variant: str = ""
    n: int = 0
    median: float = NAN
    median_ci: tuple[float, float] = (NAN, NAN)
    baseline_median: float = NAN
    baseline_n: int = 0
    baseline_median_ci: tuple[float, float] = (NAN, NAN)
    pairs: int = 0
    test: str = "none"
    log_scale: bool = True
    best: float = NAN  # best of the variant's runs (the lowest, or the highest where higher is better)
    baseline_best: float = NAN
    change_note: str = ""  # where the change and the medians point opposite ways, why
    fraction_of: float = NAN  # what a raw shift is a fraction of: the baseline's median, or the series' raw_fraction_of

    @property
    def margin_tested(self) -> float:
        return math.log1p(self.margin) if self.log_scale else self.margin * abs(self.fraction_of)

    def as_fraction(self, x: float) -> float:
        return as_fraction(self.log_scale, self.fraction_of)(x)

    @property
    def sample_size(self) -> int:
        """Pairs (or runs, where unpaired) behind the estimate: what the blocks-needed hint grows."""
        return self.pairs or self.n


@dataclass
class GeomeanRow(Judged):
    variant: str = ""
    direction: str = "lower"
    metrics: int = 0
    blocks: int = 0
    test: str = "none"

    @property
    def sample_size(self) -> int:
        return self.blocks


def _to_fraction(x: float) -> float:
    return math.expm1(x) if not math.isnan(x) else NAN


def as_fraction(log_scale: bool, baseline_median: float) -> Callable[[float], float]:
    """How a change on the scale it was estimated on reads as a fraction of the baseline (a report's
    rows, a history's change points): exp(x) - 1 for a log ratio; for a raw shift (the values
    reach zero or below) the shift over the size of the baseline's median, no shift being no
    change even over a median of 0."""
    if log_scale:
        return _to_fraction
    scale = abs(baseline_median) if baseline_median and not math.isnan(baseline_median) else NAN

    def shift_fraction(x: float) -> float:
        if x == 0:
            return 0.0
        return x / scale if not math.isnan(scale) else NAN

    return shift_fraction


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
    base_med, base_lo, base_hi = median_ci(b_all)
    paired = len(b) >= 2 and len(b) >= 0.5 * min(len(b_all), len(v_all))
    positive = bool(len(b_all) and len(v_all) and b_all.min() > 0 and v_all.min() > 0)
    log_scale = positive and series.raw_fraction_of is None
    fraction_of = base_med if series.raw_fraction_of is None else series.raw_fraction_of
    levels = settings.levels()
    if paired:
        est = paired_estimate(np.log(v) - np.log(b) if log_scale else v - b, levels, parametric=series.parametric)
    elif log_scale:
        est = two_sample_estimate(np.log(v_all), np.log(b_all), levels)
    else:
        est = two_sample_estimate(v_all, b_all, levels)
    to_frac = as_fraction(log_scale, fraction_of)
    row = Row(
        workload=series.workload, metric=series.metric, unit=series.unit, direction=series.direction,
        variant=variant, n=len(v_all), median=med, median_ci=(lo, hi), baseline_median=base_med,
        baseline_n=len(b_all), baseline_median_ci=(base_lo, base_hi),
        change=to_frac(est.value), change_ci=(to_frac(est.ci[0]), to_frac(est.ci[1])),
        change_ci95=(to_frac(est.ci[0]), to_frac(est.ci[1])), change_ci90=(to_frac(est.ci90[0]), to_frac(est.ci90[1])),
        pairs=len(b) if paired else 0, test=est.test, p=est.p, log_scale=log_scale, best=_best(v_all, series.direction),
        baseline_best=_best(b_all, series.direction),
        family=series.family, group=series.group or series.workload, estimate=est,
        margin=settings.margins.get((series.workload, series.metric), settings.margin), fraction_of=fraction_of,
    )  # fmt: skip
    row.change_note = against_medians(row)
    return row


def against_medians(row: Row) -> str:
    """Why the change points one way and the medians of the runs the other, where they do. The
    change is the paired estimate, made of the per-block ratios (their mean below SMALL_N
    blocks, their Hodges-Lehmann median from there; unpaired, the median of all differences
    between runs): a block whose two runs moved far apart (one run disturbed) pulls it, while a
    median of runs ignores which block a run was in. With few blocks and a wide spread the two
    can part; the interval, not the sign, says what is known."""
    moved = row.median - row.baseline_median
    if not row.change * moved < 0:  # same way, no change, or NaN
        return ""
    scale = "log ratios" if row.log_scale else "differences"
    if not row.pairs:
        how = f"the median of all {row.n} x {row.baseline_n} differences between the runs (they could not pair)"
    elif row.test == PARAMETRIC:
        how = f"the mean of the {row.pairs} per-block {scale}, pulled by the blocks whose runs differ most"
    else:
        how = f"the Hodges-Lehmann median of the {row.pairs} per-block {scale}"
    return f"the medians of the runs move the other way; the change is {how}, paired within each block"


def _describe(series: Series, variant: str) -> Row:
    _, values = series.of(variant)
    med, lo, hi = median_ci(values)
    return Row(
        workload=series.workload, metric=series.metric, unit=series.unit, direction=series.direction,
        variant=variant, n=len(values), median=med, median_ci=(lo, hi), baseline_median=med,
        baseline_n=len(values), baseline_median_ci=(lo, hi),
        best=_best(values, series.direction), baseline_best=_best(values, series.direction),
        family=series.family, group=series.group or series.workload,
    )  # fmt: skip


def _geomeans(series_list: list[Series], settings: Settings, variants: list[str]) -> list[GeomeanRow]:
    """Per variant and direction: the mean log ratio over the primary metrics within each
    pairing key (keys where every such metric has a pair), then the same paired estimate and
    test as a metric gets. Only where two or more metrics share a direction: over one metric
    the mean is that metric's row again, and would be judged twice."""
    out = []
    primary = [s for s in series_list if s.family == PRIMARY and not s.group]  # the CPU scores have their own overall
    for variant in variants:
        for direction in ("lower", "higher"):
            keys, ratios = [], []
            for s in primary:
                if s.direction != direction:
                    continue
                kb, vb = s.of(settings.baseline)
                kv, vv = s.of(variant)
                common, ib, iv = np.intersect1d(kb, kv, assume_unique=True, return_indices=True)
                if len(common) < 2 or min(vb[ib].min(), vv[iv].min()) <= 0:
                    continue
                keys.append(common)
                ratios.append(np.log(vv[iv]) - np.log(vb[ib]))
            if len(keys) < 2:
                continue
            unique, inverse = np.unique(np.concatenate(keys), return_inverse=True)
            counts = np.bincount(inverse, minlength=len(unique))
            sums = np.bincount(inverse, weights=np.concatenate(ratios), minlength=len(unique))
            d = (sums / np.maximum(counts, 1))[counts == len(keys)]
            if len(d) < 2:
                continue
            est = paired_estimate(d, settings.levels())
            out.append(GeomeanRow(
                variant=variant, direction=direction, metrics=len(keys), blocks=len(d), change=_to_fraction(est.value),
                change_ci=(_to_fraction(est.ci[0]), _to_fraction(est.ci[1])),
                change_ci95=(_to_fraction(est.ci[0]), _to_fraction(est.ci[1])),
                change_ci90=(_to_fraction(est.ci90[0]), _to_fraction(est.ci90[1])), test=est.test, p=est.p,
                family=GEOMEAN, group="", estimate=est, margin=settings.margin,
            ))  # fmt: skip
    return out


def judge(series_list: list[Series], variants: list[str], settings: Settings) -> tuple[list[Row], list[GeomeanRow]]:
    """Rows for every non-baseline variant of every series, with verdicts for the judged
    families, each family corrected on its own at its share of alpha (see `decide`)."""
    others = [v for v in variants if v != settings.baseline]
    if not others:  # a lone variant is measured, not compared
        return [_describe(s, settings.baseline) for s in series_list], []
    pairs = [(s, v) for s in series_list for v in others]
    rows = _each(lambda pair: _compare(pair[0], pair[1], settings), pairs)
    geomeans = _geomeans(series_list, settings, others)
    decide([r for r in rows if r.family in JUDGED and r.direction != "none"], geomeans, settings)
    return rows, geomeans


def _each(work: Callable[[Item], Result], items: list[Item]) -> list[Result]:
    """`work` on every item, in order; on a thread per CPU where there are many: numpy's selection
    and sorting (most of a row's judging, and of its interval) release the GIL."""
    if len(items) <= 8:
        return [work(item) for item in items]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        return list(pool.map(work, items))


def _cannot_reach(row: Judged, level: float, p_min: float) -> str:
    est = row.estimate
    if est is None or est.p_min >= 1:
        return "not tested: every difference is zero"
    return f"not tested: its test cannot reach its family's level {level:.2g} (smallest p {p_min:.2g})"


def decide(rows: list[Row], geomeans: list[GeomeanRow], settings: Settings) -> None:
    """Adjusted p, the interval shown, verdict and blocks-needed hint for every judged comparison.

    Families (a workload's primary and secondary metrics, the geometric means) share alpha
    by their weights, among those that can decide anything; within each, the rows whose
    exact test cannot reach the level (all-zero counts, too few non-zero pairs) leave the
    family (Tarone's rule: for Holm its full form, the smallest k with at most k rows able to
    reach level / k; for BH, which can reject any row whose p reaches the level, the rows that
    cannot), then BH or Holm corrects the rest. q is reported on alpha's scale
    (adjusted p x alpha / the family's level), so q < alpha decides, as always. In
    sequential mode every p is first made a sequential p (stats/sequential.py).

    Every row of a family shows its interval at one threshold (`shown_threshold`: for BH the
    false-coverage-rate level of Benjamini and Yekutieli), at which the rows the correction
    selects are exactly those whose p reaches it; each interval is its test inverted, so it
    excludes zero exactly then, and better/worse is read off the interval shown.
    """
    judged: list[Row | GeomeanRow] = [*rows, *geomeans]
    seq = settings.sequential
    p_used = {id(r): r.p for r in judged}
    p_min = {id(r): r.estimate.p_min if r.estimate else 1.0 for r in judged}
    if seq is not None:
        p_used = {k: float(sequential_p(v, seq.first, seq.last)) if not math.isnan(v) else v for k, v in p_used.items()}
        p_min = {k: float(sequential_p(v, seq.first, seq.last)) for k, v in p_min.items()}
    families: dict[tuple[str, str], list[Row | GeomeanRow]] = defaultdict(list)
    for r in judged:
        families[(r.group, r.family)].append(r)
    first_split = dict(zip(families, shares(settings.alpha, [f for _, f in families]), strict=True))
    if settings.correction == "none":
        levels = {key: settings.alpha for key in families}
    else:
        can = [key for key, level in first_split.items() if any(p_min[id(r)] <= level for r in families[key])]
        levels = dict(zip(can, shares(settings.alpha, [f for _, f in can]), strict=True))
    same_level = (1 - settings.levels()[1]) / 2
    shows: list[tuple[Row | GeomeanRow, float, float]] = []  # each judged row, its interval's threshold, its level
    for key, members in families.items():
        level = levels.get(key)
        testable: list[Row | GeomeanRow]
        if level is None:  # nothing in it can reach even its first share
            level = first_split[key]
            testable, row_level = [], level
        elif settings.correction == "holm":
            testable, k = _tarone(members, p_min, level)
            row_level = level / max(k, 1)
        else:  # BH (or none) can reject a row whenever its p reaches the level: leave out those that cannot
            testable = [r for r in members if p_min[id(r)] <= level and not math.isnan(p_used[id(r)])]
            row_level = level / max(len(testable), 1) if settings.correction == "bh" else level
        # rows left out have p_min above `cutoff`: below it their intervals hold zero
        cutoff = row_level if settings.correction == "holm" else level
        testable_ids = {id(r) for r in testable}
        tested = [p_used[id(r)] for r in testable]
        adjusted = adjust(tested, settings.correction)
        scale = settings.alpha / level if level else 1.0
        for r, q in zip(testable, adjusted, strict=True):
            r.q = min(1.0, q * scale) if not math.isnan(q) else q
        shown = shown_threshold(tested, level, settings.correction) if testable else cutoff
        for r in members:
            if id(r) not in testable_ids:
                r.q = NAN
                r.note = _cannot_reach(r, level, p_min[id(r)])
            shows.append((r, shown if id(r) in testable_ids else min(shown, cutoff), row_level))
    _each(lambda show: _show_interval(show[0], show[1], seq), shows)  # every threshold is known: the intervals
    for r, _, row_level in shows:
        _verdict(r, settings, row_level, same_level)
    _explain_geomeans(rows, geomeans)


def shown_threshold(p: list[float], level: float, correction: str) -> float:
    """The threshold a family's intervals are read at (their level is 1 minus it), chosen so that
    the rows the correction selects are exactly those with p at most it (NaN p never are).

    BH selects the R rows with p <= R x level / m (Benjamini-Hochberg's step-up over m rows);
    Benjamini and Yekutieli (2005) showed that intervals at 1 - R x level / m for the selected
    rows keep the false-coverage rate (the share of shown intervals that miss their true change)
    at the level. Every row of the family is shown at max(R, 1) x level / m: the unselected have
    p above (R + 1) x level / m, so theirs hold zero, and with nothing selected the level is
    Bonferroni's. Holm (step-down, p_(k) <= level / (m - k + 1)) selects rows whose p is at most
    both R x level / m and level / (m - R), where it stopped; the smaller of the two is the
    false-coverage level or narrower. Uncorrected, the family's level. The comparisons below
    use the very floats the selection is defined by, so no rounding can split them."""
    m = len(p)
    ps = np.sort(np.asarray(p, dtype=float))  # NaN sorts last and passes no comparison
    if correction == "none" or m == 0:
        return level
    step = level / m
    if correction == "bh":
        reached = np.nonzero(ps <= np.arange(1, m + 1) * step)[0]
        selected = int(reached[-1]) + 1 if len(reached) else 0
        return max(selected, 1) * step
    selected = 0
    while selected < m and ps[selected] <= level / (m - selected):
        selected += 1
    return level if selected == m else min(max(selected, 1) * step, level / (m - selected))


def _show_interval(r: Row | GeomeanRow, threshold: float, seq: Sequential | None) -> None:
    """The row's interval at its family's threshold (on the sequential scale in sequential mode,
    read at the nominal threshold whose sequential p is that), as the fraction the report shows."""
    est = r.estimate
    assert est is not None
    nominal = threshold if seq is None else nominal_threshold(threshold, seq.first, seq.last)
    lo, hi = est.interval_at(nominal) if nominal > 0 else (NAN, NAN)
    r.change_ci = (r.as_fraction(lo), r.as_fraction(hi))
    r.change_ci_level = 1 - threshold


def _tarone(members: list[Row | GeomeanRow], p_min: dict[int, float], level: float) -> tuple[list[Row | GeomeanRow], int]:
    """Tarone (1990): the smallest k such that at most k rows can reach level / k; those rows
    are the family that is corrected, the others could never be decided and only dilute it."""
    for k in range(1, len(members) + 1):
        reach = [r for r in members if p_min[id(r)] <= level / k]
        if len(reach) <= k:
            return reach, k
    return members, len(members)


def _verdict(r: Row | GeomeanRow, settings: Settings, row_level: float, same_level: float) -> None:
    est = r.estimate
    assert est is not None
    r.verdict = verdict(direction=r.direction, ci=r.change_ci, ci90=r.change_ci90, margin=r.margin)
    if r.verdict == UNCLEAR:
        r.blocks_needed = blocks_needed(
            n=r.sample_size, effect=est.value, spread=est.spread, margin=r.margin_tested, level=row_level,
            same_level=same_level, paired=est.paired,
        )  # fmt: skip


def _explain_geomeans(rows: list[Row], geomeans: list[GeomeanRow]) -> None:
    """A geometric mean that reads differently from its rows says why."""
    for g in geomeans:
        mine = [
            r for r in rows
            if r.family == PRIMARY and r.group == r.workload and r.variant == g.variant  # not the CPU scores
            and r.direction == g.direction and r.log_scale
        ]  # fmt: skip
        decided = [r.verdict for r in mine if r.verdict in ("better", "worse")]
        if g.verdict in ("better", "worse"):
            opposite = [v for v in decided if v != g.verdict]
            if opposite:
                g.note = (
                    f"its metrics disagree: {decided.count('better')} better, {decided.count('worse')} worse; "
                    f"the mean weighs all {g.metrics} together"
                )
            elif not decided:
                g.note = f"no single metric is decided; together the {g.metrics} are"
        elif decided:
            g.note = (
                f"{len(decided)} of {g.metrics} metrics are decided ({', '.join(sorted(set(decided)))}); "
                "their mean, with the others, is not"
            )


def undecided(rows: list[Row]) -> list[Row]:
    """Primary rows (the outcomes) not yet better, worse or same: what a sequential experiment
    waits for. Secondary rows explain an outcome and do not hold it up: a command's user and
    sys time in clock ticks may never settle within a margin."""
    return [r for r in rows if r.family == PRIMARY and r.direction != "none" and r.verdict not in DECIDED]
