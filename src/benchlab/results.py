"""Every stored run of an experiment as a pandas DataFrame, for analyses of one's own in a notebook:

    >>> from benchlab import results
    >>> runs = results.load("results.db", "zstd-levels")
    >>> runs[~runs.warmup & (runs.status == "ok")].groupby(["workload", "variant"]).wall.median()

One row per run, wide: the run's columns (`RUN_COLUMNS`) and then one float column per metric
(NaN where a run has no such metric: a failed run, another workload's metric). A run is
benchlab's sample, so a row per run keeps each sample whole and failed runs visible;
`runs.melt(id_vars=RUN_COLUMNS, var_name="metric").dropna()` gives the long form (one row
per run and metric) that seaborn and friends want. A metric named like a run column gets
`metric.` before its name. Units and directions are in `runs.attrs["units"]` and
`runs.attrs["directions"]`, by workload and metric (`runs.attrs["units"]["zstd"]["wall"]`:
"s"), plain JSON so that the frame's writers that keep attrs can write them.

It reads the store alone: no verdict is made here (`benchlab report` judges).
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd

from benchlab.store import ExperimentData, Store

RUN_COLUMNS = [
    "run_id", "workload", "variant", "block", "position", "warmup", "host", "hostname", "status", "exit_code",
    "message", "started_at", "ended_at", "current_version",
]  # fmt: skip
CATEGORIES = ("workload", "variant", "hostname", "status")


def _metric_matrix(data: ExperimentData) -> np.ndarray:
    """Runs x metric names: each value at its run's row, NaN where the run has none."""
    matrix = np.full((len(data.runs), len(data.metrics.names)), np.nan)
    rows = np.searchsorted(data.runs.ids, data.metrics.run_ids)  # both ordered by run id
    matrix[rows, data.metrics.name_codes] = data.metrics.values
    return matrix


def frame(data: ExperimentData) -> pd.DataFrame:
    """The DataFrame of data loaded with every record (`Store.load(exp, every_record=True)`)."""
    if not data.every_record:
        raise ValueError("the data was loaded without every run's record (load it with every_record=True)")
    records = data.records
    hostnames = {h: str(fp.get("hostname") or f"host{h}") for h, fp in data.hosts.items()}
    runs = pd.DataFrame(
        {
            "run_id": [r.id for r in records], "workload": [r.workload for r in records],
            "variant": [r.variant for r in records], "block": [r.block for r in records],
            "position": [r.position for r in records], "warmup": [r.warmup for r in records],
            "host": [r.host_id for r in records], "hostname": [hostnames.get(r.host_id) for r in records],
            "status": [r.status for r in records],
            "exit_code": pd.array([r.exit_code for r in records], dtype="Int64"),
            "message": [r.message for r in records],
            "started_at": pd.to_datetime([r.started_at for r in records], unit="s", utc=True),
            "ended_at": pd.to_datetime([r.ended_at for r in records], unit="s", utc=True),
            "current_version": [r.current_version for r in records],
        },
        columns=RUN_COLUMNS,
    )  # fmt: skip
    for column in CATEGORIES:
        runs[column] = runs[column].astype("category")
    names = [f"metric.{n}" if n in RUN_COLUMNS else n for n in data.metrics.names]
    found = pd.concat([runs, pd.DataFrame(_metric_matrix(data), columns=names)], axis=1)
    units: dict[str, dict[str, str]] = {}
    directions: dict[str, dict[str, str]] = {}
    for (workload, metric), (unit, direction) in data.metric_info.items():
        units.setdefault(workload, {})[metric] = unit
        directions.setdefault(workload, {})[metric] = direction
    found.attrs |= {"experiment": data.experiment.name, "units": units, "directions": directions}
    return found


def load(db: str | os.PathLike[str] | None, name: str) -> pd.DataFrame:
    """Every stored run of experiment `name` in the results database `db`: a SQLite path or a
    postgresql:// URL, as `--db` takes it (None: `$BENCHLAB_DB` or the default file). A missing
    database or experiment raises `benchlab.errors.StoreError`; nothing is created."""
    store = Store(None if db is None else os.fspath(db), create=False)
    try:
        return frame(store.load(store.require_experiment(name), every_record=True))
    finally:
        store.engine.dispose()
