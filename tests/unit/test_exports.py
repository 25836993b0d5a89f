"""What peers read: hyperfine's JSON (checked against what each of hyperfine's scripts reads),
Google Benchmark JSON, and the DataFrame of every run, all from a store of known runs."""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from benchlab import results
from benchlab.analysis.analyze import analyze
from benchlab.errors import SpecError, StoreError
from benchlab.measure.process import Finished, Launch
from benchlab.report import check_format, needs_runs, render
from benchlab.report_model import Report
from benchlab.store import Store
from tests.unit.test_runner import FakeExecutor, runner, spec, usage

# Which fields of a result each script in hyperfine's scripts/ folder reads (hyperfine 1.19,
# scripts/*.py at commit 327d5f4): the contract the hyperfine format is held to.
HYPERFINE_SCRIPTS = {
    "plot_whisker.py": ("command", "times", "median"),
    "plot_histogram.py": ("command", "times"),
    "plot_progression.py": ("command", "times"),
    "advanced_statistics.py": ("command", "times"),
    "welch_ttest.py": ("command", "times"),
    "plot_benchmark_comparison.py": ("command", "mean"),
    "plot_parametrized.py": ("parameters", "mean", "stddev"),
}
HOSTILE = "evil\x1b[31m</td>\u202e|*"


class DriftingExecutor(FakeExecutor):
    """FakeExecutor's walls, each launch 1% longer than the one before: run order shows in the values."""

    def run(self, launch: Launch) -> Finished:
        finished = super().run(launch)
        if finished.exit_code != 0:
            return finished
        wall = self.wall(launch) * (1 + 0.01 * len(self.launches))
        return Finished(exit_code=0, signal=None, timed_out=False, usage=usage(wall))


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    """Variants a, b (10% slower) and 'bad', whose runs all fail; one warm-up round; experiment
    'swept' sweeps FAKE_WALL over three values."""
    store = Store(str(tmp_path_factory.mktemp("exports") / "r.db"))
    variants = [
        {"name": "a", "env": {"FAKE_WALL": "1.0"}},
        {"name": "b", "env": {"FAKE_WALL": "1.1"}},
        {"name": "bad", "env": {"FAKE_FAIL": "1"}},
    ]
    runner(store, DriftingExecutor()).run(spec(variants=variants, warmup=1, blocks=4))
    sweep = {"parameters": [{"field": "env.FAKE_WALL", "values": [1.0, 2.0, 4.0]}], "fit": "value"}
    runner(store, DriftingExecutor()).run(spec(name="swept", variants=[], sweep=sweep, blocks=3))
    return store


def report_of(store: Store, name: str = "fake") -> Report:
    return analyze(store.load(store.require_experiment(name), every_record=True)).report()


@pytest.fixture(scope="module")
def report(store: Store) -> Report:
    return report_of(store)


def hyperfine(report: Report) -> list[dict[str, Any]]:
    results_: list[dict[str, Any]] = json.loads(render(report, "hyperfine"))["results"]
    return results_


def test_hyperfine_results_are_the_timed_successful_runs_in_the_order_they_ran(store: Store, report: Report) -> None:
    runs = results.load(store.engine.url.database, "fake")
    found = {r["command"]: r for r in hyperfine(report)}
    assert list(found) == ["a: t", "b: t"]  # no result for 'bad': it has no timed run
    for variant in ("a", "b"):
        walls = runs[(runs.variant == variant) & ~runs.warmup].wall.tolist()
        result = found[f"{variant}: t"]
        assert len(walls) == 4 and result["times"] == walls  # the warm-up left out, the order kept
        assert result["exit_codes"] == [0, 0, 0, 0]
        assert result["mean"] == pytest.approx(statistics.fmean(walls))
        assert result["median"] == pytest.approx(statistics.median(walls))
        assert result["stddev"] == pytest.approx(statistics.stdev(walls))
        assert (result["min"], result["max"]) == (min(walls), max(walls))
        assert result["user"] == pytest.approx(statistics.fmean(walls) / 2)  # FakeExecutor: user = wall / 2
        assert result["system"] == pytest.approx(statistics.fmean(walls) / 10)
        assert result["memory_usage_byte"] == [1000 * 1024] * 4  # max_rss 1000 KiB
        assert "parameters" not in result  # not a sweep: hyperfine leaves the key out too


def test_every_field_each_hyperfine_script_reads_is_there_with_its_type(store: Store, report: Report) -> None:
    swept = hyperfine(report_of(store, "swept"))
    for script, fields in HYPERFINE_SCRIPTS.items():
        for result in [*hyperfine(report), *swept] if "parameters" not in fields else swept:
            for field in fields:
                assert field in result, f"{script} reads {field}"
            assert isinstance(result.get("command", ""), str)
            assert all(isinstance(t, float) and math.isfinite(t) for t in result.get("times", [0.0]))
    # plot_parametrized.py: exactly one parameter per result, its value readable by float()
    assert [{k: float(v) for k, v in r["parameters"].items()} for r in swept] == [
        {"env.FAKE_WALL": 1.0},
        {"env.FAKE_WALL": 2.0},
        {"env.FAKE_WALL": 4.0},
    ]


