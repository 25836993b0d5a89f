"""The informational commands and variant fields, through the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchlab.measure.libraries import find_library
from tests.conftest import cli


def test_workloads_lists_every_builtin_with_metrics() -> None:
    data = json.loads(cli("workloads", "--format", "json", check=True).stdout)
    names = {w["name"]: w for w in data}
    assert {"alloc.churn", "ipc.pipe.pingpong"} <= set(names)
    assert any(m["name"] == "latency_p99" for m in names["ipc.pipe.pingpong"]["metrics"])
    table = cli("workloads", check=True).stdout
    assert "alloc.churn" in table and "wait4" in table


def test_doctor_prints_fingerprint_checks_and_fixes() -> None:
    out = cli("doctor", check=True).stdout
    for word in ("cpu_model", "kernel", "allocator jemalloc", "SCHED_FIFO", "binder", "tracefs", "perf counters"):
        assert word in out


@pytest.mark.parametrize("allocator", ["jemalloc", "tcmalloc", "mimalloc"])
def test_allocator_variant_is_really_preloaded(allocator: str, tmp_path: Path) -> None:
    library = find_library(allocator)
    if library is None:
        pytest.skip(f"{allocator} is not installed")
    spec = tmp_path / "alloc.toml"
    spec.write_text(f"""
name = "alloc-{allocator}"
blocks = 2
[[workloads]]
name = "maps"
command = ["sh", "-c", "grep -q {Path(library).name} /proc/$$/maps"]
[[variants]]
name = "glibc"
[[variants]]
name = "{allocator}"
allocator = "{allocator}"
""")
    data = json.loads(cli("run", str(spec), "--format", "json", "--allow-failures", check=True).stdout)
    statuses = {(r["variant"], r["status"]) for r in data["runs"]}
    assert statuses == {("glibc", "failed"), (allocator, "ok")}


def test_cpus_variant_pins_the_workload(tmp_path: Path) -> None:
    spec = tmp_path / "pin.toml"
    spec.write_text("""
name = "pin"
blocks = 2
[[workloads]]
name = "allowed"
command = ["sh", "-c", "grep Cpus_allowed_list /proc/self/status | grep -qw 0$"]
[[variants]]
name = "pinned"
cpus = "0"
""")
    data = json.loads(cli("run", str(spec), "--format", "json", check=True).stdout)
    assert {r["status"] for r in data["runs"]} == {"ok"}


def test_list_and_show_describe_stored_experiments() -> None:
    cli("compare", "--cmd", "sh -c 'exit 1'", "--variant", "a", "-n", "2", "--name", "shown", "--allow-failures", check=True)
    assert "shown" in cli("list", check=True).stdout
    shown = cli("show", "shown", check=True).stdout
    assert "failed" in shown and "exited with code 1" in shown
    missing = cli("report", "nope")
    assert missing.returncode == 2 and "no experiment named 'nope'" in missing.stderr


@pytest.mark.shared("rootfs")  # the container example's root filesystem is the session's, built once on the group's worker
@pytest.mark.parametrize("example", sorted(p.name for p in (Path(__file__).parents[2] / "examples").glob("*.toml")))
def test_examples_are_valid_specs(example: str, request: pytest.FixtureRequest, private_state: Path) -> None:
    from benchlab.cli.experiment import load_spec
    from benchlab.runner import Prepared

    spec = load_spec(Path(__file__).parents[2] / "examples" / example)
    assert spec.name and spec.workloads and spec.variants
    if any(v.environment.kind == "container" for v in spec.variants):  # the default root filesystem, built once
        default = private_state / "state" / "rootfs" / "bookworm"
        default.parent.mkdir(parents=True)
        default.symlink_to(request.getfixturevalue("rootfs"))
    Prepared.from_spec(spec)  # every library, tunable, binary and root filesystem it names exists here


def test_score_runs_the_suite_and_its_scores_recompute_from_the_raw_runs() -> None:
    from benchlab.suite.baseline import load_baseline

    proc = cli("score", "--quick", "-w", "aes_xts", "-w", "navigation", "-w", "nbody", "--format", "json", check=True)
    report = json.loads(proc.stdout)
    baseline = load_baseline()
    tasks = {w["name"]: w["builtin"] for w in report["experiment"]["spec"]["workloads"]}
    assert sorted(tasks) == sorted(f"cpu.{t}.{m}" for t in ("aes_xts", "navigation", "nbody") for m in ("single", "multi"))
    for name, task in tasks.items():
        values = sorted(r["metrics"]["items_per_second"] for r in report["runs"] if r["workload"] == name)
        assert len(values) == 3  # --quick: 3 blocks
        mode = "single-core" if name.endswith("single") else "multi-core"
        (row,) = [r for r in report["scores"]["rows"] if r["name"] == task and r["mode"] == mode]
        assert row["score"] == pytest.approx(1000 * values[1] / baseline.tasks[task].items_per_second)
        assert row["peak_memory_kib"] > 1000
        assert all("task_clock" in r["metrics"] for r in report["runs"])
    overall = [r for r in report["scores"]["rows"] if r["level"] == "overall"]
    assert {r["mode"] for r in overall} == {"single-core", "multi-core"} and all(r["score"] > 0 for r in overall)
    table = cli("report", report["experiment"]["name"], check=True).stdout
    assert "Overall" in table and "Floating Point" in table and "multi-core" in table
