"""A guest that cannot start is one line naming the fix; closing what already ended raises nothing; a
served launcher that stops reading or answering is given up on at the run's timeout plus a bounded grace."""

from __future__ import annotations

import os
import signal
import stat
import time
from pathlib import Path

import pytest

from benchlab.errors import EnvironmentProblem, WorkloadFailed
from benchlab.measure import guest as guest_module
from benchlab.measure import served
from benchlab.measure.guest import Guest, GuestExecutor
from benchlab.measure.process import Launch
from benchlab.measure.served import ServedExecutor

# what virtme-ng 1.42 prints, and exits 1, where no (statically linked) busybox is installed
NO_BUSYBOX = "virtme-run: initramfs is needed, and no busybox was found"
DYNAMIC_BUSYBOX = "virtme-run: a statically linked busybox could not be found, please install busybox-static"


def _guest(tmp_path: Path) -> Guest:
    return Guest(
        label="vm test", image=tmp_path / "vmlinuz", release="6.1.0-test", memory=256 << 20, cpus=1, accel="auto",
        modules=(), knobs=(), swap=(), disk=None, cmdline=None, fresh=False, kvm_boot_timeout=30, balloon=None, facts={},
    )  # fmt: skip


def _failing_vng(tmp_path: Path, said: str, monkeypatch: pytest.MonkeyPatch) -> GuestExecutor:
    """A guest whose vng says `said` and exits 1 at once, counting its starts; /dev/kvm "usable",
    so that `auto` would try kvm, then tcg."""
    vng = tmp_path / "vng"
    vng.write_text(
        f"#!/bin/sh\necho 'virtme: generating modules.dep file' >&2\necho '{said}' >&2\necho x >> {tmp_path}/starts\nexit 1\n"
    )
    vng.chmod(vng.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setattr(guest_module, "vng_path", lambda: str(vng))
    access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode: path == "/dev/kvm" or access(path, mode))
    return GuestExecutor(_guest(tmp_path))


@pytest.mark.parametrize("said", [NO_BUSYBOX, DYNAMIC_BUSYBOX])
def test_a_guest_virtme_ng_cannot_start_is_one_problem_naming_the_package(
    said: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """vng refuses before qemu starts, on every accelerator alike: one refusal, not one try each."""
    executor = _failing_vng(tmp_path, said, monkeypatch)
    with pytest.raises(EnvironmentProblem) as caught:
        executor.prepare()
    message = str(caught.value)
    assert "busybox" in message and "apt-get install busybox-static" in message and "\n" not in message, message
    assert (tmp_path / "starts").read_text() == "x\n"
    executor.close()  # again, after the failed boot's own clean-up: nothing to do, nothing raised


def test_a_guest_that_ends_before_booting_for_another_reason_is_tried_on_the_next_accelerator(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    executor = _failing_vng(tmp_path, "qemu-system-x86_64: failed to initialize kvm: Permission denied", monkeypatch)
    with pytest.raises(EnvironmentProblem) as caught:
        executor.prepare()
    assert str(caught.value) == (
        "vm test: the guest ended before it booted under tcg: virtme: generating modules.dep file | "
        "qemu-system-x86_64: failed to initialize kvm: Permission denied"
    )
    assert (tmp_path / "starts").read_text() == "x\nx\n"


def test_closing_a_guest_that_never_started_raises_nothing(tmp_path: Path) -> None:
    GuestExecutor(_guest(tmp_path)).close()


def test_stopping_a_launcher_that_already_ended_and_was_reaped_raises_nothing() -> None:
    executor = ServedExecutor()
    assert executor.run(Launch(argv=("true",), env=dict(os.environ), timeout=10)).ok
    serving = executor._launcher
    assert serving is not None
    os.kill(serving.proc.pid, signal.SIGKILL)
    serving.proc.wait()  # reaped: its pid may be another process's by now
    executor.close()
    assert serving.stopped


@pytest.mark.parametrize("stop", ["answering", "reading"])
@pytest.mark.timeout(30)
def test_a_launcher_that_stops_is_given_up_on_at_the_runs_timeout_plus_the_grace(
    stop: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stopped mid-run (no answer), or before a request larger than a pipe holds (which it never
    reads): either way the run fails at its timeout plus the grace, and the launcher is gone."""
    monkeypatch.setattr(served, "ANSWER_GRACE_S", 1.0)
    executor = ServedExecutor()
    try:
        launcher = int(executor.run(Launch(argv=("sh", "-c", "echo $PPID"), env=dict(os.environ), timeout=10)).stdout)
        if stop == "answering":
            argv, env = ("sh", "-c", "kill -STOP $PPID; sleep 30"), dict(os.environ)
        else:
            os.kill(launcher, signal.SIGSTOP)
            argv, env = ("sh", "-c", "true"), {**os.environ, "BIG": "x" * (4 << 20)}
        started = time.monotonic()
        with pytest.raises(WorkloadFailed, match="the launcher reported nothing"):
            executor.run(Launch(argv=argv, env=env, timeout=0.5))
        assert time.monotonic() - started < 0.5 + 1.0 + 2.0  # the stopped launcher ends at its SIGTERM, not 5 s later
        assert not Path(f"/proc/{launcher}").exists()
    finally:
        executor.close()
