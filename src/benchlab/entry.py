"""The `benchlab` executable: signals first, then the command line.

Importing the command line takes a few tenths of a second (typer, rich, pydantic); a Ctrl-C or
SIGTERM in that time must end benchlab as one arriving later would (exit 130, one line), not
with a traceback from an import or death by the signal.
"""

from __future__ import annotations

import sys

from benchlab import blas, imports, interrupts


def main() -> None:
    interrupts.install()
    blas.install()
    imports.install()
    try:
        from benchlab.cli import main as command_line
    except KeyboardInterrupt:
        sys.stderr.write("benchlab: interrupted\n")
        sys.exit(130)
    command_line()
