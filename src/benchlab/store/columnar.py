"""Query results as numpy columns: how a report reads 100,000 runs and their million values.

Python's sqlite3 builds a tuple and a Python number for every value (0.4 s for the 800,000
metric rows of a 100,000-run report, most of loading it). For a SQLite file the same
statements are stepped by `benchlab-columns` (probe/src/columns.rs), a native reader in a
process of its own, which sends each column as raw 8-byte numbers that numpy takes as they
are; no library does this inside Python without linking a second SQLite into the process,
which would release the first one's locks on the file. Other databases (PostgreSQL) are read
through the driver's cursor into the same columns. One `reader` reads every column of a load
in one snapshot of the database; a query `ask`ed of it is answered while this process does
other work (a load asks for the runs and their metric values at once, and checks the same run
rows for damage meanwhile, on the other CPU).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import IO, Any

import numpy as np
from numpy.typing import DTypeLike
from sqlalchemy import Connection
from sqlalchemy.sql import Select

from benchlab.errors import EnvironmentProblem, StoreError
from benchlab.locate import columns_path
from benchlab.store import driver

COLUMNS_PROTOCOL = 1  # what benchlab-columns speaks (its PROTOCOL)
ANSWER_TIMEOUT_S = 60.0  # per query; 800,000 values take 0.4 s: as the probe's own limit, far beyond any real read

Columns = dict[str, np.ndarray]
Answer = Callable[[], Columns]


class ColumnReader:
    """Reads queries' columns, each as an array of the dtype named for it; every query it reads
    sees the same committed state of the database."""

    def __init__(self, ask: Callable[[Select[Any], Mapping[str, DTypeLike]], Answer]) -> None:
        self.ask = ask
        """Sends a query; the answer's columns come when it is called (a native reader works on
        them meanwhile, a driver's cursor has read them already). Answers are called in the
        order their queries were asked; a query may be asked before the one before is answered."""

    def read(self, query: Select[Any], dtypes: Mapping[str, DTypeLike]) -> Columns:
        return self.ask(query, dtypes)()


@contextlib.contextmanager
def reader(conn: Connection) -> Iterator[ColumnReader]:
    """A reader of the connection's database, native for a SQLite file."""
    path = conn.engine.url.database
    if conn.dialect.name != "sqlite" or not path:  # PostgreSQL, or an older file's copy in memory (url.memory_copy)
        yield ColumnReader(lambda query, dtypes: _already(by_driver(conn, query, dtypes)))
        return
    native = _NativeReader(path)
    try:
        yield ColumnReader(lambda query, dtypes: native.ask(conn, query, dtypes))
    finally:
        native.close()


def _already(columns: Columns) -> Answer:
    return lambda: columns


def by_driver(conn: Connection, query: Select[Any], dtypes: Mapping[str, DTypeLike]) -> Columns:
    """The columns through the driver's cursor: its tuples straight into one structured array."""
    names = list(query.selected_columns.keys())
    rows = driver.rows(conn, query)
    table = np.fromiter(rows, dtype=[(name, dtypes[name]) for name in names], count=len(rows))
    return {name: np.ascontiguousarray(table[name]) for name in names}


