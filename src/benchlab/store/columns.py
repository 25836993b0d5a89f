"""An experiment's metric values as numpy columns, the shape the analysis judges them in."""

from __future__ import annotations

from operator import itemgetter

import numpy as np
from sqlalchemy import Connection, select

from benchlab.errors import StoreError
from benchlab.store import driver
from benchlab.store import schema as t
from benchlab.store.records import MetricColumns

NAME_SPAN = 1 << 24  # metric names of one experiment span fewer ids than this


def metric_columns(conn: Connection, experiment_id: int, run_ids: np.ndarray) -> MetricColumns:
    """Metric values as columns, for numpy, of the experiment's runs (`run_ids`, ascending).

    Each row comes back as two numbers, run and name packed into one integer (`key`), through
    the driver's cursor: converting driver values into Python objects is most of the cost of
    reading a million of them, so they go straight into arrays. The rows are those of the runs'
    id range, read along the index on run ids (a subquery of the experiment's runs costs a
    lookup per run) and of the experiment's metric names, so that every key unpacks; runs of
    other experiments stored meanwhile can fall inside both ranges, and are left out here.
    """
    m, names_c = t.metric.c, t.metric_name.c
    names = {
        row.id: row.name
        for row in conn.execute(
            select(names_c.id, names_c.name)
            .join(t.workload, t.workload.c.id == names_c.workload_id)
            .where(t.workload.c.experiment_id == experiment_id)
        )
    }
    codes = {name: code for code, name in enumerate(dict.fromkeys(names.values()))}  # one per name, across workloads
    if not names or not len(run_ids):
        return MetricColumns(np.empty(0, np.int64), np.empty(0, np.int32), np.empty(0), [])
    first = min(names)
    if max(names) - first >= NAME_SPAN:
        raise StoreError(f"experiment {experiment_id} has metric name ids too far apart to read")
    code_of = np.full(max(names) - first + 1, -1, dtype=np.int32)
    for name_id, name in names.items():
        code_of[name_id - first] = codes[name]
    lo, hi = int(run_ids[0]), int(run_ids[-1])
    query = select((m.run_id * NAME_SPAN + (m.name_id - first)).label("key"), m.value).where(
        m.run_id.between(lo, hi), m.name_id.between(first, max(names))
    )
    at = driver.places(query)
    key, value = itemgetter(at["key"]), itemgetter(at["value"])
    rows = driver.rows(conn, query)
    keys = np.fromiter(map(key, rows), dtype=np.int64, count=len(rows))
    values = np.fromiter(map(value, rows), dtype=np.float64, count=len(rows))
    ours = np.zeros(hi - lo + 1, dtype=bool)
    ours[run_ids - lo] = True
    if not ours.all():
        keep = ours[keys // NAME_SPAN - lo]
        keys, values = keys[keep], values[keep]
    return MetricColumns(run_ids=keys // NAME_SPAN, name_codes=code_of[keys % NAME_SPAN], values=values, names=list(codes))
