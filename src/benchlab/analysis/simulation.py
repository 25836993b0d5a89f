"""Simulated experiments with a known truth, to calibrate the verdicts.

Runs are laid out in the real plan order (interleaved blocks), with a slow
linear drift over the experiment and lognormal noise per run, so that the
calibration sees what the statistics see on a real machine.
"""

from __future__ import annotations

import numpy as np

from benchlab.analysis.diff import two_samples
from benchlab.plan import make_plan
from benchlab.stacks import StackDocument, encode
from benchlab.stats.bisection import Judge, Judgement, Pair, settled
from benchlab.stats.judge import KEY_SHIFT, Row, Sequential, Series, Settings, judge, pair_key, undecided
from benchlab.store import ProfiledRun


def simulate(
    rng: np.random.Generator,
    *,
    metrics: int,
    blocks: int,
    noise: float,
    shifts: list[float],
    drift: float,
    outliers: float = 0.0,
    outlier_factor: float = 1.5,
) -> list[Series]:
    """Two variants A and B of one workload; B's metric m is shifted by shifts[m] on the log scale.
    A share `outliers` of all runs is `outlier_factor` slower (a run that met a burst of the host)."""
    plan = make_plan(["w"], ["A", "B"], blocks=blocks, warmup=0, seed=int(rng.integers(1 << 30)))
    series = []
    for m in range(metrics):
        values: dict[str, tuple[list[int], list[float]]] = {"A": ([], []), "B": ([], [])}
        for run in plan:
            t = run.position / len(plan)
            log_value = 3.0 + drift * t + rng.normal(0, noise) + (shifts[m] if run.variant == "B" else 0.0)
            if outliers and rng.random() < outliers:
                log_value += np.log(outlier_factor)
            values[run.variant][0].append(pair_key(1, run.block))
            values[run.variant][1].append(float(np.exp(log_value)))
        arrays = {v: (np.array(k, dtype=np.int64), np.array(x)) for v, (k, x) in values.items()}
        series.append(Series("w", f"m{m}", "s", "lower", arrays))
    return series


def first_blocks(series: list[Series], blocks: int) -> list[Series]:
    """The same series as they stood after `blocks` blocks: what a sequential look sees."""
    limit = (1 << KEY_SHIFT) - 1
    out = []
    for s in series:
        values = {v: (k[(k & limit) < blocks], x[(k & limit) < blocks]) for v, (k, x) in s.values.items()}
        out.append(Series(s.workload, s.metric, s.unit, s.direction, values, s.family, s.group))
    return out


def run_until_decided(series: list[Series], settings: Settings) -> tuple[int, list[Row]]:
    """Looks after every block from the settings' first to last look, as `--until-decided`
    does: the blocks it stopped at and the rows it ended with."""
    assert settings.sequential is not None
    for blocks in range(settings.sequential.first, settings.sequential.last + 1):
        rows, _ = judge(first_blocks(series, blocks), ["A", "B"], settings)
        if not undecided(rows):
            break
    return blocks, rows


def simulate_diff(rng: np.random.Generator, *, runs: tuple[int, int], noise: float, shift: float = 0.0) -> list[Row]:
    """One `benchlab diff` of a command workload, judged by the diff's own two-sample path: its
    wall time (primary) and user and sys time (secondary), lognormal with `noise`, A with runs[0]
    runs and B with runs[1]; B's wall time is shifted by `shift` on the log scale (0: an A/A diff,
    where at most alpha of diffs may show any better or worse row)."""
    series = []
    for metric, family in (("wall", "primary"), ("user", "secondary"), ("sys", "secondary")):
        like = Series("w", metric, "s", "lower", {}, family)
        x = np.exp(1.0 + rng.normal(0, noise, runs[0]))
        y = np.exp(1.0 + rng.normal(0, noise, runs[1]) + (shift if metric == "wall" else 0.0))
        series.append(two_samples(like, "w", ("A", x), ("B", y)))
    rows, _ = judge(series, ["A", "B"], Settings(baseline="A"))
    return rows


