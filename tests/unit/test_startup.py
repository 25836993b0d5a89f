"""Starting `benchlab` for a help or a refusal loads nothing a command runs with: the list below
is what made `--version` cost 0.94 s of CPU (bench/startup.py prints each start's cost against a
bare `python -c pass`)."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from benchlab.cli import parser
from benchlab.cli.parser import walk
from tests.conftest import cli, experiment_rows

HEAVY = (
    "numpy", "scipy", "pandas", "pydantic", "sqlalchemy", "alembic", "rich", "matplotlib", "celery", "otava",
    "typer", "click", "tomllib", "logging", "dataclasses", "shutil", "typing",
    "benchlab.spec.models", "benchlab.stats", "benchlab.store", "benchlab.runner", "benchlab.report.renderers",
)  # fmt: skip
RUN = (
    "import json, sys\nfrom benchlab.entry import main\nsys.argv = ['benchlab', *sys.argv[2:]]\n"
    "try:\n    main()\nexcept SystemExit as exc:\n    code = exc.code\n"
    "open(sys.argv[0] if False else OUT, 'w').write(json.dumps({'code': code, 'modules': sorted(sys.modules)}))\n"
)


def started(tmp_path: Path, *words: str) -> tuple[int, list[str]]:
    """The exit code of `benchlab WORDS` and every module it had loaded when it ended."""
    out = tmp_path / "modules.json"
    code = RUN.replace("OUT", repr(str(out)))
    done = subprocess.run([sys.executable, "-c", code, "-", *words], capture_output=True, text=True, timeout=60)
    assert out.exists(), done.stderr
    seen = json.loads(out.read_text())
    return seen["code"], seen["modules"]


CASES = [
    (["--version"], 0),
    (["--help"], 0),
    ([], 2),
    *[([*name.split(), "--help"], 0) for name, _ in walk(parser())],
    (["frobnicate"], 2),
    (["report", "--bogus", "x"], 2),
    (["report", "x", "--format", "xml"], 2),
    (["compare", "-n", "3.0", "--cmd", "true"], 2),
    (["run", "/nonexistent/spec.toml"], 2),
    (["run", "/nonexistent/spec.toml", "--format", "xml"], 2),
    (["ipc", "latency", "-pair", "x"], 2),
]


@pytest.mark.parametrize(("words", "code"), CASES, ids=[" ".join(words) or "(nothing)" for words, _ in CASES])
def test_a_help_or_a_refusal_loads_nothing_heavy(tmp_path: Path, words: list[str], code: int) -> None:
    exit_code, modules = started(tmp_path, *words)
    assert exit_code in (code, None if code == 0 else code)
    loaded = [m for m in modules if any(m == h or m.startswith(f"{h}.") for h in HEAVY)]
    assert not loaded, f"benchlab {' '.join(words)} loaded {loaded}"


def test_the_history_help_says_the_detectors_own_defaults() -> None:
    """The help states them without importing the detector (dataclasses would cost a third of the start)."""
    from benchlab.analysis.changepoints import Settings

    said = {a.dest: a.help for a in dict(walk(parser()))["history"]._actions}
    default = Settings()
    assert f"default {default.max_pvalue:g}" in (said["max_pvalue"] or "")
    assert f"default {default.min_change:g}" in (said["min_change"] or "")
    assert f"default {default.window}" in (said["window"] or "")


def test_the_formats_a_command_accepts_are_the_ones_rendered() -> None:
    """`report.choices` names them for a refusal without loading a renderer; `renderers` holds them."""
    from benchlab.report.choices import FORMATS
    from benchlab.report.renderers import RENDERERS

    assert tuple(RENDERERS) == FORMATS


STORE_PACKAGE = ("benchlab.store", "benchlab.store.files")  # the lazy package and the file's own reader
LANDED = Path(__file__).resolve().parents[1] / "fixtures" / "landed"


def stored_db(tmp_path: Path) -> str:
    """A database at this benchlab's schema holding one experiment, 'present'."""
    from benchlab.store import Store

    db = str(tmp_path / "r.db")
    spec = {"name": "present", "workloads": [{"name": "w", "command": ["true"]}], "variants": [{"name": "a"}]}
    Store(db).create_experiment(**experiment_rows(spec))
    return db


