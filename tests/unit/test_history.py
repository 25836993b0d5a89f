"""`benchlab history`: series of experiments over time, and the change points found in them."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from benchlab.analysis.changepoints import Settings
from benchlab.analysis.history import Selection, history
from benchlab.metrics import Metric
from benchlab.report.history_grid import MARK, spark
from benchlab.store import NewRun, Store
from tests.conftest import cli, experiment_rows

DAY = 86_400.0
RUNS = 8


def nightly(
    db: Path,
    levels: Sequence[float],
    *,
    prefix: str = "nightly-",
    variants: Sequence[str] = ("base",),
    versions: Sequence[str] | None = None,
    seed: int = 1,
    runs: int = RUNS,
) -> Store:
    """One experiment a day (`prefix` and its number), `runs` runs of workload `w` per variant whose
    wall time is the day's level with 1% noise (the second variant 10% slower throughout), and a
    `sys` metric that stays flat."""
    store = Store(str(db))
    host = store.host_id({"hostname": "lab"})
    rng = np.random.default_rng(seed)
    for day, level in enumerate(levels):
        name = f"{prefix}{day:02d}"
        spec = {"name": name, "workloads": [{"name": "w", "command": ["true"]}], "variants": [{"name": v} for v in variants]}
        version = versions[day] if versions else "v1"
        exp = store.create_experiment(**experiment_rows(spec, version), created_at=1_800_000_000 + day * DAY)
        for block in range(runs):
            for position, variant in enumerate(variants):
                wall = level * (1 + 0.1 * position) * (1 + rng.normal(0, 0.01))
                store.record_run(exp, NewRun(host_id=host, workload="w", variant=variant, block=block, warmup=False, position=block * len(variants) + position, status="ok", started_at=1.0, ended_at=2.0, metrics=[Metric("wall", wall, "s", "lower"), Metric("sys", 0.01 * (1 + rng.normal(0, 0.01)), "s", "lower")]))  # fmt: skip
    return store


def as_json(*args: str) -> dict:
    done = cli("history", *args, "--format", "json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def series_of(result: dict, metric: str = "wall", variant: str = "base") -> dict:
    return next(s for s in result["series"] if s["metric"] == metric and s["variant"] == variant)


def test_a_step_after_the_fifth_experiment_is_found_there_with_its_sign_and_size(tmp_path: Path) -> None:
    nightly(tmp_path / "results.db", [1.0] * 5 + [1.2] * 5)
    result = as_json()
    wall = series_of(result)
    assert [p["experiment"] for p in wall["points"]] == [f"nightly-{d:02d}" for d in range(10)]
    assert all(p["runs"] == RUNS for p in wall["points"])
    (change,) = wall["change_points"]
    assert (change["index"], change["before"], change["after"]) == (5, "nightly-04", "nightly-05")
    assert (change["points_before"], change["points_after"], change["runs_before"]) == (5, 5, 5 * RUNS)
    assert change["change_ci"][0] < 0.2 < change["change_ci"][1] and abs(change["change"] - 0.2) < 0.01
    assert change["before_median"] == pytest.approx(1.0, rel=0.01) and change["after_median"] == pytest.approx(1.2, rel=0.01)
    assert series_of(result, "sys")["change_points"] == []  # the flat metric beside it


def test_a_step_down_is_a_negative_change_and_reads_as_better(tmp_path: Path) -> None:
    nightly(tmp_path / "results.db", [1.0] * 6 + [0.8] * 4)
    (change,) = series_of(as_json())["change_points"]
    assert change["index"] == 6 and change["change"] == pytest.approx(-0.2, abs=0.01) and change["change_ci"][1] < 0
    shown = cli("history", "--metric", "wall").stdout
    (row,) = [line for line in shown.splitlines() if "nightly-05 -> nightly-06" in line]
    assert "better" in row and "-20." in row


def test_a_flat_history_has_no_change_point(tmp_path: Path) -> None:
    store = nightly(tmp_path / "h.db", [1.0] * 12, variants=("base", "slow"))
    result = history(store, Selection(), Settings())
    assert len(result.series) == 4  # wall and sys of two variants
    assert all(s.change_points == [] and len(s.points) == 12 for s in result.series)


def test_the_table_marks_the_change_and_fits_100_columns(tmp_path: Path) -> None:
    nightly(tmp_path / "results.db", [1.0] * 5 + [1.2] * 5, variants=("base", "slow"))
    done = cli("history", "--points")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert max(len(line) for line in lines) <= 100
    assert "change points" in done.stdout and "nightly-04 -> nightly-05" in done.stdout
    assert f"▁▁▁▁▁{MARK}█████" in done.stdout  # the series line of wall, the change marked where it is
    point_rows = [line for line in lines if line.startswith("nightly-05") and "worse" in line]
    assert len(point_rows) == 2 and all("+19." in line or "+20." in line for line in point_rows)  # both variants' wall


def test_filters_and_the_pattern_pick_series_and_experiments(tmp_path: Path) -> None:
    store = nightly(tmp_path / "h.db", [1.0] * 4, variants=("base", "slow"))
    nightly(tmp_path / "h.db", [2.0] * 3, prefix="weekly-")
    picked = history(store, Selection(experiments="nightly-*", metric="w*", variant="s*"), Settings())
    assert [(s.metric, s.variant) for s in picked.series] == [("wall", "slow")]
    assert picked.experiments == [f"nightly-{d:02d}" for d in range(4)]
    weekly = history(store, Selection(experiments="weekly-0[12]"), Settings())
    assert weekly.experiments == ["weekly-01", "weekly-02"] and {len(s.points) for s in weekly.series} == {2}


def test_segments_of_thousands_of_runs_are_sized(tmp_path: Path) -> None:
    """The size comes from every run either side (here 900 a side), never from a test whose
    smallest p underflows at such counts."""
    store = nightly(tmp_path / "h.db", [1.0] * 3 + [1.1] * 3, runs=300)
    (wall,) = history(store, Selection(metric="wall"), Settings()).series
    (change,) = wall.change_points
    assert (change.runs_before, change.runs_after) == (900, 900)
    assert change.change_ci[0] < 0.1 < change.change_ci[1] and change.change_ci[1] - change.change_ci[0] < 0.01


def test_experiments_without_a_successful_run_show_no_series(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "h.db"))
    store.create_experiment(
        **experiment_rows({"name": "empty", "workloads": [{"name": "w", "command": ["true"]}], "variants": [{"name": "a"}]})
    )
    result = history(store, Selection(), Settings())
    assert result.series == [] and result.experiments == ["empty"] and "no successful run" in result.warnings[0]


def test_a_new_workload_version_starts_a_new_series(tmp_path: Path) -> None:
    store = nightly(tmp_path / "h.db", [1.0] * 3 + [1.5] * 3, versions=["v1"] * 3 + ["v2"] * 3)
    walls = [s for s in history(store, Selection(metric="wall"), Settings()).series]
    assert [(s.version, len(s.points), s.change_points) for s in walls] == [("v1", 3, []), ("v2", 3, [])]


def test_hostile_names_are_escaped_in_the_table_and_the_json(tmp_path: Path) -> None:
    """Names another program wrote: a metric's (an experiment's or a variant's is refused against
    the stored spec, see tests/hostile/test_database.py)."""
    hostile = "[bold red]x\x1b]0;owned\x07\u202e"
    nightly(tmp_path / "results.db", [1.0] * 3 + [1.3] * 3)
    with contextlib.closing(sqlite3.connect(tmp_path / "results.db")) as conn:
        conn.execute("UPDATE metric_name SET name = ? WHERE name = 'wall'", (f"{hostile}v",))
        conn.commit()
    done = cli("history", "--points")
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout and "\x07" not in done.stdout and "\u202e" not in done.stdout
    assert "[bold red]x\\x1b]0;owned\\x07\\u202e" in done.stdout  # markup printed as typed, controls visible
    raw = cli("history", "--format", "json").stdout
    assert "\x1b" not in raw and "\\u001b" in raw
    assert f"{hostile}v" in {series["metric"] for series in json.loads(raw)["series"]}


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        (["--max-pvalue", "1.5"], 2, "--max-pvalue: must be above 0 and below 1"),
        (["--min-change", "-0.1"], 2, "--min-change: must be a fraction of 0 or more"),
        (["--window", "1"], 2, "--window: must be 2 points or more"),
        (["--format", "md"], 2, "unknown history format 'md'"),
        (["--workload", "nope*"], 2, "--workload: no stored workload matches 'nope*' (stored: w)"),
        (["--variant", "nope"], 2, "--variant: no stored variant matches 'nope' (stored: base)"),
        (["nope-*"], 2, "matches 'nope-*'"),
    ],
)
def test_bad_input_is_one_line(tmp_path: Path, args: list[str], code: int, says: str) -> None:
    nightly(tmp_path / "results.db", [1.0] * 3)
    done = cli("history", *args)
    assert done.returncode == code and done.stdout == ""
    assert len(done.stderr.splitlines()) == 1 and says in done.stderr, done.stderr


def test_no_database_is_refused_without_making_one(tmp_path: Path) -> None:
    done = cli("history", "--db", str(tmp_path / "none.db"))
    assert done.returncode == 4 and not (tmp_path / "none.db").exists()


def test_the_line_of_bars_spans_lowest_to_highest_and_thins_long_series() -> None:
    assert spark([1.0, 2.0, 3.0], []) == "▁▅█"
    assert spark([5.0] * 4, []) == "▅▅▅▅"
    assert spark([1.0] * 48 + [2.0] * 48, [48]) == f"{'▁' * 12}{MARK}{'█' * 12}"


def test_otava_loads_only_when_a_history_is_asked_for(tmp_path: Path) -> None:
    """Otava costs about a second to import: the command line, and a report, must not pay for it."""
    nightly(tmp_path / "h.db", [1.0] * 3)
    code = (
        "import sys; from benchlab.cli import parser; parser(); from benchlab.analysis.analyze import analyze; "
        "from benchlab.store import Store; s = Store(sys.argv[1]); analyze(s.load(s.require_experiment('nightly-00'))); "
        "print('otava' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "h.db")], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
