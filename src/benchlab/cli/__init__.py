"""The command line: a thin shell that parses, calls the core and turns errors into one line.

Exit codes:
  0    done (every run ok, or --allow-failures given)
  1    unexpected failure (a bug: please report it)
  2    bad input (spec, flag, name, bundle): nothing ran, nothing stored
  3    the machine lacks something (library, privilege, kernel feature, stale knob journal)
  4    the results database refused (missing, locked, full, already imported)
  5    runs failed: `run`, `compare`, `score`, `calibrate` and `demo` printed their report,
       but some stored run of the experiment failed or timed out (a resumed experiment counts
       its earlier runs too), or a benchmark inside a run reported an error; one line on
       stderr says how many (`benchlab: 3 of 20 runs of 'x' failed (2 failed, 1 timed out)`)
  6    `bisect` ended without a confirmed answer (a step stayed unclear, or the boundary did not
       reproduce the change): its evidence is printed, every step stored
  130  interrupted (Ctrl-C, SIGTERM, SIGHUP, SIGQUIT): finished runs are stored, knobs restored;
       continue with --resume
The one line on stderr is escaped like every rendering (see `benchlab.report.safe`).
"""

from __future__ import annotations

import logging
import sys
from importlib.metadata import version as package_version
from typing import Annotated

import typer

from benchlab import interrupts
from benchlab.cli import bisect, calibrate, container, db, diff, experiment, fleet, history, ipc, results, score, system, vm
from benchlab.cli.console import err
from benchlab.errors import BenchlabError, Interrupted
from benchlab.report import safe

app = typer.Typer(
    name="benchlab",
    help="A lab for system performance experiments: interleaved variants, trustworthy verdicts, readable reports.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
for module in (experiment, fleet, score, results, diff, history, system, container, vm, ipc, calibrate, db, bisect):
    module.register(app)


def _print_version(asked: bool) -> None:
    if asked:
        sys.stdout.write(f"benchlab {package_version('benchlab')}\n")
        raise typer.Exit()


@app.callback()
def options(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            help="print benchlab's version (the installed package's) and exit",
            is_eager=True,
            callback=_print_version,
        ),
    ] = False,
) -> None:
    """The options before a command: --version is eager, so it answers before any command is parsed."""


class _EscapedNote(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return f"benchlab: {safe.text(super().format(record), limit=safe.LINE_MAX)}"


def _show_core_notes() -> None:
    """What the core says while it works (a kernel download, say) as `benchlab: ...` lines on stderr."""
    core = logging.getLogger("benchlab")
    if core.handlers:  # main() called again in one process
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_EscapedNote())
    core.addHandler(handler)
    core.setLevel(logging.INFO)
    core.propagate = False


def main() -> None:
    interrupts.install()  # done already by the executable (benchlab.entry): here for other callers
    _show_core_notes()
    try:
        code = app(standalone_mode=False)
    except BenchlabError as exc:
        err.print(f"benchlab: {safe.text(exc, limit=safe.LINE_MAX)}", highlight=False, soft_wrap=True)
        sys.exit(exc.exit_code)
    except (KeyboardInterrupt, typer.Abort):
        err.print("benchlab: interrupted; every finished run is stored (continue with --resume)")
        sys.exit(130)
    except typer.TyperException as exc:  # usage errors: unknown flag, missing argument (exit 2)
        if type(exc).__name__ == "NoArgsIsHelpError":  # `benchlab`, `benchlab ipc`: the help, as help reads
            # (typer vendors click and keeps this class private; typer itself tells it by its name)
            err.print(exc.format_message(), highlight=False, markup=False)
            sys.exit(exc.exit_code)
        err.print(f"benchlab: {safe.text(exc.format_message(), limit=safe.LINE_MAX)}", highlight=False, soft_wrap=True)
        sys.exit(exc.exit_code)
    if code == Interrupted.exit_code:  # typer turns a Ctrl-C outside the runner into this code
        err.print("benchlab: interrupted")
    sys.exit(code if isinstance(code, int) else 0)
