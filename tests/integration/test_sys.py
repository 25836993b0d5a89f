"""System-level workloads: process spawn under a large address space, a real parallel build."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from benchlab.locate import probe_path
from tests.conftest import cli

pytestmark = pytest.mark.serial  # measures builds' speed


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
        "compare", "-w", "sys.spawn address-space=0 spawns=30", "-V", "a", "-V", "b", "-n", "2", "--format", "json", check=True
    )
    metrics = {r["metric"] for r in json.loads(proc.stdout)["rows"]}
    assert {f"sys.spawn/{m}:p99" for m in ("fork", "vfork", "posix_spawn")} <= metrics


def build(*args: str) -> dict:
    out = subprocess.run(
        [probe_path(), "sys.build", *args, "--format", "json"], capture_output=True, text=True, check=True
    ).stdout
    (entry,) = json.loads(out)["benchmarks"]
    return entry


def test_the_build_is_checked_by_its_programs_and_counts_its_tasks(tmp_path: Path) -> None:
    one = build("--units", "16", "--programs", "3", "--jobs", "1", "--dir", str(tmp_path / "p"))
    two = build("--units", "16", "--programs", "3", "--jobs", "2", "--dir", str(tmp_path / "p"))
    assert one["checksum"] == two["checksum"] and one["jobs"] == 1 and two["jobs"] == 2
    assert one["real_time"] > 0 and one["cpu_time"] == pytest.approx(one["user"] + one["sys"])
    if os.geteuid() == 0:  # in a PID namespace: cc, its cc1 and as per unit, the links, ar, make itself
        assert 16 * 2 < one["tasks"] < 16 * 10, one["tasks"]
    other = build("--units", "16", "--programs", "3", "--seed", "2", "--dir", str(tmp_path / "q"))
    assert other["checksum"] != one["checksum"]
    # a source that no longer computes what the generator planned: the programs give it away
    source = tmp_path / "p" / "src" / "u5.c"
    source.write_text(source.read_text().replace("r.a ^ r.b", "r.a + r.b", 1))
    broken = subprocess.run([probe_path(), "sys.build", "--units", "16", "--programs", "3", "--dir", str(tmp_path / "p")],
                            capture_output=True, text=True)  # fmt: skip
    assert broken.returncode == 1 and "a wrong build" in broken.stderr


def test_without_a_compiler_the_build_says_so() -> None:
    proc = subprocess.run([probe_path(), "sys.build", "--cc", "no-such-cc"], capture_output=True, text=True)
    assert proc.returncode == 1 and "skipped: no no-such-cc on PATH" in proc.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="dropping the page cache needs root")
def test_a_cold_cache_build_runs(tmp_path: Path) -> None:
    entry = build("--units", "8", "--programs", "1", "--cache", "cold", "--dir", str(tmp_path / "p"))
    assert entry["real_time"] > 0


def test_a_variant_with_fewer_cpus_makes_the_build_slower(tmp_path: Path) -> None:
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs two CPUs")
    workload = f"sys.build units=24 programs=2 dir={tmp_path / 'p'}"
    proc = cli("compare", "-w", workload, "-V", "all", "-V", "one: cpus=0", "-n", "3", "--name", "cpus", "--format", "json",
               check=True)  # fmt: skip
    (row,) = [r for r in json.loads(proc.stdout)["rows"] if r["metric"] == "real_time"]
    # -j follows the CPUs the run may use: two compilers at once against one
    assert row["change"] > 0.3, row
    assert row["best"] <= row["median"] and row["baseline_best"] <= row["baseline_median"]
    times = cli("report", "cpus", "--times", "--format", "md", check=True).stdout
    (line,) = [line for line in times.splitlines() if "| real_time |" in line]
    assert line.rstrip(" |").endswith("x slower") or "x slower [" in line
