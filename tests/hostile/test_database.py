"""A results database read as hostile input: contents another program wrote, a corrupt page,
a file that is empty or another program's. Each is one line and exit 4 that names the row, never
a traceback, and a command that only reads never writes (the database is as it was)."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import sqlite3
from pathlib import Path

import pytest

from tests.conftest import cli
from tests.hostile.conftest import refused

# damage -> (SQL run on a good database, what the refusal names)
DAMAGE = {
    "spec-not-json": ("UPDATE experiment SET spec = '{'", "experiment 1 has spec that is not JSON"),
    "spec-json-null": ("UPDATE experiment SET spec = 'null'", "experiment 1 has spec None, not a JSON object"),
    "config-not-json": ("UPDATE variant SET config = '{' WHERE id = 2", "variant 2 has config that is not JSON"),
    "config-json-null": ("UPDATE variant SET config = 'null'", "variant 1 has config None"),
    "details-not-json": ("UPDATE run_detail SET details = '{' WHERE run_id = 2", "run 2 has details that is not JSON"),
    "fingerprint-not-json": ("UPDATE host SET fingerprint = '[1'", "host 1 has fingerprint that is not JSON"),
    "fingerprint-json-null": ("UPDATE host SET fingerprint = 'null'", "host 1 has fingerprint None"),
    "metric-inf": ("UPDATE metric SET value = 9e999 WHERE id = 3", "run 1 has metric sys = inf"),
    "metric-minus-inf": ("UPDATE metric SET value = -9e999 WHERE run_id = 2", "run 2 has metric"),
    "dangling-host": ("UPDATE run SET host_id = 99 WHERE id = 3", "run 3 has host_id 99, which names no host"),
    "dangling-variant": ("UPDATE run SET variant_id = 99 WHERE id = 1", "run 1 has variant_id 99, which names no variant"),
    "dangling-workload": ("UPDATE run SET workload_id = 99 WHERE id = 1", "run 1 has workload_id 99"),
    "text-in-started_at": ("UPDATE run SET started_at = 'yesterday' WHERE id = 2", "run 2 has started_at 'yesterday'"),
    "text-in-ended_at": ("UPDATE run SET ended_at = 'soon' WHERE id = 2", "run 2 has ended_at 'soon'"),
    "unknown-status": ("UPDATE run SET status = 'great' WHERE id = 4", "run 4 has status 'great'"),
    "text-in-warmup": ("UPDATE run SET warmup = 'x' WHERE id = 4", "run 4 has warmup 'x'"),  # as stored, not as a bool
    "direction": ("UPDATE metric_name SET direction = 'up' WHERE id = 1", "metric name 1 has direction 'up'"),
    "dropped-column": ("ALTER TABLE run DROP COLUMN message", "cannot be upgraded"),
    # no migration removes a column another tool added: said as such, never "run `db upgrade`"
    "added-column": (
        "ALTER TABLE run ADD COLUMN note TEXT",
        "it has column run.note, which this benchlab does not know (another",
    ),
    # JSON of the right kind whose fields are not what benchlab writes, and rows that disagree with the spec
    "spec-missing-field": ("UPDATE experiment SET spec = json_remove(spec, '$.workloads')", "experiment 1 has spec of a shape"),
    "spec-wrong-type": ("UPDATE experiment SET spec = json_set(spec, '$.blocks', 'ten')", "(spec: blocks: "),
    "spec-of-another-experiment": ("UPDATE experiment SET spec = json_set(spec, '$.name', 'y')", "spec of experiment 'y'"),
    "spec-without-a-variant": ("UPDATE experiment SET spec = json_remove(spec, '$.variants[1]')", "variant rows that are not"),
    "workload-kind": ("UPDATE workload SET kind = 'builtin'", "experiment 1 has workload rows that are not its spec's"),
    "config-missing-field": ("UPDATE variant SET config = '{}' WHERE id = 2", "variant 2 has config of a shape"),
    "config-not-the-spec's": (
        "UPDATE variant SET config = json_set(config, '$.env.X', '9') WHERE id = 2",
        "variant 2 has a config that",
    ),
    "is_baseline": ("UPDATE variant SET is_baseline = 1 WHERE id = 2", "variant 2 has is_baseline 1"),
    "fingerprint-wrong-type": ('UPDATE host SET fingerprint = \'{"cpus_online": "many"}\'', "(fingerprint: cpus_online: "),
    "details-wrong-shape": (
        "UPDATE run_detail SET details = '{\"options\": 3}' WHERE run_id = 2",
        "run 2 has details of a shape",
    ),
    "failed-run-details": (
        "UPDATE run SET status = 'failed' WHERE id = 2; UPDATE run_detail SET details = '{\"allocator\": 7}' WHERE run_id = 2",
        "run 2 has details of a shape",
    ),
    "text-in-metric-value": ("UPDATE metric SET value = 'abc' WHERE id = 3", "metric 3 of run 1 has value 'abc', not a number"),
    "text-in-metric-name_id": ("UPDATE metric SET name_id = 'abc' WHERE id = 5", "metric 5 of run 1 has name_id 'abc'"),
    "metric-dangling-name": (
        "UPDATE metric SET name_id = 99 WHERE id = 3",
        "metric 3 of run 1 has name_id 99, which names no metric name",
    ),
}
RESUME = ("compare", "--cmd", "true", "-V", "a: env.X=1", "-V", "b: env.X=2", "-n", "6", "--name", "x", "--resume")
READERS = {"report": ("report", "x"), "history": ("history",), "export": ("export", "x", "-o", "out.bundle")}


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database holding one experiment of two variants, made once for the module."""
    folder = tmp_path_factory.mktemp("good")
    db = folder / "good.db"
    env = {**os.environ, "BENCHLAB_DB": str(db), "BENCHLAB_STATE_DIR": str(folder / "state")}
    import subprocess

    from tests.conftest import BENCHLAB

    subprocess.run(
        [BENCHLAB, "compare", "--cmd", "true", "-V", "a: env.X=1", "-V", "b: env.X=2", "-n", "2", "--name", "x"],
        env=env, check=True, capture_output=True, cwd=folder,
    )  # fmt: skip
    return db