@pytest.mark.parametrize("command", ["report", "show", "export"])
def test_a_name_the_database_does_not_hold_is_refused_before_anything_reads_it(tmp_path: Path, command: str) -> None:
    """The mistyped name is refused in the Store's own words, with the standard library's sqlite3:
    of the heavy modules only the store's package (lazy) and its file reader load."""
    from benchlab.errors import SpecError
    from benchlab.store import Store

    db = stored_db(tmp_path)
    exit_code, modules = started(tmp_path, command, "absent", "--db", db)
    assert exit_code == 2
    loaded = [m for m in modules if any(m == h or m.startswith(f"{h}.") for h in HEAVY) and m not in STORE_PACKAGE]
    assert not loaded, f"benchlab {command} absent loaded {loaded}"
    said = cli(command, "absent", "--db", db, cwd=tmp_path).stderr
    with pytest.raises(SpecError) as refused:
        Store(db, create=False).require_experiment("absent")
    assert said == f"benchlab: {refused.value}\n"


@pytest.mark.parametrize("kind", ["missing", "empty", "foreign"])
def test_a_file_the_store_would_refuse_is_refused_before_anything_reads_it(tmp_path: Path, kind: str) -> None:
    """A mistyped --db path, an empty file and another program's SQLite file: refused as the Store
    refuses them (store/files.checked_path, which both ask), before SQLAlchemy loads."""
    from benchlab.errors import StoreError
    from benchlab.store import Store

    db = tmp_path / "r.db"
    if kind == "empty":
        db.write_bytes(b"")
    if kind == "foreign":
        with contextlib.closing(sqlite3.connect(db)) as conn:
            conn.execute("CREATE TABLE notes (body TEXT)")
    before = db.read_bytes() if db.exists() else None
    exit_code, modules = started(tmp_path, "report", "x", "--db", str(db))
    assert exit_code == 4
    loaded = [m for m in modules if any(m == h or m.startswith(f"{h}.") for h in HEAVY) and m not in STORE_PACKAGE]
    assert not loaded, f"benchlab report x --db ({kind}) loaded {loaded}"
    said = cli("report", "x", "--db", str(db), cwd=tmp_path).stderr
    with pytest.raises(StoreError) as refused:
        Store(str(db), create=False)
    assert said == f"benchlab: {refused.value}\n"
    assert (db.read_bytes() if db.exists() else None) == before


def test_a_command_that_runs_loads_what_it_uses(tmp_path: Path) -> None:
    """The lists above can fail: a command that judges loads the store and the statistics."""
    exit_code, modules = started(tmp_path, "report", "present", "--db", stored_db(tmp_path))
    assert exit_code in (0, None) and "sqlalchemy" in modules and "benchlab.stats" in modules
    lazy = ("numpy.f2py.crackfortran", "unittest", "scipy.linalg._basic")  # benchlab.imports
    assert not [m for m in lazy if m in modules]


def test_a_stored_name_and_an_older_database_go_to_the_store_as_before(tmp_path: Path) -> None:
    """Only a file at this benchlab's schema that surely lacks the name is refused early: a name it
    holds is read, and a database of an earlier release (read through a migrated copy) is asked by
    the Store, which refuses the same way."""
    db = stored_db(tmp_path)
    exit_code, modules = started(tmp_path, "show", "present", "--db", db)
    assert exit_code in (0, None) and "sqlalchemy" in modules
    for landed in sorted(LANDED.glob("*.db")):
        before = landed.read_bytes()
        exit_code, modules = started(tmp_path, "report", "absent", "--db", str(landed))
        assert exit_code == 2 and "sqlalchemy" in modules, landed.name
        assert landed.read_bytes() == before


def test_listing_the_experiments_reads_no_runs_and_no_spec(tmp_path: Path) -> None:
    """`benchlab list` needs the database and a table: not numpy, scipy, the store's run reader or
    the spec's models, which reading an experiment's runs or its spec loads."""
    exit_code, modules = started(tmp_path, "list", "--db", stored_db(tmp_path))
    assert exit_code in (0, None) and "sqlalchemy" in modules
    heavy = ("numpy", "scipy", "benchlab.spec.models", "benchlab.store.reading", "benchlab.stats", "matplotlib")
    assert not [m for m in modules if any(m == h or m.startswith(f"{h}.") for h in heavy)]
