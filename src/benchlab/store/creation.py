"""A new database made at HEAD, without alembic.

Most commands that store make their database (every test does, many times over), and alembic
costs a tenth of a second of CPU to import: creating needs none of its machinery, only the
tables and the version row alembic itself would write on `stamp`. `migrate` imports this
module for the lock and the creation both, so there is one way to make a database.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from sqlalchemy import Connection, Engine, insert, text

from benchlab.store import schema as t
from benchlab.store.version import ALEMBIC_VERSION, HEAD, Migration, stored_revision

UPGRADE_LOCK = 0x62656E63686C6162  # PostgreSQL advisory lock: one creation or `db upgrade` at a time


def create_at_head(conn: Connection) -> Migration:
    """benchlab's tables, the schema number and alembic's stamp of HEAD, on a locked connection."""
    t.metadata.create_all(conn)
    conn.execute(insert(t.schema_version).values(version=t.SCHEMA_VERSION))
    ALEMBIC_VERSION.create(conn)
    conn.execute(insert(ALEMBIC_VERSION).values(version_num=HEAD))
    return Migration(None, HEAD)


def create(engine: Engine) -> Migration | None:
    """Makes a database that holds no benchlab tables; None where another process made one
    while this one waited for the lock (it is then opened as any other)."""
    with locked(engine) as conn:
        if stored_revision(conn) is not None:
            return None
        return create_at_head(conn)


@contextlib.contextmanager
def locked(engine: Engine) -> Iterator[Connection]:
    """One transaction holding the write lock from its first statement, committed at the end.

    SQLite: foreign keys off first (a table copied by batch mode is dropped, and with them on
    that would delete every row referring to it), `BEGIN IMMEDIATE` so that DDL is inside the
    transaction too (the driver would begin one only before an INSERT), and foreign keys back
    on before the connection returns to the pool. PostgreSQL: DDL is transactional; an
    advisory lock makes a second `db upgrade` wait and then find the work done."""
    with engine.connect() as conn:
        if engine.dialect.name != "sqlite":
            conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": UPGRADE_LOCK})
            yield conn
            conn.commit()
            return
        conn.exec_driver_sql("PRAGMA foreign_keys=OFF")
        try:
            conn.exec_driver_sql("BEGIN IMMEDIATE")
            yield conn
            conn.commit()
        finally:
            conn.rollback()
            conn.exec_driver_sql("PRAGMA foreign_keys=ON")
            conn.commit()
