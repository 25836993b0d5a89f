"""A fleet's bookkeeping in the results database: attempts at blocks, and progress read back.

Workers and the driver share nothing but the broker and this database, so whatever the
driver shows (how far, who ran what, what was refused) is read here, and a worker decides
from the stored runs alone whether a redelivered block is already done.
"""

from __future__ import annotations

import contextlib
import hashlib
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, Engine, Table, func, insert, select, text, update

from benchlab.store import checks
from benchlab.store import schema as t
from benchlab.store.documents import HostFacts
from benchlab.store.records import ExperimentRecord

RUNNING, DONE, SKIPPED, REFUSED, FAILED = "running", "done", "skipped", "refused", "failed"
STATES = (RUNNING, DONE, SKIPPED, REFUSED, FAILED)


@dataclass(frozen=True)
class Refusal:
    workload: str
    block: int
    worker: str
    message: str
    attempt_id: int
    state: str  # refused (the task: the driver stops) | failed (this machine: the task went back to the queue)


@dataclass(frozen=True)
class FleetProgress:
    """Where a fleet's experiment stands: measured runs stored (warm-ups left out: each host
    has its own), blocks complete on some host, runs per worker, and refusals."""

    runs: int
    complete: frozenset[tuple[str, int]]
    per_worker: dict[str, int] = field(default_factory=dict)
    running: dict[str, str] = field(default_factory=dict)  # worker -> "workload block N"
    refusals: tuple[Refusal, ...] = ()
    answered: dict[tuple[str, int], int] = field(default_factory=dict)  # block -> its newest attempt that ended done or skipped


def complete_blocks(
    conn: Connection, exp: ExperimentRecord, *, ok_only: bool = False, profiled: frozenset[str] = frozenset()
) -> frozenset[tuple[str, int]]:
    """(workload, block) whose every variant has a measured run stored on one same machine: a
    block counts whole or not at all, for the report pairs within (machine, block). `ok_only`:
    counting only runs that ended well, as a resume that runs failed runs again counts them.
    `profiled`: the workloads whose blocks are whole only with a profiled run of every variant
    stored too (on that machine, whatever became of it: perf's failure is stored with the run)."""
    return _whole(conn, exp, None, ok_only=ok_only, profiled=profiled)


def block_complete(
    conn: Connection, exp: ExperimentRecord, workload: str, block: int, *, ok_only: bool = False, profiled: bool = False
) -> bool:
    """Whether one block is stored whole on some machine (`ok_only`: with runs that ended well;
    `profiled`: with its profiled runs): what a worker asks of every task it takes, so it reads
    that block's runs, not every run of the experiment (`complete_blocks` took 70 ms of the
    database's CPU per task at 100,000 runs stored; bench/fleet_scale.py)."""
    wanted = frozenset({workload}) if profiled else frozenset()
    return bool(_whole(conn, exp, (workload, block), ok_only=ok_only, profiled=wanted))


def _whole(
    conn: Connection, exp: ExperimentRecord, only: tuple[str, int] | None, *, ok_only: bool, profiled: frozenset[str]
) -> frozenset[tuple[str, int]]:
    """The blocks (of all, or the one `only` names) stored whole on one machine. A vm guest's runs
    are stored under a host of their own, the guest of its machine (its fingerprint's
    `guest_of`), and pair with that machine's native runs, as a report pairs them
    (analysis/environments.py): they count on that machine."""
    timed = _stored_variants(conn, exp, t.run, only, ok_only=ok_only)
    sampled = _stored_variants(conn, exp, t.profile_run, only, ok_only=ok_only) if profiled else {}
    machine = _machines(conn, {host for _, _, host in (*timed, *sampled)})
    on_machine: dict[tuple[int, int, str], tuple[set[int], set[int]]] = {}
    for stored, side in ((timed, 0), (sampled, 1)):
        for (w, b, host), variants in stored.items():
            on_machine.setdefault((w, b, machine[host]), (set(), set()))[side].update(variants)
    names = {v: k for k, v in exp.workload_ids.items()}
    every = len(exp.variant_ids)
    return frozenset(
        (names[w], b) for (w, b, _), (runs, profiles) in on_machine.items()
        if len(runs) == every and (names[w] not in profiled or len(profiles) == every)
    )  # fmt: skip


def _stored_variants(
    conn: Connection, exp: ExperimentRecord, table: Table, only: tuple[str, int] | None, *, ok_only: bool
) -> dict[tuple[int, int, int], set[int]]:
    """(workload id, block, host id) -> the variants with a measured run of `table` stored there."""
    r = table.c
    query = select(r.workload_id, r.block, r.host_id, r.variant_id).where(r.experiment_id == exp.id)
    if table is t.run:
        query = query.where(r.warmup.is_(False))
    if ok_only:
        query = query.where(r.status == "ok")
    if only is not None:
        query = query.where(r.workload_id == exp.workload_ids[only[0]], r.block == only[1])
    stored: dict[tuple[int, int, int], set[int]] = {}
    for row in conn.execute(query.distinct()):
        stored.setdefault((row.workload_id, row.block, row.host_id), set()).add(row.variant_id)
    return stored


def _machines(conn: Connection, host_ids: set[int]) -> dict[int, str]:
    """host id -> the machine its runs pair on: a guest's machine, else the host itself (its hash)."""
    if not host_ids:
        return {}
    h = t.host.c
    rows = conn.execute(select(h.id, h.hash, h.fingerprint).where(h.id.in_(sorted(host_ids))))
    machines = {}
    for row in rows:
        facts = checks.document(row.fingerprint, HostFacts, f"host {row.id}", "fingerprint")[0]
        machines[row.id] = facts.get("guest_of") or row.hash
    return machines