class _NativeReader:
    """One `benchlab-columns` process for one load, started on its first query."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.proc: subprocess.Popen[bytes] | None = None
        self.hung = False
        self.watchdogs: list[threading.Timer] = []  # one per query asked and not yet answered

    def ask(self, conn: Connection, query: Select[Any], dtypes: Mapping[str, DTypeLike]) -> Answer:
        """Sends the query now; its answer is read when the returned function is called, in the
        order asked (the reader steps a query while the answer before it waits in the pipe)."""
        names = list(query.selected_columns.keys())
        kinds = ["real" if np.dtype(dtypes[name]).kind == "f" else "int" for name in names]
        # the few values bound in a load are integers benchlab chose (ids, ranges), rendered by SQLAlchemy
        sql = str(query.compile(dialect=conn.dialect, compile_kwargs={"literal_binds": True}))
        proc = self.proc or self._start()
        assert proc.stdin is not None
        watchdog = threading.Timer(ANSWER_TIMEOUT_S, self._stop_hung)  # a program that never answers
        watchdog.start()  # ($BENCHLAB_COLUMNS) is killed, and its pipe's end read in `_answer`
        self.watchdogs.append(watchdog)
        try:
            proc.stdin.write(json.dumps({"sql": sql, "types": kinds}).encode() + b"\n")
            proc.stdin.flush()
        except BrokenPipeError:
            pass  # it ended: what it said is read with the answer
        except BaseException:
            self._settled(watchdog)
            raise
        return functools.partial(self._answer, proc, watchdog, names, kinds, dtypes)

    def _answer(
        self, proc: subprocess.Popen[bytes], watchdog: threading.Timer, names: list[str], kinds: list[str],
        dtypes: Mapping[str, DTypeLike],
    ) -> Columns:  # fmt: skip
        assert proc.stdout is not None
        try:
            header = self._header(proc.stdout.readline())
            rows = header["rows"]
            data = bytearray(8 * rows * len(names))
            if _read_into(proc.stdout, data) < len(data):
                raise self._failed("its answer ended early")
        finally:
            self._settled(watchdog)
        return {
            name: np.frombuffer(data, dtype="<f8" if kind == "real" else "<i8", count=rows, offset=8 * rows * place).astype(
                dtypes[name], copy=False
            )
            for place, (name, kind) in enumerate(zip(names, kinds, strict=True))
        }

    def _settled(self, watchdog: threading.Timer) -> None:
        watchdog.cancel()
        watchdog.join()  # its thread ends at once, not with the interpreter
        self.watchdogs.remove(watchdog)

    def _start(self) -> subprocess.Popen[bytes]:
        self.proc = subprocess.Popen(
            [columns_path(), self.path],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
        )  # fmt: skip
        return self.proc

    def _stop_hung(self) -> None:
        """Kills the reader and whatever it started (which would hold its pipe open)."""
        self.hung = True
        if self.proc is not None:
            with contextlib.suppress(OSError):
                os.killpg(self.proc.pid, signal.SIGKILL)

    def _header(self, line: bytes) -> dict[str, Any]:
        try:
            header = json.loads(line)
        except ValueError:
            raise self._failed("it answered no JSON") from None
        if not isinstance(header, dict) or header.get("protocol") != COLUMNS_PROTOCOL:
            said = header.get("protocol") if isinstance(header, dict) else None
            raise self._failed(f"it speaks protocol {said}, this benchlab reads {COLUMNS_PROTOCOL}")
        if "error" in header:
            raise StoreError(f"cannot read results database {self.path}: {header['error']}")
        if not isinstance(header.get("rows"), int) or header["rows"] < 0:
            raise self._failed("its answer has no row count")
        return header

    def _failed(self, why: str) -> StoreError | EnvironmentProblem:
        """Its own words where it left any (a crash), else `why`."""
        if self.hung:
            return EnvironmentProblem(
                f"benchlab-columns ({columns_path()}) gave no answer within {ANSWER_TIMEOUT_S:.0f} s; killed",
                hint="unset BENCHLAB_COLUMNS, or reinstall benchlab with `uv sync`",
            )
        said = b""
        if self.proc is not None and self.proc.stderr is not None and self.proc.poll() is not None:
            said = self.proc.stderr.read()[-300:]
        text = said.decode(errors="replace").strip().splitlines()[-1:] or [why]
        return StoreError(f"cannot read results database {self.path}: benchlab-columns failed: {text[0]}")

    def close(self) -> None:
        while self.watchdogs:  # an answer never read (the load found damage first)
            self._settled(self.watchdogs[0])
        proc, self.proc = self.proc, None
        if proc is None:
            return
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        with contextlib.suppress(OSError):  # its read transaction needs no ending: nothing was written
            os.killpg(proc.pid, signal.SIGKILL)  # (a group of its own: not yet waited for, so still its)
        proc.wait()


def _read_into(stream: IO[bytes], data: bytearray) -> int:
    """Fills `data` from `stream`; how much it got before the end."""
    view, got = memoryview(data), 0
    while got < len(data):
        n = stream.readinto(view[got:])  # type: ignore[attr-defined]
        if not n:
            break
        got += n
    return got
