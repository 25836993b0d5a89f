"""Migrating older databases to the newest schema, with alembic (a new one is made by `creation`).

The migrations ship inside the package (`migrations/`) and run on the store's own engine,
so no alembic.ini is read. A SQLite file belongs to one machine and is migrated in place
the first time a newer benchlab stores into it (a command that only reads migrates a copy in
memory and leaves the file as it is); a PostgreSQL database is shared by several, so
it is migrated only by `benchlab db upgrade`, once, while the others are told to wait for it.
Downgrades are not offered: a bundle (`benchlab export`) moves data between versions.
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory
from alembic.util import CommandError
from sqlalchemy import Connection, Engine, text
from sqlalchemy.exc import SQLAlchemyError

from benchlab.errors import StoreError
from benchlab.store.creation import create_at_head, locked
from benchlab.store.driver import reason
from benchlab.store.version import HEAD, Migration, gap, stamped, stored_revision

MIGRATIONS = Path(__file__).with_name("migrations")


def newer(shown: str, revision: str) -> StoreError:
    return StoreError(f"{shown} has schema {revision}, newer than this benchlab ({HEAD}); upgrade benchlab")


def known(revision: str) -> bool:
    """Whether a revision is one of this benchlab's (an older one or HEAD)."""
    try:
        return ScriptDirectory(str(MIGRATIONS)).get_revision(revision) is not None
    except CommandError:
        return False


def alembic_config(conn: Connection) -> Config:
    """Alembic's configuration without an alembic.ini: the shipped scripts, on this connection."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = conn
    return config


def bring_to_head(engine: Engine, shown: str, *, migrate: bool, create: bool = True) -> Migration | None:
    """Creates a new database at HEAD (when `create`), or migrates an older one when `migrate`
    (None: another process did either while this one waited for the lock); else an older
    one is a StoreError naming the command that migrates it. A newer one is refused always.

    Older is decided by what the database holds, not by the revision it names: one that lacks a
    table or column of HEAD (`version.gap`) is migrated from the first revision, each of which
    creates only what is missing, and whatever still differs from HEAD after that is a StoreError
    that changed nothing. Everything happens in one transaction that holds the database's write
    lock, so two processes opening an old database at once migrate it once."""
    with locked(engine) as conn:
        before = stored_revision(conn)
        if before is None:
            if not create:
                raise StoreError(f"{shown} holds no benchlab tables: it is not a results database")
            return create_at_head(conn)
        if not known(before):
            raise newer(shown, before)
        lacking = gap(conn)
        if before == HEAD and lacking is None and stamped(conn):
            return None
        if not migrate:
            raise StoreError(
                f"{shown} has schema {_named(before, lacking)}, older than this benchlab's ({HEAD}); "
                f"run `benchlab db upgrade --db URL` once, from any one machine"
            )
        try:
            _migrate(conn)
        except (SQLAlchemyError, CommandError) as exc:
            raise StoreError(f"{shown} cannot be upgraded to schema {HEAD}: {reason(exc)}; nothing was changed") from None
        still = gap(conn)
        if still is not None:
            foreign = "" if still.startswith("no ") else " (another tool added it: remove it, or give another database)"
            raise StoreError(f"{shown} cannot be upgraded to schema {HEAD}: it has {still}{foreign}; nothing was changed")
        if engine.dialect.name == "sqlite":
            broken = conn.execute(text("PRAGMA foreign_key_check")).first()
            if broken is not None:
                raise StoreError(f"migrating {shown} would break a reference in table {broken.table}; nothing was changed")
        return Migration(_named(before, lacking), HEAD)


def _migrate(conn: Connection) -> None:
    """Every revision from the first, on whatever the database holds (each adds what is missing)."""
    config = alembic_config(conn)
    command.stamp(config, "base", purge=True)
    command.upgrade(config, HEAD)


def _named(revision: str, lacking: str | None) -> str:
    """A revision as messages name it: with what the database lacks where it names HEAD."""
    return revision if lacking is None or revision != HEAD else f"{revision} (with {lacking})"
