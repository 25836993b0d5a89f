"""The app cycle (`memory.app_cycle`) on this machine: launches measured and kept one by one,
identical launch sequences in every variant, the apps' memory checked, a crashed app a failed
launch rather than a lost cycle. Pressure, swap and MGLRU in a guest: tests/integration/test_app_cycle_memory.py."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import sqlite3
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from benchlab.locate import probe_path
from benchlab.measure.cgroup import run_cgroup_parent
from tests.conftest import BENCHLAB, cli

pytestmark = pytest.mark.serial  # cgroups and swap, and times what it kills

TINY = {"apps": 4, "anon": "4m", "code": "256k", "framework": "1m", "dwell": 10}


def cycle(*args: str) -> subprocess.Popen[str]:
    options = [f"--{k}={v}" for k, v in TINY.items()]
    return subprocess.Popen(
        [probe_path(), "memory.app_cycle", *options, *args, "--format", "json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def apps_of(probe: int) -> list[int]:
    """The pids of the probe's apps (each names itself app-NNN)."""
    found = []
    for task in Path(f"/proc/{probe}/task").iterdir():
        for child in (task / "children").read_text().split():
            if Path(f"/proc/{child}/comm").read_text().startswith("app-"):
                found.append(int(child))
    return found


def while_it_runs(proc: subprocess.Popen[str], act: Callable[[list[int]], None]) -> tuple[str, str]:
    """Calls `act(pids)` once the probe has its apps, then waits for the probe."""

    def watch() -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and proc.poll() is None:
            with_apps = apps_of(proc.pid)
            if len(with_apps) >= 2:
                act(with_apps)
                return
            time.sleep(0.01)

    watcher = threading.Thread(target=watch)
    watcher.start()
    out, err = proc.communicate(timeout=120)
    watcher.join()
    return out, err


def test_an_experiment_keeps_every_launch_and_runs_the_same_sequence_in_every_variant(tmp_path: Path) -> None:
    spec = tmp_path / "cycle.toml"
    options = ", ".join(f"{k} = {json.dumps(v)}" for k, v in {**TINY, "iterations": 3}.items())
    spec.write_text(
        f'name = "cycle"\nblocks = 2\n[[workloads]]\nname = "cycle"\nbuiltin = "memory.app_cycle"\noptions = {{ {options} }}\n'
        '[[variants]]\nname = "a"\n[[variants]]\nname = "b"\nenv = { X = "1" }\n'
    )
    proc = cli("run", str(spec), "--format", "json", check=True)
    rows = {(r["metric"], r["variant"]) for r in json.loads(proc.stdout)["rows"]}
    for metric in ("real_time", "launch_cold", "launches_hot", "kills", "kills_lmk", "launch_failures"):
        assert (metric, "b") in rows, metric
    db = sqlite3.connect(os.environ["BENCHLAB_DB"])
    details = [json.loads(d) for (d,) in db.execute("SELECT details FROM run_detail")]
    assert len(details) == 4
    sequences = {(tuple(d["launches"]["iteration"]), tuple(d["launches"]["app"])) for d in details}
    assert len(sequences) == 1, "every run launches the apps in the same order"
    iterations, apps = next(iter(sequences))
    assert len(apps) == 12 and sorted(apps[:4]) == [0, 1, 2, 3] and iterations[4] == 1
    for d in details:
        launches = d["launches"]
        assert launches["start"][:4] == ["cold"] * 4, "the first round starts every app"
        assert all(t > 0 for t in launches["latency_ns"])
        assert {len(column) for column in launches.values()} == {12}
        assert d["reclaim"]["swappiness"] is not None and "lru_gen" in d["reclaim"]
        apps = d["apps"]  # each app's own memory cgroup, inside the run's
        assert {len(column) for column in apps.values()} == {4}
        assert all(peak >= 2 << 20 for peak in apps["peak_bytes"]), "an app's anon (4 MiB x 0.5-1.5) is charged to it"


