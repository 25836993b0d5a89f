"""Reading what is stored: an experiment whole, the list of experiments, and what a resume skips."""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any, get_args

import numpy as np
from numpy.typing import DTypeLike
from sqlalchemy import Connection, RowMapping, Select, and_, or_, select

from benchlab.metrics import Direction
from benchlab.store import checks, columnar, driver, profiles
from benchlab.store import schema as t
from benchlab.store.columns import metric_columns
from benchlab.store.documents import HostFacts, RunDetails
from benchlab.store.records import (
    BENCHMARK_BINARY,
    FAILED_BENCHMARKS,
    Calibration,
    ExperimentData,
    ExperimentRecord,
    MetricColumns,
    RunRecord,
    RunTable,
)

DIRECTIONS = get_args(Direction)


def load(conn: Connection, exp: ExperimentRecord, *, every_record: bool = False) -> ExperimentData:
    """The experiment's runs as columns with their metric values, and the whole records of the
    runs a report names one by one (those that failed, those a benchmark failed inside), or of
    every run with `every_record` (a JSON report with its runs, a bundle)."""
    with columnar.reader(conn) as columns:
        answer = columns.ask(*run_query(exp))  # the runs and their values, read by the native reader
        values = metric_columns(conn, columns, exp.id)  # while the same run rows are checked here
        damage = checks.damaged_run(conn, exp.id)  # every column of every run row, before any is used
        if damage is not None:
            raise damage
        runs = run_table(answer(), exp)
        records = run_records(conn, exp, last=int(runs.ids[-1]) if len(runs) else 0, every=every_record)
        metrics = values(runs.ids)
    _finite_values(metrics)
    names_w = {v: k for k, v in exp.workload_ids.items()}
    m = t.metric_name.c
    info = {
        (names_w[row.workload_id], checks.text(row.name, f"metric name {row.id}", "name")): (
            checks.text(row.unit, f"metric name {row.id}", "unit"),
            checks.text(row.direction, f"metric name {row.id}", "direction", allowed=DIRECTIONS),
        )
        for row in conn.execute(select(m.id, m.workload_id, m.name, m.unit, m.direction).where(m.workload_id.in_(list(names_w))))
    }
    host_ids = set(np.unique(runs.host_id).tolist())
    hosts = {
        row.id: checks.document(row.fingerprint, HostFacts, f"host {row.id}", "fingerprint")[0]
        for row in conn.execute(select(t.host.c.id, t.host.c.fingerprint).where(t.host.c.id.in_(host_ids)))
    }
    profiled = profiles.profiled_runs(conn, exp)
    return ExperimentData(exp, runs, records, metrics, info, hosts, calibrations(conn, host_ids), every_record, profiled)


def _finite_values(metrics: MetricColumns) -> None:
    """Every metric value a finite number: benchlab stores no other (an infinity would turn every
    median and interval it enters into one), so one is another program's, refused by its run."""
    finite = np.isfinite(metrics.values)
    if not finite.all():
        at = int(np.flatnonzero(~finite)[0])
        name = metrics.names[int(metrics.name_codes[at])]
        raise checks.damaged(f"run {int(metrics.run_ids[at])}", f"has metric {name} = {metrics.values[at]}, not a finite number")


def run_query(exp: ExperimentRecord) -> tuple[Select[Any], dict[str, DTypeLike]]:
    """Every run of the experiment, in the order stored, and the dtype of each column."""
    r = t.run.c
    query = (
        select(
            r.id, r.workload_id, r.variant_id, r.host_id, r.block, r.warmup, (r.status == "ok").label("ok"),
            (r.workload_version == t.workload.c.version).label("current"),
        )
        .join(t.workload, t.workload.c.id == r.workload_id)
        .where(r.experiment_id == exp.id)
        .order_by(r.id)
    )  # fmt: skip
    whole, flag = np.int64, np.bool_
    return query, {"id": whole, "workload_id": whole, "variant_id": whole, "host_id": whole, "block": whole,
                   "warmup": flag, "ok": flag, "current": flag}  # fmt: skip


def run_table(c: columnar.Columns, exp: ExperimentRecord) -> RunTable:
    """The columns of `run_query` as the analysis reads them."""
    return RunTable(
        ids=c["id"], workload=_places(c["workload_id"], exp.workload_ids), variant=_places(c["variant_id"], exp.variant_ids),
        host_id=c["host_id"], block=c["block"], warmup=c["warmup"], ok=c["ok"], current=c["current"],
        workloads=list(exp.workload_ids), variants=list(exp.variant_ids),
    )  # fmt: skip


def _places(ids: np.ndarray, named: dict[str, int]) -> np.ndarray:
    """Database ids as places in `named`'s order."""
    known = np.fromiter(named.values(), dtype=np.int64, count=len(named))
    order = np.argsort(known)
    return order[np.searchsorted(known[order], ids)] if len(ids) else np.empty(0, dtype=np.int64)


