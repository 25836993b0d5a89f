"""The results database as one object: opened at the newest schema, read and written by job
in the modules beside this one (url, version/migrate, hosts, experiments, runs, reading)."""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import os
from collections.abc import Collection, Iterator, Sequence
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine
from sqlalchemy.exc import DatabaseError, IntegrityError, OperationalError, SQLAlchemyError

from benchlab import notes
from benchlab.errors import AlreadyStored, DatabaseUnavailable, StoreError
from benchlab.store import creation, experiments, files, fleet, hosts, profiles, url
from benchlab.store import schema as t
from benchlab.store.driver import reason
from benchlab.store.records import Calibration, ExperimentData, ExperimentRecord, NewRun, ProfiledRun
from benchlab.store.runs import RunWriter, take_failed
from benchlab.store.version import HEAD, Migration, gap, stamped, stored_revision

log = notes.logger(__name__)


class Store:
    """The results database; SQLite file or PostgreSQL URL, same schema."""

    def __init__(self, target: str | None = None, *, create: bool = True, migrate: bool | None = None) -> None:
        """`create=False` for commands that only read: a missing SQLite file, or one without
        benchlab's tables (an empty file), is a StoreError, and nothing is ever written: an older
        SQLite file is read through a copy in memory migrated there. `migrate`: bring an older
        schema to this benchlab's in place; by default a SQLite file is when `create` (a command
        that stores), a shared PostgreSQL database only by `benchlab db upgrade`."""
        self.target = files.default_db() if target is None else target
        self.shown = url.shown(self.target)
        made: Path | None = None  # a SQLite file this call creates: removed again if it cannot be set up
        try:
            engine_url = url.engine_url(self.target, create=create)
            if engine_url.drivername == "sqlite" and engine_url.database and not os.path.exists(engine_url.database):
                made = Path(engine_url.database)
            self.engine: Engine = url.open_engine(engine_url)
            self.runs = RunWriter(self.engine.dialect)
            self.migrated = self._at_head(create=create, migrate=migrate)
        except (SQLAlchemyError, OSError, ValueError, StoreError) as exc:  # ValueError: a URL's port that is no number
            if made is not None:  # a full disk must not leave an empty file that reads as a database
                if hasattr(self, "engine"):
                    self.engine.dispose()
                for leftover in (made, Path(f"{made}-wal"), Path(f"{made}-shm")):
                    leftover.unlink(missing_ok=True)
            if isinstance(exc, StoreError):
                raise
            raise StoreError(f"cannot open results database {self.target}: {reason(exc)}") from None

    def _at_head(self, *, create: bool, migrate: bool | None) -> Migration | None:
        """What was created or migrated now, if anything."""
        sqlite = self.engine.dialect.name == "sqlite"
        reading = not create and migrate is None
        with self.engine.connect() as conn:
            revision = stored_revision(conn)
            if revision == HEAD and gap(conn) is None and (reading or stamped(conn)):
                return None
        if revision is None and create:  # a new database: made without alembic
            made = creation.create(self.engine)
            if made is not None:
                return made
        # alembic (a tenth of a second to import) loads only when a database is changed
        from benchlab.store import migrate as migrations

        if reading and sqlite and revision is not None and migrations.known(revision):
            self.engine.dispose()
            self.engine = url.memory_copy(self.engine.url, revision)
            migrations.bring_to_head(self.engine, self.shown, migrate=True, create=False)
            log.info("%s is at schema %s: read through a copy migrated in memory (`benchlab db upgrade` migrates the file)",
                     self.shown, revision)  # fmt: skip
            return None
        in_place = (sqlite and create) if migrate is None else migrate
        return migrations.bring_to_head(self.engine, self.shown, migrate=in_place, create=create)

    @contextlib.contextmanager
    def reading(self) -> Iterator[Connection]:
        """A connection to read on: a database that cannot be read (a corrupt page, a table or
        column another program dropped, a lost server) is a StoreError in one line."""
        try:
            with self.engine.connect() as conn:
                yield conn
        except SQLAlchemyError as exc:
            raise StoreError(f"cannot read results database {self.shown}: {reason(exc)}") from None

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Connection]:
        """One transaction: everything in it is stored, or nothing. A database that cannot take
        the write (a full disk, a lost server) is a StoreError; what was committed before stays.
        Metric name ids cached during a transaction that rolls back would point nowhere."""
        try:
            with self.engine.begin() as conn:
                yield conn
        except BaseException as exc:
            self.runs.forget_names()
            if isinstance(exc, OperationalError):
                raise DatabaseUnavailable(
                    f"could not write to {self.target}: {reason(exc)}; nothing of this was stored"
                ) from None
            if isinstance(exc, DatabaseError) and not isinstance(exc, IntegrityError):  # a corrupt page
                raise StoreError(f"cannot write to {self.target}: {reason(exc)}; nothing of this was stored") from None
            raise

    # -- hosts ---------------------------------------------------------------
    def host_id(self, fingerprint: dict[str, Any]) -> int:
        """The host row for a fingerprint (see hosts.IDENTITY for what identifies one)."""
        return self.host_row(fingerprint)[0]

    def host_row(self, fingerprint: dict[str, Any]) -> tuple[int, str]:
        """The host row for a fingerprint and its identity hash: what a guest's `guest_of` names,
        the stored row's, which a rebooted machine's fingerprint need not hash to."""
        with self.transaction() as conn:
            return hosts.host_row(conn, fingerprint)

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
                return experiments.insert_experiment(
                    conn, name=name, spec=spec, workloads=workloads, variants=variants, created_at=created_at
                )
        except IntegrityError:
            raise StoreError(
                f"an experiment named '{name}' already exists in {self.target}",
                hint="continue it with --resume, or choose another name",
            ) from None

    def drop_experiment(self, exp: ExperimentRecord) -> None:
        """Removes an experiment that holds no runs (one whose creation turned out to be premature:
        a run refused before its first run, an import refused)."""
        with self.transaction() as conn:
            experiments.delete_experiment(conn, exp)

    def update_spec(self, exp: ExperimentRecord, spec: dict[str, Any]) -> ExperimentRecord:
        """A resumed experiment's new length (blocks, or the sequential budget): the rest of
        its spec is unchanged, which the runner checked."""
        with self.transaction() as conn:
            experiments.replace_spec(conn, exp, spec)
            record = experiments.experiment_in(conn, exp.name)
        assert record is not None
        return record

    def find_experiment(self, name: str) -> ExperimentRecord | None:
        with self.reading() as conn:
            return experiments.experiment_in(conn, name)

    def unused_name(self, stem: str, *, suffix: str = "") -> str:
        """`stem`, or the first of `stem-2`, `stem-3`, ... that, with `suffix`, names no stored
        experiment. A default name is the command and the time to the second, and a script's loop
        starts two commands within one second."""
        candidates = itertools.chain([stem], (f"{stem}-{n}" for n in itertools.count(2)))
        return next(name for name in candidates if self.find_experiment(name + suffix) is None)

    def require_experiment(self, name: str) -> ExperimentRecord:
        record = self.find_experiment(name)
        if record is None:
            raise files.unknown_experiment(name, self.target)
        return record

    def list_experiments(self, name: str | None = None) -> list[dict[str, Any]]:
        with self.reading() as conn:
            return experiments.experiment_list(conn, name)

    # -- runs ----------------------------------------------------------------
    def stored_keys(
        self,
        exp: ExperimentRecord,
        host_id: int,
        *,
        workloads: Collection[str] | None = None,
        blocks: Collection[int] | None = None,
        ok_only: bool = False,
    ) -> set[tuple[str, str, int, bool, bool]]:
        """The plan keys (`runner.PlannedRun.key`) of the runs stored for a host, timed and profiled."""
        from benchlab.store import reading  # numpy loads with what reads runs, not for `benchlab list`

        with self.reading() as conn:
            timed = reading.stored_keys(conn, exp, host_id, workloads=workloads, blocks=blocks, ok_only=ok_only)
            profiled = profiles.profiled_keys(conn, exp, host_id, workloads=workloads, blocks=blocks, ok_only=ok_only)
        return {(*key, False) for key in timed} | profiled

    def record_run(self, exp: ExperimentRecord, run: NewRun, *, retry: bool = False) -> None:
        """Stores one finished run and its metrics in one transaction, committed on return.
        `retry`: the run is another attempt at a run stored as failed (a resume running failed runs
        again), which it replaces in the same transaction; the failures before it stay in its
        details (`earlier_attempts`). A run stored as ok is never replaced."""
        try:
            with self.transaction() as conn:
                earlier = take_failed(conn, exp, run) if retry else []
                if earlier:
                    run = dataclasses.replace(run, details={**(run.details or {}), "earlier_attempts": earlier})
                self.runs.insert(conn, exp, [run])
        except IntegrityError as exc:
            which = f"run {run.workload}/{run.variant} block {run.block}"
            if is_unique_violation(exc, "run_once"):  # not another key (a metric name's): that run is not stored
                raise AlreadyStored(f"{which} is already stored for this host; it is never stored twice") from None
            raise StoreError(f"the database refused {which}: {reason(exc)}") from None

    def record_profiled(self, exp: ExperimentRecord, run: ProfiledRun, *, retry: bool = False) -> None:
        """Stores one profiled run with its stacks, committed on return (`retry`: replacing the
        failed one stored under its key)."""
        try:
            with self.transaction() as conn:
                profiles.insert_profiled(conn, exp, run, retry=retry)
        except IntegrityError as exc:
            which = f"profiled run {run.workload}/{run.variant} block {run.block}"
            if is_unique_violation(exc, "profile_once"):
                raise AlreadyStored(f"{which} is already stored for this host; it is never stored twice") from None
            raise StoreError(f"the database refused {which}: {reason(exc)}") from None

    def profiled_runs(self, exp: ExperimentRecord, *, workload: str | None = None) -> list[ProfiledRun]:
        with self.reading() as conn:
            return profiles.profiled_runs(conn, exp, workload=workload)

    def run_identities(self, exp: ExperimentRecord) -> dict[int, tuple[str, str]]:
        from benchlab.store import reading

        with self.reading() as conn:
            return reading.run_identities(conn, exp)

    def load(self, exp: ExperimentRecord, *, every_record: bool = False) -> ExperimentData:
        """Everything stored about an experiment (`reading.load`)."""
        from benchlab.store import reading

        with self.reading() as conn:
            return reading.load(conn, exp, every_record=every_record)

    # -- a fleet's attempts (store/fleet.py) ---------------------------------
    def begin_attempt(self, exp: ExperimentRecord, workload: str, block: int, *, worker: str, host_id: int) -> int:
        """A new attempt at a block, numbered after the last one; tried again where another worker
        numbered the same attempt at the same moment."""
        tried = 0
        while True:
            try:
                with self.transaction() as conn:
                    return fleet.begin_attempt(conn, exp, workload, block, worker=worker, host_id=host_id)
            except IntegrityError:
                tried += 1
                if tried == 5:
                    raise StoreError(f"could not number an attempt at {workload} block {block + 1}") from None

    def count_attempt_run(self, attempt_id: int) -> None:
        with self.transaction() as conn:
            fleet.count_run(conn, attempt_id)

    def end_attempt(self, attempt_id: int, state: str, message: str | None = None) -> None:
        with self.transaction() as conn:
            fleet.end_attempt(conn, attempt_id, state, message)

    def register_fleet_key(self, check: str) -> None:
        """A driver's key, as its check (`fleet.envelope.key_check`); two drivers at once: one row."""
        with self.transaction() as conn:
            fleet.register_key(conn, check)

    def fleet_key_known(self, check: str) -> bool | None:
        with self.reading() as conn:
            return fleet.key_known(conn, check)

    def last_attempt(self, exp: ExperimentRecord) -> int:
        with self.reading() as conn:
            return fleet.last_attempt(conn, exp)

    def lease_block(self, exp: ExperimentRecord, workload: str, block: int) -> contextlib.AbstractContextManager[bool]:
        return fleet.block_lease(self.engine, exp, workload, block)

    def complete_blocks(
        self, exp: ExperimentRecord, *, ok_only: bool = False, profiled: frozenset[str] = frozenset()
    ) -> frozenset[tuple[str, int]]:
        with self.reading() as conn:
            return fleet.complete_blocks(conn, exp, ok_only=ok_only, profiled=profiled)

    def block_complete(
        self, exp: ExperimentRecord, workload: str, block: int, *, ok_only: bool = False, profiled: bool = False
    ) -> bool:
        with self.reading() as conn:
            return fleet.block_complete(conn, exp, workload, block, ok_only=ok_only, profiled=profiled)

    def fleet_progress(self, exp: ExperimentRecord) -> fleet.FleetProgress:
        with self.reading() as conn:
            return fleet.progress(conn, exp)

    def record_calibration(self, calibration: Calibration) -> None:
        with self.transaction() as conn:
            conn.execute(t.calibration.insert().values(**calibration.as_dict()))


