"""Machine state: knobs owned by one experiment at a time, a journal `restore` does not trust,
and processes of a run that never outlive it (timeouts, steps, background loads, `kill -9`)."""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchlab.measure.cgroup import run_cgroup_parent
from tests.conftest import BENCHLAB, cli, signals_as_at_a_terminal
from tests.hostile.conftest import refused

pytestmark = pytest.mark.serial  # knobs, cgroups and huge pages of this machine

root_only = pytest.mark.skipif(os.geteuid() != 0, reason="knobs, cgroups and mounts need root")
KNOB = "/proc/sys/vm/dirty_expire_centisecs"  # harmless: how old dirty data gets before writeback (another test's knob than test_experiments')


def leftovers(marker: str) -> list[str]:
    """Command lines of live processes carrying `marker` (zombies are dead already)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            argv = (proc / "cmdline").read_bytes()
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in argv and state != "Z":
            found.append(argv.replace(b"\0", b" ").decode(errors="replace"))
    return found


def run_cgroups() -> list[str]:
    parent = run_cgroup_parent()[0]
    return sorted(p.name for p in Path(parent).iterdir() if p.name.startswith("run-")) if parent else []


def settle(check: object, seconds: float = 5.0) -> None:
    """Waits until `check()` is falsy (processes dying after their parent): asserts it became so."""
    deadline = time.monotonic() + seconds
    while (found := check()) and time.monotonic() < deadline:  # type: ignore[operator]
        time.sleep(0.05)
    assert not found, found


@pytest.fixture
def knob() -> Iterator[str]:
    """The test knob, put back whatever happens."""
    original = Path(KNOB).read_text().strip()
    yield original
    Path(KNOB).write_text(original)


def knob_spec(path: Path, name: str, value: str, *, blocks: int = 3, extra: str = "", command: str = "sleep 0.2") -> Path:
    path.write_text(f"""
