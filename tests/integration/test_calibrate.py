"""`benchlab calibrate` against the real binary: A/A batches stored per host and workload
version, and shown beside later verdicts of that workload."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import cli

pytestmark = pytest.mark.serial  # measures an A/A spread


def test_calibrate_stores_spread_and_false_verdicts_and_reports_show_them(tmp_path: Path) -> None:
    db = str(tmp_path / "c.db")
    done = cli("calibrate", "--cmd", "sleep 0.01", "-n", "4", "--experiments", "3", "--db", db)
    assert done.returncode == 0, done.stderr
    line = next(x for x in done.stdout.splitlines() if x.startswith("cmd:"))
    assert "of wall run to run" in line and "of 3 with a false verdict" in line
    assert "experiments with any better/worse row:" in done.stdout
    report = cli("compare", "--cmd", "sleep 0.01", "-V", "a", "-V", "b", "-n", "3", "--db", db, "--format", "json")
    calibration = json.loads(report.stdout)["experiment"]["calibration"]["cmd"]
    assert calibration["experiments"] == 3 and calibration["blocks"] == 4 and 0 < calibration["spread"] < 0.5
    table = cli("report", json.loads(report.stdout)["experiment"]["name"], "--db", db)
    assert "this host: cmd spread" in table.stdout and "A/A" in table.stdout
    other = cli("compare", "--cmd", "sleep 0.02", "-V", "a", "-V", "b", "-n", "3", "--db", db, "--format", "json")
    assert json.loads(other.stdout)["experiment"]["calibration"] == {}  # another command: not calibrated


def test_calibrate_refuses_bad_input_in_one_line(tmp_path: Path) -> None:
    done = cli("calibrate", "--cmd", "sleep 0.01", "--experiments", "0", "--db", str(tmp_path / "c.db"))
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "--experiments" in done.stderr
    missing = cli("calibrate", "--cmd", "no-such-program-here", "--db", str(tmp_path / "c.db"))
    assert missing.returncode == 2 and "not on PATH" in missing.stderr


def test_until_decided_flags_are_checked(tmp_path: Path) -> None:
    db = str(tmp_path / "u.db")
    done = cli("compare", "--cmd", "true", "-V", "a", "-V", "b", "--max-blocks", "9", "--db", db)
    assert done.returncode == 2 and "--until-decided" in done.stderr
    bad = cli(
        "compare", "--cmd", "true", "-V", "a", "-V", "b", "--until-decided", "--min-blocks", "9", "--max-blocks", "5", "--db", db
    )
    assert bad.returncode == 2 and "max_blocks" in bad.stderr and bad.stderr.count("\n") == 1
