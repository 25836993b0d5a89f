"""Schema migrations: a database written by any earlier release (tests/fixtures/landed, made by
tests/fixtures/make_landed.sh) upgrades and reads back the same; commands that only read change none."""

from __future__ import annotations

import contextlib
import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from alembic import command as alembic_command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine

from benchlab.errors import StoreError
from benchlab.store import BASELINE, HEAD, Migration, Store
from benchlab.store.migrate import MIGRATIONS, alembic_config
from benchlab.store.schema import SCHEMA_VERSION, metadata
from tests.conftest import BENCHLAB, cli

LANDED = Path(__file__).parents[1] / "fixtures" / "landed"
TABLES = (
    "experiment",
    "workload",
    "variant",
    "host",
    "run",
    "metric_name",
    "metric",
    "run_detail",
    "calibration",
    "bundle_import",
)
# each made by that release's own code, with its own JSON report beside it (make_landed.sh)
RELEASES = (
    "results-2026-11-22-08dedd2",  # schema_version 1; metric rows carry name, unit, direction
    "results-2026-11-22-da06ccb",  # schema_version 1; metric_name, no run_detail, no calibration
    "results-2026-11-23-a81d5ec",  # schema_version 1; run_detail, no calibration
    "results-2026-11-26-c59ee07",  # alembic 0002_drop_run_attempt
    "results-2026-11-30-65ca546",  # alembic 0003_fleet_task
)
NUMBERS = ("n", "pairs", "median", "baseline_median", "change", "change_ci", "p", "q", "verdict", "best", "baseline_best")


@pytest.fixture
def landed(tmp_path: Path) -> Path:
    """A copy of the database release 0.1.0 wrote (schema_version 1, no alembic_version)."""
    db = tmp_path / "results-0.1.0.db"
    shutil.copy(LANDED / "results-0.1.0.db", db)
    return db


def rows(db: Path) -> dict[str, list[dict[str, Any]]]:
    """Every benchlab table's rows, by column name, without run.attempt (which 0002 drops)."""
    with sqlite3.connect(db) as conn:
        conn.row_factory = sqlite3.Row
        return {
            table: [
                {k: v for k, v in zip(row.keys(), row, strict=True) if (table, k) != ("run", "attempt")}
                for row in conn.execute(f"SELECT * FROM {table} ORDER BY 1")
            ]
            for table in TABLES
        }


def numbers(row: dict[str, Any]) -> dict[str, Any]:
    """A report row's numbers and verdict, intervals flattened."""
    flat: dict[str, Any] = {}
    for key in NUMBERS:
        value = row[key]
        flat.update({f"{key}[{i}]": v for i, v in enumerate(value)} if isinstance(value, list) else {key: value})
    return flat


def scalar(db: Path, query: str) -> Any:
    with sqlite3.connect(db) as conn:
        return conn.execute(query).fetchone()[0]


def test_head_is_the_newest_migration() -> None:
    scripts = ScriptDirectory(str(MIGRATIONS))
    assert scripts.get_current_head() == HEAD
    assert scripts.get_base() == BASELINE


def test_the_fixture_is_what_the_landed_release_wrote(landed: Path) -> None:
    assert scalar(landed, "SELECT version FROM schema_version") == 1
    assert scalar(landed, "SELECT count(*) FROM sqlite_master WHERE name = 'alembic_version'") == 0
    assert scalar(landed, "SELECT count(*) FROM run") > 0 and scalar(landed, "SELECT count(*) FROM bundle_import") == 1


def test_a_landed_database_upgrades_in_place_on_first_use_and_reads_back_the_same(landed: Path) -> None:
    before = rows(landed)
    store = Store(str(landed))
    assert store.migrated == Migration(BASELINE, HEAD)
    assert rows(landed) == before  # experiments, runs, metric values, hosts, calibrations, bundle_import
    assert scalar(landed, "SELECT version_num FROM alembic_version") == HEAD
    assert scalar(landed, "SELECT count(*) FROM pragma_table_info('run') WHERE name = 'attempt'") == 0
    assert scalar(landed, "PRAGMA integrity_check") == "ok"
    with sqlite3.connect(landed) as conn:
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        assert conn.execute("SELECT name FROM sqlite_master WHERE name LIKE '_alembic_tmp%'").fetchall() == []
    assert Store(str(landed)).migrated is None  # once only
    for name in ("fixture-quick", "fixture-spec", "fixture-imported"):
        data = store.load(store.require_experiment(name), every_record=True)
        stored = [r for r in before["run"] if r["experiment_id"] == data.experiment.id]
        assert [(r.id, r.block, r.status, r.started_at) for r in data.records] == [
            (r["id"], r["block"], r["status"], r["started_at"]) for r in stored
        ]
        values = {(m["run_id"], m["value"]) for m in before["metric"] if m["run_id"] in {r["id"] for r in stored}}
        assert set(zip(data.metrics.run_ids.tolist(), data.metrics.values.tolist(), strict=True)) == values
        assert data.hosts == {h["id"]: json.loads(h["fingerprint"]) for h in before["host"] if h["id"] in data.hosts}
    calibrated = store.load(store.require_experiment("fixture-quick")).calibrations
    assert [(c.workload_key, c.spread) for c in calibrated] == [
        (c["workload_version"], c["spread"]) for c in before["calibration"]
    ]