def bisect_judge(
    rng: np.random.Generator,
    levels: list[float],
    *,
    noise: float,
    first: int,
    last: int,
    drift: float = 0.05,
    nominal_alpha: float | None = None,
) -> Judge:
    """A `Judge` for a simulated bisection: variant i's metric lies at levels[i] on the log scale,
    and each pair is a simulated experiment with that shift, judged at every look from `first`
    to `last` as `benchlab bisect` judges a real one (until `settled`, or the budget out).
    With `nominal_alpha`, every pair is judged at that whole alpha at nominal levels after every
    block instead: what a script that adds runs until a test says something does (the baseline
    bench/bisect_calibration.py compares with)."""

    def experiment(pair: Pair) -> Judgement:
        shift = levels[int(pair.candidate)] - levels[int(pair.baseline)]
        series = simulate(rng, metrics=1, blocks=last, noise=noise, shifts=[shift], drift=drift)
        margins = {("w", "m0"): pair.margin} if pair.margin is not None else {}
        settings = (
            Settings(baseline="A", alpha=nominal_alpha, margins=margins)
            if nominal_alpha is not None
            else Settings(baseline="A", alpha=pair.alpha, margins=margins, sequential=Sequential(first, last))
        )
        for blocks in range(first, last + 1):
            (row,), _ = judge(first_blocks(series, blocks), ["A", "B"], settings)
            if settled(pair.role, row.verdict, row.change, row.change_ci):
                break
        return Judgement(row.verdict, row.change, row.change_ci, row.change_ci90, row.sample_size)

    return experiment


PERIOD_NS = 1_000_000  # a simulated sampler's period: one sample per millisecond of CPU time


def simulate_profiles(
    rng: np.random.Generator,
    variants: dict[str, np.ndarray],
    *,
    blocks: int,
    noise: float,
    drift: float = 0.05,
    tails: float = 0.0,
    waits: bool = False,
) -> list[ProfiledRun]:
    """Profiled runs of one workload `w` with functions f0, f1, ... below `main`, each variant's
    seconds per function given: per block a factor shared by the block's runs (drift, lognormal
    `drift`), per run and function lognormal `noise` (or, with `tails`, that noise times Student's
    t with `tails` degrees of freedom: heavy tails), then the sampler's Poisson counts of 1 ms
    samples. With `waits`, each function also waits off the CPU as long as it runs (under noise
    of its own, timed exactly as switch events are): in `schedule`, below it."""
    runs: list[ProfiledRun] = []
    functions = len(next(iter(variants.values())))
    frames = [("main", "/usr/bin/app", False), *((f"f{i}", "/usr/bin/app", False) for i in range(functions))]
    scheduler = len(frames)
    for block in range(blocks):
        shared = rng.lognormal(0, drift)
        for variant, seconds in variants.items():
            wiggle = rng.standard_t(tails, size=len(seconds)) if tails else rng.standard_normal(len(seconds))
            counts = rng.poisson(seconds * shared * np.exp(noise * wiggle) / (PERIOD_NS * 1e-9))
            waited = seconds * shared * np.exp(noise * rng.standard_normal(len(seconds))) if waits else np.zeros(0)
            document = StackDocument(
                event="cpu-clock",
                frames=[*frames, ("schedule", "[kernel.kallsyms]", True)],
                stacks=[("app", [0, i + 1], int(c) * PERIOD_NS, int(c)) for i, c in enumerate(counts.tolist()) if c],
                off_cpu=[("app", [0, i + 1, scheduler], int(t * 1e9), 1) for i, t in enumerate(waited.tolist())],
            )
            runs.append(ProfiledRun("w", variant, 1, block, len(runs), "ok", 0.0, 1.0, wall_s=1.0, profile=encode(document)))
    return runs
