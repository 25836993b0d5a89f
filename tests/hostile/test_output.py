"""Hostile text in stored names and messages never reaches the terminal, a spreadsheet or a path.

Experiment, workload and variant names are validated in specs and again when a database is read
(a name no spec allows is a damaged database: one escaped line, exit 4). Metric names (a
benchmark binary's own), messages and failing workloads' stderr are free text: these
cases write them into the database directly, as a foreign tool could have, or come from a real
run. Every rendering (report in each format, list, show, export, errors) is checked for raw
control characters, interpreted rich markup and formulas in CSV cells.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import BENCHLAB, cli
from tests.hostile.conftest import refused

HOSTILE = {
    "csi": "\x1b[2J\x1b[31mred\x1b[0m",
    "osc8-link": "\x1b]8;;http://evil.example/\x1b\\click\x1b]8;;\x1b\\",
    "title-bell": "\x1b]0;owned\x07x",
    "carriage-return": "ok\rEVIL",
    "bidi-override": "abc\u202edcba",
    "c1-csi": "x\x9b31my",
    "del-backspace": "a\x7f\x08b",
    "rich-markup": "[bold]x[/bold]",
    "formula": "=cmd|' /C calc'!A0",
    "formula-plus": "+1+2",
    "formula-at": "@SUM(A1)",
    "markdown": "a|b`c`<img src=x>[l](http://e)",
}
# the failing variant's workload prints escapes to stderr (a real stderr tail, its last line shown in reports)
WORKLOAD = r"""#!/bin/sh
if [ -n "$FAIL" ]; then
  printf 'a\rb\342\200\256evil\033]8;;http://evil.example/\033\\link\033]8;;\033\\ \033]0;t\007\033[31mRED\033[0m\n' >&2
  exit 1