def damaged(good: Path, sql: str | None) -> Path:
    """The good database copied to where this test's BENCHLAB_DB points, with `sql` run on it."""
    db = Path(os.environ["BENCHLAB_DB"])
    shutil.copy(good, db)
    if sql is not None:
        with contextlib.closing(sqlite3.connect(db)) as conn:
            conn.executescript(sql)
    return db


@pytest.mark.parametrize("command", list(READERS))
@pytest.mark.parametrize("damage", list(DAMAGE))
def test_contents_another_program_wrote_are_refused_naming_the_row(good: Path, damage: str, command: str, tmp_path: Path) -> None:
    sql, mentions = DAMAGE[damage]
    damaged(good, sql)
    if command != "export" and damage.startswith("details"):
        pytest.skip("a report reads the details of the runs it names one by one (failed ones), export every run's")
    refused(*READERS[command], code=4, mentions=mentions, cwd=tmp_path)


@pytest.mark.parametrize(
    "args",
    [("show", "x"), ("diff", "x:a", "x:b"), RESUME],
    ids=lambda args: args[0],
)
def test_a_spec_benchlab_never_wrote_is_refused_by_every_command_that_reads_it(
    good: Path, args: tuple[str, ...], tmp_path: Path
) -> None:
    """Beside report, history and export above: what shows, compares or resumes an experiment."""
    damaged(good, "UPDATE experiment SET spec = json_remove(spec, '$.variants')")
    refused(*args, code=4, mentions="experiment 1 has spec of a shape benchlab never writes (spec: variants: ", cwd=tmp_path)


@pytest.mark.parametrize(
    ("version", "mentions"),
    [("2", "experiment 1 has a spec this benchlab cannot read: version 2 was written by a newer benchlab"),
     ('"1"', "experiment 1 has a spec this benchlab cannot read: version '1' is not a spec version"),
     ("0", "version 0 is not a spec version")],
    ids=["newer", "text", "zero"],
)  # fmt: skip
def test_a_stored_spec_of_a_version_this_benchlab_cannot_read_is_refused(
    good: Path, version: str, mentions: str, tmp_path: Path
) -> None:
    """Versioned stored specs (docs/storage.md): a newer benchlab's is refused in one line, never guessed at."""
    damaged(good, f"UPDATE experiment SET spec = json_set(spec, '$.version', json('{version}'))")
    refused("report", "x", code=4, mentions=mentions, cwd=tmp_path)


