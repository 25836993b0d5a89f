"""Opening a results database and reading and writing experiments in it."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import sqlite3
import time
import urllib.parse
import uuid as uuidlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import Connection, CursorResult, Engine, Integer, create_engine, delete, event, func, insert, select
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import IntegrityError, OperationalError, SQLAlchemyError

from benchlab.errors import StoreError
from benchlab.metrics import Metric
from benchlab.spec.fields import without_nul
from benchlab.store import schema as t


def default_db() -> str:
    """BENCHLAB_DB, else one results file per user, so `benchlab list` works from any folder."""
    explicit = os.environ.get("BENCHLAB_DB")
    if explicit:
        return explicit
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(base, "benchlab", "results.db")


def engine_url(target: str, *, create: bool = True) -> URL:
    """The SQLAlchemy URL of a target; a SQLite file that is not there is made only when `create`
    (read-only commands must not leave an empty database behind a mistyped path). A path is
    never parsed as a URL: `?` and `#` are characters of its name."""
    if not target:
        raise StoreError("the results database is named by an empty string (give a SQLite path or a postgresql:// URL)")
    if "://" in target:
        scheme, rest = target.split("://", 1)
        if scheme in ("postgres", "postgresql", "postgresql+psycopg"):
            return make_url(f"postgresql+psycopg://{rest}")
        raise StoreError(f"{scheme}:// is no results database benchlab can use (a SQLite path or a postgresql:// URL)")
    path = Path(target).expanduser().absolute()
    if not create and not path.is_file():
        raise StoreError(f"no results database at {path}")
    _refuse_foreign_sqlite(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return URL.create("sqlite", database=str(path))


def _refuse_foreign_sqlite(path: Path) -> None:
    """Another program's SQLite file is left exactly as it is: looked at read-only, before the
    connection pragmas (WAL) or the schema would change it."""
    if not path.is_file() or path.stat().st_size == 0:
        return
    try:
        with contextlib.closing(sqlite3.connect(f"file:{urllib.parse.quote(str(path))}?mode=ro", uri=True)) as conn:
            tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open results database {path}: {exc}") from None
    if tables and t.schema_version.name not in tables:
        raise StoreError(f"{path} is not a benchlab results database (it holds tables of its own)")


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    # WAL with synchronous=NORMAL survives a crash of this process (kill -9) losing nothing committed.
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=10000")
    cursor.close()


# What identifies a host: facts that stay put while it is up. Machine state a variant or its setup
# may change (swap, the governor, boost, SMT, transparent huge pages) and what is merely installed
# (allocator libraries, Python) stay out, else a zram study would split its runs across two
# 'hosts' and lose their pairing; each run records that state in its details instead.
IDENTITY = (
    "hostname", "machine_id", "arch", "cpu_model", "cpus_online", "memory_kib", "kernel", "kernel_cmdline",
    "virtualization", "remote",
)  # fmt: skip
NAME_SPAN = 1 << 24  # metric names of one experiment span fewer ids than this

# Built once: compiling an INSERT per run would be a visible share of the harness's cost per run.
_INSERT_RUN = insert(t.run)
_INSERT_METRIC = insert(t.metric)


def host_digest(fingerprint: Mapping[str, Any]) -> str:
    """The identity hash of a host row: of its IDENTITY facts only."""
    identity = {key: fingerprint[key] for key in IDENTITY if key in fingerprint}
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()


def spec_digest(spec: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()


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
    current_version: bool  # ran the experiment's version of its workload (imports may bring others)
    details: dict[str, Any] | None = None  # what it ran under: allocator mapped, options in force


@dataclass
class MetricColumns:
    """Every metric value of an experiment as parallel arrays: one entry per (run, metric)."""

    run_ids: np.ndarray  # int64
    name_codes: np.ndarray  # int32, index into names
    values: np.ndarray  # float64
    names: list[str]


@dataclass(frozen=True)
class Calibration:
    """What `benchlab calibrate` found for one workload on one host: the key is its version and
    the options its version does not cover (`stats.calibration.calibration_key`)."""

    host_id: int
    workload_key: str
    metric: str
    spread: float | None
    experiments: int
    false_verdicts: int
    blocks: int
    created_at: float

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class ExperimentData:
    """Everything stored about one experiment."""

    experiment: ExperimentRecord
    runs: list[RunRecord]
    metrics: MetricColumns
    metric_info: dict[tuple[str, str], tuple[str, str]]  # (workload, metric) -> (unit, direction)
    hosts: dict[int, dict[str, Any]]
    calibrations: list[Calibration] = field(default_factory=list)  # of its hosts and workload versions

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

    def __init__(self, target: str | None = None, *, create: bool = True) -> None:
        """`create=False` for commands that only read: a missing SQLite file is a StoreError."""
        self.target = default_db() if target is None else target
        self._names: dict[int, dict[str, int]] = {}  # workload id -> metric name -> metric_name id
        made: Path | None = None  # a SQLite file this call creates: removed again if it cannot be set up
        try:
            url = engine_url(self.target, create=create)
            if url.drivername == "sqlite" and url.database and not os.path.exists(url.database):
                made = Path(url.database)
            self.engine: Engine = create_engine(url)
            if self.engine.dialect.name == "sqlite":
                event.listen(self.engine, "connect", _sqlite_pragmas)
            self._ensure_schema()
        except (SQLAlchemyError, OSError, ValueError) as exc:  # ValueError: a URL's port that is no number
            if made is not None:  # a full disk must not leave an empty file that reads as a database
                if hasattr(self, "engine"):
                    self.engine.dispose()
                for leftover in (made, Path(f"{made}-wal"), Path(f"{made}-shm")):
                    leftover.unlink(missing_ok=True)
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
    @contextlib.contextmanager
    def transaction(self) -> Iterator[Connection]:
        """One transaction: everything in it is stored, or nothing. A database that cannot take
        the write (a full disk, a lost server) is a StoreError; what was committed before stays."""
        try:
            with self.forgetting_names_on_failure(), self.engine.begin() as conn:
                yield conn
        except OperationalError as exc:
            raise StoreError(f"could not write to {self.target}: {_reason(exc)}; nothing of this was stored") from None

    # -- hosts ---------------------------------------------------------------
    def host_id(self, fingerprint: dict[str, Any]) -> int:
        """The host row for a fingerprint (see IDENTITY for what identifies one)."""
        with self.transaction() as conn:
            return self.host_row(conn, fingerprint)

    @staticmethod
    def host_row(conn: Connection, fingerprint: Mapping[str, Any]) -> int:
        """host_id within a caller's transaction. Rows written when the identity hash covered
        volatile state too are found by their stored fingerprint and rehashed in place."""
        digest = host_digest(fingerprint)
        found = conn.execute(select(t.host.c.id).where(t.host.c.hash == digest)).scalar()
        if found is not None:
            return int(found)
        for host_id, text in conn.execute(select(t.host.c.id, t.host.c.fingerprint).order_by(t.host.c.id)).all():
            if host_digest(json.loads(text)) == digest:
                conn.execute(t.host.update().where(t.host.c.id == host_id).values(hash=digest))
                return int(host_id)
        text = json.dumps(fingerprint, sort_keys=True)
        return new_id(conn.execute(insert(t.host).values(hash=digest, fingerprint=text, created_at=time.time())))

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
        try:
            with self.transaction() as conn:
                return self.insert_experiment(
                    conn, name=name, spec=spec, workloads=workloads, variants=variants, created_at=created_at
                )
        except IntegrityError:
            raise StoreError(
                f"an experiment named '{name}' already exists in {self.target}",
                hint="continue it with --resume, or choose another name",
            ) from None

    @staticmethod
    def insert_experiment(
        conn: Connection,
        *,
        name: str,
        spec: dict[str, Any],
        workloads: Sequence[tuple[str, str, str]],
        variants: Sequence[tuple[str, dict[str, Any], bool]],
        created_at: float | None = None,
    ) -> ExperimentRecord:
        """create_experiment within a caller's transaction (an import creates it with its runs)."""
        exp_id = new_id(
            conn.execute(
                insert(t.experiment).values(
                    name=name,
                    spec=json.dumps(spec, sort_keys=True),
                    spec_hash=spec_digest(spec),
                    created_at=created_at or time.time(),
                )
            )
        )
        conn.execute(insert(t.workload), [{"experiment_id": exp_id, "name": w, "kind": k, "version": v} for w, k, v in workloads])
        conn.execute(
            insert(t.variant),
            [
                {"experiment_id": exp_id, "name": v, "position": i, "config": json.dumps(c, sort_keys=True), "is_baseline": b}
                for i, (v, c, b) in enumerate(variants)
            ],
        )
        record = Store.experiment_in(conn, name)
        assert record is not None
        return record

    def drop_experiment(self, exp: ExperimentRecord) -> None:
        """Removes an experiment that holds no runs (one whose creation turned out to be premature:
        a run refused before its first run, an import refused); its runs would block the delete."""
        with self.transaction() as conn:
            workloads = select(t.workload.c.id).where(t.workload.c.experiment_id == exp.id)
            conn.execute(delete(t.metric_name).where(t.metric_name.c.workload_id.in_(workloads)))
            for table in (t.variant, t.workload):
                conn.execute(delete(table).where(table.c.experiment_id == exp.id))
            conn.execute(delete(t.experiment).where(t.experiment.c.id == exp.id))

    def update_spec(self, exp: ExperimentRecord, spec: dict[str, Any]) -> ExperimentRecord:
        """A resumed experiment's new length (blocks, or the sequential budget): the rest of
        its spec is unchanged, which the runner checked."""
        with self.engine.begin() as conn:
            conn.execute(
                t.experiment.update()
                .where(t.experiment.c.id == exp.id)
                .values(spec=json.dumps(spec, sort_keys=True), spec_hash=spec_digest(spec))
            )
        record = self.find_experiment(exp.name)
        assert record is not None
        return record

    def find_experiment(self, name: str) -> ExperimentRecord | None:
        with self.engine.connect() as conn:
            return self.experiment_in(conn, name)

    @staticmethod
    def experiment_in(conn: Connection, name: str) -> ExperimentRecord | None:
        """find_experiment within a caller's transaction."""
        row = conn.execute(select(t.experiment).where(t.experiment.c.name == name)).mappings().first()
        if row is None:
            return None
        workloads = conn.execute(
            select(t.workload.c.name, t.workload.c.id, t.workload.c.version).where(t.workload.c.experiment_id == row["id"])
        ).all()
        variants = conn.execute(
            select(t.variant.c.name, t.variant.c.id).where(t.variant.c.experiment_id == row["id"]).order_by(t.variant.c.position)
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
        details: Mapping[str, Any] | None = None,
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
            "message": without_nul(message),
            "stderr_tail": without_nul(stderr_tail),
            "workload_version": workload_version or exp.workload_versions[workload],
        }
        try:
            with self.transaction() as conn:
                run_id = new_id(conn.execute(_INSERT_RUN, row))
                self.insert_metrics(conn, run_id, exp.workload_ids[workload], metrics)
                if details:
                    conn.execute(insert(t.run_detail).values(run_id=run_id, details=json.dumps(details, sort_keys=True)))
        except IntegrityError as exc:
            if is_unique_violation(exc):
                raise StoreError(
                    f"run {workload}/{variant} block {block} is already stored for this host; it is never stored twice"
                ) from None
            raise StoreError(f"the database refused run {workload}/{variant} block {block}: {_reason(exc)}") from None

    def run_identities(self, exp: ExperimentRecord) -> dict[int, tuple[str, str]]:
        """run id -> (uuid, workload version), which bundles carry and reports do not need."""
        query = select(t.run.c.id, t.run.c.uuid, t.run.c.workload_version).where(t.run.c.experiment_id == exp.id)
        with self.engine.connect() as conn:
            return {run_id: (uuid, version) for run_id, uuid, version in conn.execute(query)}

    @contextlib.contextmanager
    def forgetting_names_on_failure(self) -> Iterator[None]:
        """Name ids cached during a transaction that rolls back would point nowhere."""
        try:
            yield
        except BaseException:
            self._names.clear()
            raise

    def insert_metrics(self, conn: Connection, run_id: int, workload_id: int, metrics: Iterable[Metric]) -> None:
        metrics = list(metrics)
        if not metrics:
            return
        ids = self.metric_name_ids(conn, workload_id, metrics)
        conn.execute(_INSERT_METRIC, [{"run_id": run_id, "name_id": ids[m.name], "value": m.value} for m in metrics])

    def metric_name_ids(self, conn: Connection, workload_id: int, metrics: list[Metric]) -> dict[str, int]:
        """Ids of the metrics' names for this workload, registering new ones. A metric's unit and
        direction are stored once, with its name: a value in another unit (an imported run in ms
        where this database holds s) is refused, never read in the stored one."""
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
                    insert(t.metric_name),
                    [{"workload_id": workload_id, "name": n, "unit": m.unit, "direction": m.direction} for n, m in new.items()],
                )
                stored = {row.name: row for row in conn.execute(query)}
            known.update({name: row.id for name, row in stored.items()})
        return known

    def load(self, exp: ExperimentRecord) -> ExperimentData:
        names_w = {v: k for k, v in exp.workload_ids.items()}
        names_v = {v: k for k, v in exp.variant_ids.items()}
        r = t.run.c
        with self.engine.connect() as conn:
            query = (
                select(
                    r.id, r.workload_id, r.variant_id, r.host_id, r.block, r.warmup, r.position, r.status,
                    r.exit_code, r.message, r.stderr_tail, r.started_at, r.ended_at,
                    (r.workload_version == t.workload.c.version).label("current"), t.run_detail.c.details,
                )
                .join(t.workload, t.workload.c.id == r.workload_id)
                .outerjoin(t.run_detail, t.run_detail.c.run_id == r.id)
                .where(r.experiment_id == exp.id)
                .order_by(r.id)  # the order runs were stored in
            )  # fmt: skip
            runs = {
                row[0]: RunRecord(
                    id=row[0],
                    workload=names_w[row[1]],
                    variant=names_v[row[2]],
                    host_id=row[3],
                    block=row[4],
                    warmup=bool(row[5]),
                    position=row[6],
                    status=row[7],
                    exit_code=row[8],
                    message=row[9],
                    stderr_tail=row[10],
                    started_at=row[11],
                    ended_at=row[12],
                    current_version=bool(row[13]),
                    details=json.loads(row[14]) if row[14] else None,
                )  # fmt: skip
                for row in _raw_rows(conn, query)
            }
            metrics = self._metric_columns(conn, exp.id)
            info_rows = conn.execute(
                select(t.metric_name.c.workload_id, t.metric_name.c.name, t.metric_name.c.unit, t.metric_name.c.direction)
                .where(t.metric_name.c.workload_id.in_(list(names_w)))
            )  # fmt: skip
            info = {(names_w[w], name): (unit, direction) for w, name, unit, direction in info_rows}
            host_ids = {run.host_id for run in runs.values()}
            hosts = {
                h.id: json.loads(h.fingerprint)
                for h in conn.execute(select(t.host.c.id, t.host.c.fingerprint).where(t.host.c.id.in_(host_ids)))
            }
            calibrations = self._calibrations(conn, host_ids)
        return ExperimentData(exp, list(runs.values()), metrics, info, hosts, calibrations)

    @staticmethod
    def _calibrations(conn: Connection, host_ids: set[int]) -> list[Calibration]:
        """The latest calibration of each (host, workload) the hosts have."""
        c = t.calibration.c
        rows = conn.execute(
            select(c.host_id, c.workload_key, c.metric, c.spread, c.experiments, c.false_verdicts, c.blocks, c.created_at)
            .where(c.host_id.in_(host_ids))
            .order_by(c.created_at)
        ).all()
        latest = {(row[0], row[1]): Calibration(*row) for row in rows}
        return list(latest.values())

    def record_calibration(self, calibration: Calibration) -> None:
        with self.engine.begin() as conn:
            conn.execute(insert(t.calibration).values(**calibration.as_dict()))

    @staticmethod
    def _metric_columns(conn: Connection, experiment_id: int) -> MetricColumns:
        """Metric values as columns, for numpy.

        Each row comes back as two numbers, run and name packed into one integer: converting
        driver values into Python objects is most of the cost of reading a million of them.
        """
        names = dict(
            conn.execute(
                select(t.metric_name.c.id, t.metric_name.c.name)
                .join(t.workload, t.workload.c.id == t.metric_name.c.workload_id)
                .where(t.workload.c.experiment_id == experiment_id)
            ).all()
        )  # fmt: skip
        codes = {name: code for code, name in enumerate(dict.fromkeys(names.values()))}  # one per name, across workloads
        if not names:
            return MetricColumns(np.empty(0, np.int64), np.empty(0, np.int32), np.empty(0), [])
        first = min(names)
        if max(names) - first >= NAME_SPAN:
            raise StoreError(f"experiment {experiment_id} has metric name ids too far apart to read")
        code_of = np.full(max(names) - first + 1, -1, dtype=np.int32)
        for name_id, name in names.items():
            code_of[name_id - first] = codes[name]
        packed = t.metric.c.run_id * NAME_SPAN + (t.metric.c.name_id - first)
        query = select(packed, t.metric.c.value).where(
            t.metric.c.run_id.in_(select(t.run.c.id).where(t.run.c.experiment_id == experiment_id))
        )
        rows = _raw_rows(conn, query)
        keys = np.fromiter(map(itemgetter(0), rows), dtype=np.int64, count=len(rows))
        return MetricColumns(
            run_ids=keys // NAME_SPAN,
            name_codes=code_of[keys % NAME_SPAN],
            values=np.fromiter(map(itemgetter(1), rows), dtype=np.float64, count=len(rows)),
            names=list(codes),
        )


def new_id(result: CursorResult[Any]) -> int:
    """The primary key an INSERT just created."""
    key = result.inserted_primary_key
    assert key is not None
    return int(key[0])


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


def is_unique_violation(exc: IntegrityError) -> bool:
    """Whether a refused write collided with a stored row, rather than breaking another rule."""
    orig = exc.orig
    return getattr(orig, "sqlstate", None) == "23505" or "UNIQUE constraint failed" in str(orig)


def _reason(exc: BaseException) -> str:
    orig = getattr(exc, "orig", None)
    return str(orig or exc).strip().splitlines()[0]
