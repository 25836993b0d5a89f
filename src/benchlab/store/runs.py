"""Storing finished runs: the one insert path, for a run that just ended and for imported ones.

The harness stores a run after every run, so this is on its per-run cost: the statements are
compiled once per store and run on the driver's cursor (`driver`), metric name ids are
cached, and each live run is still its own transaction, committed as it ends.
"""

from __future__ import annotations

import json
import uuid as uuidlib
from collections.abc import Sequence

from sqlalchemy import Connection, Dialect, delete, insert, select

from benchlab.errors import StoreError
from benchlab.metrics import Metric
from benchlab.spec.fields import without_nul
from benchlab.store import driver
from benchlab.store import schema as t
from benchlab.store.records import ExperimentRecord, NewRun

RUN_COLUMNS = (
    "uuid", "experiment_id", "workload_id", "variant_id", "host_id", "block", "warmup", "position", "status",
    "started_at", "ended_at", "exit_code", "message", "stderr_tail", "workload_version",
)  # fmt: skip


class RunWriter:
    """Inserts runs with their metric values and details, in a caller's transaction."""

    def __init__(self, dialect: Dialect) -> None:
        self._run = driver.Prepared.of(insert(t.run).returning(t.run.c.id), dialect, RUN_COLUMNS)
        self._metric = driver.Prepared.of(insert(t.metric), dialect, ("run_id", "name_id", "value"))
        self._detail = driver.Prepared.of(insert(t.run_detail), dialect, ("run_id", "details"))
        self._names: dict[int, dict[str, int]] = {}  # workload id -> metric name -> metric_name id

    def forget_names(self) -> None:
        """After a rollback: ids cached in it may point at rows that were never stored."""
        self._names.clear()

    def insert(self, conn: Connection, exp: ExperimentRecord, runs: Sequence[NewRun]) -> None:
        """A run's workload version is the experiment's: an import refuses a run of another."""
        with driver.cursor(conn) as cursor:
            for run in runs:
                workload_id = exp.workload_ids[run.workload]
                row = {
                    "uuid": run.uuid or str(uuidlib.uuid4()),
                    "experiment_id": exp.id,
                    "workload_id": workload_id,
                    "variant_id": exp.variant_ids[run.variant],
                    "host_id": run.host_id,
                    "block": run.block,
                    "warmup": run.warmup,
                    "position": run.position,
                    "status": run.status,
                    "started_at": run.started_at,
                    "ended_at": run.ended_at,
                    "exit_code": run.exit_code,
                    "message": without_nul(run.message),
                    "stderr_tail": without_nul(run.stderr_tail),
                    "workload_version": exp.workload_versions[run.workload],
                }
                cursor.execute(self._run.sql, self._run.params(row))
                (run_id,) = cursor.fetchone()
                if run.metrics:
                    ids = self.name_ids(conn, workload_id, run.metrics)
                    cursor.executemany(
                        self._metric.sql,
                        [self._metric.params({"run_id": run_id, "name_id": ids[m.name], "value": m.value}) for m in run.metrics],
                    )
                if run.details:
                    details = json.dumps(run.details, sort_keys=True)
                    cursor.execute(self._detail.sql, self._detail.params({"run_id": run_id, "details": details}))

    def name_ids(self, conn: Connection, workload_id: int, metrics: Sequence[Metric]) -> dict[str, int]:
        """Ids of the metrics' names for this workload, registering new ones. A metric's unit and
        direction are stored once, with its name: a value in another unit (an imported run in ms
        where this database holds s) is refused, never read in the stored one. Two processes may
        register a workload's names at once (a fleet's workers starting an experiment): the later
        insert waits for the earlier and keeps its rows, rather than failing the run as one stored twice."""
        known = self._names.setdefault(workload_id, {})
        missing = [m for m in metrics if m.name not in known]
        if missing:
            names = t.metric_name.c
            query = select(names.name, names.id, names.unit, names.direction).where(names.workload_id == workload_id)
            stored = {row.name: row for row in conn.execute(query)}
            for m in missing:
                row = stored.get(m.name)
                if row is not None and (row.unit, row.direction) != (m.unit, m.direction):
                    raise StoreError(
                        f"metric {m.name!r} is stored here in {row.unit!r} ({row.direction}), not {m.unit!r} "
                        f"({m.direction}); values in different units are never compared"
                    )
            new = {m.name: m for m in missing if m.name not in stored}
            if new:
                conn.execute(
                    t.insert_new(t.metric_name, conn.dialect.name),
                    [{"workload_id": workload_id, "name": n, "unit": m.unit, "direction": m.direction} for n, m in new.items()],
                )
                stored = {row.name: row for row in conn.execute(query)}
            known.update({name: row.id for name, row in stored.items()})
        return known


# a retried run keeps its last failures within a bounded part of its details (a bundle takes 64 KiB)
ATTEMPTS_KEPT = 10
ATTEMPT_MESSAGE = 1000


def take_failed(conn: Connection, exp: ExperimentRecord, run: NewRun) -> list[object]:
    """Removes the failed run stored under `run`'s key (none: nothing), in the caller's
    transaction, and returns what `run` keeps of it: the earlier attempts, oldest first (the
    last ATTEMPTS_KEPT), each its status, exit code, message and times. A failed run is no
    sample (it holds no value), so nothing a report judges is lost; a run that ended well is
    never taken."""
    r = t.run.c
    row = conn.execute(
        select(r.id, r.status, r.exit_code, r.message, r.started_at, r.ended_at).where(
            r.experiment_id == exp.id, r.host_id == run.host_id, r.workload_id == exp.workload_ids[run.workload],
            r.variant_id == exp.variant_ids[run.variant], r.block == run.block, r.warmup == run.warmup, r.status != "ok",
        )
    ).first()  # fmt: skip
    if row is None:
        return []
    stored = conn.execute(select(t.run_detail.c.details).where(t.run_detail.c.run_id == row.id)).scalar()
    for table, column in ((t.metric, t.metric.c.run_id), (t.run_detail, t.run_detail.c.run_id), (t.run, r.id)):
        conn.execute(delete(table).where(column == row.id))
    this = {k: getattr(row, k) for k in ("status", "exit_code", "started_at", "ended_at")}
    this["message"] = row.message[:ATTEMPT_MESSAGE] if row.message else row.message
    return [*_earlier_attempts(stored), this][-ATTEMPTS_KEPT:]


def _earlier_attempts(details: str | None) -> list[object]:
    """The attempts a failed run's details carried (another tool's text may carry none, or no JSON)."""
    try:
        parsed = json.loads(details) if details else {}
    except ValueError:
        return []
    before = parsed.get("earlier_attempts") if isinstance(parsed, dict) else None
    return before if isinstance(before, list) else []