name = "{name}"
blocks = {blocks}
[[workloads]]
name = "w"
command = "{command}"
{extra}
[[variants]]
name = "base"
[[variants]]
name = "knob"
knobs = {{ "{KNOB}" = "{value}" }}
""")
    return path


# --- knobs a spec names ------------------------------------------------------------------------


@root_only
@pytest.mark.parametrize("path", ["/proc/sys/vm/compact_memory", "/proc/sys/vm/drop_caches"])
def test_a_write_only_knob_is_refused_it_could_never_be_restored(tmp_path: Path, path: str) -> None:
    spec = tmp_path / "wo.toml"
    spec.write_text(
        f'name = "wo"\n[[workloads]]\nname = "w"\ncommand = "true"\n[[variants]]\nname = "a"\nknobs = {{ "{path}" = "1" }}\n'
    )
    refused("run", str(spec), code=2, mentions="variants[0].knobs")


@root_only
def test_a_knob_the_kernel_refuses_drops_the_experiment_it_created_and_restores_nothing_changed(
    tmp_path: Path, knob: str
) -> None:
    cli("compare", "--cmd", "true", "-V", "a", "-n", "2", "--name", "first", check=True)  # the database and host exist
    spec = knob_spec(tmp_path / "bad.toml", "burnt", "not-a-number")
    refused("run", str(spec), code=2, mentions=f"the kernel refused 'not-a-number' for {KNOB}")
    assert Path(KNOB).read_text().strip() == knob
    proc = cli("run", str(knob_spec(tmp_path / "good.toml", "burnt", str(int(knob) + 1))), "--format", "json")
    assert proc.returncode == 0, proc.stderr  # the name was not burnt
    assert Path(KNOB).read_text().strip() == knob


# --- two experiments at once -------------------------------------------------------------------


@root_only
@pytest.mark.slow
def test_a_second_knob_experiment_is_refused_naming_the_first_and_the_knob_ends_where_it_was(tmp_path: Path, knob: str) -> None:
    release = tmp_path / "release"  # the holder's runs last until the checks are done, however long they take
    holding = f"sh -c 'until [ -e {release} ]; do sleep 0.05; done'"
    first = knob_spec(tmp_path / "a.toml", "holder", str(int(knob) + 7), blocks=6, command=holding)
    second = knob_spec(tmp_path / "b.toml", "second", str(int(knob) + 9))
    plain = tmp_path / "plain.toml"
    plain.write_text('name = "plain"\n[[workloads]]\nname = "w"\ncommand = "true"\n[[variants]]\nname = "a"\n')
    proc = subprocess.Popen([BENCHLAB, "run", str(first)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        notes = Path(os.environ["BENCHLAB_STATE_DIR"]) / "running"
        settle(lambda: not list(notes.glob(f"{proc.pid}.json")), 30)
        for spec in (second, plain):  # another knob experiment, and one whose runs would see the knob
            other = cli("run", str(spec))
            assert other.returncode == 3, other.stderr
            assert "'holder'" in other.stderr and f"pid {proc.pid}" in other.stderr, other.stderr
        busy = cli("restore")  # would write the running experiment's originals under it
        assert busy.returncode == 3 and "'holder'" in busy.stderr, busy.stderr
        assert proc.poll() is None  # every check above met the holder running
    finally:
        release.touch()
        _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert Path(KNOB).read_text().strip() == knob
    runs = sqlite3.connect(os.environ["BENCHLAB_DB"]).execute("select count(*) from run").fetchone()[0]
    assert runs == 12  # the holder's, and no other's
    cli("run", str(second), check=True)  # the machine is free again
    assert Path(KNOB).read_text().strip() == knob


# --- the journal, as restore finds it ------------------------------------------------------------


def write_journal(*entries: object, raw: str = "") -> Path:
    path = Path(os.environ["BENCHLAB_STATE_DIR"]) / "knobs.journal"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(e) + "\n" for e in entries) + raw)
    return path


HOSTILE_ENTRIES = {
    "outside /sys": {"path": "/etc/hostname", "original": "pwned"},
    "dot-dot": {"path": "/proc/sys/../../etc/hostname", "original": "pwned"},
    "relative": {"path": "proc/sys/vm/swappiness", "original": "1"},
    "vanished": {"path": "/sys/class/net/benchlab-gone0/mtu", "original": "1500"},
    "NUL": {"path": "/proc/sys/vm/swappiness\u0000x", "original": "1"},
    "not a string": {"path": ["/proc/sys/vm/swappiness"], "original": "1"},
    "no original": {"path": "/proc/sys/vm/swappiness"},
    "a list": ["/proc/sys/vm/swappiness", "1"],
    "a number": 7,
    "NUL value": {"path": KNOB, "original": "1\u0000"},
    "read-only even for root": {"path": "/proc/sys/kernel/osrelease", "original": "6.6.6-pwned"},
    "a value the kernel refuses": {"path": KNOB, "original": "not-a-number"},
    "two spellings of one knob": {"path": KNOB.replace("/vm/", "//vm/"), "original": "1"},
}


@root_only
@pytest.mark.parametrize("case", sorted(HOSTILE_ENTRIES))
def test_restore_refuses_a_hostile_entry_restores_the_rest_and_clears_the_journal(case: str, knob: str) -> None:
    Path(KNOB).write_text(str(int(knob) + 3))  # left changed by a killed experiment
    hostname = Path("/etc/hostname").read_text() if Path("/etc/hostname").exists() else None
    journal = write_journal({"path": KNOB, "original": knob}, HOSTILE_ENTRIES[case], raw='{"path": "/proc/sys/vm/sw')
    proc = cli("restore")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert f"restored {KNOB} = {knob}" in proc.stdout and "skipped" in proc.stdout, proc.stdout
    assert Path(KNOB).read_text().strip() == knob
    assert (Path("/etc/hostname").read_text() if hostname is not None else None) == hostname
    assert not journal.exists()  # nothing left that could ever be restored: later experiments are not blocked
    cli("compare", "--cmd", "true", "-V", "a", "-n", "2", check=True)


@root_only
def test_a_journal_of_vanished_knobs_only_is_cleared_with_a_note_and_blocks_nothing() -> None:
    write_journal(*({"path": f"/sys/class/net/benchlab-gone{i}/mtu", "original": "1500"} for i in range(3)))
    blocked = cli("compare", "--cmd", "true", "-V", "a", "-n", "2")
    assert blocked.returncode == 3 and "benchlab restore" in blocked.stderr, blocked.stderr
    proc = cli("restore", check=True)
    assert proc.stdout.count("skipped") == 3 and "no such knob" in proc.stdout, proc.stdout
    cli("compare", "--cmd", "true", "-V", "a", "-n", "2", check=True)


@root_only
def test_a_line_that_is_no_entry_is_reported_and_dropped(knob: str) -> None:
    journal = write_journal({"path": KNOB, "original": knob}, raw="garbage ][ not json\n")
    blocked = cli("compare", "--cmd", "true", "-V", "a", "-n", "2")
    assert blocked.returncode == 3 and "2 journalled change(s)" in blocked.stderr, blocked.stderr  # every line counts
    proc = cli("restore", check=True)
    assert "garbage ][ not json" in proc.stdout and "malformed" in proc.stdout, proc.stdout
    assert not journal.exists()


@root_only
@pytest.mark.parametrize("planted", ["knobs.journal", "running"])
def test_a_symlink_planted_in_the_state_directory_never_makes_root_write_elsewhere(
    tmp_path: Path, knob: str, planted: str
) -> None:
    state = Path(os.environ["BENCHLAB_STATE_DIR"])
    (state / "running").mkdir(parents=True)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    if planted == "running":  # the note of the next holder, whose pid is not known: every likely one
        for pid in range(os.getpid(), os.getpid() + 400):
            (state / "running" / f"{pid}.json").symlink_to(victim)
    else:
        (state / planted).symlink_to(victim)
    proc = cli("run", str(knob_spec(tmp_path / "s.toml", "planted", str(int(knob) + 2))))
    assert "Traceback" not in proc.stderr, proc.stderr
    assert victim.read_text() == "precious\n"
    assert Path(KNOB).read_text().strip() == knob


@root_only
def test_restore_while_nothing_is_journalled_says_so() -> None:
    assert "nothing to restore" in cli("restore", check=True).stdout


@root_only
def test_a_full_state_directory_refuses_before_any_knob_changes(tmp_path: Path, knob: str) -> None:
    cli("compare", "--cmd", "true", "-V", "a", "-n", "2", "--name", "first", check=True)  # the database and host exist
    state = Path(os.environ["BENCHLAB_STATE_DIR"])
    state.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(state)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {mounted.stderr.decode().strip()}")
    try:
        fd = os.open(state / "filler", os.O_WRONLY | os.O_CREAT)
        with pytest.raises(OSError):
            while True:
                os.write(fd, b"x" * 4096)
        os.close(fd)
        spec = knob_spec(tmp_path / "full.toml", "full", str(int(knob) + 5))
        refused("run", str(spec), code=3, mentions=str(state))
        assert Path(KNOB).read_text().strip() == knob
        cli("compare", "--cmd", "true", "-V", "a", "-n", "2", check=True)  # which needs no journal
    finally:
        subprocess.run(["umount", str(state)], check=True)


# --- processes that die with the run -----------------------------------------------------------


def marker_spec(path: Path, marker: str, *, blocks: int, timeout: int = 60, knob: str | None = None) -> Path:
    knobs = f'knobs = {{ "{KNOB}" = "{knob}" }}' if knob else ""
    path.write_text(f"""