def test_the_landed_release_refuses_a_migrated_database(landed: Path) -> None:
    """0.1.0 reads schema_version only and refuses a number above its own 1 ("has schema 2,
    newer than this benchlab (1); upgrade benchlab") before it writes anything."""
    Store(str(landed))
    assert scalar(landed, "SELECT version FROM schema_version") == SCHEMA_VERSION > 1
    assert scalar(landed, "SELECT count(*) FROM schema_version") == 1


@pytest.mark.parametrize("name", ["fixture-quick", "fixture-spec", "fixture-imported"])
def test_reports_of_a_migrated_database_give_the_landed_numbers(landed: Path, name: str) -> None:
    expected = json.loads((LANDED / f"{name}.report.json").read_text())["rows"]
    report = json.loads(cli("report", name, "--db", str(landed), "-f", "json", check=True).stdout)
    got = {(r["workload"], r["metric"], r["variant"]): r for r in report["rows"]}
    assert set(got) == {(r["workload"], r["metric"], r["variant"]) for r in expected}
    # a CPU-suite run of an older suite is no longer scored against today's baseline (the report
    # says so): its rows are then judged as plain metrics, the same numbers under another family
    unscored = {w.split(":")[0] for w in report["warnings"] if w.endswith("; not scored")}
    for row in expected:
        new = got[(row["workload"], row["metric"], row["variant"])]
        # release 0.1.0's change_ci was the unadjusted 95% interval: today that is change_ci95, while
        # change_ci is read at the row's corrected level (the one its verdict reads)
        got_numbers, landed_numbers = numbers({**new, "change_ci": new["change_ci95"]}), numbers(row)
        if row["family"] == "scored" and row["workload"] in unscored:
            for key in ("verdict", "q"):  # judged in another family, corrected with other rows
                got_numbers.pop(key), landed_numbers.pop(key)
        assert got_numbers.keys() == landed_numbers.keys()
        for key, value in landed_numbers.items():
            if isinstance(value, float):
                # the same arithmetic on the same values: only printing, and the last bits of scipy's
                # distribution functions between its releases (t quantiles moved 1e-10 from 1.17 to 1.16), may differ
                assert got_numbers[key] == pytest.approx(value, rel=1e-9), (row["metric"], key)
            else:
                assert got_numbers[key] == value, (row["metric"], key)


def test_a_new_and_a_migrated_database_have_the_schema_of_schema_py(landed: Path, tmp_path: Path) -> None:
    fresh = Store(str(tmp_path / "new.db"))
    assert fresh.migrated == Migration(None, HEAD)
    for store in (fresh, Store(str(landed))):
        with store.engine.connect() as conn:
            assert compare_metadata(MigrationContext.configure(conn), metadata) == []
            assert conn.exec_driver_sql("SELECT version FROM schema_version").all() == [(SCHEMA_VERSION,)]
            assert conn.exec_driver_sql("SELECT version_num FROM alembic_version").all() == [(HEAD,)]


def test_a_new_database_is_made_without_alembic_and_stamped_as_alembic_stamps(tmp_path: Path) -> None:
    """Made without importing alembic (a tenth of a second every first run pays), its version table
    is the very one `alembic stamp` makes, and alembic reads it at HEAD."""
    made = tmp_path / "made.db"
    probe = "import sys; from benchlab.store import Store; Store(sys.argv[1]); print(sorted(m for m in sys.modules if m.startswith('alembic')))"
    assert subprocess.run([sys.executable, "-c", probe, str(made)], capture_output=True, text=True, check=True).stdout == "[]\n"
    stamped = tmp_path / "stamped.db"
    with sqlite3.connect(stamped) as conn:
        conn.execute("CREATE TABLE placeholder (x)")  # alembic stamps an existing database
    engine = create_engine(f"sqlite:///{stamped}")
    with engine.begin() as conn:
        alembic_command.stamp(alembic_config(conn), HEAD)
    version_ddl = "SELECT type, name, sql FROM sqlite_master WHERE tbl_name = 'alembic_version' ORDER BY name"
    with sqlite3.connect(made) as ours, sqlite3.connect(stamped) as alembics:
        assert ours.execute(version_ddl).fetchall() == alembics.execute(version_ddl).fetchall() != []
    with Store(str(made)).engine.connect() as conn:
        assert MigrationContext.configure(conn).get_current_revision() == HEAD