def run_records(conn: Connection, exp: ExperimentRecord, *, last: int, every: bool) -> list[RunRecord]:
    """Whole records of the runs up to id `last` (those the columns were read with), all or only
    those a report names: every run that did not succeed, and the benchmark binaries' runs
    whose details name a benchmark that failed inside (read back from the parsed details: the
    text search only spares parsing the others, and other workloads' details are not read)."""
    names_w = {v: k for k, v in exp.workload_ids.items()}
    names_v = {v: k for k, v in exp.variant_ids.items()}
    r, details = t.run.c, t.run_detail.c.details
    query = (
        select(
            r.id, r.workload_id, r.variant_id, r.host_id, r.block, r.warmup, r.position, r.status, r.exit_code,
            r.message, r.stderr_tail, r.started_at, r.ended_at,
            (r.workload_version == t.workload.c.version).label("current"), details,
        )
        .join(t.workload, t.workload.c.id == r.workload_id)
        .outerjoin(t.run_detail, t.run_detail.c.run_id == r.id)
        .where(r.experiment_id == exp.id, r.id <= last)
        .order_by(r.id)  # the order runs were stored in
    )  # fmt: skip
    if not every:
        d = t.run_detail.alias("named").c
        named = select(d.run_id).where(d.run_id == r.id, d.details.contains(f'"{FAILED_BENCHMARKS}"', autoescape=True))
        query = query.where(or_(r.status != "ok", and_(t.workload.c.kind == BENCHMARK_BINARY, named.exists())))
    at = driver.places(query)
    id_, workload, variant, host, block, warmup, position, status, exit_code, message, tail, started, ended, current, detail = (
        at[name]
        for name in (
            "id", "workload_id", "variant_id", "host_id", "block", "warmup", "position", "status", "exit_code", "message",
            "stderr_tail", "started_at", "ended_at", "current", "details",
        )
    )  # fmt: skip
    read_details = _details_reader()
    with driver.bulk():
        return [
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
                read_details(row[detail], row[id_]),
            )
            for row in driver.rows(conn, query)
        ]


def _details_reader() -> Callable[[Any, int], dict[str, Any] | None]:
    """Reads runs' details, each checked against `RunDetails`, but a text met before in this
    load only parsed: most runs of an experiment store the very same details (allocator, machine
    state), and validating each of 100,000 costs half a second; the outcome depends on the text alone."""
    valid: set[Any] = set()

    def read(text: Any, run_id: int) -> dict[str, Any] | None:
        if text is None:
            return None
        if text in valid:
            return checks.json_object(text, f"run {run_id}", "details")
        parsed = checks.document(text, RunDetails, f"run {run_id}", "details")[0]
        valid.add(text)
        return parsed

    return read


def calibrations(conn: Connection, host_ids: set[int]) -> list[Calibration]:
    """The latest calibration of each (host, workload) the hosts have."""
    c = t.calibration.c
    query = (
        select(c.host_id, c.workload_key.label("workload_key"), c.metric, c.spread, c.experiments, c.false_verdicts,
               c.blocks, c.created_at)
        .where(c.host_id.in_(host_ids))
        .order_by(c.created_at)
    )  # fmt: skip
    latest = {(row["host_id"], row["workload_key"]): _calibration(row) for row in conn.execute(query).mappings()}
    return list(latest.values())


def _calibration(row: RowMapping) -> Calibration:
    where = f"calibration of host {row['host_id']}"
    return Calibration(
        host_id=row["host_id"],
        workload_key=checks.text(row["workload_key"], where, "workload_version"),
        metric=checks.text(row["metric"], where, "metric"),
        spread=checks.number(row["spread"], where, "spread", optional=True),
        experiments=checks.whole(row["experiments"], where, "experiments"),
        false_verdicts=checks.whole(row["false_verdicts"], where, "false_verdicts"),
        blocks=checks.whole(row["blocks"], where, "blocks"),
        created_at=checks.number(row["created_at"], where, "created_at"),
    )


def stored_keys(
    conn: Connection,
    exp: ExperimentRecord,
    host_id: int,
    *,
    workloads: Collection[str] | None = None,
    blocks: Collection[int] | None = None,
    ok_only: bool = False,
) -> set[tuple[str, str, int, bool]]:
    """(workload, variant, block, warm-up) of every run stored for a host (`ok_only`: of every run
    that ended well): what a resume skips; only of those workloads and blocks where given (a
    fleet's task: one block, read through the `run_once` index instead of every run the host stored).
    A resume of the whole experiment first checks every column of its runs (a failed one it runs
    again is read whole), as a report does; a fleet's task the references of the runs it reads."""
    if workloads is None and blocks is None and (damage := checks.damaged_run(conn, exp.id)) is not None:
        raise damage
    names_w = {v: k for k, v in exp.workload_ids.items()}
    names_v = {v: k for k, v in exp.variant_ids.items()}
    r = t.run.c
    query = select(r.id, r.workload_id, r.variant_id, r.block, r.warmup).where(r.experiment_id == exp.id, r.host_id == host_id)
    if ok_only:
        query = query.where(r.status == "ok")
    if workloads is not None:
        query = query.where(r.workload_id.in_([exp.workload_ids[w] for w in workloads]))
    if blocks is not None:
        query = query.where(r.block.in_(sorted(blocks)))
    keys = set()
    for row in conn.execute(query):
        if row.workload_id not in names_w or row.variant_id not in names_v:  # the full check says which, and why
            elsewhere = "names no workload or variant of its experiment"
            raise checks.damaged_run(conn, exp.id) or checks.damaged(f"run {row.id}", elsewhere)
        keys.add((names_w[row.workload_id], names_v[row.variant_id], row.block, bool(row.warmup)))
    return keys


def run_identities(conn: Connection, exp: ExperimentRecord) -> dict[int, tuple[str, str]]:
    """run id -> (uuid, workload version), which bundles carry and reports do not need."""
    r = t.run.c
    query = select(r.id, r.uuid, r.workload_version).where(r.experiment_id == exp.id)
    return {row.id: (row.uuid, row.workload_version) for row in conn.execute(query)}
