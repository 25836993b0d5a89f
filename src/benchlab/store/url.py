"""Which database a target names, and how every connection to it is set up."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
import urllib.parse
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError
from sqlalchemy.pool import StaticPool

from benchlab.errors import SpecError, StoreError
from benchlab.links import trusted, untrusted_link_above
from benchlab.store import schema as t


def default_db() -> str:
    """BENCHLAB_DB, else one results file per user, so `benchlab list` works from any folder."""
    explicit = os.environ.get("BENCHLAB_DB")
    if explicit == "":  # set but empty, as `--db ''` is refused: never read as "the default file"
        raise SpecError(
            "BENCHLAB_DB is set but empty (unset it for the default database, or name a SQLite path or a postgresql:// URL)"
        )
    if explicit:
        return explicit
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(base, "benchlab", "results.db")


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
    path = Path(target).expanduser().absolute()
    _refuse_planted_link(path)
    if not create and not path.is_file():
        raise StoreError(f"no results database at {path}")
    _refuse_foreign_sqlite(path, create=create)
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
    return engine


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


def _refuse_planted_link(path: Path) -> None:
    """SQLite opens a database through a link at its name, and creates one where a link to
    nothing points: another user's link there (or on the way to its folder), planted in /tmp
    for root's `--db /tmp/results.db`, is refused as an output's is (`benchlab.links`), and so
    is a link to nothing, whoever made it. A user's own link to their database is followed.
    SQLite opens its side files (-wal, -shm, -journal) with O_NOFOLLOW: a link there is named."""
    planted = untrusted_link_above(path)
    if planted is not None:
        why = f"its folder is reached through {planted}, a symbolic link of another user"
        raise SpecError(f"cannot open results database {path}: {why}")
    side = next((Path(f"{path}{suffix}") for suffix in ("-wal", "-shm", "-journal") if os.path.islink(f"{path}{suffix}")), None)
    if side is not None:  # SQLite would fail on it with "unable to open database file", naming nothing
        raise SpecError(f"cannot open results database {path}: {side} is a symbolic link, which SQLite never follows; remove it")
    try:
        info = os.lstat(path)
    except OSError:
        return  # none there yet, or a name the connection refuses in its own words
    if not stat.S_ISLNK(info.st_mode):
        return
    if not trusted(info):
        raise SpecError(
            f"cannot open results database {path}: it is a symbolic link of another user (uid {info.st_uid}); "
            "remove it or name another file"
        )
    if not path.exists():
        raise SpecError(f"cannot open results database {path}: it is a symbolic link to nothing ({os.readlink(path)})")


def _refuse_foreign_sqlite(path: Path, *, create: bool) -> None:
    """Another program's SQLite file is left exactly as it is: looked at read-only, before the
    connection pragmas (WAL) or the schema would change it. Every benchlab database, of any
    release, holds `schema_version`. A file without tables (an empty one) becomes a database only
    for a command that stores (`create`); one that only reads refuses it, writing nothing."""
    if not path.is_file():
        return
    if path.stat().st_size == 0:
        if not create:
            raise StoreError(f"{path} is an empty file, not a benchlab results database")
        return
    try:
        with contextlib.closing(sqlite3.connect(f"file:{urllib.parse.quote(str(path))}?mode=ro", uri=True)) as conn:
            tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open results database {path}: {exc}") from None
    if tables and t.schema_version.name not in tables:
        raise StoreError(f"{path} is not a benchlab results database (it holds tables of its own)")
    if not tables and not create:
        raise StoreError(f"{path} holds no tables: it is not a benchlab results database")


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    # WAL with synchronous=NORMAL survives a crash of this process (kill -9) losing nothing committed.
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=10000")
    cursor.close()
