"""The runner with an injected executor, clock and journal: no real process, no real timing."""

from __future__ import annotations

import itertools
import math
import random
from pathlib import Path

import pytest

from benchlab.analysis.analyze import analyze
from benchlab.errors import EnvironmentProblem, Interrupted, SpecError, StoreError, WorkloadFailed
from benchlab.measure.process import Finished, Launch, Usage, finished_from_account
from benchlab.runner import Prepared, Runner
from benchlab.spec.validate import spec_from_dict
from benchlab.store import Store
from benchlab.variants.knobs import Restoration
from tests.unit.test_probe_protocol import ACCOUNT

HOST = {"hostname": "fake", "kernel": "test"}


def usage(wall: float) -> Usage:
    return Usage(wall, wall / 2, wall / 10, 1000, 10, 0, 1, 1)


class FakeExecutor:
    """Wall time from the variant's FAKE_WALL; FAKE_FAIL makes the process exit 3."""

    def __init__(self, interrupt_after: int | None = None) -> None:
        self.launches: list[Launch] = []
        self.interrupt_after = interrupt_after

    def run(self, launch: Launch) -> Finished:
        if self.interrupt_after is not None and len(self.launches) == self.interrupt_after:
            raise KeyboardInterrupt
        self.launches.append(launch)
        if launch.env.get("FAKE_FAIL"):
            return Finished(exit_code=3, signal=None, timed_out=False, usage=usage(0.1), stderr=b"boom\n")
        return Finished(exit_code=0, signal=None, timed_out=False, usage=usage(self.wall(launch)))

    def wall(self, launch: Launch) -> float:
        return float(launch.env.get("FAKE_WALL", "1.0"))


class AccountExecutor(FakeExecutor):
    """Reads a launcher's account of every run as the real executors do (`finished_from_account`)."""

    def __init__(self, account: dict[str, object]) -> None:
        super().__init__()
        self.account = account

    def run(self, launch: Launch) -> Finished:
        self.launches.append(launch)
        return finished_from_account(dict(self.account), launch, False, b"", b"", None)


class FakeJournal:
    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, str]]] = []

    def ensure_clean(self) -> None:
        pass

    def apply(self, knobs: dict[str, str]) -> None:
        self.events.append(("apply", dict(knobs)))

    def restore(self) -> Restoration:
        self.events.append(("restore", {}))
        return Restoration()


def spec(**extra: object) -> Prepared:
    data = {
        "name": "fake",
        "blocks": 6,
        "workloads": [{"name": "t", "command": ["true"]}],
        "variants": [{"name": "a", "env": {"FAKE_WALL": "1.0"}}, {"name": "b", "env": {"FAKE_WALL": "1.1"}}],
        **extra,
    }
    return Prepared.from_spec(spec_from_dict(data))


def runner(store: Store, executor: FakeExecutor, journal: FakeJournal | None = None) -> Runner:
    clock = itertools.count(1000.0, 0.5)
    return Runner(store, executor=executor, clock=lambda: next(clock), journal=journal or FakeJournal(), host=HOST)  # type: ignore[arg-type]


def test_runs_are_planned_interleaved_stored_and_judged(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "r.db"))
    executor = FakeExecutor()
    exp = runner(store, executor).run(spec(warmup=1, blocks=10))
    order = [launch.env["FAKE_WALL"] for launch in executor.launches]
    assert len(order) == 2 + 20
    assert order[2:4] != order[4:6]  # ABBA after the warm-up round
    data = store.load(exp, every_record=True)
    assert sum(r.warmup for r in data.records) == 2
    (wall,) = [r for r in analyze(data).rows if r.metric == "wall"]
    assert wall.verdict == "worse" and wall.change == pytest.approx(0.1)
    assert (data.records[0].started_at, data.records[0].ended_at) == (1000.5, 1001.0)  # the injected clock


def test_failures_are_stored_with_exit_code_and_tail(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "r.db"))
    prepared = spec(variants=[{"name": "a"}, {"name": "bad", "env": {"FAKE_FAIL": "1"}}])
    exp = runner(store, FakeExecutor()).run(prepared)
    failed = [r for r in store.load(exp).records if r.status != "ok"]
    assert len(failed) == 6 and {r.variant for r in failed} == {"bad"}
    assert failed[0].exit_code == 3 and failed[0].stderr_tail == "boom"


