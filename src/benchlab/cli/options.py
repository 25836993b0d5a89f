"""Options shared by several commands, each declared once."""

from __future__ import annotations

import functools
from collections.abc import Callable

from benchlab.cli.parser import Parser, count, file_path, number, option, repeated, switch

TYPE_CHECKING = False  # typing's flag without importing typing (3 ms of every start); mypy reads it alike
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

FORMATS_HELP = "table, md, json, csv, hyperfine, gbench, benchstat or html (a page with plots)"


def db(parser: Parser, help: str = "results database: a SQLite path or a postgresql:// URL [env: BENCHLAB_DB]") -> None:
    option(parser, "--db", metavar="DB", help=help)


def resume(parser: Parser) -> None:
    switch(
        parser,
        "--resume",
        help="continue a stopped experiment: runs stored as ok are skipped, failed or timed-out ones run again",
    )


def keep_failed(parser: Parser) -> None:
    switch(parser, "--keep-failed", help="with --resume: keep the runs stored as failed or timed out, run only the missing")


def seed(parser: Parser) -> None:
    count(parser, "--seed", default=0, help="seeds the run order (the same seed, the same order)")


def report_format(parser: Parser, help: str = FORMATS_HELP) -> None:
    option(parser, "--format", "-f", dest="fmt", metavar="FORMAT", default="table", help=help)


def sequential(parser: Parser) -> None:
    """--until-decided and its first look and budget."""
    switch(
        parser,
        "--until-decided",
        help="add blocks one at a time until every primary row is better, worse or same (thresholds calibrated for the looks)",
    )
    count(parser, "--min-blocks", help="with --until-decided: the first look (default 3)")
    count(parser, "--max-blocks", help="with --until-decided: the budget (default 40)")


def profile(parser: Parser) -> None:
    switch(
        parser,
        "--profile",
        help="also a profiled run per variant in every block (perf record): where the time went, `benchlab explain NAME`",
    )


def allow_failures(parser: Parser) -> None:
    switch(parser, "--allow-failures", help="exit 0 even when runs failed or timed out (default: exit 5 after the report)")


def sources(parser: Parser) -> None:
    """What the spec-free commands time: built-in workloads, commands, Google Benchmark binaries."""
    repeated(parser, "-w", "--workload", help="built-in workload, e.g. 'alloc.churn threads=4'")
    repeated(parser, "--cmd", help="a command to time as a whole process tree")
    repeated(parser, "--gbench", help="a Google Benchmark binary")


def variants(parser: Parser) -> None:
    repeated(parser, "--variant", "-V", help="NAME or 'NAME: allocator=jemalloc cpus=0 env.X=1 wrapper=...'")


def timeout(parser: Parser) -> None:
    option(parser, "--timeout", type=number, metavar="SECONDS", default=600.0, help="seconds before a run is killed")


# `--export-NAME FILE`: the report also written to FILE in a format (NAME -> format, what it is).
# A format is one more entry here: `exports` makes its option on every command that exports.
EXPORTS: dict[str, tuple[str, str]] = {
    "json": ("json", "the JSON report (with every run)"),
    "markdown": ("md", "the Markdown report"),
    "csv": ("csv", "the CSV report"),
    "hyperfine": ("hyperfine", "hyperfine's --export-json document (its plotting scripts read it)"),
    "gbench": ("gbench", "Google Benchmark JSON (its compare.py reads it)"),
    "html": ("html", "the HTML report (one page with plots)"),
}
Exports = dict[str, list["Path"]]  # format -> the files to write it to


def exports(parser: Parser) -> None:
    """An `--export-NAME FILE` option (repeatable) per entry of EXPORTS; `with_exports` hands them
    to the command as one `exports` argument."""
    for name, (_, what) in EXPORTS.items():
        repeated(parser, f"--export-{name}", type=file_path, metavar="FILE", help=f"also write {what} to FILE (repeatable)")


def with_exports(command: Callable[..., None]) -> Callable[..., None]:
    """The command taking its `--export-NAME` options as one `exports` argument (format -> files)."""

    @functools.wraps(command)
    def exporting(*args: Any, **kwargs: Any) -> None:
        given = {fmt: kwargs.pop(f"export_{name}") for name, (fmt, _) in EXPORTS.items()}
        command(*args, exports={fmt: files for fmt, files in given.items() if files}, **kwargs)

    return exporting
