"""The probe executable itself: JSON shape, checksums, the launcher."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from benchlab.locate import launcher_path, probe_path
from benchlab.measure.account import Account, read_account
from benchlab.measure.cgroup import run_cgroup_parent
from benchlab.measure.libraries import find_library
from benchlab.variants.allocator import mapped_allocator
from tests.conftest import cli

pytestmark = pytest.mark.serial  # cgroups and perf counters


def probe(*args: str, env: dict[str, str] | None = None) -> dict:
    out = subprocess.run([probe_path(), *args, "--format", "json"], capture_output=True, text=True, check=True,
                         env={**os.environ, **(env or {})})  # fmt: skip
    return json.loads(out.stdout)


def test_google_benchmark_shape_and_context() -> None:
    doc = probe("ipc.pipe.pingpong", "--roundtrips", "500", "--warmup", "10")
    ctx = doc["context"]
    assert ctx["library_build_type"] == "release"  # a debug probe measures the compiler, not the system
    assert ctx["workload"] == "ipc.pipe.pingpong" and ctx["workload_version"] >= 1 and ctx["num_cpus"] >= 1
    (entry,) = doc["benchmarks"]
    for key in ("name", "run_type", "iterations", "real_time", "cpu_time", "time_unit", "items_per_second", "checksum"):
        assert key in entry
    assert entry["iterations"] == 500
    assert entry["benchlab"]["latency_p99"] == {"unit": "ns", "direction": "lower"}
    assert entry["latency_p50"] <= entry["latency_p99"]


def test_pingpong_checksum_depends_only_on_seed_and_count() -> None:
    a = probe("ipc.pipe.pingpong", "--roundtrips", "300", "--seed", "5")["benchmarks"][0]["checksum"]
    b = probe("ipc.pipe.pingpong", "--roundtrips", "300", "--seed", "5")["benchmarks"][0]["checksum"]
    c = probe("ipc.pipe.pingpong", "--roundtrips", "300", "--seed", "6")["benchmarks"][0]["checksum"]
    assert a == b != c


@pytest.mark.parametrize("allocator", ["jemalloc", "tcmalloc", "mimalloc"])
def test_churn_does_the_same_work_under_every_allocator(allocator: str) -> None:
    library = find_library(allocator)
    if library is None:
        pytest.skip(f"{allocator} not installed")
    args = ("alloc.churn", "--ops", "50000", "--threads", "2")
    plain = probe(*args)["benchmarks"][0]["checksum"]
    preloaded = probe(*args, env={"LD_PRELOAD": library})["benchmarks"][0]["checksum"]
    assert plain == preloaded


def test_bad_option_value_fails_with_a_message() -> None:
    proc = subprocess.run([probe_path(), "alloc.churn", "--threads", "0"], capture_output=True, text=True)
    assert proc.returncode != 0 and "--threads" in proc.stderr


def test_launcher_reports_exit_code_signal_and_rusage() -> None:
    r, w = os.pipe()
    proc = subprocess.run([launcher_path(), "--result-fd", str(w), "--", "sh", "-c", "exit 7"], pass_fds=(w,))
    os.close(w)
    account = json.loads(os.read(r, 4096))
    os.close(r)
    assert proc.returncode == 0 and account["exit_code"] == 7 and account["signal"] is None
    assert account["wall_ns"] > 0 and account["max_rss_kib"] > 0


def test_the_launchers_account_has_the_fields_benchlab_reads_in_their_order() -> None:
    """probe/src/launch.rs `Account` (serde) and benchlab.measure.account `Account` (pydantic) name the same fields."""
    r, w = os.pipe()
    subprocess.run(
        [launcher_path(), "--result-fd", str(w), "--perf-counters", "--mapped", "--", "true"], pass_fds=(w,), check=True
    )
    os.close(w)
    fields = json.loads(os.read(r, 65536))
    os.close(r)
    assert list(fields) == list(Account.model_fields)
    assert read_account(fields).exit_code == 0


# Geekbench 5's workloads in its sections, as the Geekbench study's table of subtests lists
# them (the study docs/studies/environments.md reproduces), under benchlab's names;
# `vector_rendering` stands for PDF rendering.
STUDY_SECTIONS = {
    "crypto": ["aes_xts"],
    "integer": ["text_compression", "image_compression", "navigation", "html5", "sqlite", "vector_rendering",
                "text_rendering", "compiler", "camera"],
    "floating_point": ["nbody", "rigid_body", "gaussian_blur", "face_detection", "horizon_detection",
                       "image_inpainting", "hdr", "ray_tracing", "structure_from_motion", "speech_recognition",
                       "ml_inference"],
}  # fmt: skip
CPU_WORKLOADS = [f"cpu.{task}" for tasks in STUDY_SECTIONS.values() for task in tasks]


def test_the_suite_has_geekbench_5s_21_workloads_in_the_studys_sections() -> None:
    listing = json.loads(subprocess.run([probe_path(), "list", "--format", "json"], capture_output=True, check=True).stdout)
    sections = {w["name"]: w["section"] for w in listing["workloads"] if w["name"].startswith("cpu.")}
    assert len(CPU_WORKLOADS) == 21
    assert sections == {f"cpu.{task}": section for section, tasks in STUDY_SECTIONS.items() for task in tasks}
    assert {w["section"] for w in listing["workloads"] if not w["name"].startswith("cpu.")} == {None}


@pytest.mark.parametrize("workload", CPU_WORKLOADS)
def test_cpu_workload_checksums_depend_on_input_only(workload: str) -> None:
    one = probe(workload, "--iterations", "1", "--threads", "1")["benchmarks"][0]
    two = probe(workload, "--iterations", "1", "--threads", "2")["benchmarks"][0]
    other = probe(workload, "--iterations", "1", "--seed", "2")["benchmarks"][0]
    assert one["checksum"] == two["checksum"] != other["checksum"]
    assert two["iterations"] == 2 * one["iterations"] and one["items_per_second"] > 0


SHARED = ["cpu.aes_xts", "cpu.navigation", "cpu.compiler", "cpu.ray_tracing", "cpu.gaussian_blur", "cpu.text_rendering",
          "cpu.face_detection", "cpu.image_inpainting", "cpu.speech_recognition"]  # fmt: skip


def test_the_listing_says_which_tasks_split_and_the_suite_version() -> None:
    listing = json.loads(subprocess.run([probe_path(), "list", "--format", "json"], capture_output=True, check=True).stdout)
    modes = {w["name"]: w["modes"] for w in listing["workloads"] if w["section"]}
    assert sorted(n for n, m in modes.items() if "shared" in m) == sorted(SHARED)
    assert {w["suite_version"] for w in listing["workloads"] if w["section"]} == {2}


@pytest.mark.parametrize("workload", SHARED)
def test_a_shared_task_computes_what_one_thread_computes(workload: str) -> None:
    alone = probe(workload, "--iterations", "2", "--threads", "1")["benchmarks"][0]
    shared = probe(workload, "--iterations", "2", "--threads", "3", "--mode", "shared")["benchmarks"][0]
    assert shared["checksum"] == alone["checksum"]
    assert shared["iterations"] == 2 and shared["threads"] == 3 and shared["items_per_second"] > 0


def test_threads_zero_means_every_cpu_the_run_may_use() -> None:
    entry = probe("cpu.html5", "--iterations", "1", "--threads", "0")["benchmarks"][0]
    assert entry["threads"] == len(os.sched_getaffinity(0))
    pinned = subprocess.run(["taskset", "-c", "0", probe_path(), "cpu.html5", "--iterations", "1", "--threads", "0",
                             "--format", "json"], capture_output=True, check=True)  # fmt: skip
    assert json.loads(pinned.stdout)["benchmarks"][0]["threads"] == 1


def test_a_task_that_does_not_split_refuses_the_shared_mode() -> None:
    proc = subprocess.run([probe_path(), "cpu.sqlite", "--mode", "shared"], capture_output=True, text=True)
    assert proc.returncode == 1 and "does not split" in proc.stderr


def launch_account(*flags: str, command: tuple[str, ...] = ("sh", "-c", "exit 0")) -> dict:
    r, w = os.pipe()
    subprocess.run([launcher_path(), "--result-fd", str(w), *flags, "--", *command], pass_fds=(w,), check=True)
    os.close(w)
    account = json.loads(os.read(r, 65536))
    os.close(r)
    return account


def test_the_launcher_counts_perf_events_on_request_and_hardware_ones_where_it_can() -> None:
    command = (probe_path(), "cpu.aes_xts", "--iterations", "2", "--threads", "2")
    plain = launch_account(command=command)
    assert plain["counters"] == {} and plain["counters_note"] is None and plain["minor_faults"] > 100
    full = launch_account("--perf-counters", command=command)
    counts = full["counters"]
    # inherited by both threads: the task clock is close to wait4's user + sys
    assert counts["task_clock_ns"] == pytest.approx(full["user_ns"] + full["sys_ns"], rel=0.3)
    assert counts["page_faults"] > 100 and "cpu_migrations" in counts
    if full["counters_note"] is None:  # this machine has a PMU the kernel exposes
        assert counts["instructions"] > 1e6 and counts["cycles"] > 1e6
    else:
        assert "hardware counters unavailable" in full["counters_note"] and "cycles" not in counts


def test_one_part_of_a_round_runs_alone_on_the_input_it_saves(tmp_path) -> None:  # type: ignore[no-untyped-def]
    corpus = tmp_path / "corpus.txt"
    zstd_only = probe("cpu.text_compression", "--part", "0", "--iterations", "2", "--save-input", str(corpus))["benchmarks"][0]
    whole = probe("cpu.text_compression", "--iterations", "1")["benchmarks"][0]
    assert corpus.stat().st_size == 1 << 20 and corpus.read_bytes().isascii()
    assert zstd_only["checksum"] != whole["checksum"] and zstd_only["items_per_second"] > whole["items_per_second"]
    proc = subprocess.run([probe_path(), "cpu.text_compression", "--part", "2"], capture_output=True, text=True)
    assert proc.returncode == 1 and "--part" in proc.stderr


def test_the_launcher_sees_the_libraries_of_the_last_program_image_only() -> None:
    jemalloc = find_library("jemalloc")
    if jemalloc is None:
        pytest.skip("jemalloc is not installed")
    r, w = os.pipe()
    env = {**os.environ, "LD_PRELOAD": jemalloc}
    # taskset maps jemalloc too, then execs env, which drops it before exec'ing true
    argv = ["taskset", "-c", "0", "env", "-u", "LD_PRELOAD", "true"]
    subprocess.run([launcher_path(), "--result-fd", str(w), "--mapped", "--", *argv], pass_fds=(w,), check=True, env=env)
    os.close(w)
    last = json.loads(os.read(r, 65536))
    os.close(r)
    assert any(p.endswith("/true") for p in last["mapped"]) and not any("jemalloc" in p for p in last["mapped"])
    preloaded = subprocess.run(
        [launcher_path(), "--result-fd", "1", "--mapped", "--", "true"], env=env, capture_output=True, text=True, check=True
    )
    name, library = mapped_allocator(json.loads(preloaded.stdout)["mapped"])
    assert name == "jemalloc" and os.path.realpath(library or "") == os.path.realpath(jemalloc)


def test_the_tree_peak_counts_processes_together_and_samples_follow_the_footprint() -> None:
    cgroup, why = run_cgroup_parent()
    if cgroup is None:
        pytest.skip(why)
    hold = "import time; b = bytearray(96 << 20); time.sleep(0.6)"
    before = set(os.listdir(cgroup))
    two = ("sh", "-c", f"{sys.executable} -c '{hold}' & {sys.executable} -c '{hold}'; wait")
    account = launch_account("--cgroup", cgroup, "--memory-interval-ms", "50", command=two)
    # wait4 knows the larger process (~100 MiB); the cgroup saw both at once
    assert account["max_rss_kib"] < 150 << 10 < account["tree_peak_kib"]
    memory = account["memory"]
    assert memory["samples"] >= 5 and memory["pss_mean_kib"] <= memory["pss_peak_kib"]
    assert memory["rss_peak_kib"] > 180 << 10  # both processes summed in one sample
    assert set(os.listdir(cgroup)) == before  # the run's cgroup is gone


MECHANISMS = ("pipe", "unix", "seqpacket", "eventfd", "futex")


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_ipc_throughput_sweeps_payloads_from_4_bytes_to_64_kib(mechanism: str) -> None:
    doc = probe(f"ipc.{mechanism}.throughput", "--iterations", "60", "--warmup", "5")
    entries = doc["benchmarks"]
    assert [e["name"] for e in entries] == [f"ipc.{mechanism}.throughput/{1 << k}" for k in range(2, 17)]
    for e in entries:
        size = int(e["name"].rsplit("/", 1)[1])
        assert e["iterations"] == 60 and e["time_unit"] == "ns" and e["real_time"] > 0 and e["cpu_time"] > 0
        assert e["bytes_per_second"] == pytest.approx(size * e["items_per_second"], rel=1e-9)
    again = probe(f"ipc.{mechanism}.throughput", "--iterations", "60", "--warmup", "5")["benchmarks"]
    assert [e["checksum"] for e in again] == [e["checksum"] for e in entries]  # the replies' bytes, not their timing
    other = probe(f"ipc.{mechanism}.throughput", "--iterations", "60", "--warmup", "5", "--seed", "2")["benchmarks"]
    assert other[0]["checksum"] != entries[0]["checksum"]


def test_ipc_throughput_per_payload_metrics_through_benchlab() -> None:
    proc = cli("compare", "-w", "ipc.futex.throughput iterations=100 max-payload=64", "-V", "a", "-V", "b", "-n", "2",
               "--format", "json", check=True)  # fmt: skip
    metrics = {r["metric"] for r in json.loads(proc.stdout)["rows"]}
    assert {f"ipc.futex.throughput/{n}:bytes_per_second" for n in (4, 8, 16, 32, 64)} <= metrics


def test_ipc_placement_pins_both_processes_and_counts_migrations() -> None:
    for placement in ("same", "different"):
        entries = probe("ipc.eventfd.throughput", "--iterations", "200", "--max-payload", "64", "--placement", placement)[
            "benchmarks"
        ]
        assert all(e["migrations"] == 0 for e in entries)  # pinned processes never move
    one_cpu = subprocess.run(["taskset", "-c", "0", probe_path(), "ipc.pipe.throughput", "--placement", "different"],
                             capture_output=True, text=True)  # fmt: skip
    assert one_cpu.returncode != 0 and "needs 2 CPUs" in one_cpu.stderr
