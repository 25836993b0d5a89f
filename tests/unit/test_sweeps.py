"""Sweeps: expansion into variants, and the line fitted through the changes, checked on
synthetic data with a known intercept and slope."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from benchlab.analysis.analyze import analyze
from benchlab.analysis.sweep import _agrees, lack_of_fit_warning
from benchlab.errors import SpecError
from benchlab.measure.process import Finished, Launch
from benchlab.report import render
from benchlab.runner import Prepared, Runner
from benchlab.spec.validate import spec_from_dict
from benchlab.stats.fit import ADDITIVE, LACK_OF_FIT_ALPHA, LINE, LOG, PIECEWISE, LineFit, fit_models
from benchlab.store import Store
from tests.unit.test_report_model import validate
from tests.unit.test_runner import HOST, FakeJournal, usage

WORKLOADS = [{"name": "t", "command": ["true"]}]


def expand(sweep: dict[str, Any], variants: list[dict[str, Any]] | None = None) -> list[Any]:
    return spec_from_dict({"name": "s", "workloads": WORKLOADS, "variants": variants or [], "sweep": sweep}).variants


def test_a_list_sweep_becomes_variants_sharing_the_base() -> None:
    variants = expand(
        {"base": {"allocator": "jemalloc"}, "parameters": [{"field": "tunables.dirty_decay_ms", "values": [5000, 30000]}]},
        [{"name": "default", "allocator": "jemalloc"}],
    )
    assert [(v.name, v.allocator, v.tunables, v.sweep) for v in variants] == [
        ("default", "jemalloc", {}, {}),
        ("dirty_decay_ms-5000", "jemalloc", {"dirty_decay_ms": 5000}, {"tunables.dirty_decay_ms": 5000}),
        ("dirty_decay_ms-30000", "jemalloc", {"dirty_decay_ms": 30000}, {"tunables.dirty_decay_ms": 30000}),
    ]


def test_ranges_step_linearly_or_logarithmically_and_two_parameters_cross() -> None:
    log = expand({"parameters": [{"field": "env.N", "range": {"start": 1, "stop": 1000000, "steps": 7, "scale": "log"}}]})
    assert [v.env["N"] for v in log] == ["1", "10", "100", "1000", "10000", "100000", "1000000"]
    linear = expand({"parameters": [{"field": "cpus", "range": {"start": 0, "stop": 1, "steps": 2}}]})
    assert [v.cpus for v in linear] == [[0], [1]]
    crossed = expand({"parameters": [{"field": "env.A", "values": [1, 2]}, {"field": "env.B", "values": ["x", "y", "z"]}]})
    assert len(crossed) == 6 and crossed[-1].name == "A-2_B-z" and crossed[-1].sweep == {"env.A": 2, "env.B": "z"}


@pytest.mark.parametrize(
    ("sweep", "message"),
    [
        (
            {"parameters": [{"field": "env.N", "values": [1], "range": {"start": 1, "stop": 2, "steps": 2}}]},
            "sweep.parameters[0]",
        ),
        ({"parameters": [{"field": "colour", "values": [1]}]}, "sweep.parameters[0].field: unknown variant field 'colour'"),
        ({"parameters": [{"field": "env.N", "range": {"start": 0, "stop": 10, "steps": 3, "scale": "log"}}]}, "positive"),
        ({"parameters": []}, "sweep.parameters"),
        ({"parameters": [{"field": "tunables.narenas", "values": [1]}], "fit": "cubic"}, "sweep.fit"),
    ],
)
def test_a_bad_sweep_is_refused_naming_its_place(sweep: dict[str, Any], message: str) -> None:
    with pytest.raises(SpecError) as caught:
        expand(sweep)
    assert message in str(caught.value)


def runs(rng: np.random.Generator, change: Any, values: list[float], blocks: int, noise: float) -> list[np.ndarray]:
    """Runs of a reference and of each swept value (block keys, swept flags, values, log times),
    `change(value)` the true log change of a value against the reference, block effects far larger
    than the noise: a fit must absorb them."""
    keys, swept, value, y = [], [], [], []
    for b in range(blocks):
        drift = rng.normal(0, 0.2)
        for flag, v in [(0.0, 0.0), *((1.0, v) for v in values)]:
            keys.append(b)
            swept.append(flag)
            value.append(v)
            y.append(3.0 + drift + (change(v) if flag else 0.0) + rng.normal(0, noise))
    return list(map(np.asarray, (keys, swept, value, y)))


def fit_line(keys: np.ndarray, swept: np.ndarray, x: np.ndarray, y: np.ndarray) -> LineFit | None:
    """The line alone, for a regressor that is the value itself."""
    fits = fit_models(keys, swept, x, x, y)
    return fits.line if fits else None


def synthetic(rng: np.random.Generator, a: float, s: float, xs: list[float], blocks: int, noise: float) -> list[np.ndarray]:
    """A change a + s x, as `fit_line` takes the runs (the value itself its regressor)."""
    return runs(rng, lambda x: a + s * x, xs, blocks, noise)


def test_the_fit_recovers_a_known_intercept_and_slope_with_honest_intervals() -> None:
    rng = np.random.default_rng(11)
    a, s = 0.015, 0.08  # 1.5% for being installed, 8% more at rate 1
    xs = [1.0, 0.1, 0.05, 0.02, 0.001, 0.0]
    covered_a = covered_s = 0
    trials = 400
    for _ in range(trials):
        line = fit_line(*synthetic(rng, a, s, xs, blocks=10, noise=0.01))
        assert line is not None
        covered_a += line.intercept_ci[0] <= a <= line.intercept_ci[1]
        covered_s += line.slope_ci[0] <= s <= line.slope_ci[1]
    assert 0.92 <= covered_a / trials <= 0.98 and 0.92 <= covered_s / trials <= 0.98
    exact = fit_line(*synthetic(rng, a, s, xs, blocks=10, noise=1e-9))
    assert exact is not None and exact.intercept == pytest.approx(a, abs=1e-6) and exact.slope == pytest.approx(s, abs=1e-6)


def test_a_line_cannot_be_fitted_through_one_point() -> None:
    keys, swept, x, y = synthetic(np.random.default_rng(1), 0.0, 0.1, [1.0], blocks=5, noise=0.01)
    assert fit_line(keys, swept, x, y) is None


class RateMachine:
    """Wall time = 1 s x (1.02 when the variant sets N) x exp(0.4 / N), with 0.5% noise: an
    installed cost of 2% and a slope of 0.4 per unit of the sampling rate 1/N (0: never)."""

    def __init__(self) -> None:
        self.rng = np.random.default_rng(5)

    def run(self, launch: Launch) -> Finished:
        n = launch.env.get("N")
        wall = 1.0 if n is None else 1.02 * math.exp(0.4 / int(n) if int(n) else 0.0)
        return Finished(exit_code=0, signal=None, timed_out=False, usage=usage(wall * math.exp(self.rng.normal(0, 0.005))))


def test_a_sweep_experiment_reports_each_point_and_the_fitted_line(tmp_path: Path) -> None:
    spec = spec_from_dict({
        "name": "rate", "workloads": WORKLOADS, "variants": [{"name": "none"}], "blocks": 12,
        "sweep": {"fit": "reciprocal", "parameters": [{"field": "env.N", "values": [0, 1, 2, 10, 100]}]},
    })  # fmt: skip
    store = Store(str(tmp_path / "s.db"))
    clock = itertools.count(1000.0, 0.5)
    runner = Runner(store, executor=RateMachine(), clock=lambda: next(clock), journal=FakeJournal(), host=HOST)  # type: ignore[arg-type]
    report = analyze(store.load(runner.run(Prepared.from_spec(spec)))).report()
    assert report.sweep is not None
    validate(json.loads(report.to_json()))
    (fit,) = [f.model_dump() for f in report.sweep.fits if f.metric == "wall"]
    assert fit["intercept_ci"][0] <= 0.02 <= fit["intercept_ci"][1] and abs(fit["intercept"] - 0.02) < 0.01
    assert fit["slope_ci"][0] <= 0.4 <= fit["slope_ci"][1] and abs(fit["slope"] - 0.4) < 0.02
    table = render(report, "table")
    assert "fit: log change" in table and "(reference)" in table and "N-100" not in table
    assert render(report, "md").count("| wall |") == 6


def test_a_share_of_ram_names_its_variant_in_words() -> None:
    from benchlab.spec.sweep import _label

    assert [_label(v) for v in ("25%", "50%", "2G", 0.5)] == ["25pct", "50pct", "2g", "0.5"]


SEED_N = [1, 10, 20, 25, 33, 50, 100, 1_000_000]  # the shim study's own sampling frequencies


def simulated(rng: np.random.Generator, change: Any, values: list[float], blocks: int, noise: float) -> tuple[np.ndarray, ...]:
    """`runs` as `fit_models` takes them, with the reciprocal as the line's regressor."""
    keys, swept, value, y = runs(rng, change, values, blocks, noise)
    x = np.where(swept == 1, 1 / np.where(value == 0, 1.0, value), 0.0)
    return keys, swept, x, value, y


