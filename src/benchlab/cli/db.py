"""`benchlab db`: the results database's schema revision, and migrating it to this benchlab's.

A SQLite file migrates itself the first time a newer benchlab opens it; a PostgreSQL
database, shared by several machines, waits for `benchlab db upgrade` run once.
"""

from __future__ import annotations

import argparse

from benchlab.cli import options
from benchlab.cli.console import out
from benchlab.cli.parser import Commands
from benchlab.errors import SpecError
from benchlab.report import safe


def upgrade(*, db: str | None) -> None:
    """Migrate the results database (SQLite or PostgreSQL) to this benchlab's schema."""
    from benchlab.store import HEAD, Store  # SQLAlchemy loads only for commands that need the database

    store = Store(db, create=False, migrate=True)
    if store.migrated is None:
        line = f"{store.shown} is at schema {HEAD} already"
    elif store.migrated.before is None:
        line = f"{store.shown} created at schema {HEAD}"
    else:
        line = f"{store.shown} migrated from schema {store.migrated.before} to {store.migrated.after}"
    out().print(safe.text(line, limit=safe.LINE_MAX), highlight=False, soft_wrap=True)


def current(*, db: str | None) -> None:
    """Print the schema revision of the results database, changing nothing."""
    from benchlab.store import HEAD, revision_of

    revision = revision_of(db)
    if revision is None:
        line = f"none (no benchlab tables yet: the first use creates them at {HEAD})"
    elif revision == HEAD:
        line = f"{revision} (this benchlab's)"
    else:
        line = f"{revision} (this benchlab's is {HEAD})"
    out().print(safe.text(line, limit=safe.LINE_MAX), highlight=False, soft_wrap=True)


def downgrade() -> None:
    """Refused: a database is never migrated back (export a bundle instead)."""
    raise SpecError(
        "downgrades are not supported: an older benchlab cannot read a newer schema; "
        "`benchlab export NAME` writes a bundle that another version's `benchlab import` reads"
    )


def register(commands: Commands) -> None:
    commands.group("db", "The results database's schema: its revision, and migrating it.", _commands)


def _commands(group: Commands) -> None:
    group.command("upgrade", upgrade, options.db)
    group.command("current", current, options.db)
    # whatever follows (a revision, `--db`, `-1`) is taken and refused with the reason, never as an unknown flag
    group.command(
        "downgrade", downgrade, lambda parser: parser.add_argument("_words", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    )
