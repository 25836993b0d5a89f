"""CPU-suite scores end to end through the runner, with a fake executor that plays a
2-CPU machine: the arithmetic against the stored raw throughputs, and variants that
must move the right scores and only those."""

from __future__ import annotations

import csv
import io
import itertools
import json
import math
import random
import statistics
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy.stats import median_abs_deviation

from benchlab.analysis.analyze import analyze
from benchlab.errors import SpecError
from benchlab.measure.process import Finished, Launch, Usage
from benchlab.report import render
from benchlab.report_model import Report
from benchlab.runner import Prepared, Runner
from benchlab.spec.models import ExperimentSpec
from benchlab.spec.validate import spec_from_dict
from benchlab.store import Store
from benchlab.suite.baseline import load_baseline
from benchlab.suite.cpu import expand_spec
from benchlab.workloads.probe import PROBE_PROTOCOL, catalogue
from tests.unit.test_report_model import validate
from tests.unit.test_runner import HOST, FakeJournal

BASELINE = load_baseline()
MACHINE_CPUS = 2


def suite_spec(data: dict[str, Any]) -> ExperimentSpec:
    """A spec with a suite section, read as `benchlab run` reads one: the suite expands it first."""
    return spec_from_dict(expand_spec(data, "spec"))


class SuiteMachine:
    """Answers each probe run with Google Benchmark JSON: the baseline throughput x FAKE_SPEED,
    x the threads that get a CPU of their own in multi-core runs, with 1% seeded noise."""

    def __init__(self) -> None:
        self.noise = random.Random(7)

    def run(self, launch: Launch) -> Finished:
        argv = list(launch.argv)
        task = argv[1]
        option = dict(arg.split("=", 1) for arg in argv[2:] if arg.startswith("--") and "=" in arg)  # --threads=2
        cpus = len(launch.cpus) if launch.cpus else MACHINE_CPUS
        threads = int(option.get("--threads", "1")) or cpus
        speed = float(launch.env.get("FAKE_SPEED", "1")) * min(threads, cpus) * math.exp(self.noise.gauss(0, 0.01))
        doc = {
            "context": {
                "workload": task,
                "workload_version": catalogue()[task]["version"],
                "benchlab": {"protocol": PROBE_PROTOCOL},  # what every probe document carries
            },
            "benchmarks": [
                {
                    "name": task,
                    "run_type": "iteration",
                    "iterations": 4,
                    "threads": threads,
                    "real_time": 1e6,
                    "cpu_time": 1e6,
                    "time_unit": "ns",
                    "items_per_second": BASELINE.tasks[task].items_per_second * speed,
                    "benchlab": {"threads": {"unit": "threads", "direction": "none"}},
                }  # fmt: skip
            ],
        }
        usage = Usage(0.4, 0.4 * threads, 0.01, 20_000 * threads, 100, 0, 1, 1)
        return Finished(exit_code=0, signal=None, timed_out=False, usage=usage, stdout=json.dumps(doc).encode())


def run_suite(tmp_path: Path, variants: list[dict[str, Any]], blocks: int = 10, **suite: Any) -> dict[str, Any]:
    spec = suite_spec({"name": "s", "suite": {"name": "cpu", **suite}, "variants": variants, "blocks": blocks})
    tmp_path.mkdir(parents=True, exist_ok=True)
    store = Store(str(tmp_path / "s.db"))
    clock = itertools.count(1000.0, 0.5)
    runner = Runner(store, executor=SuiteMachine(), clock=lambda: next(clock), journal=FakeJournal(), host=HOST)  # type: ignore[arg-type]
    exp = runner.run(Prepared.from_spec(spec))
    report = json.loads(analyze(store.load(exp, every_record=True)).report().to_json())  # as `--format json` has it
    validate(report)
    assert report["runs"]  # every run's raw values, for the arithmetic to be recomputed from
    return report


