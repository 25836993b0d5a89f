"""Loading as columns: the native reader SQLite files get (benchlab-columns) reads what the driver's
cursor reads, in one snapshot per load, and a load without every record keeps exactly the runs a
report names one by one."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlalchemy import select

from benchlab.errors import StoreError
from benchlab.metrics import Metric
from benchlab.store import FAILED_BENCHMARKS, ExperimentRecord, NewRun, Store
from benchlab.store import schema as t
from benchlab.store.columnar import by_driver, reader
from tests.conftest import experiment_rows


def two_experiments(path: Path) -> tuple[Store, ExperimentRecord, ExperimentRecord]:
    """Two experiments whose runs interleave in the tables, as two commands storing at once leave them."""
    store = Store(str(path))
    host = store.host_id({"hostname": "h"})
    made = [
        store.create_experiment(
            **experiment_rows(
                {
                    "name": name,
                    "workloads": [{"name": "cmd", "command": ["true"]}, {"name": "bin", "gbench": "/bin/true"}],
                    "variants": [{"name": "a"}, {"name": "b"}],
                }
            )
        )  # fmt: skip
        for name in ("one", "two")
    ]
    rng = np.random.default_rng(7)
    for block in range(40):
        for exp in made:
            for workload in ("cmd", "bin"):
                for variant in ("a", "b"):
                    failed = block == 3 and variant == "b" and workload == "cmd"
                    lost = {FAILED_BENCHMARKS: {"BM_x": "boom"}} if block == 5 and workload == "bin" else {}
                    store.record_run(exp, NewRun(host_id=host, workload=workload, variant=variant, block=block, warmup=block == 0, position=block, status="failed" if failed else "ok", started_at=float(block), ended_at=block + 0.5, message="it broke" if failed else None, metrics=[] if failed else [Metric(m, float(rng.lognormal()), "s", "lower") for m in ("wall", "user")], details={"allocator": "glibc", **lost}))  # fmt: skip
    return store, *made  # type: ignore[return-value]


def test_the_native_reader_reads_the_same_columns_as_the_driver(tmp_path: Path) -> None:
    store, one, _ = two_experiments(tmp_path / "r.db")
    r, m = t.run.c, t.metric.c
    queries: list[tuple[Any, dict[str, Any]]] = [
        (select(r.id, r.block, r.warmup, (r.status == "ok").label("ok")).where(r.experiment_id == one.id).order_by(r.id),
         {"id": np.int64, "block": np.int64, "warmup": np.bool_, "ok": np.bool_}),
        (select(m.run_id, m.name_id, m.value).order_by(m.id), {"run_id": np.int64, "name_id": np.int64, "value": np.float64}),
        (select(r.id).where(r.experiment_id == -1), {"id": np.int64}),  # nothing: empty columns
    ]  # fmt: skip
    with store.engine.connect() as conn, reader(conn) as columns:
        for query, dtypes in queries:
            native, cursor = columns.read(query, dtypes), by_driver(conn, query, dtypes)
            assert native.keys() == cursor.keys()
            for name in native:
                assert native[name].dtype == cursor[name].dtype == np.dtype(dtypes[name])
                assert np.array_equal(native[name], cursor[name])
    assert len(native["id"]) == 0


def test_one_load_reads_one_snapshot_and_the_next_load_sees_what_came_since(tmp_path: Path) -> None:
    store, one, _ = two_experiments(tmp_path / "r.db")
    r = t.run.c
    query, dtypes = select(r.id).where(r.experiment_id == one.id), {"id": np.int64}
    before = len(store.load(one).runs)
    with store.engine.connect() as conn, reader(conn) as columns:
        first = columns.read(query, dtypes)
        store.record_run(one, NewRun(host_id=store.host_id({"hostname": "h"}), workload="cmd", variant="a", block=99, warmup=False, position=999, status="ok", started_at=1.0, ended_at=2.0))  # fmt: skip
        assert len(columns.read(query, dtypes)["id"]) == len(first["id"]) == before  # stored meanwhile: not in this load
    assert len(store.load(one).runs) == before + 1


def test_a_query_asked_is_answered_later_and_one_never_read_is_dropped_with_its_reader(tmp_path: Path) -> None:
    store, one, _ = two_experiments(tmp_path / "r.db")
    r = t.run.c
    query, dtypes = select(r.id, r.block).where(r.experiment_id == one.id).order_by(r.id), {"id": np.int64, "block": np.int64}
    threads = threading.active_count()
    with store.engine.connect() as conn, reader(conn) as columns:
        answer = columns.ask(query, dtypes)
        expected = by_driver(conn, query, dtypes)  # this process reads meanwhile
        got = answer()
        assert all(np.array_equal(got[name], expected[name]) for name in dtypes)
        columns.ask(query, dtypes)  # never read: its watchdog goes with the reader, not 60 s later
        assert threading.active_count() == threads + 1
    assert threading.active_count() == threads


def test_queries_asked_before_the_answers_are_read_are_answered_in_order(tmp_path: Path) -> None:
    """A load asks for its runs and their values at once: the reader steps the second while the
    first answer (here larger than a pipe holds) waits to be read, the answers come in the order
    asked, and one that fails does so in its turn, after the answers before it."""
    store, one, _ = two_experiments(tmp_path / "r.db")
    r, m = t.run.c, t.metric.c
    other = t.metric.alias("other")
    crossed = select(m.value, other.c.value.label("again")).join_from(t.metric, other, m.id >= 0)
    queries: list[tuple[Any, dict[str, Any]]] = [
        (crossed, {"value": np.float64, "again": np.float64}),  # 409,600 rows: 6.5 MB of columns
        (select(r.id, r.block).where(r.experiment_id == one.id).order_by(r.id), {"id": np.int64, "block": np.int64}),
    ]  # fmt: skip
    with store.engine.connect() as conn, reader(conn) as columns:
        answers = [columns.ask(query, dtypes) for query, dtypes in queries]
        failing = columns.ask(select(r.status), {"status": np.int64})  # text where numbers belong
        for answer, (query, dtypes) in zip(answers, queries, strict=True):
            got, expected = answer(), by_driver(conn, query, dtypes)
            assert all(np.array_equal(got[name], expected[name]) for name in dtypes)
        assert len(got["id"]) == 160 and len(expected["id"]) == 160
        with pytest.raises(StoreError, match="status"):
            failing()


def test_a_load_keeps_its_own_runs_and_names_failed_ones_and_lost_benchmarks(tmp_path: Path) -> None:
    store, one, two = two_experiments(tmp_path / "r.db")
    whole = store.load(one, every_record=True)
    data = store.load(one)
    assert len(whole.records) == len(data.runs) == 40 * 4 and whole.every_record and not data.every_record
    assert np.array_equal(data.runs.ids, [r.id for r in whole.records])
    assert [data.runs.variants[v] for v in data.runs.variant] == [r.variant for r in whole.records]
    assert [data.runs.workloads[w] for w in data.runs.workload] == [r.workload for r in whole.records]
    assert data.runs.ok.tolist() == [r.status == "ok" for r in whole.records]
    assert data.runs.warmup.tolist() == [r.warmup for r in whole.records]
    named = [(r.workload, r.variant, r.block, r.status) for r in data.records]
    assert named == [("cmd", "b", 3, "failed"), ("bin", "a", 5, "ok"), ("bin", "b", 5, "ok")]
    assert data.run_values() == whole.run_values()  # the other experiment's values, stored in between, left out
    assert set(data.run_values()).isdisjoint(store.load(two).run_values())


def test_a_stored_value_of_the_wrong_kind_is_a_one_line_error(tmp_path: Path) -> None:
    store, one, _ = two_experiments(tmp_path / "r.db")
    with sqlite3.connect(tmp_path / "r.db") as conn:  # a hand-edited file: text where a block number belongs
        conn.execute("UPDATE run SET block = 'seven' WHERE id = (SELECT max(id) FROM run WHERE experiment_id = ?)", (one.id,))
    with pytest.raises(StoreError, match="^the results database is damaged: run [0-9]+ has block 'seven', which benchlab never"):
        store.load(one)


def test_details_repeated_across_runs_are_checked_once_each_run_keeps_its_own_and_a_bad_one_is_refused(tmp_path: Path) -> None:
    store, one, _ = two_experiments(tmp_path / "r.db")
    records = store.load(one, every_record=True).records
    same = [r.details for r in records if r.details == records[0].details]
    assert len(same) > 100 and len({id(d) for d in same}) == len(same)  # equal texts, a dict per run
    with sqlite3.connect(tmp_path / "r.db") as conn:  # the last run's details: valid JSON of another shape
        conn.execute("UPDATE run_detail SET details = '{\"allocator\": 7}' WHERE run_id = (SELECT max(id) FROM run WHERE experiment_id = ?)", (one.id,))  # fmt: skip
    with pytest.raises(StoreError, match=r"run [0-9]+ has details of a shape benchlab never writes"):
        store.load(one, every_record=True)
