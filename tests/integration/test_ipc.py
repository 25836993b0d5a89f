"""The IPC latency workloads (Android's binder latency test on Linux mechanisms) and `benchlab ipc`."""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchlab.locate import probe_path
from benchlab.workloads.probe import PROBE_PROTOCOL
from tests.conftest import cli

pytestmark = pytest.mark.serial  # real-time priority, tracefs and timed latencies

MECHANISMS = ("pipe", "unix", "seqpacket", "eventfd", "futex")
TIMES = {"avg", "wst", "bst", "miss", "meetR", "p50", "p90", "p99", "p99.9"}
root_only = pytest.mark.skipif(os.geteuid() != 0, reason="needs SCHED_FIFO (root)")


def latency(mechanism: str, *args: str, fmt: str = "android", prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    argv = [*prefix, probe_path(), f"ipc.{mechanism}.latency", "--warmup", "10", *args, "--format", fmt]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120)


def android(mechanism: str, *args: str) -> dict:
    proc = latency(mechanism, *args)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@root_only
@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_latency_prints_the_android_tests_json(mechanism: str) -> None:
    doc = android(mechanism, "--iterations", "150", "--pair", "2", "--force", "1")
    assert list(doc) == ["cfg", "P0", "P1", "ALL", "inheritance", "benchlab"]
    assert doc["benchlab"]["protocol"] == PROBE_PROTOCOL and doc["benchlab"]["notes"] == []
    assert doc["cfg"]["pair"] == 2 and doc["cfg"]["iterations"] == 150 and doc["cfg"]["deadline_us"] == 2500
    for group in ("P0", "P1", "ALL"):
        g = doc[group]
        assert set(g) == {"SYNC", "S", "I", "R", "other_ms", "fifo_ms"}
        assert g["I"] == (600 if group == "ALL" else 300)  # every transaction of both halves is checked
        assert 0 <= g["S"] <= g["I"] and g["R"] == pytest.approx(g["S"] / g["I"])
        assert g["SYNC"] == ("GOOD" if g["S"] == g["I"] else "POOR")
        for half in ("other_ms", "fifo_ms"):
            t = g[half]
            assert set(t) == TIMES
            assert 0 < t["bst"] <= t["p50"] <= t["p90"] <= t["p99"] <= t["p99.9"] <= t["wst"]
            assert t["bst"] <= t["avg"] <= t["wst"]
            assert t["meetR"] == pytest.approx(1 - t["miss"] / (g["I"] / 2))
    assert doc["inheritance"] == "PASS"


@root_only
def test_same_cpu_placement_serves_every_transaction_on_the_callers_cpu() -> None:
    doc = android("futex", "--iterations", "200", "--placement", "same")
    assert doc["ALL"]["SYNC"] == "GOOD" and doc["ALL"]["S"] == doc["ALL"]["I"] == 400
    if len(os.sched_getaffinity(0)) >= 2:
        apart = android("futex", "--iterations", "200", "--placement", "different")
        assert apart["ALL"]["S"] == 0 and apart["ALL"]["SYNC"] == "POOR"


def test_deadline_misses_count_the_injected_delays() -> None:
    # every 10th iteration the server sleeps 6 ms before replying: 30 of 300 transactions per half miss 2.5 ms
    doc = android("pipe", "--iterations", "300", "--inject-delay-us", "6000", "--inject-every", "10")
    for half in ("other_ms", "fifo_ms"):
        t = doc["ALL"][half]
        if "skipped" in t:
            continue
        assert 30 <= t["miss"] <= 33  # the injected ones, plus at most a few the noisy host adds
        assert t["wst"] >= 6.0 and t["p90"] < 6.0 <= t["p99"]
    relaxed = android("pipe", "--iterations", "300", "--inject-delay-us", "6000", "--deadline-us", "1000000")
    assert relaxed["ALL"]["other_ms"]["miss"] == 0 and relaxed["ALL"]["other_ms"]["meetR"] == 1


