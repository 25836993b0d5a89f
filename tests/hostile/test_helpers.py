"""Helper programs and files benchlab reads are checked before use and bounded in time: the
column reader (`BENCHLAB_COLUMNS`) and the fleet's key file (`--key`)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from benchlab.errors import EnvironmentProblem
from benchlab.store import Store, columnar
from tests.conftest import cli
from tests.hostile.conftest import refused


@pytest.fixture
def stored() -> str:
    cli("compare", "--cmd", "true", "-V", "a", "-n", "2", "--name", "ex", check=True)
    return os.environ["BENCHLAB_DB"]


@pytest.mark.usefixtures("stored")
@pytest.mark.parametrize("program", ["folder", "plain-file", "missing"])
def test_a_column_reader_that_is_no_program_is_one_line(tmp_path: Path, program: str, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / program
    if program == "folder":
        path.mkdir()
    elif program == "plain-file":
        path.write_text("#!/bin/sh\n")
    monkeypatch.setenv("BENCHLAB_COLUMNS", str(path))
    refused("report", "ex", code=3, mentions="BENCHLAB_COLUMNS")


def test_a_column_reader_that_never_answers_is_killed_with_what_it_started(
    stored: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = f"benchlab-hang-{os.getpid()}"
    hang = tmp_path / "hang.sh"
    # a child keeps the pipe open after the reader itself is gone; `$0` carries the marker
    hang.write_text(f"#!/bin/sh\nsh -c 'sleep 600; :' {marker} &\nsh -c 'sleep 600; :' {marker}\n")
    hang.chmod(0o755)
    monkeypatch.setenv("BENCHLAB_COLUMNS", str(hang))
    monkeypatch.setattr(columnar, "ANSWER_TIMEOUT_S", 1.0)
    store = Store(stored, create=False)
    started = time.monotonic()
    with pytest.raises(EnvironmentProblem, match="gave no answer within 1 s"):
        store.load(store.require_experiment("ex"), every_record=True)
    assert time.monotonic() - started < 30
    time.sleep(0.2)
    alive = [p for p in Path("/proc").iterdir() if p.name.isdigit() and marker.encode() in _cmdline(p)]
    assert alive == []


def _cmdline(proc: Path) -> bytes:
    try:
        return (proc / "cmdline").read_bytes()
    except OSError:
        return b""


@pytest.mark.parametrize("kind", ["dev-zero", "fifo", "folder", "big", "readable"])
def test_a_key_file_is_checked_before_a_byte_is_read(tmp_path: Path, kind: str) -> None:
    """`--key /dev/zero` was read until MemoryError; a named pipe hung."""
    key = tmp_path / "key"
    if kind == "dev-zero":
        key = Path("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(key, 0o600)
    elif kind == "folder":
        key.mkdir(mode=0o700)
    else:
        key.write_bytes(b"k" * (10_000 if kind == "big" else 64))
        key.chmod(0o600 if kind == "big" else 0o644)
    why = {"big": "more than a key file's", "readable": "readable by other users"}.get(kind, "no regular file")
    refused(
        "worker", "--pool", "lab", "--broker", "amqp://u:p@127.0.0.1:1/v", "--key", str(key), code=3, mentions=why, timeout=30
    )
