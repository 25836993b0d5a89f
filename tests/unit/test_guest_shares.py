"""A guest's shared folder outlives a benchlab killed with -9; the next guest's start removes it."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import pytest

from benchlab.measure.guest import SHARE_PREFIX, clear_stale_shares


def test_the_folders_of_dead_benchlabs_go_and_live_ones_stay(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    dead = subprocess.Popen(["true"])
    dead.wait()
    gone = tmp_path / f"{SHARE_PREFIX}{dead.pid}-abc"
    mine = tmp_path / f"{SHARE_PREFIX}{os.getpid()}-def"
    other = tmp_path / f"{SHARE_PREFIX}x-ghi"  # not benchlab's naming: never touched
    for folder in (gone, mine, other):
        folder.mkdir()
        (folder / "disk.img").write_bytes(b"\0")
    clear_stale_shares()
    assert not gone.exists() and mine.is_dir() and other.is_dir()