def test_resume_skips_stored_runs_and_refuses_a_changed_spec(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "r.db"))
    first = FakeExecutor(interrupt_after=5)
    with pytest.raises(Interrupted, match="5 of 12"):
        runner(store, first).run(spec())
    again = FakeExecutor()
    runner(store, again).run(spec(), resume=True)
    assert len(again.launches) == 7
    with pytest.raises(StoreError, match="already exists"):
        runner(store, FakeExecutor()).run(spec())
    with pytest.raises(SpecError, match="changed"):
        runner(store, FakeExecutor()).run(spec(seed=7), resume=True)


def test_knobs_are_applied_before_and_restored_after_every_run(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "r.db"))
    journal = FakeJournal()
    executor = FakeExecutor(interrupt_after=3)
    prepared = spec()
    object.__setattr__(prepared.variants["b"], "knobs", {"/proc/sys/vm/stat_interval": "5"})
    with pytest.raises(Interrupted):
        runner(store, executor, journal).run(prepared)
    kinds = [kind for kind, _ in journal.events]
    assert kinds == ["apply", "restore"] * 4  # the interrupted fourth run is restored too
    assert {"/proc/sys/vm/stat_interval": "5"} in [knobs for _, knobs in journal.events]


def test_a_workload_that_cannot_start_is_a_failed_run(tmp_path: Path) -> None:
    class Broken(FakeExecutor):
        def run(self, launch: Launch) -> Finished:
            raise WorkloadFailed("cannot start true: Permission denied")

    store = Store(str(tmp_path / "r.db"))
    exp = runner(store, Broken()).run(spec(blocks=2))
    assert {r.status for r in store.load(exp, every_record=True).records} == {"failed"}


class NotedProgress:
    def __init__(self) -> None:
        self.notes: list[str] = []

    def start(self, total: int, done: int) -> None:
        pass

    def advance(self, run: object, status: str) -> None:
        pass

    def note(self, text: str) -> None:
        self.notes.append(text)


class NoPmuExecutor(FakeExecutor):
    """Every run comes back with software counters only and the launcher's note."""

    def run(self, launch: Launch) -> Finished:
        self.launches.append(launch)
        plain = usage(1.0)
        counted = Usage(**{**plain.__dict__, "counters": {"task_clock_ns": 5e8, "page_faults": 10.0},
                           "counters_note": "hardware counters unavailable (No such file or directory)"})  # fmt: skip
        return Finished(exit_code=0, signal=None, timed_out=False, usage=counted)


def test_missing_perf_counters_are_said_once_and_software_ones_are_kept(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "r.db"))
    progress = NotedProgress()
    clock = itertools.count(1000.0, 0.5)
    prepared = spec(workloads=[{"name": "t", "command": ["true"], "perf_counters": True}])
    executor = NoPmuExecutor()
    exp = Runner(store, executor=executor, clock=lambda: next(clock), journal=FakeJournal(), progress=progress,  # type: ignore[arg-type]
                 host=HOST).run(prepared)  # fmt: skip
    assert all(launch.perf_counters for launch in executor.launches)
    assert progress.notes == ["hardware counters unavailable (No such file or directory)"]
    rows = {r.metric: r for r in analyze(store.load(exp)).rows}
    assert rows["task_clock"].median == 0.5 and rows["task_clock"].direction == "none" and "ipc" not in rows


class JitteryExecutor(FakeExecutor):
    """FAKE_WALL times a seeded lognormal jitter of FAKE_NOISE (default 0.1%)."""

    def __init__(self) -> None:
        super().__init__()
        self.rng = random.Random(3)

    def wall(self, launch: Launch) -> float:
        return super().wall(launch) * math.exp(self.rng.gauss(0, float(launch.env.get("FAKE_NOISE", "0.001"))))


def sequential_run(store: Store, prepared: Prepared, *, resume: bool = False) -> tuple[list[str], JitteryExecutor]:
    executor, notes = JitteryExecutor(), NotedProgress()
    clock = itertools.count(1000.0, 0.5)
    run = Runner(store, executor=executor, clock=lambda: next(clock), journal=FakeJournal(), host=HOST, progress=notes)  # type: ignore[arg-type]
    run.run(prepared, resume=resume, decided=lambda exp: not analyze(store.load(exp)).undecided())
    return notes.notes, executor


