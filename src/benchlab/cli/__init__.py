"""The command line: a thin shell that parses, calls the core and turns errors into one line.

Exit codes: 0 done; 1 unexpected failure; 2 bad input (spec, flag, name),
nothing ran; 3 the machine lacks something (library, privilege, stale knob
journal); 4 the results database refused; 130 interrupted (stored runs kept).
"""

from __future__ import annotations

import signal
import sys
from types import FrameType

import typer

from benchlab.cli import calibrate, container, experiment, ipc, results, score, system
from benchlab.cli.console import err
from benchlab.errors import BenchlabError, Interrupted

app = typer.Typer(
    name="benchlab",
    help="A lab for system performance experiments: interleaved variants, trustworthy verdicts, readable reports.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
for module in (experiment, score, results, system, container, ipc, calibrate):
    module.register(app)


def _terminate(signum: int, _frame: FrameType | None) -> None:
    raise Interrupted(f"stopped by {signal.Signals(signum).name}")


def main() -> None:
    signal.signal(signal.SIGTERM, _terminate)
    try:
        code = app(standalone_mode=False)
    except BenchlabError as exc:
        err.print(f"benchlab: {exc}", markup=False, highlight=False, soft_wrap=True)
        sys.exit(exc.exit_code)
    except (KeyboardInterrupt, typer.Abort):
        err.print("benchlab: interrupted; every finished run is stored (continue with --resume)", markup=False)
        sys.exit(130)
    except typer.TyperException as exc:  # usage errors: unknown flag, missing argument (exit 2)
        err.print(f"benchlab: {exc.format_message()}", markup=False, highlight=False, soft_wrap=True)
        sys.exit(exc.exit_code)
    if code == Interrupted.exit_code:  # typer turns a Ctrl-C outside the runner into this code
        err.print("benchlab: interrupted", markup=False)
    sys.exit(code if isinstance(code, int) else 0)