def test_hostile_names_are_escaped_json_that_reads_back_as_they_were(report: Report) -> None:
    """A name from another machine's bundle (a spec refuses such names) stays one JSON string."""
    renamed = [{**run, "variant": HOSTILE if run["variant"] == "b" else run["variant"]} for run in report.runs]
    hostile = report.with_runs(renamed).model_copy(update={"variants": ["a", HOSTILE, "bad"]})
    assert f"{HOSTILE}: t" in [r["command"] for r in hyperfine(hostile)]
    for fmt in ("hyperfine", "gbench"):
        text = render(hostile, fmt)
        assert text.isascii() and "\x1b" not in text and "\u202e" not in text
        doc = json.loads(text)
        names = [r["command"] for r in doc["results"]] if fmt == "hyperfine" else [e["name"] for e in doc["benchmarks"]]
        assert any(HOSTILE in name for name in names)


def test_gbench_has_a_repetition_per_run_and_aggregates_per_variant(store: Store, report: Report) -> None:
    doc = json.loads(render(report, "gbench"))
    assert doc["context"]["host_name"] == "fake" and doc["context"]["experiment"] == "fake"
    runs = results.load(store.engine.url.database, "fake")
    walls = runs[(runs.variant == "b") & ~runs.warmup].wall.tolist()
    entries = [e for e in doc["benchmarks"] if e["run_name"] == "t/variant:b"]
    repetitions = [e for e in entries if e["run_type"] == "iteration"]
    assert [e["real_time"] for e in repetitions] == pytest.approx([w * 1e9 for w in walls])  # a command: its wall time
    assert [e["repetition_index"] for e in repetitions] == [0, 1, 2, 3]
    assert {e["time_unit"] for e in entries} == {"ns"}
    assert repetitions[0]["cpu_time"] == pytest.approx(walls[0] * 0.6e9)  # user + sys
    aggregates = {e["aggregate_name"]: e for e in entries if e["run_type"] == "aggregate"}
    assert aggregates["mean"]["real_time"] == pytest.approx(statistics.fmean(walls) * 1e9)
    assert aggregates["median"]["real_time"] == pytest.approx(statistics.median(walls) * 1e9)
    assert aggregates["stddev"]["real_time"] == pytest.approx(statistics.stdev(walls) * 1e9)
    assert aggregates["mean"]["name"] == "t/variant:b_mean"
    assert not [e for e in doc["benchmarks"] if "bad" in e["name"]]


def test_formats_that_hold_every_run_ask_for_it_and_take_no_other_view() -> None:
    assert needs_runs("table", "hyperfine") and needs_runs("gbench") and needs_runs("json")
    assert not needs_runs("table", "md", "csv")
    for fmt in ("json", "hyperfine", "gbench"):
        with pytest.raises(SpecError, match="no 'times' view"):
            check_format(fmt, "times")


def test_the_runs_frame_has_a_row_per_run_failed_and_warm_up_ones_included(store: Store, tmp_path: Path) -> None:
    runs = results.load(Path(store.engine.url.database or ""), "fake")
    assert len(runs) == 3 * 5  # 3 variants x (1 warm-up + 4 blocks)
    assert list(runs.columns[: len(results.RUN_COLUMNS)]) == results.RUN_COLUMNS
    assert runs.warmup.sum() == 3 and set(runs.hostname) == {"fake"}
    bad = runs[runs.variant == "bad"]
    assert set(bad.status) == {"failed"} and bad.wall.isna().all() and set(bad.exit_code) == {3}
    ok = runs[runs.status == "ok"]
    assert ok.wall.notna().all() and ok.user.tolist() == pytest.approx((ok.wall / 2).tolist())
    assert isinstance(runs.started_at.dtype, pd.DatetimeTZDtype)
    assert runs.attrs["units"]["t"]["wall"] == "s" and runs.attrs["directions"]["t"]["wall"] == "lower"
    long = runs.melt(id_vars=results.RUN_COLUMNS, var_name="metric").dropna(subset=["value"])
    assert len(long[long.metric == "wall"]) == len(ok)
    with pytest.raises(SpecError, match="no experiment named 'nope'"):
        results.load(store.engine.url.database, "nope")
    with pytest.raises(StoreError, match="no results database"):
        results.load(tmp_path / "missing.db", "fake")
    assert not (tmp_path / "missing.db").exists()


def test_run_compare_score_and_report_each_take_every_export_once_or_more() -> None:
    import argparse

    from benchlab.cli import parser
    from benchlab.cli.options import EXPORTS
    from benchlab.cli.parser import walk

    commands = dict(walk(parser()))
    for name in ("run", "compare", "score", "report"):
        options = {opt: action for action in commands[name]._actions for opt in action.option_strings}
        for export in EXPORTS:
            action = options[f"--export-{export}"]
            assert isinstance(action, argparse._AppendAction) and action.metavar == "FILE", (name, export)