def rows(report: dict[str, Any], **match: Any) -> list[dict[str, Any]]:
    return [r for r in report["scores"]["rows"] if all(r[k] == v for k, v in match.items())]


def test_scores_follow_the_published_arithmetic_from_the_stored_throughputs(tmp_path: Path) -> None:
    report = run_suite(tmp_path, [{"name": "base"}], shared=False)
    spec_workloads = {w["name"]: w for w in report["experiment"]["spec"]["workloads"]}
    raw: dict[str, list[float]] = {}
    for run in report["runs"]:
        raw.setdefault(run["workload"], []).append(run["metrics"]["items_per_second"])
    for name, values in raw.items():
        task = spec_workloads[name]["builtin"]
        mode = "single-core" if name.endswith(".single") else "multi-core"
        (row,) = rows(report, level="workload", name=task, mode=mode)
        assert row["score"] == pytest.approx(1000 * statistics.median(values) / BASELINE.tasks[task].items_per_second)
        assert row["score"] == pytest.approx(1000 * (1 if mode == "single-core" else MACHINE_CPUS), rel=0.02)
    for mode in ("single-core", "multi-core"):
        sections = {}
        for section in ("crypto", "integer", "floating_point"):
            scores = [r["score"] for r in rows(report, level="workload", mode=mode, section=section)]
            (row,) = rows(report, level="section", mode=mode, section=section)
            assert row["score"] == pytest.approx(math.exp(statistics.mean(map(math.log, scores))))
            sections[section] = row["score"]
        (overall,) = rows(report, level="overall", mode=mode)
        assert overall["score"] == pytest.approx(
            0.05 * sections["crypto"] + 0.65 * sections["integer"] + 0.30 * sections["floating_point"]
        )
        if mode == "multi-core":
            assert overall["scaling"] == pytest.approx(1.0, rel=0.02)  # 2 threads on 2 free CPUs: perfect
            assert overall["threads"] == MACHINE_CPUS
    (time,) = rows(report, level="suite", mode="suite wall time")
    assert time["score"] == pytest.approx(0.4 * len(spec_workloads))


def test_a_subset_gets_section_and_overall_scores_over_what_ran_labelled_with_their_spread(tmp_path: Path) -> None:
    """Two Integer workloads and one Floating Point, no Crypto: each section is the geometric mean
    of what ran, the overall the weighted mean with Crypto's 5% shared out (65/95, 30/95), every
    such row labelled with what it covers, and every score with its run-to-run spread."""
    report = run_suite(tmp_path, [{"name": "base"}], workloads=["html5", "sqlite", "nbody"], shared=False)
    per_block: dict[tuple[str, str], dict[int, float]] = {}
    for run in report["runs"]:
        task, mode = run["workload"].rsplit(".", 1)
        score = 1000 * run["metrics"]["items_per_second"] / BASELINE.tasks[task].items_per_second
        per_block.setdefault((task, mode), {})[run["block"]] = score
    for mode, suffix in (("single-core", "single"), ("multi-core", "multi")):
        html5, sqlite, nbody = (np.array(list(per_block[(f"cpu.{t}", suffix)].values())) for t in ("html5", "sqlite", "nbody"))
        (integer,) = rows(report, level="section", mode=mode, section="integer")
        (fp,) = rows(report, level="section", mode=mode, section="floating_point")
        assert not rows(report, level="section", mode=mode, section="crypto")
        assert integer["score"] == pytest.approx(math.sqrt(np.median(html5) * np.median(sqlite)))
        assert fp["score"] == pytest.approx(np.median(nbody))
        (overall,) = rows(report, level="overall", mode=mode)
        assert overall["score"] == pytest.approx((0.65 * integer["score"] + 0.30 * fp["score"]) / 0.95)
        assert integer["covers"] == f"2 of {BASELINE.in_section('integer')} workloads"
        assert overall["covers"] == f"3 of {len(BASELINE.tasks)} workloads"
        (row,) = rows(report, level="workload", mode=mode, name="cpu.nbody")
        assert row["spread"] == pytest.approx(median_abs_deviation(nbody, scale="normal") / np.median(nbody))
        assert 0.003 < row["spread"] < 0.03  # the fake machine's 1% noise
    version = report["experiment"]["workload_versions"]["cpu.html5.single"]  # a new suite never meets an old one
    assert version == f"probe:cpu.html5:{BASELINE.tasks['cpu.html5'].version}/suite{BASELINE.suite_version}"
    table = render(Report.model_validate(report), "table")
    (overall_line,) = [line for line in table.splitlines() if line.startswith("Overall")]
    assert f"3 of {len(BASELINE.tasks)}" in overall_line and " ±" in overall_line  # "ran" may wrap


