"""Reading what is stored: an experiment whole, the list of experiments, and what a resume skips."""

from __future__ import annotations

import json
from operator import attrgetter
from typing import Any

import numpy as np
from sqlalchemy import Connection, Integer, func, select

from benchlab.store import driver
from benchlab.store import schema as t
from benchlab.store.columns import metric_columns
from benchlab.store.records import Calibration, ExperimentData, ExperimentRecord, RunRecord


def load(conn: Connection, exp: ExperimentRecord) -> ExperimentData:
    names_w = {v: k for k, v in exp.workload_ids.items()}
    names_v = {v: k for k, v in exp.variant_ids.items()}
    r = t.run.c
    query = (
        select(
            r.id, r.workload_id, r.variant_id, r.host_id, r.block, r.warmup, r.position, r.status, r.exit_code,
            r.message, r.stderr_tail, r.started_at, r.ended_at,
            (r.workload_version == t.workload.c.version).label("current"), t.run_detail.c.details,
        )
        .join(t.workload, t.workload.c.id == r.workload_id)
        .outerjoin(t.run_detail, t.run_detail.c.run_id == r.id)
        .where(r.experiment_id == exp.id)
        .order_by(r.id)  # the order runs were stored in
    )  # fmt: skip
    # 100,000 runs for a big report: the driver's tuples, each column found by its name once
    at = driver.places(query)
    id_, workload, variant, host, block, warmup, position, status, exit_code, message, tail, started, ended, current, details = (
        at[name]
        for name in (
            "id", "workload_id", "variant_id", "host_id", "block", "warmup", "position", "status", "exit_code", "message",
            "stderr_tail", "started_at", "ended_at", "current", "details",
        )
    )  # fmt: skip
    with driver.bulk():
        runs = [
            RunRecord(  # by place, in the order of its fields: keywords cost a third of building 100,000
                row[id_],
                names_w[row[workload]],
                names_v[row[variant]],
                row[host],
                row[block],
                bool(row[warmup]),
                row[position],
                row[status],
                row[exit_code],
                row[message],
                row[tail],
                row[started],
                row[ended],
                bool(row[current]),
                json.loads(row[details]) if row[details] else None,
            )
            for row in driver.rows(conn, query)
        ]
        run_ids = np.fromiter(map(attrgetter("id"), runs), dtype=np.int64, count=len(runs))
        metrics = metric_columns(conn, exp.id, run_ids)
    m = t.metric_name.c
    info = {
        (names_w[row.workload_id], row.name): (row.unit, row.direction)
        for row in conn.execute(select(m.workload_id, m.name, m.unit, m.direction).where(m.workload_id.in_(list(names_w))))
    }
    host_ids = {run.host_id for run in runs}
    hosts = {
        row.id: json.loads(row.fingerprint)
        for row in conn.execute(select(t.host.c.id, t.host.c.fingerprint).where(t.host.c.id.in_(host_ids)))
    }
    return ExperimentData(exp, runs, metrics, info, hosts, calibrations(conn, host_ids))


def calibrations(conn: Connection, host_ids: set[int]) -> list[Calibration]:
    """The latest calibration of each (host, workload) the hosts have."""
    c = t.calibration.c
    query = (
        select(c.host_id, c.workload_key.label("workload_key"), c.metric, c.spread, c.experiments, c.false_verdicts,
               c.blocks, c.created_at)
        .where(c.host_id.in_(host_ids))
        .order_by(c.created_at)
    )  # fmt: skip
    latest = {(row["host_id"], row["workload_key"]): Calibration(**row) for row in conn.execute(query).mappings()}
    return list(latest.values())


def experiment_list(conn: Connection) -> list[dict[str, Any]]:
    """Every experiment with its run counts, oldest first."""
    r, e = t.run.c, t.experiment.c
    counts = (
        select(
            r.experiment_id,
            func.count().label("runs"),
            func.sum((r.status != "ok").cast(Integer)).label("failed"),
            func.max(r.ended_at).label("last"),
        )
        .group_by(r.experiment_id)
        .subquery()
    )
    query = (
        select(e.name, e.created_at, counts.c.runs, counts.c.failed, counts.c.last)
        .select_from(t.experiment.outerjoin(counts, counts.c.experiment_id == e.id))
        .order_by(e.created_at)
    )
    return [dict(row) for row in conn.execute(query).mappings()]


def stored_keys(conn: Connection, exp: ExperimentRecord, host_id: int) -> set[tuple[str, str, int, bool]]:
    """(workload, variant, block, warm-up) of every run stored for a host: what a resume skips."""
    names_w = {v: k for k, v in exp.workload_ids.items()}
    names_v = {v: k for k, v in exp.variant_ids.items()}
    r = t.run.c
    query = select(r.workload_id, r.variant_id, r.block, r.warmup).where(r.experiment_id == exp.id, r.host_id == host_id)
    return {(names_w[row.workload_id], names_v[row.variant_id], row.block, bool(row.warmup)) for row in conn.execute(query)}


def run_identities(conn: Connection, exp: ExperimentRecord) -> dict[int, tuple[str, str]]:
    """run id -> (uuid, workload version), which bundles carry and reports do not need."""
    r = t.run.c
    query = select(r.id, r.uuid, r.workload_version).where(r.experiment_id == exp.id)
    return {row.id: (row.uuid, row.workload_version) for row in conn.execute(query)}
