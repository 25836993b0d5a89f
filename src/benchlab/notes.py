"""What the core says while it works (a kernel download, a database migrated), shown on stderr
when the command line asks, without loading `logging` for a help or a refusal: the command line
states its wish (`to_stderr`) at no cost, and the handler is installed when the first module that
speaks asks for its logger (`logger`), which imports logging then."""

from __future__ import annotations

import sys
from collections.abc import Callable

TYPE_CHECKING = False  # typing's flag without importing typing (3 ms of every start); mypy reads it alike
if TYPE_CHECKING:
    import logging

_wishes: dict[str, tuple[str, Callable[[str], str], str | None]] = {}  # logger -> (prefix, escape, format), asked by `to_stderr`


def to_stderr(prefix: str, escape: Callable[[str], str], *, name: str = "benchlab", fmt: str | None = None) -> None:
    """Every INFO line of logger `name` (and those below it) on stderr in format `fmt`, escaped,
    after `prefix`, not passed on to the root's: installed now where logging is loaded already,
    else by the first `logger` call."""
    _wishes[name] = (prefix, escape, fmt)
    if "logging" in sys.modules:
        _install()


def logger(name: str) -> logging.Logger:
    """The logger a module of the core speaks through (`benchlab.store.store`, ...)."""
    import logging

    _install()
    return logging.getLogger(name)


def _install() -> None:
    if not _wishes:
        return
    import logging

    class Escaped(logging.Formatter):
        def __init__(self, prefix: str, escape: Callable[[str], str], fmt: str | None) -> None:
            super().__init__(fmt)
            self.prefix, self.escape = prefix, escape

        def format(self, record: logging.LogRecord) -> str:
            return f"{self.prefix}{self.escape(super().format(record))}"

    while _wishes:
        name, (prefix, escape, fmt) = _wishes.popitem()
        log = logging.getLogger(name)
        if log.handlers:  # asked again in one process
            continue
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(Escaped(prefix, escape, fmt))
        log.addHandler(handler)
        log.setLevel(logging.INFO)
        log.propagate = False
