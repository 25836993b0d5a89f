"""Export and import bundles: one JSON file with everything about an experiment, raw values included.

Importing merges results from another machine. It refuses a bundle twice
(its id is remembered), a run twice (run uuids and the run key are unique),
a different spec under the same name, and different workload versions:
results of different work are never compared.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

from sqlalchemy import insert, select
from sqlalchemy.exc import IntegrityError

from benchlab.errors import SpecError, StoreError
from benchlab.metrics import Metric
from benchlab.store import schema as t
from benchlab.store.db import ExperimentRecord, Store, new_id

BUNDLE_SCHEMA = "benchlab.bundle/1"


def export_bundle(store: Store, name: str) -> dict[str, Any]:
    exp = store.require_experiment(name)
    data = store.load(exp)
    with store.engine.connect() as conn:
        variants = conn.execute(
            select(t.variant.c.name, t.variant.c.config, t.variant.c.is_baseline)
            .where(t.variant.c.experiment_id == exp.id)
            .order_by(t.variant.c.position)
        ).all()
        kinds = dict(conn.execute(select(t.workload.c.name, t.workload.c.kind).where(t.workload.c.experiment_id == exp.id)).all())
    values = data.run_values()
    identities = store.run_identities(exp)
    metrics = {
        run.id: [
            {"name": name, "value": value, "unit": data.metric_info.get((run.workload, name), ("", "none"))[0],
             "direction": data.metric_info.get((run.workload, name), ("", "none"))[1]}
            for name, value in values[run.id].items()
        ]
        for run in data.runs
    }  # fmt: skip
    return {
        "schema": BUNDLE_SCHEMA,
        "bundle_id": str(uuid.uuid4()),
        "created_at": time.time(),
        "experiment": {
            "name": exp.name,
            "spec": exp.spec,
            "created_at": exp.created_at,
            "workloads": [{"name": w, "kind": kinds[w], "version": v} for w, v in exp.workload_versions.items()],
            "variants": [{"name": v.name, "config": json.loads(v.config), "is_baseline": bool(v.is_baseline)} for v in variants],
        },
        "hosts": {str(k): v for k, v in data.hosts.items()},
        "runs": [
            {
                "uuid": identities[r.id][0],
                "workload": r.workload,
                "variant": r.variant,
                "host": str(r.host_id),
                "block": r.block,
                "warmup": r.warmup,
                "position": r.position,
                "status": r.status,
                "started_at": r.started_at,
                "ended_at": r.ended_at,
                "exit_code": r.exit_code,
                "message": r.message,
                "stderr_tail": r.stderr_tail,
                "workload_version": identities[r.id][1],
                "details": r.details,
                "metrics": metrics.get(r.id, []),
            }  # fmt: skip
            for r in data.runs
        ],
    }


def read_bundle(path: Path) -> dict[str, Any]:
    try:
        bundle = json.loads(path.read_text())
    except FileNotFoundError:
        raise SpecError(f"no bundle at {path}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SpecError(f"{path} is not a benchlab bundle: {exc}") from None
    if not isinstance(bundle, dict) or bundle.get("schema") != BUNDLE_SCHEMA:
        raise SpecError(
            f"{path} is not a benchlab bundle (schema {bundle.get('schema') if isinstance(bundle, dict) else None!r})"
        )
    for key in ("bundle_id", "experiment", "hosts", "runs"):
        if key not in bundle:
            raise SpecError(f"{path}: bundle lacks '{key}'")
    return bundle


def _target_experiment(store: Store, bundle: dict[str, Any]) -> tuple[ExperimentRecord, bool]:
    """The experiment to merge into, and whether it was created for this import."""
    info = bundle["experiment"]
    existing = store.find_experiment(info["name"])
    if existing is None:
        return store.create_experiment(
            name=info["name"],
            spec=info["spec"],
            workloads=[(w["name"], w["kind"], w["version"]) for w in info["workloads"]],
            variants=[(v["name"], v["config"], v["is_baseline"]) for v in info["variants"]],
            created_at=info["created_at"],
        ), True
    if existing.spec != info["spec"]:
        raise StoreError(f"experiment '{info['name']}' here has a different spec than the bundle's; refusing to mix them")
    theirs = {w["name"]: w["version"] for w in info["workloads"]}
    mismatched = [w for w, v in theirs.items() if existing.workload_versions.get(w) != v]
    if mismatched:
        raise StoreError(f"workload version mismatch for {', '.join(mismatched)}: results of different work are never compared")
    return existing, False


def import_bundle(store: Store, bundle: dict[str, Any]) -> tuple[str, int]:
    """Merges a bundle; returns (experiment name, runs added)."""
    with store.engine.connect() as conn:
        if conn.execute(select(t.bundle_import).where(t.bundle_import.c.bundle_id == str(bundle["bundle_id"]))).first():
            raise StoreError(f"bundle {bundle['bundle_id']} was already imported")
    try:
        exp, created = _target_experiment(store, bundle)
    except (KeyError, TypeError, AttributeError) as exc:
        raise SpecError(f"the bundle is malformed ({exc!r}); nothing was imported") from None
    try:
        _insert_runs(store, exp, bundle)
    except BaseException:
        if created:  # nothing was imported: leave no empty experiment behind either
            store.drop_experiment(exp)
        raise
    return exp.name, len(bundle["runs"])


def _insert_runs(store: Store, exp: ExperimentRecord, bundle: dict[str, Any]) -> None:
    host_ids = {key: store.host_id(fp) for key, fp in bundle["hosts"].items()}
    try:
        with store.forgetting_names_on_failure(), store.engine.begin() as conn:
            conn.execute(
                insert(t.bundle_import).values(bundle_id=bundle["bundle_id"], experiment_id=exp.id, imported_at=time.time())
            )
            for run in bundle["runs"]:
                if run["workload_version"] != exp.workload_versions.get(run["workload"]):
                    raise StoreError(f"run {run['uuid']} is of another version of workload {run['workload']}")
                run_id = new_id(
                    conn.execute(
                        insert(t.run).values(
                            uuid=run["uuid"],
                            experiment_id=exp.id,
                            workload_id=exp.workload_ids[run["workload"]],
                            variant_id=exp.variant_ids[run["variant"]],
                            host_id=host_ids[run["host"]],
                            block=run["block"],
                            warmup=run["warmup"],
                            position=run["position"],
                            attempt=1,
                            status=run["status"],
                            started_at=run["started_at"],
                            ended_at=run["ended_at"],
                            exit_code=run["exit_code"],
                            message=run["message"],
                            stderr_tail=run["stderr_tail"],
                            workload_version=run["workload_version"],
                        )  # fmt: skip
                    )
                )
                store.insert_metrics(
                    conn,
                    run_id,
                    exp.workload_ids[run["workload"]],
                    [Metric(m["name"], float(m["value"]), m["unit"], m["direction"]) for m in run["metrics"]],
                )
                if run.get("details"):  # bundles written before runs had details lack them
                    conn.execute(insert(t.run_detail).values(run_id=run_id, details=json.dumps(dict(run["details"]))))
    except IntegrityError:
        raise StoreError("the bundle holds runs that are already stored here; nothing was imported") from None
    except (KeyError, TypeError, AttributeError) as exc:
        raise SpecError(f"the bundle is malformed ({exc!r}); nothing was imported") from None
