"""An experiment's rows: the experiment, its workloads and its variants, written and found."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, delete, insert, select

from benchlab.store import checks
from benchlab.store import schema as t
from benchlab.store.records import ExperimentRecord


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
    variants = conn.execute(select(v.name, v.id, v.config).where(v.experiment_id == row["id"]).order_by(v.position)).all()
    where = f"experiment {row['id']}"
    for workload in workloads:
        for column in ("name", "version", "kind"):
            checks.text(getattr(workload, column), f"workload {workload.id}", column)
    for variant in variants:
        checks.text(variant.name, f"variant {variant.id}", "name")
        checks.json_object(variant.config, f"variant {variant.id}", "config")
    return ExperimentRecord(
        id=row["id"],
        name=row["name"],
        spec=checks.json_object(row["spec"], where, "spec"),
        spec_hash=checks.text(row["spec_hash"], where, "spec_hash"),
        created_at=checks.number(row["created_at"], where, "created_at"),
        workload_ids={w.name: w.id for w in workloads},
        workload_versions={w.name: w.version for w in workloads},
        variant_ids={v.name: v.id for v in variants},
    )


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