@root_only
def test_inheritance_passes_with_a_pi_futex_and_fails_with_a_plain_mutex() -> None:
    doc = json.loads(latency("eventfd", "--iterations", "50", "--inheritance", "pi").stdout)
    assert doc["inheritance"] == "PASS"
    found = doc["benchlab"]["inheritance"]  # the holder of a priority-inheritance mutex ran at real-time priority 1
    assert (found["lock"], found["verdict"], found["holder_priority"], found["waiter_priority"]) == ("pi", "PASS", 1, 1)
    doc = json.loads(latency("eventfd", "--iterations", "50", "--inheritance", "plain").stdout)
    assert doc["inheritance"] == "FAIL"
    found = doc["benchlab"]["inheritance"]  # the holder stayed at its own priority: the inversion
    assert (found["lock"], found["verdict"], found["holder_priority"]) == ("plain", "FAIL", None)
    assert json.loads(latency("eventfd", "--iterations", "50", "--inheritance", "off").stdout)["inheritance"] == "OFF"


@root_only
def test_without_real_time_privilege_the_normal_half_runs_and_the_skip_is_said() -> None:
    no_rt = ("setpriv", "--bounding-set", "-sys_nice", "--inh-caps", "-sys_nice")  # root without CAP_SYS_NICE
    proc = latency("unix", "--iterations", "100", prefix=no_rt)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert set(doc["ALL"]["other_ms"]) == TIMES and doc["ALL"]["I"] == 100
    assert "the SCHED_FIFO half was skipped: no real-time privilege" in doc["ALL"]["fifo_ms"]["skipped"]
    assert doc["inheritance"] == "SKIPPED"
    notes = doc["benchlab"]["notes"]
    assert [n["topic"] for n in notes] == ["fifo_skipped", "inheritance_skipped"]
    assert notes[0]["text"] == doc["ALL"]["fifo_ms"]["skipped"]
    assert doc["benchlab"]["inheritance"]["verdict"] == "SKIPPED"
    entries = json.loads(latency("unix", "--iterations", "100", fmt="json", prefix=no_rt).stdout)["benchmarks"]
    assert [e["name"] for e in entries] == ["ipc.unix.latency/other"]


def test_more_pairs_than_cpus_is_refused_unless_forced() -> None:
    cpus = len(os.sched_getaffinity(0))
    refused = latency("pipe", "--iterations", "20", "--pair", str(cpus + 1))
    assert refused.returncode == 1 and "`force = true` in a spec" in refused.stderr and refused.stdout == ""
    forced = android("pipe", "--iterations", "20", "--pair", str(cpus + 1), "--force", "1")
    assert f"P{cpus}" in forced


@pytest.fixture
def tracefs() -> Iterator[Path]:
    """The kernel's trace files, mounted where they are not yet, emptied, and tracing switched
    back to what it was afterwards."""
    if os.geteuid() != 0:
        pytest.skip("tracing needs root")
    tracing = Path("/sys/kernel/tracing")
    if not (tracing / "trace_marker").exists():
        subprocess.run(["mount", "-t", "tracefs", "nodev", str(tracing)], check=False)
    if not (tracing / "trace_marker").exists():
        pytest.skip("tracefs cannot be mounted here")
    was_on = (tracing / "tracing_on").read_text().strip()
    (tracing / "trace").write_text("")
    try:
        yield tracing
    finally:
        (tracing / "tracing_on").write_text(was_on)


STOPPED = "deadline triggered: halt & stop trace: ipc.pipe.latency deadline miss: pair P0 iteration {} SCHED_OTHER"


def test_trace_marks_the_first_miss_stops_tracing_and_says_so(tracefs: Path) -> None:
    doc = android("pipe", "--iterations", "40", "--inject-delay-us", "5000", "--inject-every", "20", "--trace", "1")
    assert doc["ALL"]["other_ms"]["miss"] >= 2
    assert (tracefs / "tracing_on").read_text().strip() == "0"  # stopped at the first miss
    marks = [line for line in (tracefs / "trace").read_text().splitlines() if "benchlab:" in line]
    assert len(marks) == 1, marks
    assert "ipc.pipe.latency deadline miss: pair P0 iteration 19 SCHED_OTHER" in marks[0]
    assert "client CPU" in marks[0] and "server CPU" in marks[0]
    (said,) = [n for n in doc["benchlab"]["notes"] if n["topic"] == "trace_stopped"]  # the run says what it did
    assert said["text"].startswith(STOPPED.format(19))
    marked = said["text"].removeprefix("deadline triggered: halt & stop trace: ").split(" (marked in")[0]
    assert marks[0].endswith(f"benchlab: {marked}")  # the very line marked in the trace
    assert f"{tracefs}/tracing_on left at 0" in said["text"]


