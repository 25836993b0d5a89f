"""A stopping signal once the command has its outcome: the process ends with that outcome."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

# installs benchlab's handlers, decides (or not), then takes a signal on its way to exit 4
TAKES = (
    "import os, signal, sys, time\nfrom benchlab import interrupts\ninterrupts.install()\n"
    "if sys.argv[1] == 'decided':\n    interrupts.decided()\n"
    "os.kill(os.getpid(), int(sys.argv[2]))\ntime.sleep(0.05)\nsys.exit(4)\n"
)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_after_the_outcome_is_decided_leaves_the_exit_code_as_decided(signum: int) -> None:
    """`benchlab list` refused (exit 4) and then signalled on its way out exited by the signal:
    the interpreter puts its own handlers back to the default while it exits. Once decided, a
    stopping signal is ignored by the kernel; before, it still stops the command (here with
    KeyboardInterrupt, unhandled: not exit 4)."""
    done = subprocess.run([sys.executable, "-c", TAKES, "decided", str(int(signum))], capture_output=True, timeout=30)
    assert done.returncode == 4, done.stderr
    undecided = subprocess.run([sys.executable, "-c", TAKES, "running", str(int(signum))], capture_output=True, timeout=30)
    assert undecided.returncode != 4 and b"KeyboardInterrupt" in undecided.stderr