def test_a_database_newer_than_this_benchlab_is_refused_in_one_line(tmp_path: Path) -> None:
    db = tmp_path / "new.db"
    Store(str(db))
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE alembic_version SET version_num = '0099_from_the_future'")
    with pytest.raises(StoreError, match="has schema 0099_from_the_future, newer than this benchlab .*; upgrade benchlab"):
        Store(str(db))
    refused = cli("list", "--db", str(db))
    assert refused.returncode == 4 and "upgrade benchlab" in refused.stderr and len(refused.stderr.splitlines()) == 1
    assert scalar(db, "SELECT version_num FROM alembic_version") == "0099_from_the_future"


def test_db_current_and_upgrade_say_which_revisions(landed: Path) -> None:
    assert cli("db", "current", "--db", str(landed), check=True).stdout.split()[0] == BASELINE
    assert scalar(landed, "SELECT version FROM schema_version") == 1  # current changes nothing
    said = cli("db", "upgrade", "--db", str(landed), check=True).stdout
    assert f"from schema {BASELINE} to {HEAD}" in " ".join(said.split())
    assert cli("db", "current", "--db", str(landed), check=True).stdout.split()[0] == HEAD
    assert "already" in cli("db", "upgrade", "--db", str(landed), check=True).stdout


def test_db_upgrade_of_a_missing_file_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "none.db"
    assert cli("db", "upgrade", "--db", str(missing)).returncode == 4
    assert not missing.exists()


@pytest.mark.parametrize("args", [(), ("-1",), (BASELINE, "--db", "x.db")])
def test_downgrade_is_refused_with_what_to_do_instead(args: tuple[str, ...]) -> None:
    refused = cli("db", "downgrade", *args)
    assert refused.returncode == 2
    assert "not supported" in refused.stderr and "benchlab export" in refused.stderr
    assert len(refused.stderr.splitlines()) == 1