def revision_of(target: str | None = None) -> str | None:
    """The schema revision a database is at, read without creating or migrating it; one stamped
    at HEAD that lacks part of it is named with what it lacks (`db upgrade` mends it)."""
    target = files.default_db() if target is None else target
    engine = url.open_engine(url.engine_url(target, create=False))
    try:
        with engine.connect() as conn:
            revision = stored_revision(conn)
            lacking = gap(conn) if revision == HEAD else None
            return revision if lacking is None else f"{revision} with {lacking}"
    except SQLAlchemyError as exc:
        raise StoreError(f"cannot open results database {url.shown(target)}: {reason(exc)}") from None
    finally:
        engine.dispose()


def is_unique_violation(exc: IntegrityError, key: str | None = None) -> bool:
    """Whether a refused write collided with a stored row, rather than breaking another rule;
    with `key`, on that unique constraint of the schema (PostgreSQL names it, SQLite lists its columns)."""
    orig = exc.orig
    if getattr(orig, "sqlstate", None) == "23505":
        return key is None or getattr(getattr(orig, "diag", None), "constraint_name", None) == key
    if key is None:
        return "UNIQUE constraint failed" in str(orig)
    constraint = next(c for table in t.metadata.tables.values() for c in table.constraints if c.name == key)
    columns = ", ".join(f"{constraint.table.name}.{column.name}" for column in constraint.columns)  # type: ignore[attr-defined]
    return f"UNIQUE constraint failed: {columns}" in str(orig)
