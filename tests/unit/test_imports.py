"""How the `benchlab` executable imports (benchlab.imports): numpy's f2py and testing and scipy's
linalg, which `scipy.special`'s import loads, stay unrun until something uses them, and then work
whole; the garbage collector rests while an import runs and then leaves what it made alone."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

LOAD = """
import json, sys
from benchlab import imports
if sys.argv[1] == "installed":
    imports.install()
from scipy import special
loaded = {m: m in sys.modules for m in ("numpy.f2py.crackfortran", "numpy.testing._private.utils", "unittest", "scipy.linalg._basic")}
import numpy
from scipy import optimize
numpy.testing.assert_allclose(special.ndtr(0.0), 0.5)
fit = optimize.least_squares(lambda p: p - numpy.array([1.0, 2.0]), numpy.zeros(2)).x.tolist()  # through scipy.linalg
print(json.dumps({"loaded": loaded, "include": numpy.f2py.get_include(), "after": "unittest" in sys.modules, "fit": fit}))
"""

COLLECTOR = """
import gc, json, sys
from benchlab import imports, interrupts
interrupts.install()
imports.install()
imports.install()  # twice: one wrapper
interrupts.install()  # again, as cli.main does: it keeps what wraps its import
frozen = gc.get_freeze_count()
import seen_inside
first = gc.isenabled()
frozen = gc.get_freeze_count() > frozen
again = gc.get_freeze_count()
import seen_inside
again = gc.get_freeze_count() == again
try:
    import fails_inside
except ZeroDivisionError:
    pass
failed = gc.isenabled()
gc.disable()  # a caller's own pause, as cli/results.py's while it loads
import csv
kept = gc.isenabled()
print(json.dumps({"during": seen_inside.DURING, "after": first, "frozen": frozen, "again_nothing": again, "after_a_failure": failed, "kept": kept}))
"""


CLOSED_AT_EXIT = """
import sys
from benchlab import imports
imports.install()
from benchlab.store import Store
store = Store(sys.argv[1])  # WAL: a -wal and a -shm file beside it while a connection is open
with store.engine.connect() as conn:
    pass
import seen_inside  # runs a module: what exists now is frozen, the pool's cycles with it
del store
"""


def run(code: str, *args: str, cwd: Path | None = None) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, check=True, cwd=cwd)
    seen: dict[str, Any] = json.loads(done.stdout)
    return seen


def test_scipy_loads_without_f2py_testing_and_linalg_which_still_work_when_used() -> None:
    plain, installed = run(LOAD, "plain"), run(LOAD, "installed")
    assert all(plain["loaded"].values())  # what scipy.special's import costs without them
    assert not any(installed["loaded"].values())
    assert installed["include"] == plain["include"] and str(installed["include"]).endswith("src")
    assert installed["after"] is True  # numpy.testing ran at its first use
    assert installed["fit"] == plain["fit"] == [1.0, 2.0]


def test_the_collector_rests_during_an_import_and_works_around_it(tmp_path: Path) -> None:
    """Paused inside the import, back after it with what the import made frozen (an import of a
    loaded module freezes nothing), an import that fails included; a pause the caller made is the
    caller's to end."""
    (tmp_path / "seen_inside.py").write_text("import gc\nDURING = gc.isenabled()\n")
    (tmp_path / "fails_inside.py").write_text("1 / 0\n")
    seen = run(COLLECTOR, cwd=tmp_path)
    assert seen == {"during": False, "after": True, "frozen": True, "again_nothing": True, "after_a_failure": True, "kept": False}


def test_a_store_frozen_in_its_cycles_is_still_closed_as_the_process_exits(tmp_path: Path) -> None:
    """Closing the last connection folds the write-ahead log into the file and removes it: were the
    frozen pool left to the end, the log would stay beside the file and a copy would lack its tables."""
    (tmp_path / "seen_inside.py").write_text("DURING = True\n")
    db = tmp_path / "kept.db"
    subprocess.run([sys.executable, "-c", CLOSED_AT_EXIT, str(db)], check=True, cwd=tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("kept")) == ["kept.db"]
