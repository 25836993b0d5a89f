"""The hostile-input regression suite's one check: refused cleanly, nothing changed.

Every case runs the real `benchlab` executable and asserts the exit code, a single line on stderr
that names the place, no traceback, and a database and state directory exactly as they were.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from pathlib import Path

from tests.conftest import cli


def database_snapshot() -> object:
    """Every row of every table, or None when there is no database file."""
    path = Path(os.environ["BENCHLAB_DB"])
    if not path.exists():
        return None
    with sqlite3.connect(path) as conn:
        tables = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
        return {table: sorted(map(repr, conn.execute(f'SELECT * FROM "{table}"'))) for table in tables}


def state_snapshot() -> dict[str, str]:
    """The state directory's files (journals, locks) by content digest."""
    root = Path(os.environ["BENCHLAB_STATE_DIR"])
    if not root.exists():
        return {}
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*")) if p.is_file()}


def refused(*args: str, code: int = 2, mentions: str = "", cwd: Path | None = None, timeout: float = 120) -> str:
    """Runs `benchlab ARGS`, asserts a clean refusal and returns the one-line message."""
    before = database_snapshot(), state_snapshot()
    proc = cli(*args, cwd=cwd, timeout=timeout)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == code, f"exit {proc.returncode}, wanted {code}: {proc.stderr[-2000:]}"
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert len(lines) == 1 and lines[0].startswith("benchlab: "), proc.stderr[-2000:]
    assert mentions.lower() in lines[0].lower(), f"{mentions!r} not in {lines[0]!r}"
    assert (database_snapshot(), state_snapshot()) == before, "the refusal changed the database or the state directory"
    return lines[0]
