"""Options shared by several commands."""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer


def whole_number(value: str | int) -> int:
    """An integer option read as a spec reads one, never coerced: ASCII digits with at most a
    leading `-` (which the option's own range then refuses). Python's int() would take `' 3'`,
    `+3`, `1_0` (ten) and other scripts' digits, and click `3.0`; a typo must not become a count."""
    if isinstance(value, int):  # a default
        return value
    if not re.fullmatch(r"-?[0-9]{1,18}", value):
        raise typer.BadParameter(f"{value[:40]!r} is not a whole number (digits only)")
    return int(value)


Db = Annotated[
    str | None,
    typer.Option("--db", help="results database: a SQLite path or a postgresql:// URL [env: BENCHLAB_DB]"),
]


def count_option(*flags: str, help: str) -> Any:
    """A typer option for a count: read by `whole_number`, so `3.0`, `+3` and `1_0` are refused as
    a spec would refuse them."""
    return typer.Option(*flags, parser=whole_number, metavar="INTEGER", help=help)


Resume = Annotated[
    bool,
    typer.Option(
        "--resume",
        help="continue a stopped experiment: runs stored as ok are skipped, failed or timed-out ones run again",
    ),
]
KeepFailed = Annotated[
    bool, typer.Option("--keep-failed", help="with --resume: keep the runs stored as failed or timed out, run only the missing")
]
Seed = Annotated[
    int,
    count_option("--seed", help="seeds the run order (the same seed, the same order)"),
]
Format = Annotated[
    str, typer.Option("--format", "-f", help="table, md, json, csv, hyperfine, gbench, benchstat or html (a page with plots)")
]
UntilDecided = Annotated[
    bool,
    typer.Option(
        "--until-decided",
        help="add blocks one at a time until every primary row is better, worse or same (thresholds calibrated for the looks)",
    ),
]
MinBlocks = Annotated[
    int | None,
    count_option("--min-blocks", help="with --until-decided: the first look (default 3)"),
]
MaxBlocks = Annotated[
    int | None,
    count_option("--max-blocks", help="with --until-decided: the budget (default 40)"),
]

# `--export-NAME FILE`: the report also written to FILE in a format (NAME -> format, what it is).
# A format is one more entry here: `with_exports` makes its option on every command that exports.
EXPORTS: dict[str, tuple[str, str]] = {
    "json": ("json", "the JSON report (with every run)"),
    "markdown": ("md", "the Markdown report"),
    "csv": ("csv", "the CSV report"),
    "hyperfine": ("hyperfine", "hyperfine's --export-json document (its plotting scripts read it)"),
    "gbench": ("gbench", "Google Benchmark JSON (its compare.py reads it)"),
    "html": ("html", "the HTML report (one page with plots)"),
}
Exports = dict[str, list[Path]]  # format -> the files to write it to


def with_exports(command: Callable[..., None]) -> Callable[..., None]:
    """The command with an `--export-NAME FILE` option (repeatable) per entry of EXPORTS, handed to
    it as one `exports` argument (format -> files). typer makes options from a function's
    signature only, so the signature is extended here, once, instead of five options written out
    in four commands."""
    signature = inspect.signature(command, eval_str=True)
    added = [
        inspect.Parameter(
            f"export_{name}",
            inspect.Parameter.KEYWORD_ONLY,
            default=[],
            annotation=Annotated[
                list[Path],
                typer.Option(f"--export-{name}", metavar="FILE", help=f"also write {what} to FILE (repeatable)"),
            ],
        )
        for name, (_, what) in EXPORTS.items()
    ]

    @functools.wraps(command)
    def exporting(*args: Any, **kwargs: Any) -> None:
        exports = {fmt: list(kwargs.pop(f"export_{name}", [])) for name, (fmt, _) in EXPORTS.items()}
        command(*args, exports={fmt: files for fmt, files in exports.items() if files}, **kwargs)

    kept = [p for p in signature.parameters.values() if p.name != "exports"]
    exporting.__signature__ = signature.replace(parameters=[*kept, *added])  # type: ignore[attr-defined]
    return exporting
