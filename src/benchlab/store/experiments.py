"""An experiment's rows: the experiment, its workloads and its variants, written, found and listed."""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Integer, delete, func, insert, select, type_coerce

from benchlab.errors import StoreError
from benchlab.store import checks
from benchlab.store import schema as t
from benchlab.store.records import ExperimentRecord

if TYPE_CHECKING:  # the spec's models load with the first experiment found, not for `benchlab list`
    from benchlab.spec.models import ExperimentSpec


def spec_digest(spec: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()


def insert_experiment(
    conn: Connection,
    *,
    name: str,
    spec: dict[str, Any],
    workloads: Sequence[tuple[str, str, str]],
    variants: Sequence[tuple[str, dict[str, Any], bool]],
    created_at: float | None = None,
) -> ExperimentRecord:
    """workloads: (name, kind, version); variants: (name, config, is_baseline). In the caller's
    transaction: an import creates the experiment together with its runs."""
    key = conn.execute(
        insert(t.experiment).values(
            name=name, spec=json.dumps(spec, sort_keys=True), spec_hash=spec_digest(spec), created_at=created_at or time.time()
        )
    ).inserted_primary_key
    assert key is not None
    conn.execute(insert(t.workload), [{"experiment_id": key.id, "name": w, "kind": k, "version": v} for w, k, v in workloads])
    conn.execute(
        insert(t.variant),
        [
            {"experiment_id": key.id, "name": v, "position": i, "config": json.dumps(c, sort_keys=True), "is_baseline": b}
            for i, (v, c, b) in enumerate(variants)
        ],
    )
    found = experiment_in(conn, name)
    assert found is not None
    return found


def experiment_in(conn: Connection, name: str) -> ExperimentRecord | None:
    """The experiment of that name with its workload and variant ids, or None."""
    row = conn.execute(select(t.experiment).where(t.experiment.c.name == name)).mappings().first()
    if row is None:
        return None
    w, v = t.workload.c, t.variant.c
    workloads = conn.execute(select(w.name, w.id, w.version, w.kind).where(w.experiment_id == row["id"])).all()
    flag = type_coerce(v.is_baseline, Integer).label("is_baseline")  # as stored, not as a bool of it
    query = select(v.name, v.id, v.config, flag).where(v.experiment_id == row["id"]).order_by(v.position)
    variants = conn.execute(query).all()
    where = f"experiment {row['id']}"
    for workload in workloads:
        for column in ("name", "version", "kind"):
            checks.text(getattr(workload, column), f"workload {workload.id}", column)
    stored = checks.json_object(row["spec"], where, "spec")
    spec = _stored_spec(stored, where)
    _agrees(where, row["name"], spec, workloads, variants)
    return ExperimentRecord(
        id=row["id"],
        name=row["name"],
        spec=spec,
        spec_document=stored,
        spec_hash=checks.text(row["spec_hash"], where, "spec_hash"),
        created_at=checks.number(row["created_at"], where, "created_at"),
        workload_ids={w.name: w.id for w in workloads},
        workload_versions={w.name: w.version for w in workloads},
        variant_ids={v.name: v.id for v in variants},
    )


def _stored_spec(stored: dict[str, Any], where: str) -> ExperimentSpec:
    """The row's spec read once, of any version this release reads (`spec.stored`)."""
    from benchlab.spec.stored import StoredVersionError, read_stored_spec

    try:
        return checks.shaped(stored, read_stored_spec, where, "spec")
    except StoredVersionError as exc:
        raise StoreError(f"{where} has a spec this benchlab cannot read: {exc}") from None


def _agrees(where: str, name: Any, spec: ExperimentSpec, workloads: Sequence[Any], variants: Sequence[Any]) -> None:
    """The experiment's rows are what its spec says, as benchlab writes them: its name, its
    workloads (name and kind), its variants in order with their configs and the baseline. What
    reads them takes one for the other (a report finds a workload's metrics in the spec, its
    baseline by name among the variants), so a row another program changed alone is refused."""
    from benchlab.spec.models import VariantSpec

    if spec.name != name:
        raise checks.damaged(where, f"has a spec of experiment {checks.shown(spec.name)}, not of {checks.shown(name)}")
    kinds = {w.name: w.kind for w in spec.workloads}
    if {w.name: w.kind for w in workloads} != kinds or len(workloads) != len(kinds):
        raise checks.damaged(where, f"has workload rows that are not its spec's {checks.shown(sorted(kinds.items()))}")
    if [v.name for v in variants] != [v.name for v in spec.variants]:
        raise checks.damaged(where, f"has variant rows that are not its spec's {checks.shown([v.name for v in spec.variants])}")
    for variant, specified in zip(variants, spec.variants, strict=True):
        at = f"variant {variant.id}"
        if checks.document(variant.config, VariantSpec, at, "config")[1] != specified:
            raise checks.damaged(at, "has a config that is not its experiment's spec's")
        flag = variant.is_baseline
        if type(flag) not in (int, bool) or flag not in (0, 1) or bool(flag) != (variant.name == spec.baseline_name):
            raise checks.damaged(at, f"has is_baseline {checks.shown(flag)}, which benchlab never writes")


def delete_experiment(conn: Connection, exp: ExperimentRecord) -> None:
    """An experiment that holds no runs (their rows would block the delete)."""
    workloads = select(t.workload.c.id).where(t.workload.c.experiment_id == exp.id)
    conn.execute(delete(t.metric_name).where(t.metric_name.c.workload_id.in_(workloads)))
    for table in (t.variant, t.workload):
        conn.execute(delete(table).where(table.c.experiment_id == exp.id))
    conn.execute(delete(t.experiment).where(t.experiment.c.id == exp.id))


def replace_spec(conn: Connection, exp: ExperimentRecord, spec: dict[str, Any]) -> None:
    conn.execute(
        t.experiment.update()
        .where(t.experiment.c.id == exp.id)
        .values(spec=json.dumps(spec, sort_keys=True), spec_hash=spec_digest(spec))
    )


def experiment_list(conn: Connection, name: str | None = None) -> list[dict[str, Any]]:
    """Every experiment (or the one of `name`) with its run counts and last run, oldest first."""
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
        select(e.id, e.name, e.created_at, counts.c.runs, counts.c.failed, counts.c.last)
        .select_from(t.experiment.outerjoin(counts, counts.c.experiment_id == e.id))
        .order_by(e.created_at)
    )
    if name is not None:
        query = query.where(e.name == name)
    listed = [dict(row) for row in conn.execute(query).mappings()]
    for row in listed:
        where = f"experiment {row['id']}"
        checks.text(row["name"], where, "name")
        checks.number(row["created_at"], where, "created_at")
        if row["last"] is not None and (type(row["last"]) not in (int, float) or not math.isfinite(row["last"])):
            damage = checks.damaged_run(conn, row["id"])  # which run: its ended_at, or another column
            raise damage or checks.damaged(where, f"has a run ended at {checks.shown(row['last'])}")
    return listed
