"""The probe executable itself: JSON shape, checksums, the launcher."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from benchlab.locate import launcher_path, probe_path
from benchlab.variants.allocator import find_library


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


CPU_WORKLOADS = [
    "cpu.aes_xts",
    "cpu.text_compression",
    "cpu.image_compression",
    "cpu.navigation",
    "cpu.html5",
    "cpu.sqlite",
    "cpu.vector_rendering",
    "cpu.nbody",
    "cpu.gaussian_blur",
    "cpu.ml_inference",
    "cpu.compiler",
    "cpu.rigid_body",
    "cpu.ray_tracing",
    "cpu.hdr",
    "cpu.camera",
    "cpu.horizon_detection",
]


def test_cpu_workloads_are_listed_with_their_section() -> None:
    listing = json.loads(subprocess.run([probe_path(), "list", "--format", "json"], capture_output=True, check=True).stdout)
    sections = {w["name"]: w["section"] for w in listing["workloads"]}
    assert sorted(n for n in sections if n.startswith("cpu.")) == sorted(CPU_WORKLOADS)
    assert {sections[n] for n in CPU_WORKLOADS} == {"crypto", "integer", "floating_point"}
    assert sections["cpu.aes_xts"] == "crypto"
    assert sections["cpu.text_compression"] == sections["cpu.navigation"] == "integer"
    assert sections["alloc.churn"] is None


@pytest.mark.parametrize("workload", CPU_WORKLOADS)
def test_cpu_workload_checksums_depend_on_input_only(workload: str) -> None:
    one = probe(workload, "--iterations", "1", "--threads", "1")["benchmarks"][0]
    two = probe(workload, "--iterations", "1", "--threads", "2")["benchmarks"][0]
    other = probe(workload, "--iterations", "1", "--seed", "2")["benchmarks"][0]
    assert one["checksum"] == two["checksum"] != other["checksum"]
    assert two["iterations"] == 2 * one["iterations"] and one["items_per_second"] > 0
