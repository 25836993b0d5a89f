"""The suite's two phases (docs/design.md, "Tests"): `--phase` splits the tests by the `serial`
marker; the tests of a shared session fixture's group run in the parallel phase on one worker; and
the servers' ports, which parallel workers choose from slices of their own."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests import servers

ROOT = Path(__file__).parents[2]


def _pytest(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """pytest with this suite's conftest as a plugin, on the test files written into `tmp_path`."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "tests.conftest", "-p", "no:cacheprovider",
                           "--rootdir", str(tmp_path), *args, str(tmp_path)],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)  # fmt: skip


def _collected(tmp_path: Path, *args: str) -> list[str]:
    (tmp_path / "test_mixed.py").write_text(
        "import pytest\n\n"
        "def test_plain(): pass\n\n"
        "def test_on_the_shared_database(postgres_url): pass\n\n"
        "@pytest.mark.serial\ndef test_marked(): pass\n"
    )
    proc = _pytest(tmp_path, "--co", "-q", *args)
    assert proc.returncode in (0, 5), proc.stdout + proc.stderr
    return sorted(line.split("::")[1] for line in proc.stdout.splitlines() if "::" in line)


def test_each_phase_selects_its_tests_and_a_shared_server_stays_parallel(tmp_path: Path) -> None:
    assert _collected(tmp_path, "--phase=parallel") == ["test_on_the_shared_database", "test_plain"]
    assert _collected(tmp_path, "--phase=serial") == ["test_marked"]
    assert _collected(tmp_path) == ["test_marked", "test_on_the_shared_database", "test_plain"]


def test_the_tests_of_a_shared_fixtures_group_run_on_one_worker(tmp_path: Path) -> None:
    """Under `--dist loadgroup` (./dev test's parallel phase) every test naming a fixture of the
    `rootfs` group, or marked with the group, runs on the same worker, which starts it once."""
    (tmp_path / "test_groups.py").write_text(
        "import os, pytest\n\n"
        "@pytest.fixture(scope='session')\ndef rootfs(): return os.environ['PYTEST_XDIST_WORKER']\n\n"
        + "".join(f"def test_named_{i}(rootfs): pass\n\n" for i in range(4))
        + "".join(f"@pytest.mark.shared('rootfs')\ndef test_marked_{i}(): pass\n\n" for i in range(4))
        + "".join(f"def test_free_{i}(): pass\n\n" for i in range(8))
    )
    proc = _pytest(tmp_path, "-v", "-n", "2", "--dist", "loadgroup", "--phase=parallel")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    workers = {
        line.split("::")[1].split("@")[0].split()[0]: line.split("]")[0].lstrip("[")
        for line in proc.stdout.splitlines()
        if "PASSED" in line and "::" in line
    }
    assert len(workers) == 16, proc.stdout
    grouped = {w for name, w in workers.items() if not name.startswith("test_free")}
    assert len(grouped) == 1, workers


def test_the_groups_that_take_minutes_are_handed_out_first_one_to_each_worker(tmp_path: Path) -> None:
    """The guests and the clean root each keep a worker for minutes: collected after many other
    tests, they still start first, on two workers, and the rest runs around them."""
    started = tmp_path / "started"
    record = f"def mark():\n    with open({str(started)!r}, 'a') as f: f.write(os.environ['PYTEST_XDIST_WORKER'] + ' ' + os.environ['PYTEST_CURRENT_TEST'].split('::')[1].split()[0] + '\\n')\n\n"
    (tmp_path / "test_a_free.py").write_text(
        "import os\n\n" + record + "".join(f"def test_free_{i}(): mark()\n\n" for i in range(12))
    )
    (tmp_path / "test_b_long.py").write_text(
        "import os, pytest\n\n" + record
        + "".join(f"@pytest.mark.shared('guests')\ndef test_guest_{i}(): mark()\n\n" for i in range(3))
        + "@pytest.mark.shared('clean-root')\ndef test_clean_root(): mark()\n\n"
    )  # fmt: skip
    proc = _pytest(tmp_path, "-n", "2", "--dist", "loadgroup", "--phase=parallel")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    runs = [line.split() for line in started.read_text().splitlines()]
    first = {worker: next(name for w, name in runs if w == worker) for worker in ("gw0", "gw1")}
    assert sorted(name.split("@")[0].rstrip("0123456789_") for name in first.values()) == ["test_clean_root", "test_guest"], runs


def test_workers_take_ports_from_slices_of_their_own_below_the_ephemeral_range() -> None:
    slices = [servers.port_slice(worker) for worker in ("", "gw0", "gw1", "gw7")]
    for one, other in zip(slices, slices[1:], strict=False):
        assert one.stop <= other.start
    ephemeral = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    assert slices[-1].stop <= ephemeral
    ports = [servers.free_port() for _ in range(20)]
    assert len(set(ports)) == 20 and all(p in servers.port_slice() for p in ports)  # never handed out twice


def test_a_port_someone_listens_on_is_never_chosen(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        monkeypatch.setattr(servers, "port_slice", lambda: range(port, port + 1))
        with pytest.raises(RuntimeError, match="no free loopback port"):
            servers.free_port()
