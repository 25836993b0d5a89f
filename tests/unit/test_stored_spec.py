"""The stored spec, versioned (spec/stored.py, docs/storage.md): every release's database reads
the same whichever way its version is written, an older shape is migrated in one place before
it is validated, and a version this benchlab cannot read is refused (the one-line refusals, from
the command line, are in tests/hostile/test_database.py and test_bundles.py)."""

from __future__ import annotations

import contextlib
import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from benchlab.analysis.analyze import analyze
from benchlab.errors import StoreError
from benchlab.spec import stored
from benchlab.spec.models import ExperimentSpec
from benchlab.spec.stored import STORED_SPEC_VERSION, StoredVersionError, read_stored_spec, stored_version
from benchlab.store import Store
from tests.conftest import experiment_rows

LANDED = Path(__file__).parents[1] / "fixtures" / "landed"
RELEASES = sorted(p.stem for p in LANDED.glob("results-*.db"))


def _execute(db: Path, sql: str, *args: object) -> list[Any]:
    with contextlib.closing(sqlite3.connect(db)) as conn, conn:
        return conn.execute(sql, args).fetchall()


def _report(db: Path, name: str) -> dict[str, Any]:
    store = Store(str(db))
    report = analyze(store.load(store.require_experiment(name), every_record=True)).report().model_dump(mode="json")
    report["experiment"].pop("spec")  # the document as stored: the one place the two differ
    return report


def test_every_landed_release_is_here() -> None:
    assert len(RELEASES) >= 5 and "results-0.1.0" in RELEASES


@pytest.mark.parametrize("release", RELEASES)
def test_a_stored_spec_reads_the_same_with_and_without_its_version(release: str, tmp_path: Path) -> None:
    """Every earlier release wrote version 1 without a `version` key; written out, it reads the same spec
    and the same report, every number of it."""
    db = tmp_path / "results.db"
    shutil.copy(LANDED / f"{release}.db", db)
    Store(str(db))  # migrated in place, as the first command that stores would
    for name, text in _execute(db, "SELECT name, spec FROM experiment"):
        document = json.loads(text)
        assert stored.VERSION_KEY not in document
        before, spec = _report(db, name), Store(str(db)).require_experiment(name)
        assert spec.spec == ExperimentSpec.model_validate(document) and spec.spec_document == document
        _execute(db, "UPDATE experiment SET spec = ? WHERE name = ?", json.dumps({**document, "version": 1}), name)
        again = Store(str(db)).require_experiment(name)
        assert again.spec == spec.spec and again.spec_document == {**document, "version": 1}
        assert _report(db, name) == before


def test_what_this_benchlab_writes_is_the_current_version_and_reads_back_as_written(tmp_path: Path) -> None:
    rows = experiment_rows(
        {"name": "x", "workloads": [{"name": "w", "command": "sleep 0"}], "variants": [{"name": "a"}, {"name": "b"}]}
    )
    written = Store(str(tmp_path / "results.db")).create_experiment(**rows)
    read = Store(str(tmp_path / "results.db")).require_experiment("x")
    assert stored_version(read.spec_document) == STORED_SPEC_VERSION
    assert read.spec_document == written.spec_document == rows["spec"]
    assert read.spec == written.spec == ExperimentSpec.model_validate(rows["spec"])
    assert read.spec.workloads[0].command == ["sleep", "0"] and read.spec.baseline_name == "a"


def test_a_newer_version_is_refused_and_never_guessed_at(tmp_path: Path) -> None:
    db = tmp_path / "results.db"
    shutil.copy(LANDED / "results-0.1.0.db", db)
    Store(str(db))
    (name, text), *_ = _execute(db, "SELECT name, spec FROM experiment")
    _execute(db, "UPDATE experiment SET spec = ?", json.dumps({**json.loads(text), "version": STORED_SPEC_VERSION + 1}))
    with pytest.raises(StoreError, match=f"version {STORED_SPEC_VERSION + 1} was written by a newer benchlab") as caught:
        Store(str(db)).require_experiment(name)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("version", [0, -1, "1", 1.0, True, None, [1]])
def test_a_version_that_is_not_one_is_refused(version: object) -> None:
    with pytest.raises(StoredVersionError, match="is not a spec version"):
        read_stored_spec({"version": version, "name": "x", "workloads": [], "variants": []})


def test_a_malformed_stored_spec_is_refused_by_the_spec_model() -> None:
    document = ExperimentSpec.model_validate(
        {"name": "x", "workloads": [{"name": "w", "command": ["true"]}], "variants": [{"name": "a"}]}
    ).model_dump(mode="json")
    assert read_stored_spec(document).name == "x"
    for broken in (
        {**document, "blocks": "ten"},
        {**document, "evil": 1},
        {k: v for k, v in document.items() if k != "variants"},
    ):
        with pytest.raises(ValidationError):
            read_stored_spec(broken)


def test_an_older_version_is_migrated_in_one_place_before_it_is_validated(monkeypatch: pytest.MonkeyPatch) -> None:
    """The day a version 2 comes: a version-1 document (no key) passes through the step from 1 to 2,
    a version-2 one does not, and both read as the current spec."""
    current = ExperimentSpec.model_validate(
        {"name": "x", "workloads": [{"name": "w", "command": ["true"]}], "variants": [{"name": "a"}], "seed": 7}
    )
    old = {**current.model_dump(mode="json"), "seed": "7"}  # a made-up older shape: the seed as text
    steps: list[int] = []

    def step(document: dict[str, Any]) -> dict[str, Any]:
        steps.append(1)
        return {**document, "seed": int(document["seed"])}

    monkeypatch.setattr(stored, "STORED_SPEC_VERSION", 2)
    monkeypatch.setitem(stored.MIGRATIONS, 1, step)
    assert read_stored_spec(old) == current and steps == [1]
    assert read_stored_spec({**current.model_dump(mode="json"), "version": 2}) == current and steps == [1]
    with pytest.raises(StoredVersionError, match="version 3 was written by a newer benchlab: this one reads versions 1 to 2"):
        read_stored_spec({**current.model_dump(mode="json"), "version": 3})