name = "{marker}"
blocks = {blocks}
timeout = {timeout}
[[workloads]]
name = "w"
command = ["sh", "-c", "sleep 0.4 & sleep 0.4; wait", "{marker}-run"]
setup = ["sh", "-c", "sleep 0.3 & sleep 0.3; wait", "{marker}-setup"]
clean = ["sh", "-c", "sleep 0.2 & sleep 0.2; wait", "{marker}-clean"]
[[variants]]
name = "loaded"
background = "sh -c 'sh -c \\"while :; do :; done\\" & while :; do :; done' {marker}-bg"
[[variants]]
name = "knob"
{knobs}
""")
    return path


@root_only
def test_a_run_past_its_timeout_leaves_no_process_and_no_cgroup(tmp_path: Path) -> None:
    spec = tmp_path / "t.toml"
    marker = f"bl-timeout-{os.getpid()}"
    spec.write_text(f"""
name = "slow"
blocks = 2
timeout = 1
[[workloads]]
name = "w"
command = ["sh", "-c", "sleep 60 & sleep 60; wait", "{marker}"]
[[variants]]
name = "a"
""")
    before = run_cgroups()
    proc = cli("run", str(spec), "--format", "json", timeout=120)  # failed runs: the report comes first
    statuses = {r["status"] for r in json.loads(proc.stdout)["failed_runs"]}
    assert statuses == {"timeout"}, proc.stdout[-2000:]
    settle(lambda: leftovers(marker))
    assert run_cgroups() == before


@root_only
def test_a_step_past_the_run_timeout_is_killed_with_its_tree(tmp_path: Path) -> None:
    marker = f"bl-step-{os.getpid()}"
    spec = tmp_path / "s.toml"
    spec.write_text(f"""
