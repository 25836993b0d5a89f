"""A /proc or /sys file is kept open between runs and read again from its start: each read is
the kernel's value at that moment, and a descriptor whose object went away is replaced."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

from benchlab.measure import host


def test_a_kept_file_is_written_anew_by_the_kernel_at_each_read() -> None:
    first = host._read("/proc/uptime")
    time.sleep(0.05)
    assert "/proc/uptime" in host._KEPT_OPEN
    assert host._read("/proc/uptime") != first  # seconds since boot, to the hundredth


def test_a_descriptor_that_cannot_be_read_any_more_is_opened_afresh() -> None:
    kept = host._KEPT_OPEN.pop("/proc/uptime", None)
    if kept is not None:
        os.close(kept)
    open_before = len(os.listdir("/proc/self/fd"))
    unreadable, other_end = os.pipe()  # pread on a pipe fails, as on a removed device's attribute
    os.close(other_end)
    host._KEPT_OPEN["/proc/uptime"] = unreadable
    text = host._read("/proc/uptime")
    assert text is not None and float(text.split()[0]) > 0
    assert not stat.S_ISFIFO(os.fstat(host._KEPT_OPEN["/proc/uptime"]).st_mode)
    assert len(os.listdir("/proc/self/fd")) == open_before + 1  # the pipe closed, /proc/uptime kept


def test_a_regular_file_is_not_kept_open(tmp_path: Path) -> None:
    """/etc/machine-id may be replaced (a new inode): it is read through its name each time."""
    path = tmp_path / "machine-id"
    path.write_text("one\n")
    assert host._read(str(path)) == "one" and str(path) not in host._KEPT_OPEN
    (tmp_path / "new").write_text("two\n")
    os.replace(tmp_path / "new", path)
    assert host._read(str(path)) == "two"
