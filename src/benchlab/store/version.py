"""Which schema a database is at, read without alembic.

Every command opens the database, and nearly always it is at HEAD already: that answer
needs two small queries, not alembic (a tenth of a second to import), which loads only
when a database is migrated (`benchlab.store.migrate`; a new one is made without it,
`benchlab.store.creation`). A test checks
that HEAD is the newest revision in `migrations/versions/`.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Column, Connection, MetaData, PrimaryKeyConstraint, String, Table, func, inspect, select

from benchlab.store import schema as t
from benchlab.store.files import BASELINE, HEAD, VERSION_TABLE

# the revision each schema_version number was raised by, for a database whose alembic_version is empty
BY_NUMBER = {1: BASELINE, 2: "0002_drop_run_attempt", 3: "0003_fleet_task", 4: HEAD}

# alembic's own version table (alembic.ddl.impl.DefaultImpl.version_table_impl), kept out of
# benchlab's metadata: `gap` compares a database with benchlab's tables only
ALEMBIC_VERSION = Table(
    VERSION_TABLE, MetaData(),
    Column("version_num", String(32), nullable=False),
    PrimaryKeyConstraint("version_num", name=f"{VERSION_TABLE}_pkc"),
)  # fmt: skip


@dataclass(frozen=True)
class Migration:
    """What opening a database changed in its schema: `before` None means it was created."""

    before: str | None
    after: str


def stored_revision(conn: Connection) -> str | None:
    """The revision a database says it is at; None for one without benchlab's tables (a new one).
    A 0.1.0 database has no alembic_version, only schema_version holding 1: it is BASELINE.
    What it says is not trusted to be what it holds: see `gap`."""
    tables = set(inspect(conn).get_table_names())
    if VERSION_TABLE in tables:
        stamped = conn.execute(select(ALEMBIC_VERSION.c.version_num)).scalar()
        if stamped is not None:
            return str(stamped)
    if t.schema_version.name not in tables:
        return None
    version = conn.execute(select(t.schema_version.c.version)).scalar()
    if version is None:
        return BASELINE
    return BY_NUMBER.get(version, f"schema {version}")  # another: written by a newer benchlab


def stamped(conn: Connection) -> bool:
    """Whether alembic_version names the revision (an empty one is filled in by a migration)."""
    if not inspect(conn).has_table(VERSION_TABLE):
        return False
    return conn.execute(select(func.count()).select_from(ALEMBIC_VERSION)).scalar() == 1


def gap(conn: Connection) -> str | None:
    """How the database differs from this benchlab's schema, first difference only, as messages
    say it ("no table calibration", "no column run.message", or "column run.x, which this
    benchlab does not know": an older schema's column, which a migration removes, or another
    tool's); None when it holds exactly its tables and columns. One query: every command asks it, so that a
    database stamped at HEAD by a benchlab that trusted an old version number (no `calibration`), or
    one another tool altered (a dropped column), is found at open rather than as a failing query."""
    if conn.dialect.name == "sqlite":
        query = "SELECT m.name, p.name FROM sqlite_master AS m JOIN pragma_table_info(m.name) AS p WHERE m.type = 'table'"
    else:
        query = "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = current_schema()"
    held: dict[str, set[str]] = {}
    for table, column in conn.exec_driver_sql(query):
        held.setdefault(table, set()).add(column)
    for table in t.metadata.sorted_tables:
        columns = held.get(table.name)
        if columns is None:
            return f"no table {table.name}"
        wanted = {column.name for column in table.columns}
        if wanted - columns:
            return f"no column {table.name}.{min(wanted - columns)}"
        if columns - wanted:
            return f"column {table.name}.{min(columns - wanted)}, which this benchlab does not know"
    return None
