"""A bundle's results as `ExperimentData`, read without a database: what `benchlab diff` compares
when one side is a bundle from another machine, which must not be merged into this one's results
just to be looked at. The bundle was wholly checked by `read_bundle` (its runs are of its own
workload versions, its references resolve), so every run here is of the current version."""

from __future__ import annotations

import numpy as np

from benchlab.store.bundle import CheckedBundle, host_facts, run_details
from benchlab.store.experiments import spec_digest
from benchlab.store.records import ExperimentData, ExperimentRecord, MetricColumns, RunRecord, RunTable


def bundle_data(checked: CheckedBundle) -> ExperimentData:
    """The bundle's experiment as a load from the store would give it, every record included.
    Hosts are numbered from 1 in the bundle's order, runs from 1 in its order (the stored order
    of the machine that wrote it)."""
    bundle, info = checked.bundle, checked.bundle.experiment
    spec = checked.spec.model_dump(mode="json")
    workloads = {w.name: i for i, w in enumerate(info.workloads)}
    variants = {v.name: i for i, v in enumerate(info.variants)}
    hosts = {key: i for i, key in enumerate(bundle.hosts, start=1)}
    experiment = ExperimentRecord(
        id=0, name=info.name, spec=checked.spec, spec_document=spec, spec_hash=spec_digest(spec), created_at=info.created_at,
        workload_ids=workloads, workload_versions={w.name: w.version for w in info.workloads}, variant_ids=variants,
    )  # fmt: skip
    runs = bundle.runs
    table = RunTable(
        ids=np.arange(1, len(runs) + 1, dtype=np.int64),
        workload=np.array([workloads[r.workload] for r in runs], dtype=np.int64),
        variant=np.array([variants[r.variant] for r in runs], dtype=np.int64),
        host_id=np.array([hosts[r.host] for r in runs], dtype=np.int64),
        block=np.array([r.block for r in runs], dtype=np.int64),
        warmup=np.array([r.warmup for r in runs], dtype=np.bool_),
        ok=np.array([r.status == "ok" for r in runs], dtype=np.bool_),
        current=np.ones(len(runs), dtype=np.bool_),
        workloads=list(workloads),
        variants=list(variants),
    )
    names: dict[str, int] = {}
    run_ids, codes, values = [], [], []
    info_by_metric: dict[tuple[str, str], tuple[str, str]] = {}
    for run_id, run in enumerate(runs, start=1):
        for m in run.metrics:
            run_ids.append(run_id)
            codes.append(names.setdefault(m.name, len(names)))
            values.append(m.value)
            info_by_metric[(run.workload, m.name)] = (m.unit, m.direction)
    metrics = MetricColumns(
        run_ids=np.array(run_ids, dtype=np.int64), name_codes=np.array(codes, dtype=np.int32),
        values=np.array(values, dtype=np.float64), names=list(names),
    )  # fmt: skip
    records = [
        RunRecord(
            run_id,
            r.workload,
            r.variant,
            hosts[r.host],
            r.block,
            r.warmup,
            r.position,
            r.status,
            r.exit_code,
            r.message,
            r.stderr_tail,
            r.started_at,
            r.ended_at,
            True,
            run_details(r),
        )  # fmt: skip
        for run_id, r in enumerate(runs, start=1)
    ]
    facts = {hosts[key]: host_facts(fp) for key, fp in bundle.hosts.items()}
    profiled = [p.as_run(hosts[p.host]) for p in bundle.profiled_runs]
    return ExperimentData(experiment, table, records, metrics, info_by_metric, facts, [], every_record=True, profiled=profiled)
