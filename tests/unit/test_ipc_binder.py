"""Why binder is skipped: read from the device folder and the kernel's filesystem list."""

from __future__ import annotations

from pathlib import Path

from benchlab.ipc import binder_status


def test_no_device_and_no_binderfs_says_the_kernel_lacks_binder(tmp_path: Path) -> None:
    filesystems = tmp_path / "filesystems"
    filesystems.write_text("nodev\tsysfs\nnodev\ttmpfs\n\text4\n")
    assert "built without CONFIG_ANDROID_BINDER_IPC" in binder_status(tmp_path, filesystems)


def test_a_binder_device_or_binderfs_is_named(tmp_path: Path) -> None:
    filesystems = tmp_path / "filesystems"
    filesystems.write_text("nodev\tbinder\n")
    assert "binderfs in /proc/filesystems" in binder_status(tmp_path, filesystems)
    (tmp_path / "binder").touch()
    assert str(tmp_path / "binder") in binder_status(tmp_path, filesystems)