def test_until_decided_stops_at_the_first_look_that_decides(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "s.db"))
    doubled = [{"name": "a", "env": {"FAKE_WALL": "1.0"}}, {"name": "b", "env": {"FAKE_WALL": "2.0"}}]
    notes, executor = sequential_run(store, spec(variants=doubled, until_decided={"min_blocks": 3, "max_blocks": 20}))
    assert len(executor.launches) == 6 and "decided after 3 blocks" in notes[-1]
    (wall,) = [r for r in analyze(store.load(store.require_experiment("fake"))).rows if r.metric == "wall"]
    assert wall.verdict == "worse" and wall.test == "t (parametric)"


def test_until_decided_ends_unclear_when_the_budget_runs_out(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "s.db"))
    noisy = [{"name": "a", "env": {"FAKE_NOISE": "0.3"}}, {"name": "b", "env": {"FAKE_NOISE": "0.3"}}]
    notes, executor = sequential_run(store, spec(variants=noisy, until_decided={"min_blocks": 3, "max_blocks": 5}))
    assert len(executor.launches) == 10 and "budget of 5 blocks ran out" in notes[-1]
    (wall,) = [r for r in analyze(store.load(store.require_experiment("fake"))).rows if r.metric == "wall"]
    assert wall.verdict in ("unclear", "same")


def test_resume_reuses_stored_blocks_and_may_turn_sequential(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "s.db"))
    doubled = [{"name": "a", "env": {"FAKE_WALL": "1.0"}}, {"name": "b", "env": {"FAKE_WALL": "2.0"}}]
    runner(store, JitteryExecutor()).run(spec(variants=doubled, blocks=3))
    _, executor = sequential_run(store, spec(variants=doubled, until_decided=True), resume=True)
    assert executor.launches == []  # the three stored blocks already decide it
    assert store.require_experiment("fake").spec_document["until_decided"] == {"min_blocks": 3, "max_blocks": 40}
    with pytest.raises(SpecError, match="changed"):
        sequential_run(store, spec(variants=doubled[:1] + [{"name": "b"}], until_decided=True), resume=True)


def test_a_sequential_experiment_stays_sequential_on_resume_and_its_budget_cannot_shrink(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "s.db"))
    noisy = [{"name": "a", "env": {"FAKE_NOISE": "0.3"}}, {"name": "b", "env": {"FAKE_NOISE": "0.3"}}]
    first = JitteryExecutor()
    first.interrupt_after = 7
    clock = itertools.count(1000.0, 0.5)
    with pytest.raises(Interrupted):
        Runner(store, executor=first, clock=lambda: next(clock), journal=FakeJournal(), host=HOST).run(  # type: ignore[arg-type]
            spec(variants=noisy, until_decided={"min_blocks": 3, "max_blocks": 5}),
            decided=lambda exp: not analyze(store.load(exp)).undecided(),
        )
    notes, executor = sequential_run(store, spec(variants=noisy), resume=True)  # no --until-decided this time
    assert store.require_experiment("fake").spec_document["until_decided"] == {"min_blocks": 3, "max_blocks": 5}
    assert len(executor.launches) == 10 - 7 and "budget of 5 blocks" in notes[-1]
    with pytest.raises(SpecError, match="not lower it"):
        sequential_run(store, spec(variants=noisy, until_decided={"min_blocks": 3, "max_blocks": 4}), resume=True)


def test_an_account_without_its_wall_stops_the_runner_and_nothing_is_stored(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "r.db"))
    exp = runner(store, AccountExecutor(ACCOUNT)).run(spec(blocks=2))
    data = store.load(exp, every_record=True)
    assert [r.status for r in data.records] == ["ok"] * 4
    assert {values["wall"] for values in data.run_values().values()} == {0.0015}  # the account as read
    broken = AccountExecutor({k: v for k, v in ACCOUNT.items() if k != "wall_ns"})
    with pytest.raises(EnvironmentProblem, match="malformed account: wall_ns: Field required"):
        runner(store, broken).run(spec(name="broken", blocks=2))
    assert len(broken.launches) == 1
    assert store.find_experiment("broken") is None  # nothing of it stored, least of all a run of wall 0