def test_every_score_cell_shows_the_interval_its_legend_promises(tmp_path: Path) -> None:
    """A section's and the overall score's interval is of Geekbench's arithmetic on the workload
    medians (a bootstrap over blocks), so it holds the score shown beside it; each cell shows it."""
    report = run_suite(tmp_path, [{"name": "base"}], workloads=["html5", "sqlite", "nbody"], shared=False)
    for r in report["scores"]["rows"]:
        if r["level"] == "suite":
            continue
        lo, hi = r["score_ci"]
        assert lo is not None and lo <= r["score"] <= hi, r
        assert hi - lo < 0.05 * r["score"]  # the fake machine's 1% noise over 10 blocks
    table = render(Report.model_validate(report), "table")
    assert "95% interval: of a workload's median; of a section's or the overall score, by a bootstrap" in table
    for name in ("html5", "Integer", "Floating", "Overall"):
        (line,) = [line for line in table.splitlines() if line.startswith(name)]
        assert line.count("[") == 2 and " ±" in line, line  # single- and multi-core, each with its interval
    few = run_suite(tmp_path / "few", [{"name": "base"}], workloads=["nbody"], shared=False, blocks=3)
    assert all(r["score_ci"] == [None, None] for r in few["scores"]["rows"] if r["level"] != "suite")
    (overall,) = [line for line in render(Report.model_validate(few), "table").splitlines() if line.startswith("Overall")]
    assert overall.count("[n/a: 3 blocks]") == 2


def test_a_sweep_over_a_subset_fits_a_line_through_its_overall_scores(tmp_path: Path) -> None:
    spec = suite_spec({
        "name": "sub", "suite": {"name": "cpu", "workloads": ["html5", "sqlite"], "shared": False}, "blocks": 6,
        "variants": [{"name": "v"}],
        "sweep": {"parameters": [{"field": "env.FAKE_SPEED", "values": [1.0, 0.9, 0.8]}]},
    })  # fmt: skip
    store = Store(str(tmp_path / "s.db"))
    clock = itertools.count(1000.0, 0.5)
    runner = Runner(store, executor=SuiteMachine(), clock=lambda: next(clock), journal=FakeJournal(), host=HOST)  # type: ignore[arg-type]
    report = analyze(store.load(runner.run(Prepared.from_spec(spec)))).report()
    assert report.sweep is not None
    fits = {(f.workload, f.metric) for f in report.sweep.fits}
    assert {("Overall", "single-core"), ("Overall", "multi-core")} <= fits
    table = render(report, "table")
    assert f"overall scores (2 of {len(BASELINE.tasks)} workloads) along the sweep" in table
    assert "fit: log change" in table


