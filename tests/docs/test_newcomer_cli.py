"""What a newcomer types first: --version, a spec shortened from the command line, and a doctor
whose findings are never cut, whatever the terminal's width."""

from __future__ import annotations

import json
import os
import re
import subprocess
from importlib.metadata import version
from pathlib import Path

import pytest

from benchlab.doctor import findings
from tests.conftest import BENCHLAB, cli

SPEC = """
name = "short"
blocks = 10
warmup = 1
{extra}
[[workloads]]
name = "t"
command = ["true"]
[[variants]]
name = "a"
[[variants]]
name = "b"
"""


def _spec(tmp_path: Path, extra: str = "") -> str:
    path = tmp_path / "short.toml"
    path.write_text(SPEC.format(extra=extra))
    return str(path)


def _blocks(report: dict[str, object]) -> tuple[str, list[tuple[int, bool]]]:
    runs = report["runs"]
    assert isinstance(runs, list)
    return report["experiment"]["name"], sorted((r["block"], r["warmup"]) for r in runs)  # type: ignore[index]


def test_version_prints_the_installed_version() -> None:
    proc = cli("--version", check=True)
    assert proc.stdout == f"benchlab {version('benchlab')}\n"


def test_blocks_overrides_the_spec_and_resume_finishes_it(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    name, runs = _blocks(json.loads(cli("run", spec, "--blocks", "2", "-f", "json", check=True).stdout))
    assert name == "short"
    assert [b for b, warm in runs if not warm] == [0, 0, 1, 1] and sum(warm for _, warm in runs) == 2
    _, runs = _blocks(json.loads(cli("run", spec, "-n", "3", "--resume", "-f", "json", check=True).stdout))
    assert [b for b, warm in runs if not warm] == [0, 0, 1, 1, 2, 2]


def test_quick_runs_three_blocks_without_warmup_under_its_own_name(tmp_path: Path) -> None:
    spec = _spec(tmp_path, "until_decided = true")
    name, runs = _blocks(json.loads(cli("run", spec, "--quick", "-f", "json", check=True).stdout))
    assert name == "short-quick"
    assert runs == [(0, False), (0, False), (1, False), (1, False), (2, False), (2, False)]
    assert "short-quick" in cli("list", check=True).stdout and "short " not in cli("list", check=True).stdout


@pytest.mark.parametrize(
    ("args", "mentions"),
    [
        (["--blocks", "1"], "give at least 2"),
        (["--blocks", "0"], "--quick"),
        (["--blocks", "100001"], "--blocks"),
        (["--quick", "--until-decided"], "give one"),
        (["--blocks", "4", "--until-decided"], "--blocks"),
    ],
)
def test_a_bad_length_is_refused_saying_what_to_do(tmp_path: Path, args: list[str], mentions: str) -> None:
    proc = cli("run", _spec(tmp_path), *args)
    assert proc.returncode == 2, proc.stderr
    assert mentions in proc.stderr and len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    assert not (tmp_path / "results.db").exists()


def test_one_block_in_a_spec_says_what_to_give(tmp_path: Path) -> None:
    path = tmp_path / "one.toml"
    path.write_text(SPEC.format(extra="").replace("blocks = 10", "blocks = 1"))
    proc = cli("run", str(path))
    assert proc.returncode == 2
    assert "one.toml: blocks: 1 block cannot be judged" in proc.stderr and "--quick" in proc.stderr


def _squeezed(text: str) -> str:
    return re.sub(r"\s+", "", text)


@pytest.mark.parametrize("columns", ["40", "60", "200"])
def test_doctor_never_cuts_a_finding(columns: str) -> None:
    """Every finding and fix is printed whole (wrapped, never ellipsized), at any width."""
    proc = subprocess.run(
        [BENCHLAB, "doctor"], capture_output=True, text=True, timeout=120, env={**os.environ, "COLUMNS": columns}
    )
    assert proc.returncode == 0, proc.stderr
    shown = _squeezed(proc.stdout)
    assert "…" not in proc.stdout
    fingerprint, found = findings()
    for f in found:
        if f.topic == "noise":
            continue  # the load average moves between the two calls
        assert _squeezed(f"{f.topic}: {f.detail}") in shown
        if not f.ok:
            assert _squeezed(f"fix: {f.fix}") in shown
    for value in fingerprint.values():  # the kernel's command line is long enough to wrap
        assert _squeezed(str(value)) in shown
    assert max(len(line) for line in proc.stdout.splitlines()) <= int(columns)
