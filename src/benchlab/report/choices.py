"""The formats and views a report can be asked for, and which go together: names and rules only,
so that a command refuses a bad `--format` or `--view` without loading a renderer (each pulls in
numpy, the report model or matplotlib; `benchlab.report.renderers` holds them)."""

from __future__ import annotations

from benchlab.errors import SpecError

TYPE_CHECKING = False  # typing's flag without importing typing (3 ms of every start); mypy reads it alike
if TYPE_CHECKING:
    from typing import Literal

    View = Literal["auto", "metrics", "scores", "app-cycle", "sweep", "times"]
else:
    View = str  # at run time a view is its name, checked against VIEWS by `check_view`

FORMATS = ("table", "md", "json", "csv", "hyperfine", "gbench", "benchstat", "html")
VIEWS: tuple[str, ...] = ("auto", "metrics", "scores", "app-cycle", "sweep", "times")  # View's, in its order
# Formats that hold every run and every view at once: the data is loaded with every run for them
# (`benchlab report` and `run` otherwise skip reading each run whole), and only view `auto` is theirs.
WHOLE = frozenset({"json", "hyperfine", "gbench"})
DRAWS_RUNS = frozenset({"html"})  # formats that plot every run, in whichever view
BENCHSTAT_VIEWS = ("auto", "metrics")  # benchstat's layout draws the metric rows only


def check_view(view: str) -> View:
    if view not in VIEWS:
        raise SpecError(f"unknown view '{view}' (choose {', '.join(VIEWS)})", where="--view")
    return view  # type: ignore[return-value]


def check_whole(fmt: str, view: View) -> None:
    if view != "auto":
        raise SpecError(f"the {fmt} report has no '{view}' view: it holds every view's numbers (leave the view out)")


def check_format(fmt: str, view: str = "auto") -> View:
    """The view, once the format and view are known and go together: checked before any analysis,
    so that a run is never made for a report that would then be refused."""
    if fmt not in FORMATS:
        raise SpecError(f"unknown report format '{fmt}' (choose {', '.join(FORMATS)})", where="--format")
    checked = check_view(view)
    if fmt in WHOLE:
        check_whole(fmt, checked)
    if fmt == "benchstat" and checked not in BENCHSTAT_VIEWS:
        raise SpecError(f"the benchstat format draws the metric rows only: it has no '{checked}' view (leave the view out)")
    return checked


def needs_runs(*formats: str) -> bool:
    """Whether any of the formats draws every run, so that the data must be loaded with every run
    whole (`Store.load(every_record=True)`); the others draw from the judged rows alone."""
    return any(fmt in WHOLE or fmt in DRAWS_RUNS for fmt in formats)