def test_fewer_cpus_move_multi_core_scores_and_a_slowdown_moves_all(tmp_path: Path) -> None:
    report = run_suite(
        tmp_path,
        [{"name": "base"}, {"name": "one-cpu", "cpus": "0"}, {"name": "slow", "env": {"FAKE_SPEED": "0.8"}}],
        workloads=["aes_xts", "html5", "sqlite", "nbody", "ray_tracing"],
    )
    for r in rows(report, variant="one-cpu"):
        if r["level"] == "suite":
            continue
        if r["mode"] == "single-core":
            assert r["verdict"] in ("same", "unclear"), r
            assert abs(r["change"]) < 0.02, r
        else:  # multi-core and shared: one CPU instead of two halves the throughput
            assert r["verdict"] == "worse", r
            assert r["change_ci"][0] <= -0.5 <= r["change_ci"][1] or abs(r["change"] + 0.5) < 0.02, r
    for r in rows(report, variant="slow"):
        if r["level"] != "suite":
            assert r["verdict"] == "worse" and abs(r["change"] + 0.2) < 0.02, r
    assert {r["mode"] for r in rows(report, level="workload", name="cpu.sqlite")} == {"single-core", "multi-core"}
    assert {r["mode"] for r in rows(report, level="workload", name="cpu.ray_tracing")} == {"single-core", "multi-core", "shared"}
    assert any(f"5 of {len(BASELINE.tasks)} suite workloads ran" in w for w in report["warnings"])
    typed = Report.model_validate(report)
    lines = list(csv.DictReader(io.StringIO(render(typed, "csv"))))  # the scores view, as the table draws it
    assert len(lines) == len(report["scores"]["rows"]) and {"level", "score", "log_scale"} <= set(lines[0])
    assert "delta vs base" in render(typed, "table") and "delta vs base" not in render(typed, "table", "metrics")
    # the footer's levels are those of the rows shown: a score's among them
    top = max(r["change_ci_level"] for r in report["scores"]["rows"] if r.get("change_ci_level"))
    levels = " ".join(render(typed, "md").split()).split("corrected level (")[1].split(";")[0]
    assert levels.endswith(f"{top:.1%}"), levels


def test_suite_in_a_spec_expands_to_plain_builtin_workloads() -> None:
    spec = suite_spec({"name": "s", "suite": "cpu", "variants": [{"name": "a"}]})
    names = [w.name for w in spec.workloads]
    shared = [t for t in BASELINE.tasks.values() if "shared" in t.modes]
    assert len(names) == 2 * len(BASELINE.tasks) + len(shared) == len(set(names))
    single = spec.workload("cpu.aes_xts.single")
    assert single.builtin == "cpu.aes_xts" and single.options == {"threads": 1} and single.perf_counters
    assert spec.workload("cpu.aes_xts.shared").options == {"threads": 0, "mode": "shared"}
    again = spec_from_dict(spec.model_dump(mode="json"))  # the stored form validates to the same spec
    assert again == spec


def test_rounds_scale_each_tasks_default_and_iterations_override_them() -> None:
    half = suite_spec({"name": "s", "suite": {"name": "cpu", "rounds": 0.5}, "variants": [{"name": "a"}]})
    for task in BASELINE.tasks.values():
        assert half.workload(f"{task.name}.single").options["iterations"] == max(1, round(task.iterations / 2))
    assert BASELINE.tasks["cpu.aes_xts"].iterations == catalogue()["cpu.aes_xts"]["iterations"]
    fixed = suite_spec({"name": "s", "suite": {"name": "cpu", "rounds": 0.5, "iterations": 3}, "variants": [{"name": "a"}]})
    assert {w.options["iterations"] for w in fixed.workloads} == {3}


@pytest.mark.parametrize(
    ("suite", "message"),
    [
        ({"name": "cpu", "workloads": ["nope"]}, "spec: suite.workloads[0]: the CPU suite has no workload 'nope'"),
        ({"name": "cpu", "threads": -1}, "spec: suite.threads:"),
        ({"name": "gpu"}, "spec: suite.name:"),
        ({"name": "cpu", "single_core": False, "multi_core": False, "shared": False}, "runs nothing"),
        ({"name": "cpu", "colour": 1}, "spec: suite.colour: unknown key"),
    ],
)
def test_a_bad_suite_is_refused_naming_its_place(suite: dict[str, Any], message: str) -> None:
    with pytest.raises(SpecError) as caught:
        suite_spec({"name": "s", "suite": suite, "variants": [{"name": "a"}]})
    assert message in str(caught.value)