def test_the_launch_metrics_are_what_the_launches_say() -> None:
    out, err = cycle("--iterations=3").communicate(timeout=120)
    doc = json.loads(out)
    entry, launches = doc["benchmarks"][0], doc["context"]["benchlab"]["launches"]
    latency = launches["latency_ns"]
    assert entry["iterations"] == len(latency) == 12
    assert entry["real_time"] == pytest.approx(sum(latency) / len(latency))
    for start in ("hot", "warm", "cold"):
        mine = [t for t, s in zip(latency, launches["start"], strict=True) if s == start]
        assert entry[f"launches_{start}"] == len(mine)
        if mine:
            assert entry[f"launch_{start}"] == pytest.approx(sum(mine) / len(mine) / 1e6)
    if entry["launches_cold"]:
        assert entry["hot_cold"] == pytest.approx(entry["launches_hot"] / entry["launches_cold"])


def test_memory_that_comes_back_changed_fails_the_run() -> None:
    """Every app checks the pages it touches against the content it wrote: a page changed behind
    its back (here through /proc/PID/mem; in real life, a swap or compression bug) is no number."""

    def corrupt(pids: list[int]) -> None:
        for pid in pids:
            maps = Path(f"/proc/{pid}/maps").read_text().splitlines()
            with open(f"/proc/{pid}/mem", "r+b", buffering=0) as mem:
                for line in maps:
                    fields = line.split()
                    start, end = (int(x, 16) for x in fields[0].split("-"))
                    if fields[1].startswith("rw") and len(fields) == 5 and end - start >= 1 << 20:
                        for page in range(start, end, 4096):
                            mem.seek(page)
                            mem.write(b"\xde\xad\xbe\xef\xde\xad\xbe\xef")

    proc = cycle("--iterations=200")
    out, err = while_it_runs(proc, corrupt)
    assert proc.returncode == 1, out[-500:]
    assert re.search(r"app \d+: a page of its memory came back changed \(page \d+\)", err), err


def test_a_crashed_app_starts_cold_again_and_the_cycle_goes_on() -> None:
    proc = cycle("--iterations=30")
    out, err = while_it_runs(proc, lambda pids: os.kill(pids[0], signal.SIGABRT))
    assert proc.returncode == 0, err
    doc = json.loads(out)
    entry = doc["benchmarks"][0]
    notes = [n["text"] for n in doc["context"]["benchlab"]["notes"]]
    assert any("1 crashed" in n for n in notes), notes
    assert entry["kills"] == 0, "a crash is no kill"
    assert entry["launches_cold"] > 4, "the crashed app came back as a cold start"


def test_a_directory_in_memory_is_refused_before_anything_runs(tmp_path: Path) -> None:
    shm = Path("/dev/shm")
    proc = subprocess.run(
        [probe_path(), "memory.app_cycle", f"--dir={shm}", "--check", "--format", "json"], capture_output=True, text=True
    )
    assert proc.returncode == 1
    assert "is on tmpfs" in json.loads(proc.stdout)["benchlab"]["error"]


def test_a_killed_experiment_leaves_no_app_or_cgroup_behind(tmp_path: Path) -> None:
    """The apps die with their controller, and the per-app cgroups inside a dead run's cgroup go
    with it when the next experiment clears what the killed one left."""
    options = ", ".join(f"{k} = {json.dumps(v)}" for k, v in {**TINY, "iterations": 5000}.items())
    spec = tmp_path / "long.toml"
    spec.write_text(
        f'name = "long"\nblocks = 2\ntimeout = 600\n[[workloads]]\nname = "cycle"\nbuiltin = "memory.app_cycle"\n'
        f'options = {{ {options} }}\n[[variants]]\nname = "a"\n[[variants]]\nname = "b"\n'
    )
    proc = subprocess.Popen(
        [BENCHLAB, "run", str(spec)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    deadline = time.monotonic() + 60
    while not app_cgroups() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert app_cgroups(), "the cycle made a cgroup per app"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 10
    while apps_alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not apps_alive(), "every app dies with its controller"
    cli("compare", "--cmd", "true", "-V", "a", "-n", "2", check=True)  # the next experiment clears what was left
    assert not app_cgroups()


def app_cgroups() -> list[Path]:
    parent = run_cgroup_parent()[0]
    return [p for p in Path(parent).glob("run-*/app-*") if p.is_dir()] if parent else []


def apps_alive() -> list[int]:
    alive = []
    for task in Path("/proc").iterdir():
        with contextlib.suppress(OSError):  # a process that ends while it is looked at
            if task.name.isdigit() and (task / "comm").read_text().startswith("app-"):
                alive.append(int(task.name))
    return alive
