"""An experiment's metric values as numpy columns, the shape the analysis judges them in."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from sqlalchemy import Connection, func, select

from benchlab.errors import StoreError
from benchlab.store import checks
from benchlab.store import schema as t
from benchlab.store.columnar import Answer, ColumnReader
from benchlab.store.records import MetricColumns


def metric_columns(conn: Connection, columns: ColumnReader, experiment_id: int) -> Callable[[np.ndarray], MetricColumns]:
    """Metric values as columns, for numpy, of the experiment's runs: asked of `columns` now, read
    and checked when the returned function is called with the runs' ids (ascending), as read
    by the same reader.

    The rows are those of the runs' id range, read along the index on run ids (a subquery of
    the experiment's runs costs a lookup per run); the range's ends are asked of the same
    snapshot, so that the values are asked before the runs are read. Runs of other experiments
    stored meanwhile can fall inside it, and are left out here. A value of one of its runs whose
    name is not one of its metric names (a row another program wrote) is refused, not left out unseen.
    """
    m, names_c, r = t.metric.c, t.metric_name.c, t.run.c
    names = {
        row.id: row.name
        for row in conn.execute(
            select(names_c.id, names_c.name)
            .join(t.workload, t.workload.c.id == names_c.workload_id)
            .where(t.workload.c.experiment_id == experiment_id)
        )
    }
    codes = {name: code for code, name in enumerate(dict.fromkeys(names.values()))}  # one per name, across workloads
    first, last = (select(end(r.id)).where(r.experiment_id == experiment_id).scalar_subquery() for end in (func.min, func.max))
    answer = columns.ask(
        select(m.run_id, m.name_id, m.value).where(m.run_id.between(first, last)),
        {"run_id": np.int64, "name_id": np.int64, "value": np.float64},
    )
    return lambda run_ids: _checked(conn, answer, names, codes, run_ids)


def _checked(
    conn: Connection, answer: Answer, names: dict[int, str], codes: dict[str, int], run_ids: np.ndarray
) -> MetricColumns:
    """The values of the experiment's runs that `answer` reads, each named by a metric name of its experiment."""
    m = t.metric.c
    if not len(run_ids):  # the range was empty too: its answer is read all the same, in its turn
        answer()
        return MetricColumns(np.empty(0, np.int64), np.empty(0, np.int32), np.empty(0), [])
    name_ids = np.array(sorted(names), dtype=np.int64)
    code_of = np.array([codes[names[int(i)]] for i in name_ids], dtype=np.int32)
    lo, hi = int(run_ids[0]), int(run_ids[-1])
    try:
        c = answer()
    except (StoreError, ValueError, TypeError):  # text where numbers belong (the native reader, numpy): which row
        damage = checks.damaged_metric(conn, lo, hi)
        if damage is not None:
            raise damage from None
        raise
    runs, name_places, values = c["run_id"], np.searchsorted(name_ids, c["name_id"]), c["value"]
    ours = np.zeros(hi - lo + 1, dtype=bool)
    ours[run_ids - lo] = True
    of_ours = ours[runs - lo]
    named = name_ids[np.minimum(name_places, len(name_ids) - 1)] == c["name_id"] if names else np.zeros(len(runs), bool)
    if not named[of_ours].all():
        at = int(np.flatnonzero(of_ours & ~named)[0])
        run_id, name_id = int(runs[at]), int(c["name_id"][at])
        row = conn.execute(select(m.id).where(m.run_id == run_id, m.name_id == name_id).order_by(m.id).limit(1)).scalar()
        names_none = "which names no metric name of its experiment"
        raise checks.damaged(f"metric {row}", f"of run {run_id} has name_id {name_id}, {names_none}")
    keep = of_ours & named
    if not keep.all():
        runs, name_places, values = runs[keep], name_places[keep], values[keep]
    return MetricColumns(run_ids=runs, name_codes=code_of[name_places], values=values, names=list(codes))