def shim_curve(n: float) -> float:
    """The shim's shape: a cost per sampled free added to the time (ratio 1.005 + 5.9/N, the seed
    study's +590% at N = 1), which on the log scale bends in 1/N."""
    return math.log(1.005 + 5.9 / n)


def test_lack_of_fit_is_found_where_the_line_bends_and_another_model_is_read() -> None:
    rng = np.random.default_rng(3)
    trials = 100
    found = 0
    for _ in range(trials):
        fits = fit_models(*simulated(rng, shim_curve, SEED_N, blocks=10, noise=0.05))
        assert fits is not None
        found += fits.line.lack_of_fit_p is not None and fits.line.lack_of_fit_p < LACK_OF_FIT_ALPHA
        assert fits.chosen is None or fits.chosen.model != LINE
    assert found / trials >= 0.95
    fits = fit_models(*simulated(rng, shim_curve, SEED_N, blocks=10, noise=0.02))
    assert fits is not None and fits.line.intercept > 0.05  # the line's change at 0 is far from the truth, +0.5%
    # the change itself is a line in 1/N: the additive model describes the points, and reads the truth at 0
    assert fits.chosen is not None and fits.chosen.model == ADDITIVE
    assert fits.chosen.intercept_ci[0] <= math.log(1.005) <= fits.chosen.intercept_ci[1]
    assert fits.chosen.slope == pytest.approx(5.9, rel=0.05)


