"""A rich progress bar with ETA for the runner."""

from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from benchlab.cli.console import err
from benchlab.report import safe

if TYPE_CHECKING:
    from benchlab.plan import PlannedRun


def progress_bar(*tail: ProgressColumn) -> Progress:
    """A bar of runs done on stderr, gone when it ends, with `tail` after its count and time."""
    return Progress(
        TextColumn("{task.description}", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        *tail,
        console=err(),
        transient=True,
    )


def print_note(bar: Progress, text: str) -> None:
    """A line above a running bar, for something the user should know once."""
    bar.console.print(safe.text(f"note: {text}", limit=safe.LINE_MAX), style="yellow", highlight=False)


class BarProgress:
    def __init__(self) -> None:
        self.bar = progress_bar(TextColumn("eta"), TimeRemainingColumn(), TextColumn("{task.fields[last]}", markup=False))
        self.task = self.bar.add_task("runs", total=0, last="")
        self.failed = 0

    def __enter__(self) -> BarProgress:
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        if self.bar.live.is_started:
            self.bar.stop()

    def start(self, total: int, done: int) -> None:
        """Shown only once the runs begin: an error before them stays one line on its own."""
        self.bar.update(self.task, total=total, completed=done)
        self.bar.start()

    def advance(self, run: PlannedRun, status: str) -> None:
        if status != "ok":
            self.failed += 1
        what = f"{run.workload}/{run.variant}" + (" warm-up" if run.warmup else f" block {run.block + 1}")
        failed = f" ({self.failed} failed)" if self.failed else ""
        self.bar.update(self.task, advance=1, last=f"{what}: {status}{failed}")

    def note(self, text: str) -> None:
        print_note(self.bar, text)
