"""The `background` variant field: a load beside every run, gone after it."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import BENCHLAB, cli

pytestmark = pytest.mark.serial  # measures a load's effect on wall time

SPEC = """
name = "{name}"
blocks = {blocks}
[[workloads]]
name = "spin"
builtin = "alloc.churn"
options = {{ threads = 1, ops = {ops} }}
[[variants]]
name = "quiet"
cpus = 0
[[variants]]
name = "loaded"
cpus = 0
background = {background}
"""


def run(tmp_path: Path, name: str, background: str, blocks: int = 3, ops: int = 300000) -> subprocess.CompletedProcess[str]:
    spec = tmp_path / f"{name}.toml"
    spec.write_text(SPEC.format(name=name, blocks=blocks, background=background, ops=ops))
    return cli("run", str(spec), "--format", "json", timeout=300)


def test_a_load_on_the_runs_cpu_makes_its_wall_time_worse(tmp_path: Path) -> None:
    # a busy loop pinned to the CPU the variant's runs are pinned to: they get about half of it.
    # Runs of ~0.3 s over 5 blocks, so that a noisy machine's stalls (one 3-block CI run once read
    # +14% with pair ratios from 0.1 to 15) cannot hide a doubling in the median.
    load = json.dumps(["taskset", "-c", "0", "sh", "-c", "while :; do :; done"])
    proc = run(tmp_path, "load", load, blocks=5, ops=1_200_000)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    (wall,) = [r for r in out["rows"] if r["metric"] == "wall"]
    walls = [(r["variant"], r["metrics"]["wall"]) for r in out["runs"]]
    assert wall["change"] > 0.4, (wall, walls)  # near +100% when the two share the CPU fairly
    leftovers = subprocess.run(["pgrep", "-f", "while :; do :; done"], capture_output=True, text=True)
    assert leftovers.stdout == ""  # the load went with the run


def test_a_load_that_stops_early_fails_the_run_and_its_children_are_killed(tmp_path: Path) -> None:
    proc = run(tmp_path, "early", json.dumps("true"), blocks=2)
    assert proc.returncode == 5, proc.stderr  # runs failed: the report first, then exit 5
    failed = json.loads(proc.stdout)["failed_runs"]
    assert failed and all(
        "the background load `" in r["message"] and "ended (exit 0) before the run did" in r["message"] for r in failed
    )
    proc = run(tmp_path, "tree", json.dumps(["sh", "-c", "sleep 987654 & sleep 987655"]), blocks=2)
    assert proc.returncode == 0, proc.stderr
    assert subprocess.run(["pgrep", "-f", "sleep 98765"], capture_output=True, text=True).stdout == ""


def test_background_in_the_quick_form_and_a_missing_program() -> None:
    ok = cli("compare", "--cmd", "true", "-V", "a", "-V", "b: background='sleep 60'", "-n", "2", "--format", "json", check=True)
    assert {r["status"] for r in json.loads(ok.stdout)["runs"]} == {"ok"}
    bad = cli("compare", "--cmd", "true", "-V", "a", "-V", "b: background=no-such-load", "-n", "2")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "no-such-load" in bad.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="drops CAP_SYS_NICE with setpriv")
def test_a_probe_note_reaches_the_experiments_output() -> None:
    no_rt = ["setpriv", "--bounding-set", "-sys_nice", "--inh-caps", "-sys_nice"]
    argv = [*no_rt, BENCHLAB, "compare", "-w", "ipc.pipe.latency iterations=100", "-V", "a", "-V", "b", "-n", "2"]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("the SCHED_FIFO half was skipped: no real-time privilege") == 1  # said once, not per run
