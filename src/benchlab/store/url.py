"""Which database a target names, and how every connection to it is set up."""

from __future__ import annotations

import atexit
import contextlib
import os
import sqlite3
import urllib.parse
import weakref
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError
from sqlalchemy.pool import StaticPool

from benchlab.errors import SpecError, StoreError
from benchlab.store import files


def engine_url(target: str, *, create: bool = True) -> URL:
    """The SQLAlchemy URL of a target; a SQLite file that is not there is made only when `create`
    (read-only commands must not leave an empty database behind a mistyped path). A path is
    never parsed as a URL: `?` and `#` are characters of its name."""
    if not target:
        raise SpecError("the results database is named by an empty string (give a SQLite path or a postgresql:// URL)")
    if "://" in target:
        scheme, rest = target.split("://", 1)
        if scheme in ("postgres", "postgresql", "postgresql+psycopg"):
            return make_url(f"postgresql+psycopg://{rest}")
        raise StoreError(f"{scheme}:// is no results database benchlab can use (a SQLite path or a postgresql:// URL)")
    path = files.checked_path(target, create=create)
    path.parent.mkdir(parents=True, exist_ok=True)
    return URL.create("sqlite", database=str(path))


def shown(target: str) -> str:
    """A target as messages show it: a URL without its password."""
    if "://" not in target:
        return target
    try:
        return make_url(target).render_as_string(hide_password=True)
    except (ValueError, ArgumentError):  # not a URL SQLAlchemy parses: engine_url refuses it in its own words
        return target


def open_engine(url: URL) -> Engine:
    """An engine whose SQLite connections all get the pragmas below."""
    engine = create_engine(url)
    if engine.dialect.name == "sqlite":
        event.listen(engine, "connect", _sqlite_pragmas)
    _OPEN[engine] = os.getpid()
    return engine


_OPEN: weakref.WeakKeyDictionary[Engine, int] = weakref.WeakKeyDictionary()  # each open engine: the process that opened it


@atexit.register
def _close_open_engines() -> None:
    """Every engine's connections closed as the process exits. Closing a SQLite file's last
    connection folds its write-ahead log into it and removes the log (a copy of the file alone,
    or a read-only look, would miss what the log holds), and a PostgreSQL server sees a goodbye
    instead of a dropped socket. The interpreter's last collections would close them only if they
    reached them: the pool's connections sit in reference cycles, and the `benchlab` executable
    freezes what its imports leave (`benchlab.imports`), cycles included, out of their reach.
    A forked child's engines from its parent are only let go (SQLAlchemy's `close=False`): their
    connections are the parent's, and closing one would end it for the parent too."""
    here = os.getpid()
    for engine, opener in list(_OPEN.items()):
        engine.dispose(close=opener == here)


MEMORY_COPY_MAX = 256 << 20  # bytes: a larger file is migrated in place by `db upgrade`, once


def memory_copy(url: URL, revision: str) -> Engine:
    """A SQLite file copied into memory (SQLite's backup), the file opened read-only: what a command
    that only reads migrates when the file is older than this benchlab (at `revision`), changing
    nothing on disk. Every such command copies it again, so a file over MEMORY_COPY_MAX is refused
    instead, naming the one command that makes the copies unnecessary."""
    path = url.database
    assert path is not None
    size = os.path.getsize(path)
    if size > MEMORY_COPY_MAX:
        raise StoreError(
            f"{path} is at schema {revision}, older than this benchlab's: reading it would copy its "
            f"{size >> 20} MiB into memory for every command; run `benchlab db upgrade --db {path}` once"
        )
    copy = sqlite3.connect(":memory:", check_same_thread=False)
    try:
        with contextlib.closing(sqlite3.connect(f"file:{urllib.parse.quote(path)}?mode=ro", uri=True)) as source:
            source.backup(copy)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot read results database {path}: {exc}") from None
    return create_engine("sqlite://", creator=lambda: copy, poolclass=StaticPool)


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    # WAL with synchronous=NORMAL survives a crash of this process (kill -9) losing nothing committed.
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=10000")
    cursor.close()
