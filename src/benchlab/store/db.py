"""Opening a results database and reading and writing experiments in it."""

from __future__ import annotations

import hashlib
import json
import os
import time
import uuid as uuidlib
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import Connection, Engine, Integer, create_engine, event, func, insert, select
from sqlalchemy.exc import IntegrityError, OperationalError, SQLAlchemyError

from benchlab.errors import StoreError
from benchlab.metrics import Metric
from benchlab.store import schema as t


def default_db() -> str:
    """BENCHLAB_DB, else one results file per user, so `benchlab list` works from any folder."""
    explicit = os.environ.get("BENCHLAB_DB")
    if explicit:
        return explicit
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(base, "benchlab", "results.db")


def engine_url(target: str) -> str:
    if "://" in target:
        scheme, rest = target.split("://", 1)
        return f"postgresql+psycopg://{rest}" if scheme in ("postgres", "postgresql") else target
    path = Path(target).expanduser().absolute()
    path.parent.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{path}"


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    # WAL with synchronous=NORMAL survives a crash of this process (kill -9) losing nothing committed.
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=10000")
    cursor.close()


# Built once: compiling an INSERT per run would be a visible share of the harness's cost per run.
_INSERT_RUN = insert(t.run)
_INSERT_METRIC = insert(t.metric)


def spec_digest(spec_json: str) -> str:
    return hashlib.sha256(spec_json.encode()).hexdigest()


@dataclass(frozen=True)
class ExperimentRecord:
    id: int
    name: str
    spec: dict[str, Any]
    spec_hash: str
    created_at: float
    workload_ids: dict[str, int]
    workload_versions: dict[str, str]
    variant_ids: dict[str, int]


@dataclass(slots=True)
class RunRecord:
    """One stored run with its metric values, as the analysis and the reports read it."""

    id: int
    uuid: str
    workload: str
    variant: str
    host_id: int
    block: int
    warmup: bool
    position: int
    status: str
    exit_code: int | None
    message: str | None
    stderr_tail: str | None
    started_at: float
    ended_at: float
    workload_version: str


@dataclass
class MetricColumns:
    """Every metric value of an experiment as parallel arrays: one entry per (run, metric)."""

    run_ids: np.ndarray  # int64
    name_codes: np.ndarray  # int32, index into names
    values: np.ndarray  # float64
    names: list[str]


@dataclass
class ExperimentData:
    """Everything stored about one experiment."""

    experiment: ExperimentRecord
    runs: list[RunRecord]
    metrics: MetricColumns
    metric_info: dict[tuple[str, str], tuple[str, str]]  # (workload, metric) -> (unit, direction)
    hosts: dict[int, dict[str, Any]]

    def run_values(self) -> dict[int, dict[str, float]]:
        """Raw values per run id, for the JSON report and bundles."""
        out: dict[int, dict[str, float]] = {r.id: {} for r in self.runs}
        names = self.metrics.names
        for run_id, code, value in zip(
            self.metrics.run_ids.tolist(), self.metrics.name_codes.tolist(), self.metrics.values.tolist(), strict=True
        ):
            out[run_id][names[code]] = value
        return out


