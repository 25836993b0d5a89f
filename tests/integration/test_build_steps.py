"""A real build as a command workload: `clean` before every run, `setup` once, neither timed."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from benchlab.errors import WorkloadFailed
from benchlab.workloads.steps import run_step
from tests.conftest import cli, need

MAKEFILE = """\
CC ?= cc
prog: a.o b.o
\t$(CC) -o prog a.o b.o
%.o: %.c config.h
\techo $@ >> compiled.log
\t$(CC) -O2 -c $< -o $@
clean:
\trm -f prog a.o b.o
"""


def project(root: Path) -> Path:
    root.mkdir()
    (root / "Makefile").write_text(MAKEFILE)
    (root / "a.c").write_text('#include "config.h"\nint f(int x);\nint main(void) { return f(GREETING) == 42 ? 0 : 1; }\n')
    (root / "b.c").write_text("int f(int x) { int s = 0; for (int i = 0; i < x; i++) s += i % 7; return s > 0 ? 42 : 0; }\n")
    return root


def spec(root: Path, name: str, extra: str = "") -> Path:
    path = root.parent / f"{name}.toml"
    path.write_text(f"""
name = "{name}"
blocks = 3
[[workloads]]
name = "make"
command = "make -j2 prog"
cwd = "{root}"
setup = "sh -c 'echo \\\\#define GREETING 1000 > config.h; echo setup >> setup.log'"
clean = "make clean"
{extra}
[[variants]]
name = "two-cpus"
[[variants]]
name = "one-cpu"
cpus = 0
""")
    return path


def test_a_build_is_cleaned_before_every_run_and_set_up_once_per_variant(tmp_path: Path) -> None:
    need("make")
    need("cc")
    root = project(tmp_path / "tree")
    proc = cli("run", str(spec(root, "build")), "--format", "json", timeout=300)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert {r["status"] for r in data["runs"]} == {"ok"} and len(data["runs"]) == 6
    # every run compiled both units: the tree was clean each time
    assert sorted((root / "compiled.log").read_text().split()) == ["a.o"] * 6 + ["b.o"] * 6
    assert (root / "setup.log").read_text().split() == ["setup", "setup"]  # once per variant
    assert os.access(root / "prog", os.X_OK)
    assert {r["metric"] for r in data["rows"]} >= {"wall", "user", "sys"}


def test_a_failing_clean_step_fails_the_run_and_says_so(tmp_path: Path) -> None:
    need("make")
    root = project(tmp_path / "tree")
    path = spec(root, "broken")
    path.write_text(path.read_text().replace('clean = "make clean"', 'clean = "make no-such-target"'))
    proc = cli("run", str(path), "--format", "json", timeout=300)
    assert proc.returncode == 5, proc.stderr
    failed = json.loads(proc.stdout)["failed_runs"]
    assert len(failed) == 6 and all("the clean step `make no-such-target` exited 2" in r["message"] for r in failed)


def test_a_step_program_that_does_not_exist_is_refused_before_anything_runs(tmp_path: Path) -> None:
    root = project(tmp_path / "tree")
    path = spec(root, "typo")
    path.write_text(path.read_text().replace('clean = "make clean"', 'clean = "mkae clean"'))
    proc = cli("run", str(path))
    assert proc.returncode == 2 and "workloads[0].clean" in proc.stderr and "'mkae' is not on PATH" in proc.stderr


def test_a_step_whose_program_cannot_be_executed_says_why_from_the_launchers_account(tmp_path: Path) -> None:
    # the program is checked when the spec loads; here it is gone (or no program) by the time the step runs,
    # and the reason comes from the account's exec_error, whatever the launcher printed for people
    for argv, why in (([str(tmp_path / "gone")], "No such file or directory"), ([str(tmp_path)], "Permission denied")):
        with pytest.raises(WorkloadFailed, match=f"the clean step `{argv[0]}` did not start: {why}"):
            run_step("clean", argv, cwd=None, env=dict(os.environ), timeout=30)
    run_step("clean", ["sh", "-c", "exit 0"], cwd=None, env=dict(os.environ), timeout=30)  # a program that runs passes
