"""One launcher serving an experiment's runs (`benchlab-launch --serve`, measure/served.py): each
run keeps what a one-shot launch guarantees, and nothing outlives the run or the experiment."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchlab.errors import WorkloadFailed
from benchlab.measure.cgroup import run_cgroup_parent
from benchlab.measure.process import Executor, Launch, LocalExecutor
from benchlab.measure.served import ServedExecutor
from tests.hostile.test_machine import leftovers, settle

pytestmark = pytest.mark.serial  # cgroups

root_only = pytest.mark.skipif(os.geteuid() != 0, reason="a run's cgroup needs root")


@pytest.fixture
def served() -> Iterator[ServedExecutor]:
    with ServedExecutor() as executor:
        yield executor


def launch(*argv: str, timeout: float = 60, **fields: object) -> Launch:
    return Launch(argv=argv, env=dict(os.environ), timeout=timeout, **fields)  # type: ignore[arg-type]


def launchers() -> list[int]:
    """Live launchers this process started."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            status = dict(line.split(":\t", 1) for line in (proc / "status").read_text().splitlines() if ":\t" in line)
        except OSError:
            continue
        mine = status.get("PPid", "").strip() == str(os.getpid()) and status.get("Name", "").strip() == "benchlab-launch"
        if mine and status.get("State", "").split()[0] != "Z":
            found.append(int(proc.name))
    return found


def test_one_launcher_serves_every_run_each_with_its_own_output_and_status(served: ServedExecutor) -> None:
    first = served.run(launch("sh", "-c", "echo out $PPID; echo err >&2; exit 3"))
    second = served.run(launch("sh", "-c", "echo $PPID"))
    assert first.exit_code == 3 and not first.ok and first.stderr == b"err\n"
    parent = first.stdout.split()[1]
    assert second.ok and second.stdout == parent + b"\n" and second.stderr == b""  # the first run's output is gone
    assert launchers() == [int(parent)]
    assert first.usage.wall_s > 0 and first.usage.max_rss_kib > 0 and first.usage.mapped


def test_a_served_run_has_its_own_environment_folder_and_cpus(served: ServedExecutor, tmp_path: Path) -> None:
    show = "import os; print(os.getcwd(), sorted(os.sched_getaffinity(0)), os.environ.get('BENCHLAB_TEST'), sep='|')"
    env = {"PATH": os.environ["PATH"], "BENCHLAB_TEST": "set"}
    pinned = Launch(argv=(sys.executable, "-c", show), env=env, cwd=str(tmp_path), cpus=frozenset({0}), timeout=60)
    assert served.run(pinned).stdout.decode().strip().split("|") == [str(tmp_path), "[0]", "set"]
    plain = served.run(launch(sys.executable, "-c", show)).stdout.decode().strip().split("|")  # none named: benchlab's own
    assert plain == [os.getcwd(), str(sorted(os.sched_getaffinity(0))), "None"]


def test_a_served_run_past_its_timeout_is_killed_with_its_tree_and_the_launcher_serves_on(
    served: ServedExecutor,
) -> None:
    marker = f"bl-served-timeout-{os.getpid()}"
    done = served.run(launch("sh", "-c", f"sh -c 'sleep 60; true' {marker} & sleep 60; true", marker, timeout=0.5))
    assert done.timed_out and not done.ok and done.usage.wall_s == 0.5
    settle(lambda: leftovers(marker))
    assert served.run(launch("true")).ok


@root_only
def test_what_a_served_run_leaves_in_another_session_dies_with_its_cgroup(served: ServedExecutor) -> None:
    if run_cgroup_parent()[0] is None:
        pytest.skip(run_cgroup_parent()[1])
    marker = f"bl-served-setsid-{os.getpid()}"
    done = served.run(launch("sh", "-c", f"setsid sh -c 'sleep 60; true' {marker} &"))
    assert done.ok and done.usage.tree_peak_kib
    settle(lambda: leftovers(marker))


def test_a_launcher_that_dies_fails_its_run_and_the_next_run_gets_a_new_one(served: ServedExecutor) -> None:
    marker = f"bl-served-killed-{os.getpid()}"
    with pytest.raises(WorkloadFailed, match="the launcher reported nothing"):
        served.run(launch("sh", "-c", "kill -9 $PPID; sleep 60; true", marker))
    settle(lambda: leftovers(marker))  # the workload asked to die with its launcher
    again = served.run(launch("sh", "-c", "echo $PPID"))
    assert again.ok and launchers() == [int(again.stdout)]


def test_an_interrupt_during_a_served_run_ends_the_launcher_and_the_run_tree(served: ServedExecutor) -> None:
    marker = f"bl-served-interrupt-{os.getpid()}"
    launcher = int(served.run(launch("sh", "-c", "echo $PPID")).stdout)

    def interrupt(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.5)
        with pytest.raises(KeyboardInterrupt):
            served.run(launch("sh", "-c", f"sh -c 'sleep 60; true' {marker} & sleep 60; true", marker))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert launchers() == []
    settle(lambda: leftovers(marker))
    parent = run_cgroup_parent()[0]
    assert parent is None or not (Path(parent) / f"run-{launcher}").exists()


def test_the_launcher_ends_with_the_experiment(served: ServedExecutor) -> None:
    assert served.run(launch("true")).ok and len(launchers()) == 1
    served.close()
    assert launchers() == []
    assert served.run(launch("true")).ok  # a later experiment starts another


@pytest.mark.parametrize("executor", [LocalExecutor, ServedExecutor])
def test_the_workload_starts_with_sigpipe_at_its_default(executor: type[Executor]) -> None:
    """Rust ignores SIGPIPE, and an exec keeps a signal ignored: the launcher puts it back, or
    `producer | head` would see write errors instead of dying as it does outside benchlab."""
    runner = executor()
    try:
        done = runner.run(launch("sh", "-c", "kill -PIPE $$; exit 3"))
    finally:
        if isinstance(runner, ServedExecutor):
            runner.close()
    assert done.signal == signal.SIGPIPE


def test_a_served_run_in_a_missing_folder_is_refused_and_the_launcher_serves_on(served: ServedExecutor) -> None:
    with pytest.raises(WorkloadFailed, match="cannot start true: cannot change to folder /nonexistent"):
        served.run(launch("true", cwd="/nonexistent"))
    assert served.run(launch("true")).ok


def test_a_run_whose_environment_is_no_utf8_still_runs_as_given(served: ServedExecutor) -> None:
    raw = os.fsdecode(b"caf\xe9")  # as Python reads such bytes from the environment
    done = served.run(Launch(argv=("sh", "-c", 'printf %s "$RAW"'), env={**os.environ, "RAW": raw}, timeout=60))
    assert done.ok and done.stdout == b"caf\xe9"
