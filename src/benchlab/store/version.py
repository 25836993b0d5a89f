"""Which schema a database is at, read without alembic.

Every command opens the database, and nearly always it is at HEAD already: that answer
needs two small queries, not alembic (a tenth of a second to import), which loads only
when a database is to be created or migrated (`benchlab.store.migrate`). A test checks
that HEAD is the newest revision in `migrations/versions/`.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection, inspect, select, text

from benchlab.store import schema as t

HEAD = "0003_fleet_task"
BASELINE = "0001_baseline"  # release 0.1.0's schema, which predates alembic
VERSION_TABLE = "alembic_version"


@dataclass(frozen=True)
class Migration:
    """What opening a database changed in its schema: `before` None means it was created."""

    before: str | None
    after: str


def stored_revision(conn: Connection) -> str | None:
    """The revision a database is at; None for one without benchlab's tables (a new one).
    A 0.1.0 database has no alembic_version, only schema_version holding 1: it is BASELINE."""
    tables = set(inspect(conn).get_table_names())
    if VERSION_TABLE in tables:
        return conn.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")).scalar()
    if t.schema_version.name not in tables:
        return None
    version = conn.execute(select(t.schema_version.c.version)).scalar()
    return BASELINE if version in (None, 1) else f"schema {version}"  # another: written by a newer benchlab
