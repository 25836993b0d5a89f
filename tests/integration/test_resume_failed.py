"""`--resume` runs the runs stored as failed again, and only those (`--keep-failed` keeps them):
after a passing fault (a file missing, a server down) the experiment completes without its
failures, and what failed before stays in each retried run's details."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.conftest import cli

# variant a always passes; b fails until the file `ok` exists in the folder the workload runs in
SPEC = """
name = "flaky"
blocks = 2
warmup = 0
[[workloads]]
name = "t"
command = ["sh", "-c", "test -e ok || test \\"$V\\" = a"]
cwd = "{cwd}"
[[variants]]
name = "a"
env = {{ V = "a" }}
[[variants]]
name = "b"
env = {{ V = "b" }}
"""


def _runs(report: str) -> dict[tuple[str, int], dict[str, Any]]:
    return {(r["variant"], r["block"]): r for r in json.loads(report)["runs"]}


def test_resume_runs_failed_runs_again_and_keep_failed_keeps_them(tmp_path: Path) -> None:
    spec = tmp_path / "flaky.toml"
    spec.write_text(SPEC.format(cwd=tmp_path))
    first = cli("run", str(spec), "-f", "json")
    assert first.returncode == 5 and "2 of 4 runs of 'flaky' failed" in first.stderr, first.stderr
    before = _runs(first.stdout)
    assert [before["b", block]["status"] for block in (0, 1)] == ["failed", "failed"]

    (tmp_path / "ok").touch()  # the fault has passed
    kept = cli("run", str(spec), "--resume", "--keep-failed", "-f", "json")
    assert kept.returncode == 5 and "2 of 4 runs of 'flaky' failed" in kept.stderr, kept.stderr
    assert _runs(kept.stdout) == before  # nothing ran

    again = cli("run", str(spec), "--resume", "-f", "json")
    assert again.returncode == 0, again.stderr
    assert "2 failed run(s) stored before run again" in again.stderr
    after = _runs(again.stdout)
    assert len(after) == 4 and all(r["status"] == "ok" for r in after.values())
    assert not json.loads(again.stdout)["failed_runs"]
    for block in (0, 1):
        assert after["a", block] == before["a", block]  # a run stored as ok never runs again
        failure = before["b", block]
        (earlier,) = after["b", block]["details"]["earlier_attempts"]
        assert earlier == {k: failure[k] for k in ("status", "exit_code", "message", "started_at", "ended_at")}
        assert after["b", block]["started_at"] > failure["ended_at"]


def test_keep_failed_without_resume_is_refused(tmp_path: Path) -> None:
    spec = tmp_path / "flaky.toml"
    spec.write_text(SPEC.format(cwd=tmp_path))
    proc = cli("run", str(spec), "--keep-failed")
    assert proc.returncode == 2 and "--keep-failed applies with --resume" in proc.stderr, proc.stderr
    assert not (tmp_path / "results.db").exists()
