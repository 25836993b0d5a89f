"""Which IPC mechanisms `benchlab ipc` runs, and why binder is skipped: read from the
device folder and the kernel's filesystem list."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchlab.errors import EnvironmentProblem, SpecError
from benchlab.ipc import MECHANISMS, binder_status, mechanisms


def filesystems(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "filesystems"
    path.write_text(text)
    return path


def test_no_device_and_no_binderfs_says_the_kernel_lacks_binder(tmp_path: Path) -> None:
    why = binder_status(tmp_path, filesystems(tmp_path, "nodev\tsysfs\nnodev\ttmpfs\n\text4\n"))
    assert why is not None and "no binder device" in why and "CONFIG_ANDROID_BINDER_IPC" in why


def test_binderfs_without_a_mount_says_how_to_mount_it(tmp_path: Path) -> None:
    why = binder_status(tmp_path, filesystems(tmp_path, "nodev\tbinder\n"))
    assert why is not None and f"mount -t binder binder {tmp_path}/binderfs" in why


def test_a_device_means_binder_runs(tmp_path: Path) -> None:
    (tmp_path / "binder").touch()
    assert binder_status(tmp_path, filesystems(tmp_path, "")) is None
    (tmp_path / "binder").unlink()
    (tmp_path / "binderfs").mkdir()
    (tmp_path / "binderfs" / "binder").touch()
    assert binder_status(tmp_path, filesystems(tmp_path, "")) is None


def test_all_means_every_mechanism_the_kernel_has() -> None:
    assert mechanisms([], None) == list(MECHANISMS)
    assert mechanisms(["all"], "binder skipped: none") == [m for m in MECHANISMS if m != "binder"]
    assert mechanisms(["futex", "pipe"], None) == ["pipe", "futex"]
    with pytest.raises(EnvironmentProblem, match="binder skipped: none"):
        mechanisms(["binder"], "binder skipped: none")
    with pytest.raises(SpecError, match="no IPC mechanism 'doors'"):
        mechanisms(["doors"], None)