name = "stuck"
blocks = 2
timeout = 1
[[workloads]]
name = "w"
command = "true"
clean = ["sh", "-c", "sleep 60 & sleep 60; wait", "{marker}"]
[[variants]]
name = "a"
""")
    started = time.monotonic()
    proc = cli("run", str(spec), "--format", "json", timeout=120)
    assert time.monotonic() - started < 30 and proc.returncode == 5, proc.stderr
    failed = json.loads(proc.stdout)["failed_runs"]
    assert failed and all("the clean step" in r["message"] and "ran past 1 s" in r["message"] for r in failed), failed
    settle(lambda: leftovers(marker))


def test_a_workload_that_writes_a_lot_costs_the_runner_no_memory(tmp_path: Path) -> None:
    """300 MB on stdout and on stderr: the runner reads back only a tail of each (measured from a
    fresh interpreter, whose children's peak is the runner's alone)."""
    spec = tmp_path / "chatty.toml"
    spec.write_text("""
name = "chatty"
blocks = 2
[[workloads]]
name = "w"
command = ["sh", "-c", "head -c 300000000 /dev/zero; head -c 300000000 /dev/zero >&2; echo last words >&2; exit 3"]
[[variants]]
name = "a"
""")
    probe = (
        "import resource, subprocess, sys\n"
        f"p = subprocess.run([{BENCHLAB!r}, 'run', {str(spec)!r}, '--format', 'json'], capture_output=True, text=True)\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
        "print(p.stdout)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300, check=True).stdout
    max_rss_kib, report = out.split("\n", 1)
    assert int(max_rss_kib) < 250_000, f"the runner peaked at {int(max_rss_kib) // 1024} MiB"
    failed = json.loads(report)["failed_runs"]
    assert len(failed) == 2, failed
    assert all(f["message"] == "the workload exited with code 3" and f["stderr_tail"].endswith("last words") for f in failed)


@root_only
@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_kill_9_at_a_random_point_leaves_no_process_no_cgroup_and_resume_loses_nothing(
    tmp_path: Path, knob: str, seed: int
) -> None:
    marker = f"bl-k9-{os.getpid()}-{seed}"
    spec = marker_spec(tmp_path / "k.toml", marker, blocks=3, knob=str(int(knob) + 11))
    before = run_cgroups()
    proc = subprocess.Popen([BENCHLAB, "run", str(spec)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(random.Random(seed).uniform(0.5, 4.0))
    proc.kill()
    proc.wait()
    settle(lambda: leftovers(marker))  # the workload, its steps and the background load all died with the runner
    settle(lambda: sorted(set(run_cgroups()) - set(before)))
    cli("restore", check=True)
    assert Path(KNOB).read_text().strip() == knob
    resumed = cli("run", str(spec), "--resume", "--format", "json", timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    db = sqlite3.connect(os.environ["BENCHLAB_DB"])
    rows = db.execute("select variant_id, block, count(*) from run group by variant_id, block").fetchall()
    assert len(rows) == 6 and all(count == 1 for *_, count in rows), rows
    assert Path(KNOB).read_text().strip() == knob
    settle(lambda: leftovers(marker))


# --- signals: the first one stops benchlab, later ones never cut its clean-up short ---------------


@root_only
@pytest.mark.parametrize("gap", [0.0, 0.002, 0.02, 0.08])
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT])
def test_a_second_signal_during_clean_up_leaves_no_knob_changed_and_no_cgroup(
    tmp_path: Path, knob: str, signum: int, gap: float
) -> None:
    """Ctrl-C pressed twice, SIGTERM followed by another, a closed terminal: knobs written back,
    the run's cgroup removed, exit 130 and an honest message, whenever the second one lands."""
    marker = f"bl-sig-{os.getpid()}-{signum}-{int(gap * 1000)}"
    spec = marker_spec(tmp_path / "s.toml", marker, blocks=6, knob=str(int(knob) + 13))
    before = run_cgroups()
    proc = subprocess.Popen(
        [BENCHLAB, "run", str(spec)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=signals_as_at_a_terminal,
    )
    settle(lambda: Path(KNOB).read_text().strip() != str(int(knob) + 13), 60)
    time.sleep(random.Random(gap).uniform(0, 0.15))
    proc.send_signal(signum)
    time.sleep(gap)
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and err.strip().splitlines()[-1].startswith("benchlab: interrupted"), err
    assert Path(KNOB).read_text().strip() == knob
    assert not (Path(os.environ["BENCHLAB_STATE_DIR"]) / "knobs.journal").exists()
    settle(lambda: leftovers(marker))
    settle(lambda: sorted(set(run_cgroups()) - set(before)))


@pytest.mark.parametrize("delay", [0.08, 0.15, 0.3])
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_while_benchlab_starts_exits_130_in_one_line(delay: float, signum: int) -> None:
    """While benchlab starts and loads what its command uses (a few tenths of a second, imports
    of compiled extensions among them: a signal inside one waits for it to end); the interpreter's
    own first tens of milliseconds come before any of benchlab's code (see benchlab.interrupts)."""
    proc = subprocess.Popen([BENCHLAB, "list"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    time.sleep(delay)
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=60)
    if proc.returncode in (0, 4):  # it finished first (4: no database here yet): nothing to check
        return
    assert proc.returncode == 130, (proc.returncode, err)
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err


@root_only
def test_a_hang_up_ignored_already_stays_ignored_as_under_nohup(tmp_path: Path, knob: str) -> None:
    spec = knob_spec(tmp_path / "n.toml", "nohup", str(int(knob) + 17), blocks=3)
    proc = subprocess.Popen(
        ["nohup", BENCHLAB, "run", str(spec)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=tmp_path
    )
    settle(lambda: Path(KNOB).read_text().strip() != str(int(knob) + 17), 60)
    proc.send_signal(signal.SIGHUP)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err  # it ran to the end
    assert Path(KNOB).read_text().strip() == knob


# --- the third batch: files root cannot write, odd state files, zombies ------------------------

READ_ONLY_SYSFS = "/sys/kernel/mm/transparent_hugepage/hpage_pmd_size"  # mode 0444: os.access says yes to root


@root_only
def test_a_knob_root_cannot_write_is_bad_input_and_blocks_nothing(tmp_path: Path) -> None:
    if not Path(READ_ONLY_SYSFS).exists():
        pytest.skip(f"{READ_ONLY_SYSFS} is not on this kernel")
    value = Path(READ_ONLY_SYSFS).read_text().strip()
    spec = tmp_path / "ro.toml"
    spec.write_text(
        f'name = "ro"\n[[workloads]]\nname = "w"\ncommand = "true"\n[[variants]]\nname = "a"\n'
        f'knobs = {{ "{READ_ONLY_SYSFS}" = "{value}" }}\n'
    )
    cli("compare", "--cmd", "true", "-V", "a", "-n", "2", "--name", "first", check=True)  # the database and host exist
    refused("run", str(spec), code=2, mentions="cannot be written, even by root")
    cli("compare", "--cmd", "true", "-V", "a", "-n", "2", check=True)  # no stale journal left behind
    write_journal({"path": READ_ONLY_SYSFS, "original": str(int(value) * 2)})
    proc = cli("restore")
    assert proc.returncode == 0 and "even by root" in proc.stdout, proc.stdout + proc.stderr


@root_only
def test_a_journal_that_is_a_named_pipe_is_refused_without_hanging() -> None:
    state = Path(os.environ["BENCHLAB_STATE_DIR"])
    state.mkdir(parents=True)
    os.mkfifo(state / "knobs.journal")
    for args in (["restore"], ["compare", "--cmd", "true", "-V", "a", "-n", "2"]):
        proc = cli(*args, timeout=30)
        assert proc.returncode == 3 and "not a regular file" in proc.stderr, proc.stderr


@root_only
def test_a_running_folder_that_is_a_symlink_is_never_followed(tmp_path: Path, knob: str) -> None:
    state = Path(os.environ["BENCHLAB_STATE_DIR"])
    state.mkdir(parents=True)
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious.json").write_text("{}")
    (state / "running").symlink_to(victim)
    proc = cli("run", str(knob_spec(tmp_path / "s.toml", "linked", str(int(knob) + 2))))
    assert proc.returncode == 3 and "symbolic link" in proc.stderr, proc.stderr
    assert [p.name for p in victim.iterdir()] == ["precious.json"]
    assert Path(KNOB).read_text().strip() == knob


def test_a_killed_launcher_not_yet_reaped_counts_as_dead(tmp_path: Path) -> None:
    """A zombie keeps its name until it is reaped: the runs it left must still be cleared."""
    from benchlab.measure.cgroup import _launcher_alive

    fake = tmp_path / "benchlab-launch"
    fake.symlink_to("/bin/sleep")
    proc = subprocess.Popen([str(fake), "60"])
    try:
        settle(lambda: Path(f"/proc/{proc.pid}/comm").read_text().strip() != "benchlab-launch")
        assert _launcher_alive(proc.pid)
        proc.kill()
        settle(lambda: Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z")
        assert not _launcher_alive(proc.pid)  # a zombie, comm and all
    finally:
        proc.wait()


@root_only
def test_a_read_only_state_directory_still_runs_and_restore_still_puts_knobs_back(knob: str) -> None:
    state = Path(os.environ["BENCHLAB_STATE_DIR"])
    state.mkdir(parents=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(state)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {mounted.stderr.decode().strip()}")
    try:
        subprocess.run(["mount", "-o", "remount,ro", str(state)], check=True)
        cli("compare", "--cmd", "true", "-V", "a", "-n", "2", check=True)  # no knobs: nothing to write there
        subprocess.run(["mount", "-o", "remount,rw", str(state)], check=True)
        write_journal({"path": KNOB, "original": knob})
        Path(KNOB).write_text(str(int(knob) + 4))  # left changed by a killed experiment
        subprocess.run(["mount", "-o", "remount,ro", str(state)], check=True)
        proc = cli("restore")
        assert proc.returncode == 3 and "Traceback" not in proc.stderr, proc.stderr
        assert "the knobs are back" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert Path(KNOB).read_text().strip() == knob
    finally:
        subprocess.run(["umount", str(state)], check=True)
