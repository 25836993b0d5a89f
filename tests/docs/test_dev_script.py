"""`./dev demo` installs what benchlab's features need, `./dev test` everything the tests use as
well, both only with a Rust new enough for the probe, and `./dev golden` only rewrites the golden
files; run with stand-ins for apt-get, uv, cargo and rustc that only write down how they were called."""

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
    """A PATH whose dpkg-query finds nothing installed, whose rustc is 1.90.0 and whose apt-get,
    sudo, uv and cargo log."""
    bin_dir, log = tmp_path / "bin", tmp_path / "calls.log"
    bin_dir.mkdir()
    bodies = {"dpkg-query": "exit 1", "apt-get": "exit 0", "uv": "exit 0", "cargo": "exit 0", "sudo": 'exec "$@"'}
    bodies["rustc"] = 'echo "rustc ${RUSTC_STUB_VERSION:-1.90.0} (stub)"'
    for name, body in bodies.items():
        path = bin_dir / name
        path.write_text(STUB.format(log=log, body=body))
        path.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "HOME": str(tmp_path)}
    return env, log


def _dev(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(ROOT / "dev"), *args], capture_output=True, text=True, env=env, timeout=60)


def _installs(log: Path) -> list[list[str]]:
    return [c.split() for c in log.read_text().splitlines() if c.startswith("apt-get") and " install " in c]


# what a vm guest, the studies and the README's first comparisons need at run time
RUN_PACKAGES = ("qemu-system-x86", "busybox-static", "file", "kmod", "udev", "libjemalloc2", "zstd", "make", "mmdebstrap")
TEST_ONLY = ("postgresql", "rabbitmq-server", "hyperfine", "chromium", "chromium-driver", "libbenchmark-dev")


def test_demo_installs_what_features_need_without_extras_and_says_how_to_reach_benchlab(
    stubs: tuple[dict[str, str], Path],
) -> None:
    env, log = stubs
    proc = _dev(["demo"], env)
    assert proc.returncode == 0, proc.stderr
    [installed] = _installs(log)
    assert "--no-install-recommends" in installed  # qemu's recommends would be a desktop's GTK
    for package in RUN_PACKAGES:
        assert package in installed
    assert not set(TEST_ONLY) & set(installed), installed
    calls = log.read_text().splitlines()
    assert "uv run --frozen benchlab demo" in calls
    assert ". .venv/bin/activate" in proc.stderr


def test_test_installs_what_the_tests_use(stubs: tuple[dict[str, str], Path]) -> None:
    env, log = stubs
    proc = _dev(["test", "-q"], env)
    assert proc.returncode == 0, proc.stderr
    installed = [package for call in _installs(log) for package in call]
    for package in (*RUN_PACKAGES, *TEST_ONLY):
        assert package in installed
    calls = log.read_text().splitlines()
    parallel = calls.index("uv run --frozen pytest --phase=parallel -n auto --dist loadgroup -q")  # a worker per CPU
    assert calls.index("uv run --frozen pytest --phase=serial -q") > parallel  # then the serial tests, alone


@pytest.mark.parametrize(
    ("parallel", "serial", "status"),
    [(1, 0, 1), (0, 3, 3), (5, 0, 0), (0, 5, 0), (5, 5, 5)],
)
def test_test_exits_with_the_first_failing_phase_and_5_only_where_no_phase_selected_a_test(
    stubs: tuple[dict[str, str], Path], parallel: int, serial: int, status: int
) -> None:
    env, log = stubs
    uv = Path(env["PATH"].split(os.pathsep)[0]) / "uv"
    uv.write_text(STUB.format(log=log, body=f'case "$*" in *parallel*) exit {parallel};; *serial*) exit {serial};; esac'))
    proc = _dev(["test", "tests/unit"], env)
    assert proc.returncode == status, proc.stderr
    assert "uv run --frozen pytest --phase=serial tests/unit" in log.read_text()  # run even after a failing first phase


@pytest.mark.parametrize("command", ["demo", "test"])
@pytest.mark.parametrize("version", ["1.63.0", "1.89.1"])
def test_a_rust_too_old_for_the_probe_stops_before_anything_is_installed(
    stubs: tuple[dict[str, str], Path], command: str, version: str
) -> None:
    env, log = stubs
    proc = _dev([command], {**env, "RUSTC_STUB_VERSION": version})
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert f"the probe needs Rust 1.90 or newer (found: {version})" in proc.stderr
    assert "rustup" in proc.stderr
    assert not log.exists() or not _installs(log)


def test_a_newer_rust_is_enough(stubs: tuple[dict[str, str], Path]) -> None:
    env, _ = stubs
    assert _dev(["demo"], {**env, "RUSTC_STUB_VERSION": "1.100.0"}).returncode == 0  # compared as versions, not text


def test_golden_rewrites_the_golden_files_and_installs_nothing(stubs: tuple[dict[str, str], Path]) -> None:
    env, log = stubs
    proc = _dev(["golden"], env)
    assert proc.returncode == 0, proc.stderr
    assert log.read_text().splitlines() == ["uv run --frozen pytest -q tests/golden --update-golden"]
