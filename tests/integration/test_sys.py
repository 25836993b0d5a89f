"""System-level workloads: process spawn under a large address space."""

from __future__ import annotations

import json
import subprocess

from benchlab.locate import probe_path
from tests.conftest import cli


def spawn(*args: str) -> dict[str, dict]:
    out = subprocess.run(
        [probe_path(), "sys.spawn", *args, "--format", "json"], capture_output=True, text=True, check=True
    ).stdout
    return {e["name"].rsplit("/", 1)[1]: e for e in json.loads(out)["benchmarks"]}


def test_every_method_spawns_and_reports_its_distribution() -> None:
    entries = spawn("--address-space", "16m", "--spawns", "60", "--parallel", "2")
    assert list(entries) == ["fork", "vfork", "posix_spawn"]
    for e in entries.values():
        assert e["iterations"] == 60 and e["threads"] == 2
        assert 0 < e["p50"] <= e["p90"] <= e["p99"]
        assert abs(e["items_per_second"] * e["real_time"] / 1e9 - 1) < 1e-9


def test_a_larger_address_space_slows_fork_but_not_posix_spawn() -> None:
    small = spawn("--address-space", "0", "--spawns", "40", "--methods", "fork,posix_spawn")
    large = spawn("--address-space", "256m", "--spawns", "40", "--methods", "fork,posix_spawn")
    fork_ratio = large["fork"]["p50"] / small["fork"]["p50"]
    spawn_ratio = large["posix_spawn"]["p50"] / small["posix_spawn"]["p50"]
    # fork copies the page tables of 65,536 touched pages; posix_spawn shares the memory until exec
    assert fork_ratio > 2 and fork_ratio > 2 * spawn_ratio, (fork_ratio, spawn_ratio)


def test_a_program_that_cannot_run_fails_the_run_with_a_message() -> None:
    missing = subprocess.run([probe_path(), "sys.spawn", "--program", "/no/such/tool"], capture_output=True, text=True)
    assert missing.returncode == 1 and "no program at /no/such/tool" in missing.stderr
    failing = subprocess.run(
        [probe_path(), "sys.spawn", "--program", "/bin/false", "--address-space", "0"], capture_output=True, text=True
    )
    assert failing.returncode == 1 and "did not exit 0" in failing.stderr


def test_spawn_metrics_in_an_experiment() -> None:
    proc = cli(
        "compare", "-w", "sys.spawn address-space=0 spawns=30", "-v", "a", "-v", "b", "-n", "2", "--format", "json", check=True
    )
    metrics = {r["metric"] for r in json.loads(proc.stdout)["rows"]}
    assert {f"sys.spawn/{m}:p99" for m in ("fork", "vfork", "posix_spawn")} <= metrics
