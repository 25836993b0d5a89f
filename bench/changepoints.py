"""Change-point detectors on synthetic histories with known steps: Apache Otava (the dependency
`benchlab history` uses) against MongoDB's E-divisive (signal-processing-algorithms).

Each history is a series of per-experiment medians (what `benchlab history` feeds a detector):
60 points with two steps (at points 20 and 40, of the same size and opposite or equal sign), 12
points with one step (at point 6), or either without a step (flat, to count false change
points), under four noise models around a level of 100:
normal (1% CV), lognormal with a heavy tail (sigma 2%, and a point in 20 drawn with sigma 6%),
outliers (1% normal noise, and 5% of the points 20% high), and drift (1% normal noise on a level
that creeps up 3% over the series). Scores per detector, length, noise model and step size: the recall
of true steps (a change point within +-2 points of one), false change points per 100 points
(those within 2 points of no step), the mean location error of the steps found, and the time
per series.

MongoDB's package pins numpy<2 and gevent, so it cannot live in benchlab's environment: it
runs in a throwaway one, fed the same series as JSON on stdin and answering JSON on stdout:

    uv run python bench/changepoints.py [--repeats 20]
    (which itself runs: uv run --isolated --no-project --with signal-processing-algorithms \
        python bench/changepoints.py --detect < settings-and-series.json)
"""

from __future__ import annotations

import argparse
import itertools
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

# (points, where the steps are): two months of nightly runs with a regression and its fix (or a
# second regression), and two weeks with one step
SHAPES = ((60, (20, 40)), (12, (6,)))
STEP_SIZES = (0.0, 0.02, 0.05, 0.10)  # 0: a flat history
NOISE = ("normal", "lognormal", "outliers", "drift")
MONGODB = "signal-processing-algorithms"
NEAR = 2  # a change point this close to a step finds it
# (name, its settings): Otava at its default p, with `benchlab history`'s default floor of a 1% change,
# and at E-divisive's customary 0.05; MongoDB's at its default
DETECTORS: dict[str, dict[str, Any]] = {
    "otava p=0.001": {"kind": "otava", "pvalue": 0.001, "min_change": 0.0},
    "otava p=0.001 min 1%": {"kind": "otava", "pvalue": 0.001, "min_change": 0.01},
    "otava p=0.05": {"kind": "otava", "pvalue": 0.05, "min_change": 0.0},
    "otava e-divisive p=0.05": {"kind": "otava-edivisive", "pvalue": 0.05},
    "mongodb p=0.05": {"kind": "mongodb", "pvalue": 0.05},
}


def series(noise: str, step: float, seed: int, length: int, steps_at: tuple[int, ...]) -> list[float]:
    import numpy as np

    rng = np.random.default_rng(seed)
    level = np.full(length, 100.0)
    for i, at in enumerate(steps_at):  # in every other history the second step goes back down: a regression, then its fix
        level[at:] *= 1 + (-step if i and seed % 2 else step)
    if noise == "normal":
        values = level * (1 + rng.normal(0, 0.01, length))
    elif noise == "lognormal":
        sigma = np.where(rng.random(length) < 0.05, 0.06, 0.02)
        values = level * rng.lognormal(0, sigma)
    elif noise == "outliers":
        values = level * (1 + rng.normal(0, 0.01, length)) * np.where(rng.random(length) < 0.05, 1.2, 1.0)
    else:  # drift
        values = level * np.linspace(1.0, 1.03, length) * (1 + rng.normal(0, 0.01, length))
    return [float(v) for v in values]


def detect(settings: dict[str, Any], values: list[float]) -> list[int]:
    """Indices of the first point after each change point found."""
    if settings["kind"] == "otava-edivisive":  # Otava's own E-divisive with its permutation test, as MongoDB's
        from otava.analysis import compute_change_points_orig

        found, _ = compute_change_points_orig(values, max_pvalue=settings["pvalue"], seed=1)
        return sorted(int(c.index) for c in found)
    if settings["kind"] == "otava":
        from otava.analysis import compute_change_points

        found, _ = compute_change_points(
            values, window_len=50, max_pvalue=settings["pvalue"], min_magnitude=settings["min_change"]
        )
        return sorted(int(c.index) for c in found)
    from signal_processing_algorithms.energy_statistics.energy_statistics import e_divisive

    return sorted(int(i) for i in e_divisive(values, pvalue=settings["pvalue"], permutations=100))


