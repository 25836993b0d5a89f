"""The typed report: its JSON is the model serialised and valid against the published schema,
views are chosen when rendering (and refused in one line where they cannot be drawn), and
every row says whether its change is a ratio or a raw shift."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import jsonschema
import pytest

from benchlab.analysis.analyze import analyze
from benchlab.errors import SpecError
from benchlab.report import check_format, render
from benchlab.report_model import SCHEMA, Report, schema_text
from benchlab.store import Store
from tests.unit.test_runner import FakeExecutor, runner, spec

SCHEMA_FILE = Path(__file__).parents[2] / "docs" / "report.schema.json"
REWRITE = (
    "uv run python -c 'import sys; from benchlab.report_model import schema_text; sys.stdout.write(schema_text())' "
    "> docs/report.schema.json"
)


def published_schema() -> dict[str, object]:
    return json.loads(SCHEMA_FILE.read_text())


def validate(document: dict[str, object]) -> None:
    jsonschema.validate(document, published_schema(), cls=jsonschema.Draft202012Validator)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Report:
    """b is 10% slower than a; every run of 'bad' fails; major faults are all zero (a shift, not a ratio)."""
    store = Store(str(tmp_path_factory.mktemp("report") / "r.db"))
    variants = [
        {"name": "a", "env": {"FAKE_WALL": "1.0"}},
        {"name": "b", "env": {"FAKE_WALL": "1.1"}},
        {"name": "bad", "env": {"FAKE_FAIL": "1"}},
    ]
    exp = runner(store, FakeExecutor()).run(spec(variants=variants))
    return analyze(store.load(exp, every_record=True)).report()


def test_the_published_schema_is_the_one_the_models_generate() -> None:
    assert SCHEMA_FILE.read_text() == schema_text(), f"the report models changed: rewrite the schema with {REWRITE}"


def test_a_real_report_is_valid_against_the_published_schema(report: Report) -> None:
    document = json.loads(render(report, "json"))
    assert document["schema"] == SCHEMA == "benchlab.report/2"
    assert document["runs"] and document["failed_runs"]  # the optional parts are there to be checked too
    validate(document)
    assert Report.model_validate(document) == report  # the JSON is the model: it reads back whole
    with pytest.raises(jsonschema.ValidationError):
        validate({**document, "view": "times"})  # a view is never stored in the report


def test_every_row_says_whether_its_change_is_a_ratio_or_a_shift(report: Report) -> None:
    document = json.loads(render(report, "json"))
    exported = {r["metric"]: r["log_scale"] for r in document["rows"] if r["variant"] == "b"}
    assert exported["wall"] is True and exported["major_faults"] is False
    lines = list(csv.DictReader(io.StringIO(render(report, "csv"))))
    assert {(r["metric"], r["log_scale"]) for r in lines if r["variant"] == "b"} >= {("wall", "True"), ("major_faults", "False")}
    for fmt in ("table", "md"):
        text = render(report, fmt)
        faults = [line for line in text.splitlines() if "major_faults" in line]  # a line per block of the terminal's
        walls = [line for line in text.splitlines() if re.search(r"(^|[│|] )wall +[│|]", line)]
        assert any("+0.0% [+0.0, +0.0] shift" in line for line in faults) and walls
        assert not any("shift" in line for line in walls)
        assert "'shift': the metric has zero or negative values" in text


def test_the_times_view_has_its_own_csv_and_the_plain_csv_stays_plain(report: Report) -> None:
    times = list(csv.DictReader(io.StringIO(render(report, "csv", "times"))))
    b = [r for r in times if r["variant"] == "b"]
    assert [r["metric"] for r in b] == ["wall", "user", "sys"]
    assert float(b[0]["speedup"]) == pytest.approx(1 / 1.1, rel=1e-6) and float(b[0]["best"]) == pytest.approx(1.1)
    assert float(b[0]["speedup_ci_low"]) <= float(b[0]["speedup"]) <= float(b[0]["speedup_ci_high"])
    plain = render(report, "csv")
    assert "speedup" not in plain and len(plain.strip().splitlines()) == len(report.rows) + 1
    assert render(report, "csv", "metrics") == plain == render(report, "csv", "auto")


def test_a_view_that_a_format_or_a_report_cannot_show_is_refused_in_one_line(report: Report) -> None:
    refusals = [
        (lambda: check_format("json", "times"), "no 'times' view"),
        (lambda: render(report, "table", "scores"), "no CPU-suite workload"),
        (lambda: render(report, "csv", "sweep"), "not sweep points"),
        (lambda: render(report, "md", "colour"), "unknown view 'colour'"),
    ]
    for refuse, words in refusals:
        with pytest.raises(SpecError, match=words) as caught:
            refuse()
        assert caught.value.exit_code == 2 and "\n" not in str(caught.value)