@pytest.mark.parametrize(
    ("sql", "mentions"),
    [("UPDATE run SET variant_id = 99 WHERE id = 2", "run 2 has variant_id 99, which names no variant of its experiment"),
     ("UPDATE run SET status = 'failed', started_at = X'00' WHERE id = 2", "run 2 has started_at b'\\x00', which benchlab never")],
    ids=["dangling-variant", "failed-run-blob-time"],
)  # fmt: skip
def test_a_resume_checks_the_runs_it_skips_or_runs_again_before_anything_runs(
    good: Path, tmp_path: Path, sql: str, mentions: str
) -> None:
    """What a resume skips, and the failed runs it runs again (read whole), were a KeyError and
    a TypeError."""
    db = damaged(good, sql)
    before = db.read_bytes()
    proc = cli(*RESUME[:-5], "-n", "2", "--name", "x", "--resume", cwd=tmp_path)  # its own length: the spec stays as stored
    last = proc.stderr.strip().splitlines()[-1]
    assert proc.returncode == 4 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert last.startswith(f"benchlab: the results database is damaged: {mentions}"), proc.stderr[-2000:]
    assert db.read_bytes() == before


def test_what_benchlab_writes_is_read_as_it_was_a_guests_fingerprint_included(good: Path, tmp_path: Path) -> None:
    """The checks refuse only what benchlab never writes: a vm guest's fingerprint carries its
    kernel's build switches as a group of facts."""
    switches = """json('{"lru_gen": "y", "binder": null, "zram": "m"}')"""
    damaged(good, f"UPDATE host SET fingerprint = json_set(fingerprint, '$.kernel_switches', {switches}, '$.accel', 'kvm')")
    assert cli("report", "x", cwd=tmp_path, check=True).returncode == 0


def test_a_stored_fingerprint_is_checked_when_a_new_host_is_matched_against_it(good: Path, tmp_path: Path) -> None:
    """Storing runs of a machine whose hash is not stored reads every stored fingerprint (a
    rebooted machine is matched by its facts): another program's is refused there too."""
    damaged(good, "UPDATE host SET hash = 'x', fingerprint = '{\"memory_kib\": \"lots\"}'")
    refused(
        "compare", "--cmd", "true", "-n", "2", "--name", "y", code=4, mentions="host 1 has fingerprint of a shape", cwd=tmp_path
    )


@pytest.mark.parametrize(
    ("column", "value", "mentions"),
    [("runs", "'many'", "fleet task 1 has runs 'many'"), ("workload_id", "99", "fleet task 1 has workload_id 99"),
     ("state", "'great'", "fleet task 1 has state 'great'"), ("fingerprint", None, "host 1 has fingerprint of a shape")],
)  # fmt: skip
def test_a_fleets_attempt_rows_are_checked_as_its_driver_reads_them(
    good: Path, column: str, value: str | None, mentions: str
) -> None:
    """The driver's progress reads every attempt of the experiment, and the fingerprints of the hosts that ran it."""
    from benchlab.errors import StoreError
    from benchlab.store import Store

    db = damaged(good, None)
    store = Store(str(db))
    exp = store.require_experiment("x")
    store.end_attempt(store.begin_attempt(exp, "cmd", 0, worker="w1", host_id=1), "done")
    with contextlib.closing(sqlite3.connect(db)) as conn:
        if value is None:
            conn.execute('UPDATE host SET fingerprint = \'{"guest_of": {"a": 1}}\'')  # was a dict key: TypeError
        else:
            conn.execute(f"UPDATE fleet_task SET {column} = {value}")
        conn.commit()
    with pytest.raises(StoreError, match=r"^the results database is damaged: " + re.escape(mentions)):
        store.fleet_progress(exp)
    if column == "runs":  # the next attempt at the block is numbered after the stored ones
        with contextlib.closing(sqlite3.connect(db)) as conn:
            conn.execute("UPDATE fleet_task SET runs = 0, attempt = 'first'")
            conn.commit()
        with pytest.raises(StoreError, match="a fleet task of cmd block 1 has attempt 'first', not a whole number"):
            store.begin_attempt(exp, "cmd", 0, worker="w2", host_id=1)
    store.engine.dispose()


