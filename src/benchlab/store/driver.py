"""Statements run on the database driver's own cursor, past SQLAlchemy's result machinery.

Two places pay for each row SQLAlchemy builds: a report reads a million metric values
(building a Row per value costs more than judging them all), and the harness stores a run
after every run (Core's per-statement bookkeeping was most of storing one). Statements are
still written in SQLAlchemy and compiled for the dialect once; the driver's errors come out
as SQLAlchemy's, so callers handle one kind.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy import Connection, Dialect
from sqlalchemy.exc import DBAPIError
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.expression import ClauseElement


def reason(exc: BaseException) -> str:
    """A database error as a message quotes it: the driver's first line."""
    orig = getattr(exc, "orig", None)
    return str(orig or exc).strip().splitlines()[0]


@contextlib.contextmanager
def cursor(conn: Connection) -> Iterator[Any]:
    """The driver's cursor on this connection, in its transaction."""
    dbapi_connection = conn.connection.dbapi_connection
    assert dbapi_connection is not None
    raw = dbapi_connection.cursor()
    try:
        yield raw
    except conn.dialect.loaded_dbapi.Error as exc:
        raise DBAPIError.instance(None, None, exc, conn.dialect.loaded_dbapi.Error, dialect=conn.dialect) from exc
    finally:
        raw.close()


@dataclass(frozen=True)
class Prepared:
    """A statement compiled once for a dialect, and the order its parameters go in. The driver
    keeps it prepared across runs (sqlite3's statement cache, psycopg's prepare threshold)."""

    sql: str
    order: tuple[str, ...] | None  # the parameters' names in place order; None: the driver takes them by name

    @classmethod
    def of(cls, statement: ClauseElement, dialect: Dialect, columns: Sequence[str] | None = None) -> Prepared:
        compiled = cast(
            SQLCompiler, statement.compile(dialect=dialect, column_keys=list(columns) if columns is not None else None)
        )
        return cls(str(compiled), tuple(compiled.positiontup or ()) if compiled.positional else None)

    def params(self, values: Mapping[str, Any]) -> Sequence[Any] | Mapping[str, Any]:
        return values if self.order is None else [values[name] for name in self.order]


def rows(conn: Connection, query: Any) -> list[tuple[Any, ...]]:
    """A query's rows as the driver's tuples, in the order of the query's columns."""
    compiled = query.compile(dialect=conn.dialect)
    params = [compiled.params[name] for name in compiled.positiontup] if compiled.positional else compiled.params
    with cursor(conn) as raw:
        raw.execute(str(compiled), params)
        fetched: list[tuple[Any, ...]] = raw.fetchall()  # a list (sqlite3, psycopg), never copied
        return fetched


def places(query: Any) -> dict[str, int]:
    """Where each of a query's columns is in rows(): rows are read by column name, while a
    hundred thousand of them are still the driver's plain tuples (a named tuple per row, or
    SQLAlchemy's Row, costs a visible share of a big report)."""
    return {name: place for place, name in enumerate(query.selected_columns.keys())}


@contextlib.contextmanager
def bulk() -> Iterator[None]:
    """Python's cycle collector paused while a big read builds its objects: none of them is
    garbage yet, and the collections that hundreds of thousands of new tuples and records
    would trigger, each walking everything alive, cost a fifth of loading a big report."""
    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()