class Store:
    """The results database; SQLite file or PostgreSQL URL, same schema."""

    def __init__(self, target: str | None = None) -> None:
        self.target = target or default_db()
        try:
            self.engine: Engine = create_engine(engine_url(self.target))
            if self.engine.dialect.name == "sqlite":
                event.listen(self.engine, "connect", _sqlite_pragmas)
            self._ensure_schema()
        except (SQLAlchemyError, OSError) as exc:
            raise StoreError(f"cannot open results database {self.target}: {_reason(exc)}") from None

    def _ensure_schema(self) -> None:
        t.metadata.create_all(self.engine)
        with self.engine.begin() as conn:
            version = conn.execute(select(t.schema_version.c.version)).scalar()
            if version is None:
                conn.execute(insert(t.schema_version).values(version=t.SCHEMA_VERSION))
            elif version > t.SCHEMA_VERSION:
                raise StoreError(
                    f"{self.target} has schema {version}, newer than this benchlab ({t.SCHEMA_VERSION}); upgrade benchlab"
                )

    # -- hosts ---------------------------------------------------------------
    def host_id(self, fingerprint: dict[str, Any]) -> int:
        text = json.dumps(fingerprint, sort_keys=True)
        digest = hashlib.sha256(text.encode()).hexdigest()
        with self.engine.begin() as conn:
            found = conn.execute(select(t.host.c.id).where(t.host.c.hash == digest)).scalar()
            if found is not None:
                return int(found)
            return int(
                conn.execute(insert(t.host).values(hash=digest, fingerprint=text, created_at=time.time())).inserted_primary_key[0]
            )

    # -- experiments ---------------------------------------------------------
    def create_experiment(
        self,
        *,
        name: str,
        spec: dict[str, Any],
        workloads: Sequence[tuple[str, str, str]],
        variants: Sequence[tuple[str, dict[str, Any], bool]],
        created_at: float | None = None,
    ) -> ExperimentRecord:
        """workloads: (name, kind, version); variants: (name, config, is_baseline)."""
        spec_json = json.dumps(spec, sort_keys=True)
        try:
            with self.engine.begin() as conn:
                exp_id = conn.execute(
                    insert(t.experiment).values(
                        name=name, spec=spec_json, spec_hash=spec_digest(spec_json), created_at=created_at or time.time()
                    )
                ).inserted_primary_key[0]
                conn.execute(
                    insert(t.workload),
                    [{"experiment_id": exp_id, "name": w, "kind": k, "version": v} for w, k, v in workloads],
                )
                conn.execute(
                    insert(t.variant),
                    [
                        {
                            "experiment_id": exp_id,
                            "name": v,
                            "position": i,
                            "config": json.dumps(c, sort_keys=True),
                            "is_baseline": b,
                        }
                        for i, (v, c, b) in enumerate(variants)
                    ],
                )
        except IntegrityError:
            raise StoreError(
                f"an experiment named '{name}' already exists in {self.target}",
                hint="continue it with --resume, or choose another name",
            ) from None
        record = self.find_experiment(name)
        assert record is not None
        return record

    def find_experiment(self, name: str) -> ExperimentRecord | None:
        with self.engine.connect() as conn:
            row = conn.execute(select(t.experiment).where(t.experiment.c.name == name)).mappings().first()
            if row is None:
                return None
            workloads = conn.execute(
                select(t.workload.c.name, t.workload.c.id, t.workload.c.version).where(t.workload.c.experiment_id == row["id"])
            ).all()
            variants = conn.execute(
                select(t.variant.c.name, t.variant.c.id)
                .where(t.variant.c.experiment_id == row["id"])
                .order_by(t.variant.c.position)
            ).all()
        return ExperimentRecord(
            id=row["id"],
            name=row["name"],
            spec=json.loads(row["spec"]),
            spec_hash=row["spec_hash"],
            created_at=row["created_at"],
            workload_ids={w.name: w.id for w in workloads},
            workload_versions={w.name: w.version for w in workloads},
            variant_ids={v.name: v.id for v in variants},
        )

    def require_experiment(self, name: str) -> ExperimentRecord:
        record = self.find_experiment(name)
        if record is None:
            raise StoreError(f"no experiment named '{name}' in {self.target}", hint="`benchlab list` shows what is stored")
        return record

    def list_experiments(self) -> list[dict[str, Any]]:
        counts = (
            select(
                t.run.c.experiment_id,
                func.count().label("runs"),
                func.sum((t.run.c.status != "ok").cast(Integer)).label("failed"),
                func.max(t.run.c.ended_at).label("last"),
            )
            .group_by(t.run.c.experiment_id)
            .subquery()
        )
        query = (
            select(t.experiment.c.name, t.experiment.c.created_at, counts.c.runs, counts.c.failed, counts.c.last)
            .select_from(t.experiment.outerjoin(counts, counts.c.experiment_id == t.experiment.c.id))
            .order_by(t.experiment.c.created_at)
        )
        with self.engine.connect() as conn:
            return [dict(r) for r in conn.execute(query).mappings()]

    # -- runs ----------------------------------------------------------------
    def stored_keys(self, exp: ExperimentRecord, host_id: int) -> set[tuple[str, str, int, bool]]:
        names_w = {v: k for k, v in exp.workload_ids.items()}
        names_v = {v: k for k, v in exp.variant_ids.items()}
        query = select(t.run.c.workload_id, t.run.c.variant_id, t.run.c.block, t.run.c.warmup).where(
            t.run.c.experiment_id == exp.id, t.run.c.host_id == host_id
        )
        with self.engine.connect() as conn:
            return {(names_w[w], names_v[v], b, bool(warm)) for w, v, b, warm in conn.execute(query)}

    def record_run(
        self,
        exp: ExperimentRecord,
        *,
        host_id: int,
        workload: str,
        variant: str,
        block: int,
        warmup: bool,
        position: int,
        status: str,
        started_at: float,
        ended_at: float,
        metrics: Iterable[Metric] = (),
        exit_code: int | None = None,
        message: str | None = None,
        stderr_tail: str | None = None,
        run_uuid: str | None = None,
        attempt: int = 1,
        workload_version: str | None = None,
    ) -> None:
        """Stores one finished run and its metrics in one transaction."""
        row = {
            "uuid": run_uuid or str(uuidlib.uuid4()),
            "experiment_id": exp.id,
            "workload_id": exp.workload_ids[workload],
            "variant_id": exp.variant_ids[variant],
            "host_id": host_id,
            "block": block,
            "warmup": warmup,
            "position": position,
            "attempt": attempt,
            "status": status,
            "started_at": started_at,
            "ended_at": ended_at,
            "exit_code": exit_code,
            "message": message,
            "stderr_tail": stderr_tail,
            "workload_version": workload_version or exp.workload_versions[workload],
        }
        try:
            with self.engine.begin() as conn:
                run_id = conn.execute(_INSERT_RUN, row).inserted_primary_key[0]
                values = [
                    {"run_id": run_id, "name": m.name, "value": m.value, "unit": m.unit, "direction": m.direction}
                    for m in metrics
                ]
                if values:
                    conn.execute(_INSERT_METRIC, values)
        except IntegrityError:
            raise StoreError(
                f"run {workload}/{variant} block {block} is already stored for this host; it is never stored twice"
            ) from None
        except OperationalError as exc:
            raise StoreError(f"could not store a run in {self.target}: {_reason(exc)}") from None

    def load(self, exp: ExperimentRecord) -> ExperimentData:
        names_w = {v: k for k, v in exp.workload_ids.items()}
        names_v = {v: k for k, v in exp.variant_ids.items()}
        r = t.run.c
        with self.engine.connect() as conn:
            query = (
                select(
                    r.id, r.uuid, r.workload_id, r.variant_id, r.host_id, r.block, r.warmup, r.position, r.status,
                    r.exit_code, r.message, r.stderr_tail, r.started_at, r.ended_at, r.workload_version,
                )
                .where(r.experiment_id == exp.id)
                .order_by(r.started_at, r.id)
            )  # fmt: skip
            runs = {
                row[0]: RunRecord(
                    row[0], row[1], names_w[row[2]], names_v[row[3]], row[4], row[5], bool(row[6]), *row[7:]
                )  # fmt: skip
                for row in _raw_rows(conn, query)
            }
            metrics = self._metric_columns(conn, exp.id)
            info: dict[tuple[str, str], tuple[str, str]] = {}
            sample_runs: dict[str, list[int]] = defaultdict(list)
            for run in runs.values():
                if run.status == "ok" and len(sample_runs[run.workload]) < 3:
                    sample_runs[run.workload].append(run.id)
            for workload_name, ids in sample_runs.items():
                rows = conn.execute(
                    select(t.metric.c.name, t.metric.c.unit, t.metric.c.direction).where(t.metric.c.run_id.in_(ids))
                )
                for name, unit, direction in rows:
                    info.setdefault((workload_name, name), (unit, direction))
            host_ids = {run.host_id for run in runs.values()}
            hosts = {
                h.id: json.loads(h.fingerprint)
                for h in conn.execute(select(t.host.c.id, t.host.c.fingerprint).where(t.host.c.id.in_(host_ids)))
            }
        return ExperimentData(exp, list(runs.values()), metrics, info, hosts)

    @staticmethod
    def _metric_columns(conn: Connection, experiment_id: int) -> MetricColumns:
        """Metric values as columns, for numpy."""
        query = select(t.metric.c.run_id, t.metric.c.name, t.metric.c.value).where(
            t.metric.c.run_id.in_(select(t.run.c.id).where(t.run.c.experiment_id == experiment_id))
        )
        rows = _raw_rows(conn, query)
        index: dict[str, int] = {}
        return MetricColumns(
            run_ids=np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows)),
            name_codes=np.fromiter((index.setdefault(r[1], len(index)) for r in rows), dtype=np.int32, count=len(rows)),
            values=np.fromiter((r[2] for r in rows), dtype=np.float64, count=len(rows)),
            names=list(index),
        )


def _raw_rows(conn: Connection, query: Any) -> list[tuple[Any, ...]]:
    """Rows through the driver's own cursor: for a million values, building SQLAlchemy row
    objects would cost more than the whole analysis."""
    compiled = query.compile(dialect=conn.dialect)
    params = [compiled.params[name] for name in compiled.positiontup] if compiled.positional else compiled.params
    cursor = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
    try:
        cursor.execute(str(compiled), params)
        return list(cursor.fetchall())
    finally:
        cursor.close()


def _reason(exc: BaseException) -> str:
    orig = getattr(exc, "orig", None)
    return str(orig or exc).strip().splitlines()[0]
