"""`benchlab diff A B`: two sets of results measured separately, compared unpaired (analysis/diff.py)."""

from __future__ import annotations

import functools
import os

from benchlab.cli import options
from benchlab.cli.parser import Commands, Parser
from benchlab.cli.results import open_store, print_report
from benchlab.errors import SpecError
from benchlab.report import check_format

TYPE_CHECKING = False  # typing's flag without importing typing (3 ms of every start); mypy reads it alike
if TYPE_CHECKING:
    from benchlab.store import Store

DRAWN = ("table", "md", "json", "csv", "benchstat")  # the formats drawn from judged rows (hyperfine and gbench list runs)
SIDE_HELP = "an experiment NAME, NAME:VARIANT, or a bundle PATH[:VARIANT] written by `benchlab export` (PATH holds a /: ./FILE)"


def diff(a: str, b: str, *, db: str | None, fmt: str) -> None:
    """Compare two experiments, variants or bundles measured separately: unpaired (Mann-Whitney U,
    two-sample Hodges-Lehmann) under the verdict rules of an experiment; see docs/commands/diff.md."""
    from benchlab.analysis.diff import diff as compare  # scipy loads only for commands that judge
    from benchlab.analysis.sides import resolve

    checked = check_format(fmt)
    if fmt not in DRAWN:
        shown = ", ".join(DRAWN)
        raise SpecError(f"a diff is drawn as {shown}: it holds judged rows, not the runs {fmt} lists", where="--format")
    for argument in (a, b):
        _check_length(argument)
    database = functools.cache(lambda: _existing_store(db))
    print_report(compare(resolve(a, database), resolve(b, database)), fmt, checked)


def _check_length(argument: str) -> None:
    """An argument no file system could hold names nothing (a name and a variant are 100
    characters at most): refused here, where asking the file system would fail instead."""
    encoded = os.fsencode(argument)
    if len(encoded) >= os.pathconf("/", "PC_PATH_MAX") or any(
        len(part) > os.pathconf("/", "PC_NAME_MAX") for part in encoded.split(b"/")
    ):
        shown = argument if len(argument) <= 60 else f"{argument[:60]}... ({len(encoded)} bytes)"
        raise SpecError(
            f"an argument longer than any file name ({os.pathconf('/', 'PC_NAME_MAX')} bytes) or path names "
            f"neither an experiment nor a bundle file: '{shown}'"
        )


def _existing_store(db: str | None) -> Store | None:
    """The results database, or None where a SQLite file was never made (both sides may be bundles)."""
    from pathlib import Path

    from benchlab.store import default_db

    target = default_db() if db is None else db
    if "://" not in target and not Path(target).expanduser().is_file():
        return None
    return open_store(target, create=False)


def register(commands: Commands) -> None:
    commands.command("diff", diff, _diff_options)


def _diff_options(parser: Parser) -> None:
    parser.add_argument("a", metavar="A", help=f"the baseline: {SIDE_HELP}")
    parser.add_argument("b", metavar="B", help=f"compared with A: {SIDE_HELP}")
    options.db(parser)
    options.report_format(parser, help=", ".join(DRAWN))