def corrupt(db: Path) -> None:
    """Garbage over the run table's pages (what every command reads), the header and schema left whole."""
    with contextlib.closing(sqlite3.connect(db)) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        size = conn.execute("PRAGMA page_size").fetchone()[0]
        root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'run'").fetchone()[0]
    data = bytearray(db.read_bytes())
    data[(root - 1) * size : root * size] = bytes([0xAB]) * size
    db.write_bytes(data)


@pytest.mark.parametrize(
    "args",
    [
        ("list",),
        ("history",),
        ("diff", "x:a", "x:b"),
        ("report", "x"),
        ("show", "x"),
        ("export", "x", "-o", "out.bundle"),
        ("compare", "--cmd", "true", "-n", "2", "--name", "y"),
        ("import", "x.bundle"),
    ],
    ids=lambda args: args[0],
)
def test_a_corrupt_page_is_one_line_from_every_command(good: Path, args: tuple[str, ...], tmp_path: Path) -> None:
    if args[0] == "import":
        cli("export", "x", "-o", str(tmp_path / "x.bundle"), "--db", str(good), check=True)
    db = damaged(good, None)
    corrupt(db)
    before = db.read_bytes()
    proc = cli(*args, cwd=tmp_path)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 4, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and len(lines) == 1 and lines[0].startswith("benchlab: "), proc.stderr[-2000:]
    if args[0] not in ("compare", "import"):
        assert db.read_bytes() == before


def test_an_empty_alembic_version_is_read_without_writing_a_row(good: Path, tmp_path: Path) -> None:
    db = damaged(good, "DELETE FROM alembic_version")
    before = db.read_bytes()
    assert cli("report", "x", cwd=tmp_path, check=True).returncode == 0
    assert cli("list", cwd=tmp_path, check=True).returncode == 0
    assert db.read_bytes() == before
    with contextlib.closing(sqlite3.connect(db)) as conn:
        assert conn.execute("SELECT count(*) FROM alembic_version").fetchone() == (0,)


def test_a_current_database_stamped_back_to_the_baseline_reads_and_stays_as_it_was(good: Path, tmp_path: Path) -> None:
    db = damaged(good, "UPDATE alembic_version SET version_num = '0001_baseline'")
    before = db.read_bytes()
    assert cli("report", "x", cwd=tmp_path, check=True).returncode == 0
    assert db.read_bytes() == before


@pytest.mark.parametrize("command", [("list",), ("report", "x"), ("history",)], ids=lambda c: c[0])
def test_an_empty_file_is_refused_not_initialised(command: tuple[str, ...], tmp_path: Path) -> None:
    db = Path(os.environ["BENCHLAB_DB"])
    db.touch()
    refused(*command, code=4, mentions="empty file", cwd=tmp_path)
    assert db.read_bytes() == b""


def test_another_programs_database_is_refused_by_a_reader(tmp_path: Path) -> None:
    db = Path(os.environ["BENCHLAB_DB"])
    with contextlib.closing(sqlite3.connect(db)) as conn:
        conn.execute("CREATE TABLE notes (x)")
        conn.commit()
    refused("list", code=4, mentions="not a benchlab results database", cwd=tmp_path)


def test_an_empty_benchlab_db_is_refused_like_an_empty_db_flag(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("BENCHLAB_DB", "")
    proc = cli("list", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "benchlab: BENCHLAB_DB is set but empty (unset it for the default database, or name a SQLite path or a postgresql:// URL)"
    ]
    assert list(tmp_path.iterdir()) == [] or not any(p.suffix == ".db" for p in tmp_path.rglob("*"))


def test_an_experiment_name_that_is_not_stored_is_usage_exit_2(good: Path, tmp_path: Path) -> None:
    damaged(good, None)
    refused("report", "nope", code=2, mentions="no experiment named 'nope'", cwd=tmp_path)
