"""Default experiment names (`compare-DATE-TIME`, `score-...`, `calibrate-...-001`) are the time to
the second, and a script's loop starts two commands within one: the second is stored under the
next free name, never refused as a name already taken."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from benchlab.store import Store

# the real executable's entry, its clock held at one second for every command
FIXED_SECOND = (
    "import sys, time; time.strftime = lambda form, *_: form.replace('%Y%m%d-%H%M%S', '20260102-030405'); "
    "sys.argv[0] = 'benchlab'; from benchlab.entry import main; main()"
)


def benchlab_at_one_second(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", FIXED_SECOND, *args], capture_output=True, text=True, timeout=300)


def test_commands_of_one_second_store_their_default_names_apart_and_a_given_name_stays_refused(tmp_path: Path) -> None:
    db = str(tmp_path / "names.db")
    for _ in range(3):
        done = benchlab_at_one_second("compare", "--cmd", "true", "-V", "a", "-n", "2", "--db", db)
        assert done.returncode == 0, done.stderr
    for _ in range(2):
        done = benchlab_at_one_second("calibrate", "--cmd", "true", "-n", "2", "--experiments", "2", "--db", db)
        assert done.returncode == 0, done.stderr
    store = Store(db, create=False)
    assert sorted(row["name"] for row in store.list_experiments()) == [
        "calibrate-20260102-030405-001",
        "calibrate-20260102-030405-002",
        "calibrate-20260102-030405-2-001",
        "calibrate-20260102-030405-2-002",
        "compare-20260102-030405",
        "compare-20260102-030405-2",
        "compare-20260102-030405-3",
    ]
    store.engine.dispose()
    named = benchlab_at_one_second(
        "compare", "--cmd", "true", "-V", "a", "-n", "2", "--name", "compare-20260102-030405", "--db", db
    )
    assert named.returncode == 4 and "already exists" in named.stderr  # a name the user gave is theirs: never renamed