def begin_attempt(conn: Connection, exp: ExperimentRecord, workload: str, block: int, *, worker: str, host_id: int) -> int:
    """A new attempt at a block, numbered after the last; its row id. Two workers numbering at
    once collide on `attempt_once` and the caller tries again."""
    f = t.fleet_task.c
    workload_id = exp.workload_ids[workload]
    last = conn.execute(
        select(func.max(f.attempt)).where(f.experiment_id == exp.id, f.workload_id == workload_id, f.block == block)
    ).scalar()
    if last is not None:  # SQLite orders text after every number: another program's attempt is the last
        checks.whole(last, f"a fleet task of {workload} block {block + 1}", "attempt")
    key = conn.execute(
        insert(t.fleet_task).values(
            experiment_id=exp.id, workload_id=workload_id, block=block, attempt=(last or 0) + 1, worker=worker,
            host_id=host_id, state=RUNNING, runs=0, started_at=time.time(),
        )
    ).inserted_primary_key  # fmt: skip
    assert key is not None
    return int(key.id)


def register_key(conn: Connection, check: str) -> None:
    conn.execute(t.insert_new(t.fleet_key, conn.dialect.name).values(check=check, created_at=time.time()))


def key_known(conn: Connection, check: str) -> bool | None:
    """Whether a driver signed with this key (None: no driver has published to this database)."""
    known = set(conn.execute(select(t.fleet_key.c.check)).scalars())
    return check in known if known else None


def last_attempt(conn: Connection, exp: ExperimentRecord) -> int:
    """The id of the experiment's newest attempt (0: none): what a driver saw before it published."""
    f = t.fleet_task.c
    return int(conn.execute(select(func.max(f.id)).where(f.experiment_id == exp.id)).scalar() or 0)


def count_run(conn: Connection, attempt_id: int) -> None:
    f = t.fleet_task.c
    conn.execute(update(t.fleet_task).where(f.id == attempt_id).values(runs=f.runs + 1))


def end_attempt(conn: Connection, attempt_id: int, state: str, message: str | None = None) -> None:
    f = t.fleet_task.c
    conn.execute(update(t.fleet_task).where(f.id == attempt_id).values(state=state, message=message, ended_at=time.time()))


def progress(conn: Connection, exp: ExperimentRecord) -> FleetProgress:
    r, f = t.run.c, t.fleet_task.c
    runs = conn.execute(select(func.count()).where(r.experiment_id == exp.id, r.warmup.is_(False))).scalar() or 0
    names = {v: k for k, v in exp.workload_ids.items()}
    per_worker: Counter[str] = Counter()
    running: dict[str, str] = {}
    refusals = []
    answered = {}
    columns = (f.id, f.worker, f.workload_id, f.block, f.state, f.runs, f.message)
    query = select(*columns).where(f.experiment_id == exp.id).order_by(f.id)
    for row in conn.execute(query):
        _attempt_row(row, names)
        per_worker[row.worker] += row.runs
        if row.state == RUNNING:
            running[row.worker] = f"{names[row.workload_id]} block {row.block + 1}"
        else:
            running.pop(row.worker, None)
        if row.state in (DONE, SKIPPED):
            answered[names[row.workload_id], row.block] = row.id
        if row.state in (REFUSED, FAILED):
            refusals.append(Refusal(names[row.workload_id], row.block, row.worker, row.message or "", row.id, row.state))
    return FleetProgress(int(runs), complete_blocks(conn, exp), dict(per_worker), running, tuple(refusals), answered)


def _attempt_row(row: Any, workloads: dict[int, str]) -> None:
    """A fleet_task row as benchlab writes it (the driver's progress reads every one)."""
    where = f"fleet task {row.id}"
    if row.workload_id not in workloads:
        raise checks.damaged(where, f"has workload_id {checks.shown(row.workload_id)}, which names no workload of its experiment")
    checks.text(row.worker, where, "worker")
    checks.text(row.state, where, "state", allowed=STATES)
    if row.message is not None:
        checks.text(row.message, where, "message")
    if checks.whole(row.block, where, "block") < 0 or checks.whole(row.runs, where, "runs") < 0:
        raise checks.damaged(where, f"has block {row.block} and runs {row.runs}, which benchlab never writes")


@contextlib.contextmanager
def block_lease(engine: Engine, exp: ExperimentRecord, workload: str, block: int) -> Iterator[bool]:
    """Whether this process may run the block: on PostgreSQL, a session advisory lock held on a
    connection of its own while the block runs, so a block handed out twice while it still runs
    (a broker restart, the consumer timeout, `--resume`) never runs on two machines at once; the
    server frees it when its holder dies. SQLite serves one machine, whose runs of a block
    collide on `run_once` instead."""
    if engine.dialect.name != "postgresql":
        yield True
        return
    digest = hashlib.sha256(f"benchlab block {exp.id} {exp.workload_ids[workload]} {block}".encode()).digest()
    key = int.from_bytes(digest[:8], "big", signed=True)
    with engine.connect() as conn:
        held = bool(conn.execute(text("SELECT pg_try_advisory_lock(:key)"), {"key": key}).scalar())
        conn.commit()
        try:
            yield held
        finally:
            if held:
                conn.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": key})
                conn.commit()