def test_points_from_the_line_warn_only_as_often_as_the_test_level() -> None:
    rng = np.random.default_rng(8)
    trials = 400
    warned = 0
    for _ in range(trials):
        fits = fit_models(*simulated(rng, lambda n: 0.015 + 0.4 / n, SEED_N, blocks=10, noise=0.02))
        assert fits is not None
        warned += not fits.line.fits
        if fits.line.fits:
            assert fits.chosen is fits.line  # the spec's line is preferred whenever it fits
    assert 0.02 <= warned / trials <= 0.09  # the F test's level is 5%


def test_the_model_chosen_is_the_one_that_fits_with_the_lowest_aic() -> None:
    rng = np.random.default_rng(4)
    log_linear = fit_models(*simulated(rng, lambda n: 0.3 - 0.05 * math.log(n), [1, 4, 16, 64, 256, 1024], 10, 0.003))
    assert log_linear is not None and not log_linear.line.fits
    assert log_linear.chosen is not None and log_linear.chosen.model == LOG
    assert log_linear.chosen.slope == pytest.approx(-0.05, abs=0.005)
    bent = fit_models(*simulated(rng, lambda n: 0.01 + 0.2 / n + 2.0 * max(1 / n - 0.05, 0), SEED_N, 10, 0.005))
    assert bent is not None and not bent.line.fits and bent.chosen is not None and bent.chosen.model == PIECEWISE
    assert bent.chosen.knot == 0.05 and bent.chosen.intercept == pytest.approx(0.01, abs=0.01)
    two_points = fit_models(*simulated(rng, shim_curve, [1, 100], 10, 0.02))
    assert two_points is not None and two_points.line.lack_of_fit_p is None and two_points.chosen is two_points.line


class ShimMachine:
    """Wall time = 1 s without N; 1.005 s x (1 + 5.9/N / 1.005) with N set (N = 0: never sampling,
    the no-op shim's +0.5%), with 1% noise: a cost added per sampled free, which bends in 1/N."""

    def __init__(self) -> None:
        self.rng = np.random.default_rng(6)

    def run(self, launch: Launch) -> Finished:
        n = launch.env.get("N")
        wall = 1.0 if n is None else 1.005 + (5.9 / int(n) if int(n) else 0.0)
        return Finished(exit_code=0, signal=None, timed_out=False, usage=usage(wall * math.exp(self.rng.normal(0, 0.01))))