fi
"""


def raw_controls(text: str) -> list[str]:
    """Characters that could change a terminal or what a reader sees: anything not printable but newlines."""
    return sorted({repr(c) for c in text if not c.isprintable() and c != "\n"})


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database with one experiment: variants 'va' and 'vc' ok, 'vb' failing with escapes on stderr."""
    root = tmp_path_factory.mktemp("template")
    db = root / "results.db"
    env = {**os.environ, "BENCHLAB_DB": str(db), "BENCHLAB_STATE_DIR": str(root / "state")}
    script = root / "workload.sh"
    script.write_text(WORKLOAD)
    proc = subprocess.run(
        [BENCHLAB, "compare", "--cmd", f"sh {script}", "-V", "va", "-V", "vb: env.FAIL=1", "-V", "vc", "-n", "3",
         "--name", "expname", "--allow-failures"],
        capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return db


def _renamed(value: Any, names: dict[str, str]) -> Any:
    if isinstance(value, dict):
        return {k: _renamed(v, names) for k, v in value.items()}
    if isinstance(value, list):
        return [_renamed(v, names) for v in value]
    return names.get(value, value) if isinstance(value, str) else value


def hostile_db(template: Path, text: str) -> dict[str, str]:
    """The template copied to this test's database with every free-text name and message carrying
    `text`: the metric `wall` renamed (a host's name with a control character is damage, as a
    name no spec allows is), the failed runs' messages."""
    names = {"expname": "expname", "wall": f"{text}m"}
    db = Path(os.environ["BENCHLAB_DB"])
    shutil.copy(template, db)
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE metric_name SET name = ? WHERE name = 'wall'", (names["wall"],))
        conn.execute("UPDATE run SET message = message || ? WHERE status != 'ok'", (text,))
    return names


def assert_clean(proc: subprocess.CompletedProcess[str]) -> None:
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    assert raw_controls(proc.stdout) == [] and raw_controls(proc.stderr) == [], (proc.stdout[-3000:], proc.stderr)


@pytest.mark.parametrize("text", HOSTILE.values(), ids=HOSTILE.keys())
@pytest.mark.parametrize("fmt", ["table", "md", "csv", "json", "html"])
def test_report_formats_escape_hostile_names_and_stderr(template: Path, text: str, fmt: str) -> None:
    names = hostile_db(template, text)
    proc = cli("report", "--format", fmt, "--", names["expname"])
    assert_clean(proc)
    if fmt == "json":
        data = json.loads(proc.stdout)  # JSON carries the text exactly, escaped by the encoder
        assert data["experiment"]["name"] == names["expname"]
        assert any(text in r["message"] for r in data["failed_runs"])
        assert "RED" in data["failed_runs"][0]["stderr_tail"]
    elif fmt == "csv":
        rows = list(csv.DictReader(io.StringIO(proc.stdout)))
        for row in rows:
            for cell in row.values():
                if cell and cell[0] in "=+-@":
                    float(cell)  # only numbers may start like a formula
        assert len({r["metric"] for r in rows if r["metric"].endswith("m")}) == 1  # the renamed wall
    else:
        if text == HOSTILE["rich-markup"]:  # markup printed as typed, never applied
            assert "[bold]x[/bold]" in proc.stdout
        assert "RED" in proc.stdout  # the failing run's stderr tail is shown, escaped
        assert "\\x1b" in proc.stdout


@pytest.mark.parametrize(
    ("text", "cell"),
    [
        (HOSTILE["formula"], "'=cmd|' /C calc'!A0m"),
        ("-x", "'-xm"),
        ("@x", "'@xm"),
        ("+x", "'+xm"),
        ("\tx", "'\\x09xm"),
        ("\rx", "'\\x0dxm"),
        ("x=", "x=m"),
    ],
    ids=["eq", "minus", "at", "plus", "tab", "cr", "inside"],
)
def test_csv_text_cells_never_start_a_formula(template: Path, text: str, cell: str) -> None:
    names = hostile_db(template, text)
    rows = list(csv.DictReader(io.StringIO(cli("report", "--format", "csv", "--", names["expname"], check=True).stdout)))
    assert cell in {r["metric"] for r in rows}
    numbers = [r[c] for r in rows for c in ("change", "change_ci_low", "median") if r[c]]
    assert numbers and all(isinstance(float(n), float) for n in numbers)  # numbers (negative ones too) stay numbers


@pytest.mark.parametrize("text", HOSTILE.values(), ids=HOSTILE.keys())
def test_list_and_show_escape_hostile_names(template: Path, text: str) -> None:
    names = hostile_db(template, text)
    listed = cli("list")
    assert_clean(listed)
    shown = cli("show", "--", names["expname"])
    assert_clean(shown)
    if text == HOSTILE["rich-markup"]:  # list names experiments only; show has the failed runs' messages
        assert "[bold]x[/bold]" in shown.stdout


@pytest.mark.parametrize(
    "text", [HOSTILE["csi"], HOSTILE["bidi-override"], HOSTILE["rich-markup"]], ids=["csi", "bidi", "markup"]
)
def test_an_error_naming_hostile_input_is_one_escaped_line(text: str) -> None:
    line = refused("report", f"no-such-{text}", code=4, mentions="no results database")  # none made either
    assert raw_controls(line) == []
    cli("compare", "--cmd", "true", "-V", "a", "-n", "2", "--name", "there", check=True)
    line = refused("report", f"no-such-{text}", code=2, mentions="no-such")  # a name not stored: usage
    assert raw_controls(line) == []
    assert text.replace("\x1b", "\\x1b").replace("\u202e", "\\u202e") in line  # shown, escaped, markup as typed


@pytest.mark.parametrize("name", ["../../escaped", "/tmp/absolute-evil", "..", "a/b/c", ".hidden", "\x1b[31mx"])
def test_a_stored_name_no_spec_allows_is_refused_and_export_writes_nothing(template: Path, tmp_path: Path, name: str) -> None:
    """A name another tool stored, that no spec allows (a path, a dot file, escapes), is a damaged
    database: one escaped line naming the row, exit 4, and `export` takes no path from it."""
    hostile_db(template, "")
    with sqlite3.connect(os.environ["BENCHLAB_DB"]) as conn:
        (spec,) = conn.execute("SELECT spec FROM experiment").fetchone()
        conn.execute("UPDATE experiment SET name = ?, spec = ?", (name, json.dumps({**json.loads(spec), "name": name})))
    here = tmp_path / "deep" / "here"
    here.mkdir(parents=True)
    before = {p for p in tmp_path.rglob("*")}
    line = refused("export", "--", name, code=4, mentions="experiment 1 has spec of a shape benchlab never writes", cwd=here)
    assert raw_controls(line) == []
    assert {p for p in tmp_path.rglob("*")} == before
    assert not Path("/tmp/absolute-evil.benchlab.json").exists()


@pytest.mark.parametrize("command", [["report", "x"], ["show", "x"], ["list"], ["export", "x"]])
def test_read_only_commands_never_create_a_database(command: list[str]) -> None:
    refused(*command, code=4, mentions="no results database")
    assert not Path(os.environ["BENCHLAB_DB"]).exists()


@pytest.mark.parametrize(
    "text", [HOSTILE["csi"], HOSTILE["rich-markup"], "", "a:smile:b"], ids=["csi", "markup", "empty", "colons"]
)
def test_a_baseline_the_experiment_lacks_is_one_escaped_line(text: str) -> None:
    cli("compare", "--cmd", "true", "-V", "a", "-V", "b", "-n", "2", "--name", "there", check=True)
    line = refused("report", "there", "--baseline", text, code=2, mentions="--baseline: experiment 'there' has no variant")
    assert raw_controls(line) == [] and line.endswith("(it has a, b)")
    refused("diff", "there:a", f"there:{text}" if text else "there:", code=2)