def test_two_commands_opening_a_landed_database_at_once_migrate_it_once(landed: Path) -> None:
    before = rows(landed)
    procs = [
        subprocess.Popen(
            [BENCHLAB, "db", "upgrade", "--db", str(landed)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    for proc in procs:
        _, stderr = proc.communicate(timeout=120)
        assert proc.returncode == 0, stderr
    assert rows(landed) == before
    assert scalar(landed, "SELECT version_num FROM alembic_version") == HEAD
    assert scalar(landed, "SELECT count(*) FROM alembic_version") == 1


@pytest.fixture(params=RELEASES)
def release(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, Path]:
    """A copy of one earlier release's database, and the name of its fixture."""
    db = tmp_path / f"{request.param}.db"
    shutil.copy(LANDED / f"{request.param}.db", db)
    return request.param, db


def test_every_release_reads_with_its_own_medians_and_verdicts_and_the_file_is_left_as_it_was(
    release: tuple[str, Path],
) -> None:
    """`report` (a command that only reads) migrates a copy in memory: the release's own medians
    and verdicts come back, and the file is byte for byte what the release left. A row the release
    judged that today's benchlab shows as a characteristic (verdict "-", not judged) is the one
    difference allowed: families of judged metrics came on 2026-11-24."""
    name, db = release
    landed = db.read_bytes()
    expected = json.loads((LANDED / f"{name}.report.json").read_text())["rows"]
    proc = cli("report", "fixture-tiny", "--db", str(db), "-f", "json", check=True)
    assert "read through a copy migrated in memory" in proc.stderr
    got = {(r["workload"], r["metric"], r["variant"]): r for r in json.loads(proc.stdout)["rows"]}
    assert set(got) == {(r["workload"], r["metric"], r["variant"]) for r in expected}
    judged = 0
    for row in expected:
        new = got[(row["workload"], row["metric"], row["variant"])]
        assert (new["n"], new["pairs"]) == (row["n"], row["pairs"]), row["metric"]
        assert new["median"] == pytest.approx(row["median"], rel=1e-12), row["metric"]
        assert new["baseline_median"] == pytest.approx(row["baseline_median"], rel=1e-12), row["metric"]
        if new["verdict"] != "-":
            judged += 1
            assert new["verdict"] == row["verdict"], row["metric"]
    assert judged >= 4
    assert db.read_bytes() == landed


def test_every_release_upgrades_in_place_to_the_schema_of_schema_py(release: tuple[str, Path]) -> None:
    name, db = release
    before = {table: len(found) for table, found in rows_of(db).items()}
    store = Store(str(db))
    assert store.migrated is not None and store.migrated.after == HEAD
    with store.engine.connect() as conn:
        assert compare_metadata(MigrationContext.configure(conn), metadata) == []
        assert conn.exec_driver_sql("SELECT version FROM schema_version").all() == [(SCHEMA_VERSION,)]
    assert scalar(db, "PRAGMA integrity_check") == "ok"
    assert {table: len(found) for table, found in rows_of(db).items() if table in before} == before
    data = store.load(store.require_experiment("fixture-tiny"), every_record=True)
    assert len(data.records) == before["run"] and len(data.metrics.values) == before["metric"]
    assert Store(str(db)).migrated is None


def rows_of(db: Path) -> dict[str, list[tuple[Any, ...]]]:
    """The rows of every table a database has, whatever its release."""
    with sqlite3.connect(db) as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {table: conn.execute(f'SELECT * FROM "{table}"').fetchall() for table in tables}


def test_a_database_stamped_at_head_without_a_table_is_migrated_not_trusted(tmp_path: Path) -> None:
    """The reported case: a 2026-11-23 database that an earlier benchlab stamped at HEAD without
    creating `calibration` (it trusted schema_version 1). `report` reads it, `db upgrade` mends it."""
    db = tmp_path / "stamped.db"
    shutil.copy(LANDED / "results-2026-11-23-a81d5ec.db", db)
    Store(str(db))
    with sqlite3.connect(db) as conn:
        conn.execute("DROP TABLE calibration")
    assert cli("report", "fixture-tiny", "--db", str(db), check=True).returncode == 0
    assert f"{HEAD} with no table calibration" in " ".join(cli("db", "current", "--db", str(db), check=True).stdout.split())
    said = " ".join(cli("db", "upgrade", "--db", str(db), check=True).stdout.split())
    assert f"from schema {HEAD} (with no table calibration) to {HEAD}" in said
    assert scalar(db, "SELECT count(*) FROM calibration") == 0


def test_a_current_database_stamped_back_to_the_baseline_migrates_without_changing_a_row(tmp_path: Path) -> None:
    db = tmp_path / "restamped.db"
    shutil.copy(LANDED / "results-2026-11-26-c59ee07.db", db)
    Store(str(db))
    before = rows_of(db)
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE alembic_version SET version_num = ?", (BASELINE,))
    assert Store(str(db)).migrated == Migration(BASELINE, HEAD)
    assert rows_of(db) == before


def test_a_database_that_cannot_be_upgraded_is_one_line_and_changes_nothing(tmp_path: Path) -> None:
    db = tmp_path / "dropped.db"
    shutil.copy(LANDED / "results-2026-11-23-a81d5ec.db", db)
    with contextlib.closing(sqlite3.connect(db)) as conn:
        conn.execute("ALTER TABLE run DROP COLUMN stderr_tail")
    landed, held = db.read_bytes(), rows_of(db)
    for command in (("report", "fixture-tiny"), ("db", "upgrade")):
        refused = cli(*command, "--db", str(db))
        assert refused.returncode == 4, refused.stderr
        assert refused.stderr.splitlines() == [
            f"benchlab: {db} cannot be upgraded to schema {HEAD}: it has no column run.stderr_tail; nothing was changed"
        ]
        if command[0] == "report":  # only reads: not a byte written
            assert db.read_bytes() == landed
    assert rows_of(db) == held  # the migration rolled back (sqlite_master included)


def test_an_older_file_too_large_to_copy_into_memory_is_refused_naming_db_upgrade(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Each read-only command would copy it whole into memory: above the limit, one line saying
    which command migrates it once; the file untouched, and readable once upgraded."""
    from benchlab.store import url

    db = tmp_path / "old.db"
    shutil.copy(LANDED / f"{RELEASES[0]}.db", db)
    landed = db.read_bytes()
    monkeypatch.setattr(url, "MEMORY_COPY_MAX", len(landed) - 1)
    with pytest.raises(StoreError, match=rf"older than this benchlab's: .* run `benchlab db upgrade --db {db}` once"):
        Store(str(db), create=False)
    assert db.read_bytes() == landed
    monkeypatch.setattr(url, "MEMORY_COPY_MAX", len(landed))
    Store(str(db), create=False).engine.dispose()  # at the limit: copied and read