def test_a_sweep_the_line_does_not_describe_says_so_in_every_format_and_reads_the_measured_point(tmp_path: Path) -> None:
    spec = spec_from_dict({
        "name": "shim", "workloads": WORKLOADS, "variants": [{"name": "none"}, {"name": "noop", "env": {"N": "0"}}],
        "blocks": 8, "sweep": {"fit": "reciprocal", "parameters": [{"field": "env.N", "values": SEED_N}]},
    })  # fmt: skip
    store = Store(str(tmp_path / "s.db"))
    clock = itertools.count(1000.0, 0.5)
    runner = Runner(store, executor=ShimMachine(), clock=lambda: next(clock), journal=FakeJournal(), host=HOST)  # type: ignore[arg-type]
    report = analyze(store.load(runner.run(Prepared.from_spec(spec)))).report()
    assert report.sweep is not None
    (fit,) = [f for f in report.sweep.fits if f.metric == "wall"]
    assert fit.lack_of_fit_p is not None and fit.lack_of_fit_p < LACK_OF_FIT_ALPHA and fit.model != LINE
    assert fit.measured_at_0 is not None and fit.measured_at_0.variant == "noop"
    assert fit.change_at_0_from == "measured (noop)" and fit.change_at_0 == fit.measured_at_0.change
    assert abs(fit.change_at_0 - 0.005) < 0.02 < fit.intercept  # the line's intercept is far off, the measured one is not
    validate(json.loads(report.to_json()))
    warning = next(w for w in report.warnings if "does not describe" in w)
    assert "cmd wall" not in warning and "t wall: the line in 1/env.N does not describe the points" in warning
    for fmt in ("table", "md", "html"):
        text = render(report, fmt)
        assert "does not describe the points" in text and "measured (noop)" in text or fmt == "html"
    page = render(report, "html")
    assert "no line drawn: the line does not describe the points (lack-of-fit p" in page
    assert "change at 0 read: +0.5% [" in page and "measured (noop)" in page


class StepMachine:
    """The line in 1/N holds for every sampling rate (+5% installed, 0.4 per unit of rate), but the
    shim installed with sampling off costs nothing: the line's change at 0 is not the measured one."""

    def __init__(self) -> None:
        self.rng = np.random.default_rng(9)

    def run(self, launch: Launch) -> Finished:
        n = int(launch.env.get("N", "-1"))
        wall = 1.0 if n <= 0 else 1.05 * math.exp(0.4 / n)
        return Finished(exit_code=0, signal=None, timed_out=False, usage=usage(wall * math.exp(self.rng.normal(0, 0.005))))


def test_a_line_that_fits_but_disagrees_with_the_point_measured_at_0_gives_way_to_it(tmp_path: Path) -> None:
    spec = spec_from_dict({
        "name": "step", "workloads": WORKLOADS, "variants": [{"name": "none"}, {"name": "off", "env": {"N": "0"}}],
        "blocks": 8, "sweep": {"fit": "reciprocal", "parameters": [{"field": "env.N", "values": [1, 2, 10, 100]}]},
    })  # fmt: skip
    store = Store(str(tmp_path / "s.db"))
    clock = itertools.count(1000.0, 0.5)
    runner = Runner(store, executor=StepMachine(), clock=lambda: next(clock), journal=FakeJournal(), host=HOST)  # type: ignore[arg-type]
    report = analyze(store.load(runner.run(Prepared.from_spec(spec)))).report()
    assert report.sweep is not None
    (fit,) = [f for f in report.sweep.fits if f.metric == "wall"]
    assert fit.line_fits and fit.model == LINE and fit.intercept is not None and abs(fit.intercept - 0.05) < 0.01
    assert fit.measured_agrees is False and fit.change_at_0_from == "measured (off)"
    assert fit.change_at_0 is not None and abs(fit.change_at_0) < 0.01
    # the point is compared and shown at its unadjusted 95%, as the line's intercept is, not at its row's level
    (off,) = [r for r in report.rows if r.variant == "off" and r.metric == "wall"]
    assert fit.measured_at_0 is not None and fit.measured_at_0.change_ci == off.change_ci95 != off.change_ci
    # a point without an interval cannot show the line agrees with it: the measured change is read
    line = fit_models(*simulated(np.random.default_rng(1), lambda n: 0.05 + 0.4 / n, [1, 2, 10, 100], 8, 0.005))
    assert line is not None and _agrees(line.line, off) is False
    assert _agrees(line.line, off.model_copy(update={"change_ci95": (None, None)})) is None
    unknown = lack_of_fit_warning(fit.model_copy(update={"measured_agrees": None}), "env.N")
    assert unknown is not None and "cannot be compared with" in unknown and "(off: " in unknown
    assert any(
        w.startswith("t wall: the line's change at 0 (+") and "disagrees with the one measured there (off: " in w
        for w in report.warnings
    ), report.warnings