def test_ipc_latency_trace_says_when_a_miss_stopped_tracing(tracefs: Path) -> None:
    """`benchlab ipc latency -trace`, as the Android test's users type it: the line on stderr."""
    stopped = cli("ipc", "latency", "-m", "pipe", "-trace", "-deadline_us", "1", "-i", "20", "--inheritance", "off", check=True)
    assert f"ipc.pipe.latency: {STOPPED.format(0)}" in stopped.stderr, stopped.stderr
    (tracefs / "tracing_on").write_text("1")
    met = cli("ipc", "latency", "-m", "pipe", "-trace", "-deadline_us", "1000000", "-i", "20", "--inheritance", "off", check=True)
    assert "deadline triggered" not in met.stderr and (tracefs / "tracing_on").read_text().strip() == "1"


def test_latency_halves_are_metrics_in_experiments() -> None:
    proc = cli(
        "compare", "-w", "ipc.futex.latency iterations=200", "-V", "a", "-V", "b", "-n", "2", "--format", "json", check=True
    )
    metrics = {r["metric"] for r in json.loads(proc.stdout)["rows"]}
    assert {"ipc.futex.latency/other:p99", "ipc.futex.latency/other:misses", "ipc.futex.latency/other:meet_ratio"} <= metrics
    if os.geteuid() == 0:
        assert {"ipc.futex.latency/fifo:p99_9", "ipc.futex.latency/fifo:priority_inheritance"} <= metrics


@root_only
@pytest.mark.parametrize("mechanism", ["pipe", "futex"])
def test_each_half_has_a_cpu_time_of_its_own(mechanism: str) -> None:
    """The SCHED_OTHER and SCHED_FIFO halves are measured apart (each end's thread clock around
    each transaction of the half), not one figure over both shown twice."""
    proc = latency(mechanism, "--iterations", "300", fmt="json")
    assert proc.returncode == 0, proc.stderr
    other, fifo = json.loads(proc.stdout)["benchmarks"]
    assert (other["name"], fifo["name"]) == (f"ipc.{mechanism}.latency/other", f"ipc.{mechanism}.latency/fifo")
    assert other["cpu_time"] > 0 and fifo["cpu_time"] > 0
    assert other["cpu_time"] != fifo["cpu_time"]  # one number over both halves was shown for each


def test_spinning_shows_in_the_cpu_time_per_transaction() -> None:
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("spinning ends need two CPUs")
    args = ["--iterations", "5000", "--max-payload", "4", "--placement", "different"]
    out = subprocess.run([probe_path(), "ipc.futex.throughput", *args, "--spin-us", "2000", "--format", "json"],
                         capture_output=True, text=True, check=True).stdout  # fmt: skip
    entry = json.loads(out)["benchmarks"][0]
    # both ends burn a CPU for the whole round trip instead of sleeping through the other's half
    assert entry["cpu_per_transaction"] > 1.2 * entry["real_time"]


def test_ipc_commands_give_a_quick_look() -> None:
    proc = cli("ipc", "throughput", "-m", "pipe", "-m", "futex", "--max-payload", "64", "-i", "100", check=True)
    assert "IPC throughput" in proc.stdout and "pipe" in proc.stdout and "futex" in proc.stdout
    assert [line.split("│")[1].strip() for line in proc.stdout.splitlines() if line.startswith("│ ") and "µs" in line][:5] == [
        "4", "8", "16", "32", "64"
    ]  # fmt: skip
    proc = cli("ipc", "latency", "-m", "seqpacket", "-i", "100", "--format", "android", check=True)
    assert json.loads(proc.stdout)["cfg"]["mechanism"] == "seqpacket"
    proc = cli("ipc", "latency", "-i", "50", check=True)
    assert all(m in proc.stdout for m in MECHANISMS) and "priority inheritance" in proc.stdout
    assert "Time" in cli("ipc", "throughput", "-m", "pipe", "--max-payload", "4", "-i", "10", check=True).stdout
    assert "binder skipped" in proc.stderr
    bad = cli("ipc", "latency", "-m", "carrier-pigeon")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "no IPC mechanism 'carrier-pigeon'" in bad.stderr
    refused = cli("ipc", "latency", "-m", "pipe", "--pair", str(len(os.sched_getaffinity(0)) + 1))
    assert refused.returncode == 2 and "benchlab ipc latency --force" in refused.stderr and refused.stderr.count("\n") == 1