def detect_all(settings: dict[str, Any], histories: list[list[float]]) -> list[dict[str, Any]]:
    if histories:
        detect(settings, histories[0])  # imports and first-call set-up are not timed
    answers = []
    for values in histories:
        start = time.perf_counter()
        found = detect(settings, values)
        answers.append({"found": found, "seconds": time.perf_counter() - start})
    return answers


def in_throwaway_env(settings: dict[str, Any], histories: list[list[float]]) -> list[dict[str, Any]] | None:
    """MongoDB's detector in an environment of its own (numpy<2), through uv; None without uv."""
    uv = shutil.which("uv") or str(Path.home() / ".local/bin/uv")
    if not Path(uv).exists():
        return None
    argv = [uv, "run", "-q", "--isolated", "--no-project", "--with", MONGODB, "python", __file__, "--detect"]
    done = subprocess.run(
        argv, input=json.dumps({"settings": settings, "histories": histories}), capture_output=True, text=True, check=True
    )
    answers: list[dict[str, Any]] = json.loads(done.stdout)
    return answers


def score(truth: list[int], found: list[int]) -> tuple[int, int, list[int]]:
    """(steps found, false change points, location errors of the steps found)."""
    errors = []
    for t in truth:
        near = [abs(f - t) for f in found if abs(f - t) <= NEAR]
        if near:
            errors.append(min(near))
    false = sum(all(abs(f - t) > NEAR for t in truth) for f in found)
    return len(errors), false, errors


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=20, help="histories per noise model and step size")
    parser.add_argument("--only", action="append", choices=list(DETECTORS), help="run this detector only (repeatable)")
    parser.add_argument("--detect", action="store_true", help="(internal) read settings and histories as JSON on stdin")
    args = parser.parse_args()
    if args.detect:
        given = json.load(sys.stdin)
        json.dump(detect_all(given["settings"], given["histories"]), sys.stdout)
        return
    groups = list(itertools.product(SHAPES, NOISE, STEP_SIZES))
    cases = [(group, seed) for group in groups for seed in range(args.repeats)]
    histories = [series(noise, step, seed, *shape) for (shape, noise, step), seed in cases]
    shapes = "; ".join(f"{n} points with steps at {', '.join(map(str, at))}" for n, at in SHAPES)
    print(f"{len(histories)} histories ({shapes}); a step is found by a change point within +-{NEAR} points\n")
    print("| detector | points | noise | step | recall | false per 100 points | location error | ms per series |")
    print("|---|---|---|---|---|---|---|---|")
    for name, settings in DETECTORS.items():
        if args.only and name not in args.only:
            continue
        in_process = settings["kind"] != "mongodb"
        answers = detect_all(settings, histories) if in_process else in_throwaway_env(settings, histories)
        if answers is None:
            print(f"| {name} | (uv not found: skipped) | | | | | | |")
            continue
        for group in groups:
            picked = [a for (g, _), a in zip(cases, answers, strict=True) if g == group]
            print(f"| {name} | {summary(group, picked)} |", flush=True)


def summary(group: tuple[tuple[int, tuple[int, ...]], str, float], picked: list[dict[str, Any]]) -> str:
    """One line's cells after the detector's name: points, noise, step and the scores."""
    (length, steps_at), noise, step = group
    truth = list(steps_at) if step else []
    scored = [score(truth, a["found"]) for a in picked]
    recall = "-" if not truth else f"{sum(s[0] for s in scored) / (len(truth) * len(picked)):.0%}"
    false = 100 * sum(s[1] for s in scored) / (length * len(picked))
    errors = [e for s in scored for e in s[2]]
    error = f"{sum(errors) / len(errors):.2f}" if errors else "-"
    ms = 1000 * sum(a["seconds"] for a in picked) / len(picked)
    return f"{length} | {noise} | {step:.0%} | {recall} | {false:.2f} | {error} | {ms:.1f}"


if __name__ == "__main__":
    main()
