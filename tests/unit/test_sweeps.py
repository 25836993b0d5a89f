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

from benchlab.errors import SpecError
from benchlab.measure.process import Finished, Launch
from benchlab.report import render
from benchlab.runner import Prepared, Runner
from benchlab.spec import spec_from_dict
from benchlab.stats.analysis import analyze
from benchlab.stats.fit import fit_line
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


def synthetic(rng: np.random.Generator, a: float, s: float, xs: list[float], blocks: int, noise: float) -> tuple[np.ndarray, ...]:
    keys, swept, x, y = [], [], [], []
    for b in range(blocks):
        drift = rng.normal(0, 0.2)  # block effects far larger than the noise: the fit must absorb them
        for flag, value in [(0.0, 0.0), *((1.0, v) for v in xs)]:
            keys.append(b)
            swept.append(flag)
            x.append(value)
            y.append(3.0 + drift + flag * a + s * value + rng.normal(0, noise))
    return tuple(map(np.asarray, (keys, swept, x, y)))


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
