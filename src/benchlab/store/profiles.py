"""Profiled runs in the database (`profile_run`): stored the moment each ends, like a timed run,
and read back whole for `benchlab explain` and the reports; never among the runs a metric is
judged on."""

from __future__ import annotations

import uuid as uuidlib
from collections.abc import Collection

from sqlalchemy import Connection, delete, insert, select

from benchlab.spec.fields import without_nul
from benchlab.store import schema as t
from benchlab.store.records import ExperimentRecord, ProfiledRun


def insert_profiled(conn: Connection, exp: ExperimentRecord, run: ProfiledRun, *, retry: bool) -> None:
    """`retry`: a profiled run stored as failed under the same key is replaced."""
    p = t.profile_run.c
    key = (
        p.experiment_id == exp.id, p.host_id == run.host_id, p.workload_id == exp.workload_ids[run.workload],
        p.variant_id == exp.variant_ids[run.variant], p.block == run.block,
    )  # fmt: skip
    if retry:
        conn.execute(delete(t.profile_run).where(*key, p.status != "ok"))
    conn.execute(
        insert(t.profile_run).values(
            uuid=run.uuid or str(uuidlib.uuid4()), experiment_id=exp.id, workload_id=exp.workload_ids[run.workload],
            variant_id=exp.variant_ids[run.variant], host_id=run.host_id, block=run.block, position=run.position,
            status=run.status, started_at=run.started_at, ended_at=run.ended_at, wall_s=run.wall_s,
            message=without_nul(run.message), profile=run.profile,
        )
    )  # fmt: skip


def profiled_keys(
    conn: Connection,
    exp: ExperimentRecord,
    host_id: int,
    *,
    workloads: Collection[str] | None = None,
    blocks: Collection[int] | None = None,
    ok_only: bool = False,
) -> set[tuple[str, str, int, bool, bool]]:
    """The plan keys of the profiled runs stored for a host (`runner.PlannedRun.key`)."""
    p = t.profile_run.c
    query = select(p.workload_id, p.variant_id, p.block).where(p.experiment_id == exp.id, p.host_id == host_id)
    if ok_only:
        query = query.where(p.status == "ok")
    if workloads is not None:
        query = query.where(p.workload_id.in_([exp.workload_ids[w] for w in workloads]))
    if blocks is not None:
        query = query.where(p.block.in_(sorted(blocks)))
    names_w = {v: k for k, v in exp.workload_ids.items()}
    names_v = {v: k for k, v in exp.variant_ids.items()}
    return {
        (names_w[row.workload_id], names_v[row.variant_id], row.block, False, True)
        for row in conn.execute(query)
        if row.workload_id in names_w and row.variant_id in names_v
    }


def profiled_runs(conn: Connection, exp: ExperimentRecord, *, workload: str | None = None) -> list[ProfiledRun]:
    """Every profiled run of an experiment (of one workload), in the order they ran."""
    p = t.profile_run.c
    query = select(t.profile_run).where(p.experiment_id == exp.id).order_by(p.host_id, p.position)
    if workload is not None:
        query = query.where(p.workload_id == exp.workload_ids[workload])
    names_w = {v: k for k, v in exp.workload_ids.items()}
    names_v = {v: k for k, v in exp.variant_ids.items()}
    return [
        ProfiledRun(
            workload=names_w[row.workload_id], variant=names_v[row.variant_id], host_id=row.host_id, block=row.block,
            position=row.position, status=row.status, started_at=row.started_at, ended_at=row.ended_at,
            wall_s=row.wall_s, message=row.message, profile=row.profile, uuid=row.uuid,
        )
        for row in conn.execute(query)
        if row.workload_id in names_w and row.variant_id in names_v
    ]  # fmt: skip
