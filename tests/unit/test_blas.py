"""benchlab's own numpy and scipy load their OpenBLAS on one thread, and no workload inherits the
setting: the variable exists only while an extension module of theirs is mapped."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import cli

LOAD = """
import os, sys
from benchlab import blas
if sys.argv[1] == "installed":
    blas.install()
import numpy, scipy.special, scipy.optimize
print(len(os.listdir("/proc/self/task")), os.environ.get("OPENBLAS_NUM_THREADS", "unset"))
"""


def threads_and_variable(how: str, env: dict[str, str]) -> tuple[int, str]:
    out = subprocess.run([sys.executable, "-c", LOAD, how], capture_output=True, text=True, check=True, env=env).stdout
    threads, variable = out.split()
    return int(threads), variable


def test_numpy_and_scipy_load_on_one_thread_and_leave_no_variable_behind() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "GOTO_NUM_THREADS")}
    assert threads_and_variable("installed", env) == (1, "unset")
    if (os.cpu_count() or 1) > 1:  # OpenBLAS starts no thread of its own on one CPU
        threads, _ = threads_and_variable("plain", env)
        assert threads > 1


def test_a_value_the_user_set_is_left_as_it_is() -> None:
    assert threads_and_variable("installed", {**os.environ, "OPENBLAS_NUM_THREADS": "2"})[1] == "2"


@pytest.mark.parametrize("users", [None, "3"])
def test_a_workload_sees_the_environment_benchlab_was_given(
    tmp_path: Path, users: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three blocks: by the later runs benchlab has judged the first (numpy and scipy loaded)."""
    seen = tmp_path / "seen"
    if users is None:
        monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    else:
        monkeypatch.setenv("OPENBLAS_NUM_THREADS", users)
    ran = cli("compare", "--cmd", f"sh -c 'echo ${{OPENBLAS_NUM_THREADS-unset}} >> {seen}'", "--variant", "a", "-n", "3",
              "--name", "blas", "--db", str(tmp_path / "r.db"), "--format", "csv")  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert set(seen.read_text().split()) == {users or "unset"}
