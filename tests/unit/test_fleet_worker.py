"""A worker's handling of one delivered task, without a broker: signatures, allow-lists, blocks
run once whatever the deliveries, attempts recorded for the driver."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from sqlalchemy.exc import OperationalError

from benchlab.errors import EnvironmentProblem
from benchlab.fleet.allowlist import AllowList, Refused
from benchlab.fleet.driver import missing_blocks
from benchlab.fleet.envelope import BlockTask, Forged, open_envelope, read_key, seal, signature
from benchlab.fleet.worker import BlockWorker, Later, Unfit, WorkerSettings
from benchlab.runner import Prepared, Runner, identity_digest
from benchlab.spec.validate import spec_from_dict
from benchlab.store import NewRun, Store, host_digest
from benchlab.store.records import ProfiledRun
from tests.unit.test_runner import FakeExecutor

KEY = b"k" * 32
TRUE = "/usr/bin/true"


def _spec(**extra: object) -> Prepared:
    raw = {
        "name": "fleet-exp",
        "blocks": 3,
        "warmup": 1,
        "workloads": [{"name": "t", "command": [TRUE]}, {"name": "u", "command": [TRUE, "x"]}],
        "variants": [{"name": "a"}, {"name": "b", "env": {"FAKE_WALL": "2.0"}}],
        **extra,
    }
    return Prepared.from_spec(spec_from_dict(raw, "test"))


def _worker(db: str, name: str = "w1", host: str = "h1", allow: AllowList | None = None) -> BlockWorker:
    allowed = allow or AllowList.of([TRUE], env=["FAKE_*"])  # the fake executor's variables
    settings = WorkerSettings(pool="lab", db=db, key=KEY, allow=allowed, name=name)
    return BlockWorker(settings, fingerprint=lambda: {"hostname": host, "kernel": "test"}, executor=FakeExecutor())


@pytest.fixture
def stored(tmp_path: Path) -> tuple[str, Prepared]:
    db = str(tmp_path / "fleet.db")
    prepared = _spec()
    Runner(Store(db), executor=FakeExecutor()).open_experiment(prepared, resume=False)
    return db, prepared


def _envelope(db: str, workload: str = "t", block: int = 0, pool: str = "lab", key: bytes = KEY) -> dict[str, object]:
    exp = Store(db).require_experiment("fleet-exp")
    return seal(BlockTask(pool, exp.name, identity_digest(exp.spec_document), workload, block), key)


def _runs(db: str) -> list[tuple[str, str, int, bool, int]]:
    store = Store(db)
    runs = store.load(store.require_experiment("fleet-exp")).runs
    return sorted(
        (runs.workloads[w], runs.variants[v], int(b), bool(warm), int(h))
        for w, v, b, warm, h in zip(runs.workload, runs.variant, runs.block, runs.warmup, runs.host_id, strict=True)
    )


def test_a_task_runs_its_block_and_the_hosts_warm_ups_once(stored: tuple[str, Prepared]) -> None:
    db, _ = stored
    worker = _worker(db)
    assert worker.handle(_envelope(db, "t", 1)) == "done"
    assert _runs(db) == [("t", "a", 0, True, 1), ("t", "a", 1, False, 1), ("t", "b", 0, True, 1), ("t", "b", 1, False, 1)]
    assert worker.handle(_envelope(db, "t", 2)) == "done"  # warm-ups are stored for this host: not again
    assert len(_runs(db)) == 6
    assert worker.handle(_envelope(db, "t", 2)) == "skipped"  # a redelivery of a stored block
    assert len(_runs(db)) == 6
    progress = Store(db).fleet_progress(Store(db).require_experiment("fleet-exp"))
    assert progress.runs == 4 and progress.per_worker == {"w1": 6} and not progress.running
    assert progress.complete == {("t", 1), ("t", 2)}


def test_a_block_left_half_done_on_this_host_resumes_where_it_stopped(stored: tuple[str, Prepared]) -> None:
    db, prepared = stored
    store = Store(db)
    exp = store.require_experiment("fleet-exp")
    host = store.host_id({"hostname": "h1", "kernel": "test"})
    for variant, warmup in (("a", True), ("b", True), ("a", False)):
        store.record_run(exp, NewRun(host_id=host, workload="t", variant=variant, block=0, warmup=warmup, position=0, status="ok", started_at=0, ended_at=1))  # fmt: skip
    worker = _worker(db, name="w2")
    assert worker.handle(_envelope(db, "t", 0)) == "done"
    assert _runs(db).count(("t", "a", 0, False, host)) == 1
    assert ("t", "b", 0, False, host) in _runs(db)
    assert Store(db).fleet_progress(exp).per_worker == {"w2": 1}


def test_a_guests_runs_complete_a_block_with_its_machines_native_runs(stored: tuple[str, Prepared]) -> None:
    db, _ = stored
    store = Store(db)
    exp = store.require_experiment("fleet-exp")
    machine = {"hostname": "h1", "kernel": "test"}
    native = store.host_id(machine)
    guest = store.host_id({"hostname": "h1-guest", "kernel": "6.1", "guest_of": host_digest(machine)})
    strangers_guest = store.host_id({"hostname": "h2-guest", "kernel": "6.1", "guest_of": host_digest({"hostname": "h2"})})
    run = {"workload": "t", "warmup": False, "position": 0, "status": "ok", "started_at": 0, "ended_at": 1}
    store.record_run(exp, NewRun(host_id=native, variant="a", block=0, **run))  # type: ignore[arg-type]
    store.record_run(exp, NewRun(host_id=strangers_guest, variant="b", block=0, **run))  # type: ignore[arg-type]
    assert not store.block_complete(exp, "t", 0)  # another machine's guest pairs with nothing here
    store.record_run(exp, NewRun(host_id=guest, variant="b", block=0, **run))  # type: ignore[arg-type]
    assert store.block_complete(exp, "t", 0) and store.complete_blocks(exp) == {("t", 0)}


def test_another_host_runs_a_half_done_block_whole_so_pairs_stay_on_one_machine(stored: tuple[str, Prepared]) -> None:
    db, _ = stored
    store = Store(db)
    exp = store.require_experiment("fleet-exp")
    dead = store.host_id({"hostname": "h-dead", "kernel": "test"})
    store.record_run(exp, NewRun(host_id=dead, workload="t", variant="a", block=0, warmup=False, position=0, status="ok", started_at=0, ended_at=1))  # fmt: skip
    assert missing_blocks(store, exp, _spec()) == [("t", 0), ("u", 0), ("t", 1), ("u", 1), ("t", 2), ("u", 2)]
    assert not store.block_complete(exp, "t", 0)  # one variant of two, on the dead host
    assert _worker(db, host="h2").handle(_envelope(db, "t", 0)) == "done"
    here = [r for r in _runs(db) if r[4] != dead and not r[3]]
    assert here == [("t", "a", 0, False, here[0][4]), ("t", "b", 0, False, here[0][4])]
    assert ("t", 0) in store.complete_blocks(exp)
    assert store.block_complete(exp, "t", 0) and not store.block_complete(exp, "u", 0)


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (lambda e: {**e, "hmac": "0" * 64}, "bad signature"),
        (lambda e: {"body": {**e["body"], "block": 2}, "hmac": e["hmac"]}, "bad signature"),
        (lambda e: "not a dict", "not a benchlab task envelope"),
    ],
)
def test_a_forged_envelope_is_refused_before_anything_runs(stored: tuple[str, Prepared], change, reason: str) -> None:  # type: ignore[no-untyped-def]
    db, _ = stored
    with pytest.raises(Forged, match=reason):
        _worker(db).handle(change(_envelope(db)))
    assert _runs(db) == []


@pytest.mark.parametrize(
    "body",
    [
        {"block": "0"},
        {"block": True},
        {"block": 10**40},
        {"block": -1},
        {"experiment": ["fleet-exp"]},
        {"workload": None},
        {"pool": "x" * 10_000},
        {"extra": "field"},
        {"retry_failed": 1},
        {"retry_failed": "yes"},
    ],
)
def test_a_signed_envelope_of_the_wrong_shape_is_refused_not_crashed_on(
    stored: tuple[str, Prepared], body: dict[str, object]
) -> None:
    db, _ = stored
    good = _envelope(db)["body"]
    changed = {**good, **body}  # type: ignore[dict-item]
    with pytest.raises(Forged, match="signed, but"):
        _worker(db).handle({"body": changed, "hmac": signature(KEY, changed)})
    assert _runs(db) == []


def test_a_task_signed_with_another_key_or_for_another_pool_is_refused(stored: tuple[str, Prepared]) -> None:
    db, _ = stored
    with pytest.raises(Forged, match="bad signature"):
        _worker(db).handle(_envelope(db, key=b"x" * 32))
    with pytest.raises(Forged, match="not this worker's 'lab'"):
        _worker(db).handle(_envelope(db, pool="other"))
    assert _runs(db) == []


def test_a_spec_changed_in_the_database_is_not_the_signed_one(stored: tuple[str, Prepared]) -> None:
    db, _ = stored
    envelope = _envelope(db)
    store = Store(db)
    exp = store.require_experiment("fleet-exp")
    first, *others = exp.spec_document["workloads"]
    store.update_spec(exp, {**exp.spec_document, "workloads": [{**first, "command": ["/bin/rm", "-rf", "/x"]}, *others]})
    with pytest.raises(Forged, match="not the one the task was signed for"):
        _worker(db).handle(envelope)
    assert _runs(db) == []
    assert Store(db).fleet_progress(exp).refusals[0].message.startswith("the stored spec")


def test_a_worker_on_another_database_or_build_is_unfit_and_gives_the_task_back(
    stored: tuple[str, Prepared], tmp_path: Path
) -> None:
    db, _ = stored
    genuine = _envelope(db)
    with pytest.raises(Unfit, match="is it the driver's database"):
        _worker(str(tmp_path / "another.db")).handle(genuine)
    store = Store(db)
    with store.transaction() as conn:
        conn.exec_driver_sql("UPDATE workload SET version = 'command:an older build' WHERE name = 't'")
    with pytest.raises(Unfit, match="workload t here is of another version"):
        _worker(db).handle(genuine)
    exp = store.require_experiment("fleet-exp")
    (failed,) = store.fleet_progress(exp).refusals
    assert (failed.state, failed.worker) == ("failed", "w1") and _runs(db) == []


def test_programs_off_the_allow_list_and_shells_are_refused(tmp_path: Path) -> None:
    db = str(tmp_path / "fleet.db")
    for workloads, reason in (
        ([{"name": "t", "command": ["/bin/echo", "hi"]}], "not on this worker's --allow list"),
        ([{"name": "t", "command": ["sh", "-c", "echo hi"]}], "runs a shell"),
        ([{"name": "t", "command": [TRUE], "setup": ["bash", "-c", "curl x | sh"]}], "runs a shell"),
    ):
        spec = spec_from_dict({"name": "x", "workloads": workloads, "variants": [{"name": "a"}]}, "t")
        with pytest.raises(Refused, match=reason):
            AllowList.of([TRUE]).check(spec)
    shell = spec_from_dict({"name": "x", "workloads": [{"name": "t", "command": "sh -c true"}], "variants": [{"name": "a"}]}, "t")
    AllowList.of([TRUE], shell=True).check(shell)
    loader = spec_from_dict(
        {
            "name": "x",
            "workloads": [{"name": "t", "builtin": "alloc.churn"}],
            "variants": [{"name": "a", "env": {"LD_PRELOAD": "/x.so"}}],
        },
        "t",
    )
    with pytest.raises(Refused, match="LD_PRELOAD"):
        AllowList.of([]).check(loader)
    builtin = {"name": "t", "builtin": "alloc.churn"}
    for variant, reason, allowed in (
        ({"env": {"PATH": "/tmp/evil"}}, "sets PATH", AllowList.of([], machine_state=True)),
        ({"env": {"BASH_ENV": "/tmp/x"}}, "sets BASH_ENV", AllowList.of([], shell=True, machine_state=True)),
        ({"knobs": {"/proc/sys/vm/swappiness": 10}}, "knobs needs --allow-machine-state", AllowList.of([])),
        (
            {"knobs": {"/proc/sys/kernel/core_pattern": "|/bin/sh"}},
            "a program the kernel runs as root",
            AllowList.of([], machine_state=True),
        ),
        ({"environment": "container"}, "environment needs --allow-machine-state", AllowList.of([])),
        ({"environment": "vm"}, "environment needs --allow-machine-state", AllowList.of([])),
    ):
        spec = spec_from_dict({"name": "x", "workloads": [builtin], "variants": [{"name": "a", **variant}]}, "t")
        with pytest.raises(Refused, match=reason):
            allowed.check(spec)
    AllowList.of([], machine_state=True).check(
        spec_from_dict(
            {"name": "x", "workloads": [builtin], "variants": [{"name": "a", "knobs": {"/proc/sys/vm/swappiness": 10}}]}, "t"
        )
    )
    assert db


def test_a_worker_refuses_a_task_whose_programs_it_does_not_allow_and_says_so(stored: tuple[str, Prepared]) -> None:
    db, _ = stored
    with pytest.raises(Refused, match="not on this worker's --allow list"):
        _worker(db, allow=AllowList.of([])).handle(_envelope(db))
    exp = Store(db).require_experiment("fleet-exp")
    (refusal,) = Store(db).fleet_progress(exp).refusals
    assert (refusal.workload, refusal.block, refusal.worker) == ("t", 0, "w1")
    assert _runs(db) == []


def test_the_key_file_must_be_private_and_long_enough(tmp_path: Path) -> None:
    key = tmp_path / "key"
    key.write_bytes(os.urandom(24).hex().encode())
    key.chmod(0o644)
    with pytest.raises(EnvironmentProblem, match="readable by other users"):
        read_key(key)
    key.chmod(0o600)
    assert len(read_key(key)) == 48
    key.write_bytes(b"short")
    with pytest.raises(EnvironmentProblem, match="fewer than 32"):
        read_key(key)
    assert open_envelope(seal(BlockTask("p", "e", "d", "w", 0), KEY), KEY, pool="p").block == 0


def test_a_database_away_sends_the_task_again_later(stored: tuple[str, Prepared], monkeypatch: pytest.MonkeyPatch) -> None:
    db, _ = stored
    worker = _worker(db)
    envelope = _envelope(db)

    def away(name: str) -> None:
        raise OperationalError("SELECT", {}, Exception("connection refused"))

    monkeypatch.setattr(worker.store, "find_experiment", away)
    with pytest.raises(Later, match="the database is unreachable") as later:
        worker.handle(envelope)
    assert later.value.pause == 10 and _runs(db) == []


def test_a_profiled_block_is_whole_with_its_profiled_runs_where_perf_is_there_to_run_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker killed between a block's timed runs and its profiled runs leaves the block to run
    again for them; a worker without perf takes the block as whole without them."""
    db = str(tmp_path / "fleet.db")
    prepared = _spec(profile=True)
    store = Store(db)
    exp = Runner(store, executor=FakeExecutor()).open_experiment(prepared, resume=False)
    host = store.host_id({"hostname": "h1", "kernel": "test"})
    for variant in ("a", "b"):
        store.record_run(exp, NewRun(host_id=host, workload="t", variant=variant, block=0, warmup=False, position=0, status="ok", started_at=0, ended_at=1))  # fmt: skip
    assert store.block_complete(exp, "t", 0) and not store.block_complete(exp, "t", 0, profiled=True)
    assert ("t", 0) in missing_blocks(store, exp, prepared)  # the driver publishes it again
    assert ("t", 0) not in missing_blocks(store, exp, _spec())  # unprofiled, the block is whole

    def no_perf() -> str:
        raise EnvironmentProblem("perf is not installed")

    monkeypatch.setattr("benchlab.runner.perf_path", no_perf)
    assert _worker(db).handle(_envelope(db, "t", 0)) == "skipped"  # nothing here could profile it

    profiled = {"workload": "t", "host_id": host, "block": 0, "position": 0, "started_at": 0, "ended_at": 1}
    store.record_profiled(exp, ProfiledRun(variant="a", status="ok", profile=b"", **profiled))  # type: ignore[arg-type]
    assert not store.block_complete(exp, "t", 0, profiled=True)
    store.record_profiled(exp, ProfiledRun(variant="b", status="failed", message="perf failed", **profiled))  # type: ignore[arg-type]
    assert store.block_complete(exp, "t", 0, profiled=True)  # whatever became of them, both are stored
    assert not store.block_complete(exp, "t", 0, profiled=True, ok_only=True)  # a resume runs b's again
    assert ("t", 0) not in missing_blocks(store, exp, prepared)
