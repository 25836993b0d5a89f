"""The audit's wrong exit codes and messages: each refused up front in one line (exit 2), or
counted and shown as it is."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import cli
from tests.hostile.conftest import refused


def test_an_emoji_code_in_an_error_line_prints_as_typed() -> None:
    cli("compare", "--cmd", "true", "-V", "a", "-n", "2", "--name", "there", check=True)
    proc = cli("report", "x:smile:y")
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode != 0 and len(lines) == 1 and "x:smile:y" in lines[0], proc.stderr
    assert all(ord(c) < 0x2000 for c in lines[0]), lines[0]  # no 😄


@pytest.mark.parametrize("blocks", ["3.0", " 3", "+3", "1_0", "\u0663", "3 ", "0x3"])
def test_a_count_is_never_coerced(blocks: str) -> None:
    """A spec's `blocks = "3"` is refused; `-n 1_0` ran 10 blocks and `-n 3.0` ran 3."""
    refused("compare", "--cmd", "true", "-V", "a", "-n", blocks, mentions="not a whole number")
    assert not Path(os.environ["BENCHLAB_DB"]).exists()


@pytest.mark.parametrize(
    "flag", [["--consumer-timeout", "5"], ["--broker", "amqp://u:p@localhost/v"], ["--key", "/dev/null"], ["--broker-ca", "/x"]]
)
def test_a_fleet_option_without_fleet_is_refused_not_ignored(tmp_path: Path, flag: list[str]) -> None:
    spec = tmp_path / "s.toml"
    spec.write_text('name = "f"\n[[workloads]]\nname = "w"\ncommand = "true"\n[[variants]]\nname = "a"\n')
    refused("run", str(spec), *flag, mentions=flag[0])
    assert not Path(os.environ["BENCHLAB_DB"]).exists()


@pytest.mark.parametrize("argument", ["x" * 300, "ex:" + "v" * 300, "folder/" + "f" * 256, "a/" * 2100])
def test_a_diff_argument_longer_than_any_file_name_is_one_line(argument: str) -> None:
    refused("diff", argument, "other", mentions="longer than any file name")


def test_failed_benchmarks_of_a_failed_run_are_not_counted_against_the_runs_that_succeeded(tmp_path: Path) -> None:
    """A bundle whose failed run carries failed benchmarks made JSON say "failed 4, runs 3" and HTML "4 of 3"."""
    cli("compare", "--cmd", "true", "-V", "a", "-V", "b", "-n", "2", "--name", "gb", check=True)
    bundle = tmp_path / "gb.json"
    cli("export", "gb", "-o", str(bundle), check=True)
    data = json.loads(bundle.read_text())
    runs = [r for r in data["runs"] if not r["warmup"]]
    assert len(runs) == 4
    for run in runs:
        run["details"]["failed_benchmarks"] = {"BM_x": "boom"}
    runs[0].update(status="failed", exit_code=1, metrics=[], message="exit code 1")
    bundle.write_text(json.dumps(data))
    Path(os.environ["BENCHLAB_DB"]).unlink()
    cli("import", str(bundle), check=True)
    report = json.loads(cli("report", "gb", "--format", "json").stdout)
    (entry,) = report["failed_benchmarks"]
    assert (entry["failed"], entry["runs"]) == (3, 3), entry
    page = tmp_path / "gb.html"
    cli("report", "gb", "--format", "html", "-o", str(page))
    assert "3 of 3" in page.read_text() and "4 of 3" not in page.read_text()
