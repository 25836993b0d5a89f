"""How often the verdicts are wrong or right on simulated experiments with a known truth,
beside what peers would have said about the same runs.

The same simulation as the tests (runs in the real interleaved plan order, a slow drift,
lognormal noise, optionally 5% of runs 1.5x slower), printed as rates so that a change to
the statistics shows its effect:

1. A/A: the share of experiments with a better/worse verdict, per number of blocks and
   noise model (target: at most 5% everywhere), for benchlab and for
   - benchstat: Mann-Whitney U on the two unpaired samples, p < 0.05 (its "~" otherwise),
   - a plain t-test: Welch's on the raw values (as a script over hyperfine's output would),
   - a paired t-test on the log ratios at every n;
2. power: the share of experiments that call a known change (2x, +10%, +5%) right;
3. sequential mode (--until-decided, looks after blocks 3..40): the A/A rate with
   optional stopping, and when known changes are decided;
4. the intervals shown beside verdicts: on experiments of many metrics, a few of them
   changed, the share of rows called better or worse whose shown interval (at the family's
   corrected level) misses the true change, the false-coverage rate Benjamini and Yekutieli's
   intervals keep at alpha, beside the unadjusted 95% intervals of the same rows.

    uv run python bench/verdict_calibration.py [--experiments 1000] [--coverage-only]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import numpy as np
from scipy import stats

from benchlab.analysis.simulation import run_until_decided, simulate
from benchlab.stats.judge import Sequential, Series, Settings, judge

SETTINGS = Settings(baseline="A")
BLOCKS = (3, 4, 5, 6, 8, 10, 15, 20)
NOISE_MODELS = {  # name -> (lognormal sigma, share of 1.5x outliers)
    "2%": (0.02, 0.0),
    "5%": (0.05, 0.0),
    "10%": (0.10, 0.0),
    "2% + outliers": (0.02, 0.05),
    "5% + outliers": (0.05, 0.05),
    "10% + outliers": (0.10, 0.05),
}
Method = Callable[[list[Series]], str]  # -> "better", "worse" or anything else


def _samples(series: list[Series]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    (ka, a), (kb, b) = series[0].of("A"), series[0].of("B")
    order_a, order_b = np.argsort(ka), np.argsort(kb)
    return a, b, a[order_a], b[order_b]


def _called(p: float, change: float) -> str:
    return ("worse" if change > 0 else "better") if p < 0.05 else "unclear"


def benchlab(series: list[Series]) -> str:
    return judge(series, ["A", "B"], SETTINGS)[0][0].verdict


def benchstat(series: list[Series]) -> str:
    a, b, _, _ = _samples(series)
    p = stats.mannwhitneyu(b, a, alternative="two-sided").pvalue
    return _called(float(p), float(np.median(b) - np.median(a)))


def welch(series: list[Series]) -> str:
    a, b, _, _ = _samples(series)
    return _called(float(stats.ttest_ind(b, a, equal_var=False).pvalue), float(b.mean() - a.mean()))


def paired_log_t(series: list[Series]) -> str:
    _, _, a, b = _samples(series)
    d = np.log(b) - np.log(a)
    return _called(float(stats.ttest_1samp(d, 0.0).pvalue), float(d.mean()))


METHODS: dict[str, Method] = {"benchlab": benchlab, "benchstat (U)": benchstat, "Welch t": welch, "paired t (log)": paired_log_t}


def rate(rng: np.random.Generator, method: Method, *, blocks: int, noise: float, outliers: float, shift: float,
         experiments: int, want: tuple[str, ...]) -> float:  # fmt: skip
    hits = 0
    for _ in range(experiments):
        series = simulate(rng, metrics=1, blocks=blocks, noise=noise, shifts=[shift], drift=0.05, outliers=outliers)
        hits += method(series) in want
    return hits / experiments


def table(title: str, header: list[str], rows: list[list[str]]) -> None:
    print(f"\n{title}\n")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(row) + " |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--experiments", type=int, default=1000, help="simulated experiments per cell")
    parser.add_argument("--coverage-only", action="store_true", help="only part 4, the intervals beside verdicts")
    args = parser.parse_args()
    n = args.experiments
    rng = np.random.default_rng(1)
    if args.coverage_only:
        coverage(rng, n)
        return

    rows = []
    for model, (noise, outliers) in NOISE_MODELS.items():
        for name, method in METHODS.items():
            cells = [rate(rng, method, blocks=b, noise=noise, outliers=outliers, shift=0.0, experiments=n,
                          want=("better", "worse")) for b in BLOCKS]  # fmt: skip
            rows.append([model, name, *(f"{c:.1%}" for c in cells)])
    table(f"A/A: experiments with a better/worse verdict ({n} per cell; target <= 5%)",
          ["noise", "method", *(f"n={b}" for b in BLOCKS)], rows)  # fmt: skip

    rows = []
    for label, shift, noise in (("2x", np.log(2.0), 0.05), ("+10%", np.log(1.10), 0.05), ("+5%", np.log(1.05), 0.05),
                                ("+5%", np.log(1.05), 0.02), ("+3%", np.log(1.03), 0.01)):  # fmt: skip
        for name, method in METHODS.items():
            cells = [rate(rng, method, blocks=b, noise=noise, outliers=0.0, shift=shift, experiments=n // 4,
                          want=("worse",)) for b in BLOCKS]  # fmt: skip
            rows.append([f"{label} at {noise:.0%} noise", name, *(f"{c:.0%}" for c in cells)])
    table(f"power: experiments that call the change worse ({n // 4} per cell)",
          ["change", "method", *(f"n={b}" for b in BLOCKS)], rows)  # fmt: skip

    sequential = Settings(baseline="A", sequential=Sequential(first=3, last=40))
    rows = []
    for label, shift, noise, outliers in (("A/A", 0.0, 0.05, 0.0), ("A/A", 0.0, 0.05, 0.05), ("A/A", 0.0, 0.10, 0.05),
                                          ("2x", np.log(2.0), 0.05, 0.0), ("+10%", np.log(1.10), 0.05, 0.0),
                                          ("+5%", np.log(1.05), 0.05, 0.0)):  # fmt: skip
        trials = n if label == "A/A" else n // 4
        stops, verdicts = [], []
        for _ in range(trials):
            series = simulate(rng, metrics=1, blocks=40, noise=noise, shifts=[shift], drift=0.05, outliers=outliers)
            blocks, judged = run_until_decided(series, sequential)
            stops.append(blocks)
            verdicts.append(judged[0].verdict)
        wrong = (
            np.mean([v in ("better", "worse") for v in verdicts]) if label == "A/A" else np.mean([v != "worse" for v in verdicts])
        )
        rows.append([
            label, f"{noise:.0%}" + (" + outliers" if outliers else ""), str(trials),
            f"{wrong:.1%}" + (" better/worse" if label == "A/A" else " not worse"),
            f"{np.median(stops):.0f}", f"{np.mean(np.array(verdicts) == 'unclear'):.1%}",
        ])  # fmt: skip
    table("sequential (--until-decided, looks after blocks 3..40)",
          ["truth", "noise", "experiments", "wrong", "median blocks at stop", "unclear at budget"], rows)  # fmt: skip
    coverage(rng, n // 4)


def coverage(rng: np.random.Generator, experiments: int) -> None:
    """Part 4: 16 metrics of one workload, 12 unchanged and 4 shifted by 1-5%, 2% noise. The
    false-coverage rate is Benjamini and Yekutieli's: per experiment, the share of its rows called
    better or worse whose interval misses the truth (0 where none is called), averaged."""
    truth = np.log(np.array([1.0] * 12 + [1.01, 1.02, 1.03, 1.05]))
    rows = []
    for blocks in (4, 6, 10, 20):
        called, fcr, fcr95, shown, covered, judged = 0, 0.0, 0.0, 0, 0, 0
        for _ in range(experiments):
            series = simulate(rng, metrics=len(truth), blocks=blocks, noise=0.02, shifts=list(truth), drift=0.05)
            missed = missed95 = selected = 0
            for row, true in zip(judge(series, ["A", "B"], SETTINGS)[0], np.expm1(truth), strict=True):
                judged += 1
                lo, hi = row.change_ci
                shown += not np.isnan(lo)
                covered += bool(lo <= true <= hi)
                if row.verdict in ("better", "worse"):
                    selected += 1
                    missed += not lo <= true <= hi
                    missed95 += not row.change_ci95[0] <= true <= row.change_ci95[1]
            called += selected
            fcr += missed / selected if selected else 0.0
            fcr95 += missed95 / selected if selected else 0.0
        rows.append([str(blocks), str(called), f"{fcr / experiments:.1%}", f"{fcr95 / experiments:.1%}",
                     f"{shown / judged:.0%}", f"{covered / shown:.1%}" if shown else "n/a"])  # fmt: skip
    table(f"intervals beside verdicts: 16 metrics, 4 changed by 1-5%, 2% noise ({experiments} experiments a row)",
          ["blocks", "rows called better/worse", "false-coverage rate of the shown intervals (target <= 5%)",
           "of their unadjusted 95% ones", "rows with an interval", "of those, covering the truth"], rows)  # fmt: skip


if __name__ == "__main__":
    main()
