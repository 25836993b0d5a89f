"""The vm commands that boot nothing: `benchlab vm list|fetch|clean` on benchlab's kernel cache (a
private one: XDG_CACHE_HOME), and `--environment` refusals."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.conftest import cli, need

RELEASE = "9.9.9-1-amd64"


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("COLUMNS", "200")
    tree = tmp_path / "cache" / "benchlab" / "kernels" / f"linux-image-{RELEASE}_9.9.9-1"
    (tree / "boot").mkdir(parents=True)
    (tree / "boot" / f"vmlinuz-{RELEASE}").write_bytes(b"\0" * (3 << 20))
    (tree / "boot" / f"config-{RELEASE}").write_text("CONFIG_LRU_GEN=y\nCONFIG_ZRAM=m\n# CONFIG_ANDROID_BINDER_IPC is not set\n")
    (tree / "lib" / "modules" / RELEASE).mkdir(parents=True)
    (tree.parent / ".download-x").mkdir()  # what an interrupted download leaves
    return tree


def test_list_shows_each_kernel_with_its_switches(cache: Path) -> None:
    listed = cli("vm", "list", check=True).stdout
    row = next(line for line in listed.splitlines() if cache.name in line)
    assert [cell.strip() for cell in row.split("│")[1:-1]] == [cache.name, RELEASE, "3 MiB", "y", "n", "m"]


def test_clean_removes_one_by_release_and_refuses_a_name_it_lacks(cache: Path) -> None:
    refused = cli("vm", "clean", "no-such-kernel")
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1 and "no cached kernel is named" in refused.stderr
    assert cache.is_dir()
    done = cli("vm", "clean", RELEASE, check=True)
    assert cache.name in done.stderr and not cache.exists()
    assert "no guest kernel cached" in cli("vm", "list", check=True).stderr


def test_clean_without_a_name_empties_the_cache(cache: Path) -> None:
    cli("vm", "clean", check=True)
    assert list(cache.parent.iterdir()) == []


def test_a_kernel_package_apt_does_not_know_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if shutil.which("apt-get") is None:
        pytest.skip("apt-get is not installed")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    proc = cli("vm", "fetch", "linux-image-0.0.0-99-nosuch-amd64")
    assert proc.returncode == 2 and proc.stderr.count("\n") <= 2, proc.stderr  # the fetch note, then the refusal
    assert "cannot fetch the kernel package linux-image-0.0.0-99-nosuch-amd64" in proc.stderr
    assert "Traceback" not in proc.stderr and not any(os.scandir(tmp_path / "cache" / "benchlab" / "kernels"))


@pytest.mark.parametrize(
    ("environment", "message"),
    [
        ("ssh://root@lab-2", "ipc runs here (local) or in a guest (vm), not in ssh://root@lab-2"),
        ("container", "not in container"),
        ("vm memory=2Q", "'2Q' is not a size such as 512M or 2G"),
        ("vm bogus=1", "unknown environment field 'bogus'"),
    ],
)
def test_ipc_refuses_an_environment_it_cannot_run_in_before_booting_anything(environment: str, message: str) -> None:
    proc = cli("ipc", "latency", "-m", "pipe", "-e", environment)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and message in proc.stderr, proc.stderr


def test_a_guest_larger_than_this_machine_can_give_is_refused_before_it_boots(cache: Path, tmp_path: Path) -> None:
    """The kernel given as a path (an unpacked package's layout) is enough to reach the check: nothing boots."""
    for tool in ("qemu-system-x86_64", "depmod", "udevadm"):
        need(tool)
    spec = tmp_path / "big.toml"
    image = cache / "boot" / f"vmlinuz-{RELEASE}"
    spec.write_text(
        'name = "big"\n[[workloads]]\nname = "t"\ncommand = ["true"]\n[[variants]]\nname = "g"\n'
        f'environment = {{ kind = "vm", kernel = "{image}", memory = "64T" }}\n'
    )
    proc = cli("run", str(spec))
    assert proc.returncode == 3 and proc.stderr.count("\n") == 1, proc.stderr
    assert "the guest's 67108864 MiB exceed the" in proc.stderr and "MiB this machine has available" in proc.stderr
