"""Query results as numpy columns: how a report reads 100,000 runs and their million values.

Python's sqlite3 builds a tuple and a Python number per value (0.4 s for 800,000 metric
rows here, most of a big report); Apache Arrow's ADBC driver for SQLite steps the same
statement in C into Arrow buffers, which numpy takes without copying value by value
(0.16 s). Other databases (PostgreSQL) are read through the driver's cursor into the same
columns. One `reader` reads every column of a load in one snapshot of the database.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np
from numpy.typing import DTypeLike
from sqlalchemy import Connection
from sqlalchemy.sql import Select

from benchlab.errors import StoreError
from benchlab.store import driver

Columns = dict[str, np.ndarray]
ReadColumns = Callable[[Select[Any], Mapping[str, DTypeLike]], Columns]


@contextlib.contextmanager
def reader(conn: Connection) -> Iterator[ReadColumns]:
    """A function reading a query's columns, each as an array of the dtype named for it.
    Every query it reads sees the same committed state of the database."""
    if conn.dialect.name != "sqlite":
        yield lambda query, dtypes: by_driver(conn, query, dtypes)
        return
    # imported here: ~50 ms that only a report needs, not every command
    import adbc_driver_manager
    import adbc_driver_sqlite

    path = conn.engine.url.database
    assert path is not None  # benchlab's SQLite databases are files (store/url.py)
    try:
        with adbc_driver_sqlite.connect(path) as database, adbc_driver_manager.AdbcConnection(database) as arrow:
            arrow.set_autocommit(False)  # one read transaction: one snapshot for every query
            try:
                yield lambda query, dtypes: _by_arrow(conn, arrow, query, dtypes)
            finally:
                arrow.rollback()
    except (adbc_driver_manager.Error, RuntimeError) as exc:  # nanoarrow's reading errors are RuntimeErrors
        raise StoreError(f"cannot read results database {path}: {str(exc).strip().splitlines()[0]}") from None


def by_driver(conn: Connection, query: Select[Any], dtypes: Mapping[str, DTypeLike]) -> Columns:
    """The columns through the driver's cursor: its tuples straight into one structured array."""
    names = list(query.selected_columns.keys())
    rows = driver.rows(conn, query)
    table = np.fromiter(rows, dtype=[(name, dtypes[name]) for name in names], count=len(rows))
    return {name: np.ascontiguousarray(table[name]) for name in names}


def _by_arrow(conn: Connection, arrow: Any, query: Select[Any], dtypes: Mapping[str, DTypeLike]) -> Columns:
    import adbc_driver_manager
    import nanoarrow

    # the few values bound in a load are integers benchlab chose (ids, ranges), rendered by SQLAlchemy
    sql = str(query.compile(dialect=conn.dialect, compile_kwargs={"literal_binds": True}))
    statement = adbc_driver_manager.AdbcStatement(arrow)
    try:
        statement.set_sql_query(sql)
        handle, _ = statement.execute_query()
        result = nanoarrow.ArrayStream(handle).read_all()
    finally:
        statement.close()
    names = list(query.selected_columns.keys())
    return {name: _column(result.child(place), name, dtypes[name]) for place, name in enumerate(names)}


def _column(array: Any, name: str, dtype: DTypeLike) -> np.ndarray:
    """One Arrow column (in chunks, a batch each) as one numpy array of `dtype`: integers where
    integers or flags belong, integers or reals where reals do (SQLite stores any value anywhere)."""
    import nanoarrow

    allowed = {nanoarrow.Type.INT64, nanoarrow.Type.NULL}  # NULL: the type of a column with no rows
    if np.dtype(dtype).kind == "f":
        allowed.add(nanoarrow.Type.DOUBLE)
    if array.schema.type not in allowed:
        raise StoreError(f"the stored column {name} holds {array.schema.type.name.lower()} values where {np.dtype(dtype)} belong")
    parts = []
    for view in array.iter_chunk_views():
        if view.null_count:
            raise StoreError(f"the stored column {name} has empty values where none can be")
        parts.append(np.asarray(view.buffer(1))[view.offset : view.offset + view.length])
    if not parts or not sum(map(len, parts)):
        return np.empty(0, dtype=dtype)
    return np.concatenate(parts).astype(dtype, copy=False)
