"""`./dev demo` installs only what the demo needs, `./dev test` everything the tests use; run
with stand-ins for apt-get, uv and cargo that only write down how they were called."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.docs.doc_commands import ROOT

STUB = """#!/bin/sh
echo "$(basename "$0") $*" >> "{log}"
{body}
"""


@pytest.fixture()
def stubs(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """A PATH whose dpkg-query finds nothing installed and whose apt-get, sudo, uv and cargo log."""
    bin_dir, log = tmp_path / "bin", tmp_path / "calls.log"
    bin_dir.mkdir()
    bodies = {"dpkg-query": "exit 1", "apt-get": "exit 0", "uv": "exit 0", "cargo": "exit 0", "sudo": 'exec "$@"'}
    for name, body in bodies.items():
        path = bin_dir / name
        path.write_text(STUB.format(log=log, body=body))
        path.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "HOME": str(tmp_path)}
    return env, log


def _dev(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(ROOT / "dev"), *args], capture_output=True, text=True, env=env, timeout=60)


def test_demo_installs_no_debian_package_and_says_how_to_reach_benchlab(stubs: tuple[dict[str, str], Path]) -> None:
    env, log = stubs
    proc = _dev(["demo"], env)
    assert proc.returncode == 0, proc.stderr
    calls = log.read_text().splitlines()
    assert not [c for c in calls if c.startswith("apt-get")], calls
    assert "uv run --frozen benchlab demo" in calls
    assert ". .venv/bin/activate" in proc.stderr


def test_test_installs_what_the_tests_use(stubs: tuple[dict[str, str], Path]) -> None:
    env, log = stubs
    proc = _dev(["test", "-q"], env)
    assert proc.returncode == 0, proc.stderr
    installed = next(c for c in log.read_text().splitlines() if c.startswith("apt-get") and " install " in c).split()
    for package in ("libjemalloc2", "postgresql", "rabbitmq-server", "mmdebstrap", "qemu-system-x86", "hyperfine", "zstd"):
        assert package in installed
    assert "uv run --frozen pytest -q" in log.read_text()
