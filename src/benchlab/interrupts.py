"""Ctrl-C, SIGTERM and hang-ups: the first one stops benchlab, and nothing stops its clean-up.

The first SIGINT, SIGTERM, SIGHUP (its terminal or ssh session closed) or SIGQUIT raises
KeyboardInterrupt where the program is, so the runner unwinds: the run in flight is killed
with its process tree, knobs are written back, cgroups removed. People press Ctrl-C twice and
service managers follow SIGTERM with another, so a later signal is ignored: raised inside that
clean-up it would skip a knob's restore (the machine left changed, the message saying
otherwise), leak the run's cgroup, or end the process by the signal instead of exit code 130.
`kill -9` still ends everything; `benchlab restore` and the next experiment clear up after it.

They are ignored by the kernel (SIG_IGN), not by a Python handler: the interpreter puts its
handlers back to the default while it exits, and a signal then would still end it. A signal in
the interpreter's own first tens of milliseconds, before `install`, is beyond any Python code.

A knob's write and its journal line, and the restore that undoes them, run `deferred()`: a
first signal arriving inside waits for the block to end, so a knob is never left written
without its record or restored half-way. The flag is checked in Python rather than blocking
the signal with pthread_sigmask, which only holds it off in the calling thread.

Every import is such a block too (`install` wraps `builtins.__import__`, through which the C API's
imports go as well): commands load their libraries when they need them, and a KeyboardInterrupt
raised inside a compiled extension's initialisation (pydantic_core's, a pyo3 module importing
`datetime`) makes Rust panic and the process exit 1 with its backtrace, instead of unwinding.
"""

from __future__ import annotations

import builtins
import contextlib
import signal
from collections.abc import Iterator, Mapping, Sequence
from types import FrameType, ModuleType

_STOPPING_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


class _State:
    stopping = False  # a stopping signal was raised: clean-up is under way
    deferring = 0  # depth of deferred() blocks
    pending = 0  # a signal that arrived inside one, raised when it ends
    imports_wrapped = False  # builtins.__import__ is _whole_import, or wraps it


def install() -> None:
    """Takes over the stopping signals; called first thing, before the slow imports. A signal
    ignored already stays ignored: `nohup benchlab run ...` must outlive its terminal."""
    for signum in _STOPPING_SIGNALS:
        if signal.getsignal(signum) != signal.SIG_IGN:
            signal.signal(signum, _on_signal)
    if not _State.imports_wrapped:  # once: a second call must not drop what wraps it since (benchlab.imports)
        _State.imports_wrapped = True
        builtins.__import__ = _whole_import


_plain_import = builtins.__import__


def _whole_import(
    name: str,
    globals: Mapping[str, object] | None = None,
    locals: Mapping[str, object] | None = None,
    fromlist: Sequence[str] | None = (),
    level: int = 0,
) -> ModuleType:
    """An import that a first stopping signal does not cut in two (see the module's docstring)."""
    if _State.deferring:
        return _plain_import(name, globals, locals, fromlist, level)
    with deferred():
        return _plain_import(name, globals, locals, fromlist, level)


def _on_signal(signum: int, _frame: FrameType | None) -> None:
    if _State.deferring:
        _State.pending = signum
        return
    _stop()


def _stop() -> None:
    decided()
    raise KeyboardInterrupt


def decided() -> None:
    """The command has its outcome (an exit code, the one line of a refusal): a stopping signal
    from now on is ignored, so that the process ends with that outcome and not by the signal
    while the interpreter winds down, its own handlers gone by then (`benchlab list` refused in
    a quarter of a second, then killed by a Ctrl-C on its way out, would read as interrupted)."""
    _State.stopping = True
    for signum in _STOPPING_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """A block that a first stopping signal does not cut in two: it is raised when the block ends."""
    _State.deferring += 1
    try:
        yield
    finally:
        _State.deferring -= 1
        if not _State.deferring and _State.pending and not _State.stopping:
            _State.pending = 0
            _stop()
