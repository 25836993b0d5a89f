"""A results database read as hostile input: what another program (or a damaged file) may have put
in any column is checked as it is read, and refused as one StoreError naming the row.

benchlab writes every row through typed code, but SQLite keeps whatever it is given (text in a
REAL column, JSON that is not JSON, a reference to a row that is not there) and a database is a
file another tool can write. Columns read in bulk are checked where they are read: a run's
columns by one query (`damaged_run`, stepped by SQLite itself, so 100,000 runs cost a scan of
the table and not a Python check each), metric values as a numpy column; the JSON documents as
they are parsed.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Collection
from typing import Any, TypeVar

import orjson
from pydantic import BaseModel, ValidationError
from sqlalchemy import Connection, and_, false, func, not_, or_, select, type_coerce
from sqlalchemy.types import NullType

from benchlab.errors import StoreError
from benchlab.spec.load import spec_error
from benchlab.store import schema as t

LARGEST = 1.7976931348623157e308  # beyond it, only the infinities (and NaN fails every comparison)
STATUSES = ("ok", "failed", "timeout")
M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")


def damaged(row: str, what: str) -> StoreError:
    return StoreError(f"the results database is damaged: {row} {what} (was it written by another program?)")


def shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:37]}..."


def json_object(text: Any, row: str, column: str) -> dict[str, Any]:
    """A JSON object stored as text (a spec, a variant's config, a host's fingerprint, a run's
    details). orjson reads it fast; one it refuses (NaN, which Python's json writes) is read by
    the standard library."""
    if not isinstance(text, (str, bytes)):
        raise damaged(row, f"has {column} {shown(text)}, not JSON text")
    try:
        parsed = orjson.loads(text)
    except orjson.JSONDecodeError:
        try:
            parsed = json.loads(text)
        except ValueError:
            raise damaged(row, f"has {column} that is not JSON: {shown(text)}") from None
    if not isinstance(parsed, dict):
        raise damaged(row, f"has {column} {shown(parsed)}, not a JSON object")
    return parsed


def document(text: Any, model: type[M], row: str, column: str) -> tuple[dict[str, Any], M]:
    """A JSON object of the shape benchlab writes (a spec, a variant's config, a fingerprint, a
    run's details: `model`), as parsed and as validated: the code that reads it indexes into it
    as into what it wrote, so a field missing or of another type is refused here, not met as a
    KeyError later."""
    parsed = json_object(text, row, column)
    return parsed, shaped(parsed, model.model_validate, row, column)


def shaped(parsed: dict[str, Any], read: Callable[[dict[str, Any]], T], row: str, column: str) -> T:
    """A parsed JSON object read by `read` (a model's validation), a shape it refuses refused as damage."""
    try:
        return read(parsed)
    except ValidationError as exc:
        raise damaged(row, f"has {column} of a shape benchlab never writes ({spec_error(exc, column)})") from None


def number(value: Any, row: str, column: str, *, optional: bool = False) -> Any:
    """A finite number (a time, a spread); None only where the column may be empty."""
    if value is None and optional:
        return value
    if type(value) not in (int, float) or not math.isfinite(value):
        raise damaged(row, f"has {column} {shown(value)}, not a finite number")
    return value


def whole(value: Any, row: str, column: str) -> int:
    if type(value) is not int:
        raise damaged(row, f"has {column} {shown(value)}, not a whole number")
    return value


def text(value: Any, row: str, column: str, *, allowed: Collection[str] = ()) -> str:
    if not isinstance(value, str) or (allowed and value not in allowed):
        wanted = " or ".join(allowed) if allowed else "text"
        raise damaged(row, f"has {column} {shown(value)}, not {wanted}")
    return value


def damaged_run(conn: Connection, experiment_id: int) -> StoreError | None:
    """The first of the experiment's runs whose row another program damaged, described, or None:
    a reference to a workload, variant or host that is not there (or is another experiment's),
    a status benchlab never writes, a time that is not a finite number, a number of the wrong
    kind. One query, so that a report of 100,000 runs pays one scan of their rows."""
    r, w, v, h = t.run.c, t.workload.c, t.variant.c, t.host.c
    real, sqlite = ("real", "integer"), conn.dialect.name == "sqlite"

    def kind(column: Any, *kinds: str) -> Any:
        """SQLite keeps any value in any column; PostgreSQL's columns hold only their type."""
        return func.typeof(column).in_(kinds) if sqlite else column.is_not(None)

    ours = r.experiment_id == experiment_id
    checks = {  # references as uncorrelated IN lists: each read once, not a join per run
        "workload_id": r.workload_id.not_in(select(w.id).where(w.experiment_id == experiment_id).scalar_subquery()),
        "variant_id": r.variant_id.not_in(select(v.id).where(v.experiment_id == experiment_id).scalar_subquery()),
        "host_id": r.host_id.not_in(select(h.id).scalar_subquery()),
        "status": r.status.not_in(STATUSES) | r.status.is_(None),
        "started_at": not_(and_(kind(r.started_at, *real), r.started_at.between(-LARGEST, LARGEST))),
        "ended_at": not_(and_(kind(r.ended_at, *real), r.ended_at.between(-LARGEST, LARGEST))),
        "block": not_(and_(kind(r.block, "integer"), r.block >= 0)),
        "position": not_(kind(r.position, "integer")),
        "warmup": not_(kind(r.warmup, "integer", "boolean")) if sqlite else r.warmup.is_(None),
        "exit_code": not_(kind(r.exit_code, "integer", "null")) if sqlite else false(),
        "message": not_(kind(r.message, "text", "null")) if sqlite else false(),
        "stderr_tail": not_(kind(r.stderr_tail, "text", "null")) if sqlite else false(),
        "uuid": not_(kind(r.uuid, "text")),
        "workload_version": not_(kind(r.workload_version, "text")),
    }
    query = (
        select(r.id, r.workload_id, r.variant_id, r.host_id, *(check.label(f"bad_{name}") for name, check in checks.items()))
        .where(ours, or_(*checks.values()))
        .order_by(r.id)
        .limit(1)
    )
    found = conn.execute(query).mappings().first()
    if found is None:
        return None
    column = next(name for name in checks if found[f"bad_{name}"])
    if column in ("workload_id", "variant_id", "host_id"):
        table = column.removesuffix("_id")
        return damaged(f"run {found['id']}", f"has {column} {found[column]}, which names no {table} of its experiment")
    held = conn.execute(select(type_coerce(t.run.c[column], NullType())).where(r.id == found["id"])).scalar()  # as stored
    return damaged(f"run {found['id']}", f"has {column} {shown(held)}, which benchlab never writes")


def damaged_metric(conn: Connection, first_run: int, last_run: int) -> StoreError | None:
    """The first metric row of the runs first_run..last_run whose value or name is not a number
    (SQLite keeps text in any column; PostgreSQL's hold only their type), described, or None:
    asked only once reading the values as numbers failed, to name the row."""
    if conn.dialect.name != "sqlite":
        return None
    m = t.metric.c
    numeric = (func.typeof(m.value).in_(("real", "integer")), func.typeof(m.name_id) == "integer")
    query = select(m.id, m.run_id, m.name_id, m.value).where(m.run_id.between(first_run, last_run), not_(and_(*numeric)))
    found = conn.execute(query.order_by(m.id).limit(1)).first()
    if found is None:
        return None
    column = "name_id" if type(found.name_id) is not int else "value"
    return damaged(f"metric {found.id}", f"of run {found.run_id} has {column} {shown(getattr(found, column))}, not a number")