def test_without_a_point_measured_at_0_the_model_that_fits_gives_the_change_at_0(tmp_path: Path) -> None:
    spec = spec_from_dict({
        "name": "shim", "workloads": WORKLOADS, "variants": [{"name": "none"}], "blocks": 8,
        "sweep": {"fit": "reciprocal", "parameters": [{"field": "env.N", "values": SEED_N}]},
    })  # fmt: skip
    store = Store(str(tmp_path / "s.db"))
    clock = itertools.count(1000.0, 0.5)
    runner = Runner(store, executor=ShimMachine(), clock=lambda: next(clock), journal=FakeJournal(), host=HOST)  # type: ignore[arg-type]
    report = analyze(store.load(runner.run(Prepared.from_spec(spec)))).report()
    assert report.sweep is not None
    (fit,) = [f for f in report.sweep.fits if f.metric == "wall"]
    assert not fit.line_fits and fit.measured_at_0 is None and fit.model == ADDITIVE
    assert fit.change_at_0_from == ADDITIVE and fit.change_at_0 is not None and abs(fit.change_at_0 - 0.005) < 0.01
    assert "the additive model fits" in render(report, "table")


def test_the_additive_model_recovers_a_cost_added_per_unit_of_rate_with_honest_intervals() -> None:
    rng = np.random.default_rng(21)
    a, s = 0.02, 3.0  # +2% installed, +300% more at rate 1, added to the time rather than multiplied
    trials = 200
    covered_a = covered_s = 0
    for _ in range(trials):
        fits = fit_models(*simulated(rng, lambda n: math.log(1 + a + s / n), SEED_N, blocks=10, noise=0.03))
        assert fits is not None
        (added,) = [m for m in fits.models if m.model == ADDITIVE]
        covered_a += added.intercept_ci[0] <= math.log1p(a) <= added.intercept_ci[1]
        covered_s += added.slope_ci[0] <= s <= added.slope_ci[1]
    assert 0.92 <= covered_a / trials <= 0.98 and 0.92 <= covered_s / trials <= 0.98


def test_many_fits_that_miss_their_points_read_as_one_line_per_workload() -> None:
    from benchlab.analysis.sweep import MAX_FIT_LINES, fit_warnings
    from benchlab.report_model import SweepFit

    def missed(workload: str, metric: str) -> SweepFit:
        return SweepFit(workload=workload, metric=metric, direction="lower", x="reciprocal", intercept=0.1,
                        intercept_ci=(0.05, 0.15), slope=1.0, slope_ci=(0.9, 1.1), n=30, blocks=3, lack_of_fit_p=0.001,
                        models=[{"model": "line", "intercept": 0.1, "intercept_ci": (0.05, 0.15), "slope": 1.0,
                                 "slope_ci": (0.9, 1.1), "parameters": 2, "aic": 0.0, "lack_of_fit_p": 0.001, "fits": False}],
                        model="none")  # fmt: skip

    few = [missed("w", f"m{i}") for i in range(MAX_FIT_LINES)]
    assert len(fit_warnings(few, "N")) == MAX_FIT_LINES
    many = [*few, missed("v", "wall")]
    lines = fit_warnings(many, "N")
    assert [line.split(":")[0] for line in lines] == ["w", "v"]
    assert "m0 (lack-of-fit p = 0.001), m1 " in lines[0] and lines[1].startswith("v: the line in 1/N does not describe")
