"""A SQLite results file looked at before SQLAlchemy loads: which file a command means, the checks
every open makes first (`checked_path`: a planted link, a missing file for a command that only
reads, another program's file), and the refusal of an experiment the file does not hold.

`benchlab report NAME` with a mistyped name is bad input, and is refused in about the time a bare
Python starts (bench/startup.py): SQLAlchemy, numpy, scipy and the spec's models, which reading an
experiment needs, cost sixty times that. So a read-only command asks `refuse_unknown_experiment`
first: the file gets the Store's own checks, then the standard library's sqlite3 opens it
read-only and looks the name up. It refuses a name only where the answer is certain (a file stamped
at this benchlab's schema, whose experiment table answers); anything else (a PostgreSQL URL, an
older or newer schema, a locked or damaged file) is left to the Store, which says what is wrong in
its own words.
"""

from __future__ import annotations

import contextlib
import os
import stat
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

from benchlab.errors import SpecError, StoreError
from benchlab.links import trusted, untrusted_link_above

TYPE_CHECKING = False  # typing's flag without importing typing; mypy reads it alike
if TYPE_CHECKING:
    import sqlite3

HEAD = "0004_profile_run"  # the newest schema revision (store/migrations/versions)
BASELINE = "0001_baseline"  # release 0.1.0's schema, which predates alembic
VERSION_TABLE = "alembic_version"  # where alembic stamps the revision
SCHEMA_TABLE = "schema_version"  # what every benchlab database of any release holds
UNKNOWN_HINT = "`benchlab list` shows what is stored"


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


def refuse_planted_link(path: Path) -> None:
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


def checked_path(target: str, *, create: bool) -> Path:
    """The SQLite file a target (no URL) names, after the checks every open makes first: a planted
    link, a file that is not there for a command that only reads (`create=False`: it must not leave
    an empty database behind a mistyped path), and another program's file."""
    path = _located(target, create=create)
    with _opened(path, create=create):
        return path


def _located(target: str, *, create: bool) -> Path:
    path = Path(target).expanduser().absolute()
    refuse_planted_link(path)
    if not create and not path.is_file():
        raise StoreError(f"no results database at {path}")
    return path


@contextlib.contextmanager
def _opened(path: Path, *, create: bool) -> Iterator[sqlite3.Connection | None]:
    """The file opened read-only by the standard library's sqlite3 (no WAL file is made), once it is
    known to be benchlab's; None where there is no file yet, or an empty one, and `create`.

    Another program's SQLite file is left exactly as it is: looked at before the connection
    pragmas (WAL) or the schema would change it. Every benchlab database, of any release, holds
    `schema_version`. A file without tables (an empty one) becomes a database only for a command
    that stores (`create`); one that only reads refuses it, writing nothing.

    sqlite3 (datetime with it) loads here, not with the module: a path that is not there is
    refused without it (bench/startup.py)."""
    import sqlite3

    size = path.stat().st_size if path.is_file() else None
    if not size:
        if size == 0 and not create:
            raise StoreError(f"{path} is an empty file, not a benchlab results database")
        yield None
        return
    try:
        conn = sqlite3.connect(f"file:{urllib.parse.quote(str(path))}?mode=ro", uri=True)
        with contextlib.closing(conn):
            tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if tables and SCHEMA_TABLE not in tables:
                raise StoreError(f"{path} is not a benchlab results database (it holds tables of its own)")
            if not tables and not create:
                raise StoreError(f"{path} holds no tables: it is not a benchlab results database")
            yield conn
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open results database {path}: {exc}") from None


def unknown_experiment(name: str, shown: str) -> SpecError:
    """The refusal of an experiment name a database does not hold (`Store.require_experiment`'s too)."""
    return SpecError(f"no experiment named '{name}' in {shown}", hint=UNKNOWN_HINT)


def refuse_unknown_experiment(target: str | None, name: str) -> None:
    """Refuses `name` where the SQLite file `target` names (the default where None) is certain not to
    hold it, and the file wherever the Store would refuse it (`checked_path`); otherwise returns, and
    the Store opens the database as always. The file is opened once, read-only."""
    target = default_db() if target is None else target
    if not target or "://" in target:
        return  # the Store refuses an empty name, and reads a URL
    with _opened(_located(target, create=False), create=False) as conn:
        if conn is None:  # the file went away since it was located: the Store says so
            return
        import sqlite3  # loaded by _opened

        try:  # an error here (locked, damaged, no such table) is the Store's to name
            stamped = conn.execute(f"SELECT version_num FROM {VERSION_TABLE}").fetchall()
            held = conn.execute("SELECT 1 FROM experiment WHERE name = ?", (name,)).fetchall()
        except sqlite3.Error:
            return
    if stamped == [(HEAD,)] and not held:
        raise unknown_experiment(name, target)
