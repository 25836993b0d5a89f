"""The same schema and commands on a real PostgreSQL server (the session's, tests/servers.py), each test in
its own database."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import psycopg
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import create_engine

from benchlab.metrics import Metric
from benchlab.store import BASELINE, HEAD, NewRun, Store, hosts
from benchlab.store.migrate import alembic_config
from benchlab.store.schema import SCHEMA_VERSION, metadata
from tests.conftest import cli, experiment_rows, need
from tests.servers import fresh_database


def test_experiment_stored_and_reported_from_postgres(postgres_url: str, tmp_path: Path) -> None:
    url = fresh_database(postgres_url, "stored")
    spec = tmp_path / "pg.toml"
    spec.write_text("""
name = "pg"
blocks = 4
[[workloads]]
name = "churn"
builtin = "alloc.churn"
options = { threads = 1, ops = 20000 }
[[variants]]
name = "a"
[[variants]]
name = "b"
""")
    cli("run", str(spec), "--db", url, check=True)
    data = json.loads(cli("report", "pg", "--db", url, "--format", "json", check=True).stdout)
    assert len([r for r in data["runs"] if r["status"] == "ok"]) == 8
    assert any(r["metric"] == "items_per_second" for r in data["rows"])
    assert "pg" in cli("list", "--db", url, check=True).stdout
    assert cli("run", str(spec), "--db", url, "--resume", check=True).returncode == 0
    again = json.loads(cli("report", "pg", "--db", url, "--format", "json", check=True).stdout)
    assert len(again["runs"]) == 8  # resume repeated nothing


def test_bundles_move_between_sqlite_and_postgres(postgres_url: str, tmp_path: Path) -> None:
    url = fresh_database(postgres_url, "bundles")
    cli("compare", "--cmd", "true", "--variant", "x", "--variant", "y", "-n", "3", "--name", "to-pg", check=True)
    bundle = tmp_path / "b.json"
    cli("export", "to-pg", "-o", str(bundle), check=True)
    cli("import", str(bundle), "--db", url, check=True)
    here = json.loads(cli("report", "to-pg", "--format", "json", check=True).stdout)
    there = json.loads(cli("report", "to-pg", "--db", url, "--format", "json", check=True).stdout)
    assert [r["median"] for r in here["rows"]] == [r["median"] for r in there["rows"]]
    assert {r["status"] for r in there["runs"]} == {"ok"}


def _landed_database(url: str) -> None:
    """What release 0.1.0 left in PostgreSQL: its schema (the baseline), schema_version 1, no
    alembic_version, and an experiment with two runs whose rows carry `attempt`."""
    engine = create_engine(url.replace("postgresql://", "postgresql+psycopg://"))
    with engine.begin() as conn:
        command.upgrade(alembic_config(conn), BASELINE)
        conn.exec_driver_sql("DROP TABLE alembic_version")
        spec = json.dumps({"name": "old", "workloads": [{"name": "w", "command": ["true"]}], "variants": [{"name": "a"}]})
        conn.exec_driver_sql(
            "INSERT INTO host VALUES (1, 'h', '{\"hostname\": \"old\"}', 0);"
            f"INSERT INTO experiment VALUES (1, 'old', '{spec}', 'x', 0);"
            "INSERT INTO workload VALUES (1, 1, 'w', 'command', 'command:true');"
            "INSERT INTO variant VALUES (1, 1, 'a', 0, '{\"name\": \"a\"}', true);"
            "INSERT INTO run VALUES (1, '00000000-0000-0000-0000-000000000001', 1, 1, 1, 1, 0, false, 0, 1, 'ok', 1, 2, 0,"
            " NULL, NULL, 'command:true'), (2, '00000000-0000-0000-0000-000000000002', 1, 1, 1, 1, 1, false, 1, 1, 'ok',"
            " 3, 4, 0, NULL, NULL, 'command:true');"
            "INSERT INTO metric_name VALUES (1, 1, 'wall', 's', 'lower');"
            "INSERT INTO metric VALUES (1, 1, 1, 0.5), (2, 2, 1, 0.25);"
        )
    engine.dispose()


def test_db_upgrade_migrates_a_landed_postgres_database(postgres_url: str) -> None:
    url = fresh_database(postgres_url, "landed")
    _landed_database(url)
    refused = cli("list", "--db", url)  # shared by several machines: never migrated behind their backs
    assert refused.returncode == 4 and len(refused.stderr.splitlines()) == 1
    assert "benchlab db upgrade" in refused.stderr and BASELINE in refused.stderr
    assert cli("db", "current", "--db", url, check=True).stdout.split()[0] == BASELINE
    said = " ".join(cli("db", "upgrade", "--db", url, check=True).stdout.split())
    assert f"from schema {BASELINE} to {HEAD}" in said and "@" in said and postgres_url.split("@")[1].split("/")[0] in said
    assert cli("db", "current", "--db", url, check=True).stdout.split()[0] == HEAD
    assert "already" in cli("db", "upgrade", "--db", url, check=True).stdout
    store = Store(url)
    data = store.load(store.require_experiment("old"), every_record=True)
    assert [(r.id, r.block, r.status) for r in data.records] == [(1, 0, "ok"), (2, 1, "ok")]
    assert data.run_values() == {1: {"wall": 0.5}, 2: {"wall": 0.25}}
    with store.engine.connect() as conn:
        assert compare_metadata(MigrationContext.configure(conn), metadata) == []
        assert conn.exec_driver_sql("SELECT version FROM schema_version").all() == [(SCHEMA_VERSION,)]
    store.engine.dispose()


def test_a_postgres_database_newer_than_this_benchlab_is_refused(postgres_url: str) -> None:
    url = fresh_database(postgres_url, "newer")
    Store(url).engine.dispose()
    with psycopg.connect(url) as conn:
        conn.execute("UPDATE alembic_version SET version_num = '0099_from_the_future'")
    for args in (("list",), ("db", "upgrade")):
        refused = cli(*args, "--db", url)
        assert refused.returncode == 4 and len(refused.stderr.splitlines()) == 1
        assert "newer than this benchlab" in refused.stderr and "upgrade benchlab" in refused.stderr


def _blocked_racer(postgres_url: str, database: str, step: Callable[[], object]) -> tuple[threading.Thread, list[object]]:
    """`step` started on a thread of its own, once PostgreSQL shows it waiting on a lock in
    `database` (the caller's uncommitted rows); the list gets what it returned or raised."""
    outcome: list[object] = []

    def run() -> None:
        try:
            outcome.append(step())
        except BaseException as exc:
            outcome.append(exc)

    racer = threading.Thread(target=run)
    racer.start()
    deadline = time.monotonic() + 30
    with psycopg.connect(postgres_url, autocommit=True) as watch:
        while not watch.execute(
            "SELECT 1 FROM pg_stat_activity WHERE datname = %s AND wait_event_type = 'Lock'", (database,)
        ).fetchall():
            assert time.monotonic() < deadline and racer.is_alive(), outcome
            time.sleep(0.02)
    return racer, outcome


def test_two_workers_making_one_hosts_row_at_once_get_the_same_row(postgres_url: str) -> None:
    """A fleet's workers on one machine start together: each makes the machine's host row. The
    later insert waits on the earlier's uncommitted row and then takes it, not a second row and
    not an error (before `insert_new`, the second worker failed on the unique hash)."""
    url = fresh_database(postgres_url, "host_race")
    first, second = Store(url, migrate=True), Store(url)
    machine = {"hostname": "lab", "machine_id": "m1", "memory_kib": 16 << 20}
    with first.transaction() as conn:
        made, _ = hosts.host_row(conn, machine)  # not committed yet
        racer, got = _blocked_racer(postgres_url, "host_race", lambda: second.host_id(machine))
    racer.join(30)
    assert got == [made]
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT count(*) FROM host").fetchone() == (1,)
    first.engine.dispose()
    second.engine.dispose()


def test_two_processes_registering_a_workloads_metric_names_at_once_both_store_their_runs(postgres_url: str) -> None:
    """A fleet's workers start an experiment together: each registers its workload's metric names,
    the later insert waiting on the earlier's uncommitted rows. Once those commit, the later run
    is stored too, not taken for a run stored twice (which lost it and left its block incomplete)."""
    url = fresh_database(postgres_url, "names_race")
    first, second = Store(url, migrate=True), Store(url)
    exp = first.create_experiment(
        **experiment_rows(
            {"name": "race", "workloads": [{"name": "w", "command": ["true"]}], "variants": [{"name": "a"}]}, "command:true"
        )
    )
    host = first.host_id({"hostname": "lab"})

    def store_second() -> None:
        second.record_run(exp, NewRun(host_id=host, workload="w", variant="a", block=1, warmup=False, position=1, status="ok", started_at=1.0, ended_at=2.0, metrics=[Metric("wall", 1.0, "s", "lower")]))  # fmt: skip

    with first.transaction() as conn:
        first.runs.name_ids(conn, exp.workload_ids["w"], [Metric("wall", 1.0, "s", "lower")])  # not committed yet
        racer, outcome = _blocked_racer(postgres_url, "names_race", store_second)
    racer.join(30)
    assert outcome == [None]
    runs = second.load(second.require_experiment("race")).runs
    assert list(runs.block) == [1]
    first.engine.dispose()
    second.engine.dispose()


FORKED_CHILD_EXITS = """
import os, sys
from benchlab.store import Store
store = Store(sys.argv[1])
store.list_experiments()  # a connection now waits in the pool
if os.fork() == 0:
    sys.exit(0)  # the child ends through the interpreter: its exit handlers run, the store's among them
os.wait()
print(len(store.list_experiments()))  # on the connection the child inherited
"""


def test_a_forked_child_ending_leaves_its_parents_connections_open(postgres_url: str) -> None:
    """The store closes its connections as a process exits, but a forked child's are its parent's:
    closing one there would end it for the parent too."""
    url = fresh_database(postgres_url, "forked")
    done = subprocess.run([sys.executable, "-c", FORKED_CHILD_EXITS, url], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "0", done.stderr[-2000:]


def test_profiled_runs_are_stored_in_postgres_and_travel_to_sqlite_alike(postgres_url: str, tmp_path: Path) -> None:
    need("perf")
    url = fresh_database(postgres_url, "profiled")
    cli("compare", "--cmd", "true", "-V", "x", "-V", "y", "-n", "3", "--profile", "--name", "prof", "--db", url, check=True)
    bundle = tmp_path / "p.json"
    cli("export", "prof", "-o", str(bundle), "--db", url, check=True)
    cli("import", str(bundle), check=True)
    there = json.loads(cli("explain", "prof", "--db", url, "--format", "json", check=True).stdout)
    here = json.loads(cli("explain", "prof", "--format", "json", check=True).stdout)
    assert there["runs"] == here["runs"] == 6 and there["rows"] == here["rows"]
