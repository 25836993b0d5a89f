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

import functools
import sys
from collections.abc import Sequence

from benchlab import __version__, interrupts, notes
from benchlab.cli import (
    bisect,
    calibrate,
    container,
    db,
    diff,
    experiment,
    explain,
    fleet,
    history,
    ipc,
    results,
    score,
    system,
    vm,
)
from benchlab.cli.parser import Commands, Parser, parse, print_help_and_exit
from benchlab.errors import BenchlabError, Interrupted
from benchlab.report import safe

SUMMARY = "A lab for system performance experiments: interleaved variants, trustworthy verdicts, readable reports."


def parser(words: Sequence[str] | None = None) -> Parser:
    """The command line's parser, with the options of the command `words` name (None: of every
    command); building it imports nothing a command runs with."""
    top = Parser(prog="benchlab", description=SUMMARY)
    top.add_argument("--version", action="version", version=f"benchlab {__version__}", help="print benchlab's version and exit")
    commands = Commands(top, wanted=None if words is None else [w for w in words if not w.startswith("-")][:2])
    for module in (experiment, fleet, score, results, explain, diff, history, system, container, vm, ipc, calibrate, db, bisect):
        module.register(commands)
    return top


def _refuse(message: object, code: int) -> None:
    """The one line at the edge: escaped, on stderr, then the exit code."""
    interrupts.decided()
    sys.stderr.write(f"benchlab: {safe.text(message, limit=safe.LINE_MAX)}\n")
    sys.exit(code)


def main(argv: Sequence[str] | None = None) -> None:
    interrupts.install()  # done already by the executable (benchlab.entry): here for other callers
    words = sys.argv[1:] if argv is None else list(argv)
    try:
        top = parser(words)
        handler, chosen, arguments = parse(top, words)
        if handler is None:  # `benchlab`, `benchlab ipc`: the help, as help reads
            print_help_and_exit(chosen)
        notes.to_stderr("benchlab: ", functools.partial(safe.text, limit=safe.LINE_MAX))
        code = handler(**arguments)
    except BenchlabError as exc:
        _refuse(exc, exc.exit_code)
    except KeyboardInterrupt:
        _refuse("interrupted; every finished run is stored (continue with --resume)", Interrupted.exit_code)
    interrupts.decided()
    sys.exit(code if isinstance(code, int) else 0)
