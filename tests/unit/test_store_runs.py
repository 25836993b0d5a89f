"""One insert path: a run stored as it ends and the same run imported from a bundle are the same rows."""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from benchlab.errors import StoreError
from benchlab.metrics import Metric
from benchlab.store import NewRun, Store
from tests.conftest import cli, experiment_rows

RUN = """
SELECT run.uuid, workload.name, variant.name, host.fingerprint, run.block, run.warmup, run.position, run.status,
       run.started_at, run.ended_at, run.exit_code, run.message, run.stderr_tail, run.workload_version, run_detail.details
FROM run JOIN workload ON workload.id = run.workload_id JOIN variant ON variant.id = run.variant_id
JOIN host ON host.id = run.host_id LEFT JOIN run_detail ON run_detail.run_id = run.id ORDER BY run.uuid
"""
METRIC = """
SELECT run.uuid, metric_name.name, metric_name.unit, metric_name.direction, metric.value
FROM metric JOIN run ON run.id = metric.run_id JOIN metric_name ON metric_name.id = metric.name_id ORDER BY 1, 2
"""


def stored(db: Path) -> tuple[list[Any], list[Any]]:
    with sqlite3.connect(db) as conn:
        return conn.execute(RUN).fetchall(), conn.execute(METRIC).fetchall()


def test_a_live_run_and_its_import_are_the_same_rows(tmp_path: Path) -> None:
    here, there, bundle = tmp_path / "here.db", tmp_path / "there.db", tmp_path / "b.json"
    cli(
        "compare", "--cmd", "true", "--variant", "x", "--variant", "y", "-n", "2", "--name", "same", "--db", str(here), check=True
    )
    cli("export", "same", "--db", str(here), "-o", str(bundle), check=True)
    cli("import", str(bundle), "--db", str(there), check=True)
    runs, metrics = stored(here)
    assert len(runs) == 4 and all(run[-1] for run in runs) and len(metrics) >= 4 * 8  # details and wait4 metrics
    assert stored(there) == (runs, metrics)


def test_a_run_is_stored_once_and_a_refused_one_stores_nothing(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "r.db"))
    exp = store.create_experiment(
        **experiment_rows({"name": "once", "workloads": [{"name": "w", "command": ["true"]}], "variants": [{"name": "a"}]})
    )
    host = store.host_id({"hostname": "h"})
    run: dict[str, Any] = {"host_id": host, "workload": "w", "variant": "a", "block": 0, "warmup": False, "position": 0,
                           "status": "ok", "started_at": 1.0, "ended_at": 2.0}  # fmt: skip
    store.record_run(exp, NewRun(**run, metrics=[Metric("wall", 1.0, "s", "lower")], details={"allocator": "glibc"}))
    with pytest.raises(StoreError, match="already stored for this host; it is never stored twice"):
        store.record_run(exp, NewRun(**run, metrics=[Metric("new_metric", 1.0, "s", "lower")]))
    store.record_run(exp, NewRun(**{**run, "block": 1}, metrics=[Metric("new_metric", 2.0, "s", "lower")]))
    data = store.load(exp, every_record=True)
    assert data.run_values() == {1: {"wall": 1.0}, 2: {"new_metric": 2.0}}
    assert [r.details for r in data.records] == [{"allocator": "glibc"}, None]
    assert [r.current_version for r in data.records] == [True, True]


def test_experiments_whose_runs_interleave_each_load_only_their_own_values(tmp_path: Path) -> None:
    """A report reads metric values by the range of its runs' ids: another experiment's runs
    stored in between (two benchlabs writing one database) fall inside it and must stay out."""
    store = Store(str(tmp_path / "r.db"))
    host = store.host_id({"hostname": "h"})
    exps = [
        store.create_experiment(
            **experiment_rows({"name": name, "workloads": [{"name": "w", "command": ["true"]}], "variants": [{"name": "a"}]})
        )
        for name in ("first", "second")
    ]
    for block in range(3):
        for place, exp in enumerate(exps):
            late = [Metric("late", 7.0, "s", "lower")] if (block, place) == (2, 0) else []  # named after the second's
            store.record_run(exp, NewRun(host_id=host, workload="w", variant="a", block=block, warmup=False, position=block, status="ok", started_at=1.0, ended_at=2.0, metrics=[Metric(f"m{place}", 10.0 * place + block, "s", "lower"), Metric("wall", block, "s", "lower"), *late]))  # fmt: skip
    first, second = (store.load(exp) for exp in exps)
    assert first.run_values() == {
        1: {"m0": 0.0, "wall": 0.0},
        3: {"m0": 1.0, "wall": 1.0},
        5: {"m0": 2.0, "wall": 2.0, "late": 7.0},
    }
    assert second.run_values() == {2: {"m1": 10.0, "wall": 0.0}, 4: {"m1": 11.0, "wall": 1.0}, 6: {"m1": 12.0, "wall": 2.0}}
    assert sorted(first.metrics.names) == ["late", "m0", "wall"] and sorted(second.metrics.names) == ["m1", "wall"]


def test_details_read_back_as_written_even_where_only_pythons_json_reads_them(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "r.db"))
    exp = store.create_experiment(
        **experiment_rows({"name": "nan", "workloads": [{"name": "w", "command": ["true"]}], "variants": [{"name": "a"}]})
    )
    host = store.host_id({"hostname": "h"})
    written = [
        {"ratio": float("nan"), "big": 2**64 - 1},
        {"histograms": {"of": {"x": {"first": 88, "counts": [1, 0, 3]}}}, "é": "\u2028"},
    ]
    for block, details in enumerate(written):
        store.record_run(exp, NewRun(host_id=host, workload="w", variant="a", block=block, warmup=False, position=0, status="ok", started_at=1.0, ended_at=2.0, metrics=[Metric("wall", 1.0, "s", "lower")], details=details))  # fmt: skip
    first, second = (r.details for r in store.load(exp, every_record=True).records)
    assert (
        first is not None and math.isnan(first["ratio"]) and first["big"] == 2**64 - 1
    )  # NaN: orjson refuses it; a u64 counter stays exact
    assert second == written[1]