def test_latency_takes_the_android_tests_own_flags() -> None:
    proc = cli("ipc", "latency", "-m", "pipe", "-i", "40", "-pair", "2", "-deadline_us", "700", "-v", "--force",
               "--format", "android", check=True)  # fmt: skip
    doc = json.loads(proc.stdout)
    assert (doc["cfg"]["iterations"], doc["cfg"]["pair"], doc["cfg"]["deadline_us"]) == (40, 2, 700)
    quiet = cli("ipc", "latency", "-m", "pipe", "-i", "40", "-pair", "2", "--force", "--format", "android", check=True)
    # -v: a line for each process of both pairs (words for people, passed on as the probe wrote them)
    assert quiet.stderr == "" and len(proc.stderr.splitlines()) >= 4
    refused = cli("ipc", "latency", "-m", "pipe", "-pair", str(len(os.sched_getaffinity(0)) + 1))
    assert refused.returncode == 2 and "`benchlab ipc latency --force`" in refused.stderr


def test_throughput_shows_google_benchmarks_time_cpu_and_iterations() -> None:
    proc = cli("ipc", "throughput", "-m", "pipe", "--max-payload", "8", "-i", "30", check=True)
    header = next(line for line in proc.stdout.splitlines() if "Iterations" in line)
    assert [c.strip() for c in header.strip("┃ ").split("┃")][2:5] == ["Time", "CPU", "Iterations"]
    rows = [[c.strip() for c in line.strip("│ ").split("│")] for line in proc.stdout.splitlines() if line.startswith("│ ")]
    assert [(r[0], r[1], r[4]) for r in rows] == [("4", "pipe", "30"), ("8", "pipe", "30")]


def bucket(ns: float) -> int:
    """The probe's histogram bucket of a sample: the largest k with ns^8 >= 2^k, on exact integers."""
    return max(0, (int(ns) ** 8).bit_length() - 1)


def test_ipc_runs_keep_a_histogram_of_every_sample(tmp_path: Path) -> None:
    page = tmp_path / "page.html"
    proc = cli("compare", "-w", "ipc.pipe.pingpong roundtrips=2000", "-w", "ipc.unix.latency iterations=300",
               "-V", "a", "-V", "b", "-n", "2", "--format", "json", "--export-html", str(page), check=True)  # fmt: skip
    runs = [r for r in json.loads(proc.stdout)["runs"] if r["status"] == "ok"]
    halves = {"ipc.unix.latency/other", *(["ipc.unix.latency/fifo"] if os.geteuid() == 0 else [])}
    seen = set()
    for run in runs:
        of = run["details"]["histograms"]["of"]
        assert set(of) == ({"ipc.pipe.pingpong"} if run["workload"] == "ipc.pipe.pingpong" else halves)
        for name, histogram in of.items():
            counts = histogram["counts"]
            assert sum(counts) == (2000 if name == "ipc.pipe.pingpong" else 300)  # every timed transaction
            assert counts[0] > 0 and counts[-1] > 0 and len(json.dumps(histogram)) < 1000
            median = run["metrics"]["latency_p50" if name == "ipc.pipe.pingpong" else f"{name}:p50"]
            rank = next(i for i, c in enumerate(itertools.accumulate(counts)) if c >= sum(counts) / 2)
            assert abs(histogram["first"] + rank - bucket(median)) <= 1, (name, median, histogram)
            seen.add(name)
    assert seen == {"ipc.pipe.pingpong", *halves}
    labels = set(re.findall(r'aria-label="([^"]*latency histogram)"', page.read_text()))
    assert labels == {f"{name} latency histogram" for name in seen}
