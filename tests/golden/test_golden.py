"""Golden files: every format x view rendered from the fixed reports in reports/ and compared byte
for byte with tests/golden/<case>/<format>.<ext> (benchstat's `testdata` style).

The reports are inputs, frozen (see make_reports.py): the statistics can change without moving
them, and any change to a renderer, a view or a shared helper that alters one byte of any output
fails here, with the diff. `./dev golden` (pytest tests/golden --update-golden) rewrites the files
from the renderers as they are; read that diff before committing it, as a reviewer reads output.

The one rule that is not byte for byte: the HTML page's plots are matplotlib's SVG, which another
matplotlib draws differently (tick positions, path data). Under the matplotlib the files were made
with (MATPLOTLIB, the one uv.lock pins) the page is compared whole; under another, each `<svg ...>
... </svg>` is compared by its opening tag only (its size, class and aria-label, the plot's title),
with a warning, and every other byte of the page still exactly.
"""

from __future__ import annotations

import difflib
import itertools
import os
import re
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import matplotlib
import pytest
from rich.console import Console

from benchlab.cli.history import WIDTH
from benchlab.errors import SpecError
from benchlab.report import FORMATS, check_format, render
from benchlab.report.bisect_lines import answer, header, step_line
from benchlab.report.formats import table
from benchlab.report.views import history_grid
from benchlab.report_model import History, Report
from benchlab.stats.bisection import bisect
from tests.unit.test_bisect import ALPHA, Fake, names

pytestmark = pytest.mark.filterwarnings("ignore:Glyph .* missing from font")  # the wide names' glyphs, in plots

GOLDEN = Path(__file__).parent
REPORTS = GOLDEN / "reports"
MATPLOTLIB = "3.11.2"  # the version the HTML files' plots were drawn with (uv.lock's)
EXTENSION = {"table": "txt", "md": "md", "json": "json", "csv": "csv", "hyperfine": "json", "gbench": "json",
             "benchstat": "txt", "html": "html"}  # fmt: skip
NARROW = 60  # a terminal's width at which the table splits its columns into blocks
SVG = re.compile(r"(<svg [^>]*>).*?</svg>", re.S)
Check = Callable[[Path, str], None]


@dataclass(frozen=True)
class Case:
    """A folder of golden files: a fixed report drawn in one view, in every format that has it."""

    folder: str
    report: str
    view: str


CASES = [
    Case("metrics", "metrics", "auto"),
    Case("times", "metrics", "times"),
    Case("scores", "scores", "auto"),
    Case("sweep", "sweep", "auto"),
    Case("app-cycle", "app-cycle", "auto"),
    Case("diff", "diff", "auto"),
]


def shows(fmt: str, view: str) -> bool:
    try:
        check_format(fmt, view)
    except SpecError:
        return False
    return True


RENDERED = [(case, fmt) for case in CASES for fmt in FORMATS if shows(fmt, case.view)]


def golden(case: Case, fmt: str) -> Path:
    return GOLDEN / case.folder / f"{fmt}.{EXTENSION[fmt]}"


def report(name: str) -> Report:
    return Report.model_validate_json((REPORTS / f"{name}.json").read_bytes())


def changes(history: History, *, points: bool) -> str:
    """`benchlab history` into a file or a pipe: its grids at 100 columns, no colour (cli/history.py)."""
    console = Console(width=WIDTH, color_system=None, markup=False, emoji=False, record=True)
    with console.capture() as captured:
        console.print(table.group(*history_grid.grids(history, points=points), history.warnings, width=console.width))
    return captured.get()


def narrow(shown: Report) -> str:
    """The table as a terminal of NARROW columns gets it (`benchlab report` at a terminal), less its colours."""
    console = Console(width=NARROW, color_system=None, emoji=False)
    with console.capture() as captured:
        console.print(table.renderable(shown, "auto", width=NARROW))
    return captured.get()


def plots_cut(page: str) -> str:
    return SVG.sub(r"\1</svg>", page)


def difference(expected: bytes, actual: bytes, name: str, *, html: bool = False) -> str | None:
    """None where the two are the same, else a unified diff of their first differing lines (HTML:
    with the plots cut as the module's docstring says, where this matplotlib is not MATPLOTLIB)."""
    if expected == actual:
        return None
    old, new = expected.decode(), actual.decode()
    if html and matplotlib.__version__ != MATPLOTLIB:
        warnings.warn(f"matplotlib {matplotlib.__version__}, not {MATPLOTLIB}: {name}'s plots are compared by their titles only",
                      stacklevel=2)  # fmt: skip
        old, new = plots_cut(old), plots_cut(new)
        if old == new:
            return None
    if html:  # one line of many kilobytes: compare it tag by tag
        old, new = old.replace("><", ">\n<"), new.replace("><", ">\n<")
    lines = difflib.unified_diff(old.splitlines(), new.splitlines(), f"{name} (golden)", f"{name} (rendered)", lineterm="", n=1)
    return "\n".join(list(lines)[:60]) or f"{name}: the same lines, other bytes (line ends or a final newline)"


@pytest.fixture(autouse=True)
def fixed_place() -> Iterator[None]:
    """What the renderers take from the machine, fixed: the HTML page says when an experiment was
    created in local time (these files are UTC's), and its plots start from matplotlib's own
    settings, never from a matplotlibrc of the user's."""
    zone = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    time.tzset()
    try:
        with matplotlib.rc_context():
            matplotlib.rcdefaults()
            yield
    finally:
        if zone is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = zone
        time.tzset()


@pytest.fixture
def check(request: pytest.FixtureRequest) -> Check:
    """Compares a rendering with its golden file, or writes the file under --update-golden."""
    update = request.config.getoption("--update-golden")

    def compare(path: Path, text: str) -> None:
        actual = text.encode()
        if update:
            path.parent.mkdir(parents=True, exist_ok=True)
            if not path.exists() or path.read_bytes() != actual:
                path.write_bytes(actual)
            return
        assert path.exists(), f"{path.relative_to(GOLDEN)} is missing: ./dev golden writes it (then read it and commit it)"
        said = difference(path.read_bytes(), actual, str(path.relative_to(GOLDEN)), html=path.suffix == ".html")
        assert said is None, f"the output changed (if meant: ./dev golden, then read the diff before committing)\n{said}"

    return compare


@pytest.mark.parametrize(("case", "fmt"), RENDERED, ids=[f"{c.folder}-{f}" for c, f in RENDERED])
def test_every_format_of_every_view_is_its_golden_file(case: Case, fmt: str, check: Check) -> None:
    check(golden(case, fmt), render(report(case.report), fmt, case.view))


def test_the_table_at_a_narrow_terminal_is_its_golden_file(check: Check) -> None:
    check(GOLDEN / "metrics" / f"table-{NARROW}.txt", narrow(report("metrics")))


def test_raw_intervals_are_their_golden_file(check: Check) -> None:
    """`benchlab report --raw-intervals`: every change with its unadjusted 95% interval."""
    check(GOLDEN / "metrics" / "table-raw-intervals.txt", render(report("metrics").with_raw_intervals(), "table"))


@pytest.mark.parametrize("points", [False, True], ids=["series", "points"])
def test_history_is_its_golden_file(points: bool, check: Check) -> None:
    history = History.model_validate_json((REPORTS / "history.json").read_bytes())
    check(GOLDEN / "history" / ("table-points.txt" if points else "table.txt"), changes(history, points=points))
    check(GOLDEN / "history" / "json.json", history.to_json())


BISECTIONS = [
    ([0, 0, 0, 0, 0, 1, 1, 1, 1], frozenset()),
    ([0, 0, 0, 0, 0, 0, 1, 1, 1], frozenset({"6"})),
    ([0, 0, 0], frozenset()),
]


def test_bisection_lines_are_their_golden_file(check: Check) -> None:
    """`benchlab bisect`'s lines (header, a line per decision, the answer) for a bisection that finds
    the first bad variant, one stopped by an unclear step and one with nothing to bisect, each
    decided by the unit tests' judge that answers from the truth."""
    lines = []
    for levels, unclear in BISECTIONS:
        variants = names(len(levels))
        outcome = bisect(variants, Fake([float(x) for x in levels], unclear=unclear), alpha=ALPHA)
        lines += [header(variants, "app", "wall", ALPHA, outcome.decisions), *map(step_line, outcome.steps, itertools.count())]
        lines += [*answer(outcome, "wall"), ""]
    check(GOLDEN / "bisect" / "lines.txt", "\n".join(lines))


def test_every_golden_file_is_one_a_test_writes(request: pytest.FixtureRequest) -> None:
    """No golden file is left over from a case or format that is gone (--update-golden removes it)."""
    written = {golden(case, fmt) for case, fmt in RENDERED}
    written |= {GOLDEN / "metrics" / f"table-{NARROW}.txt", GOLDEN / "metrics" / "table-raw-intervals.txt"}
    written |= {GOLDEN / "history" / name for name in ("table.txt", "table-points.txt", "json.json")}
    written.add(GOLDEN / "bisect" / "lines.txt")
    found = {p for p in GOLDEN.glob("*/*") if p.parent != REPORTS and p.parent.name != "__pycache__"}
    if request.config.getoption("--update-golden"):
        for path in found - written:
            path.unlink()
        return
    assert sorted(found - written) == [], "left over: ./dev golden removes them"
    assert sorted(written - found) == [], "missing: ./dev golden writes them"


def test_a_byte_changed_in_a_report_is_a_difference() -> None:
    """The comparison can fail: one character of a name, or one run's value (in a plot and the page's data), is seen."""
    shown = report("metrics")
    base = render(shown, "md").encode()
    renamed = render(shown.model_copy(update={"baseline": "bas3"}), "md").encode()
    said = difference(base, renamed, "metrics/md.md")
    assert said is not None and "bas3" in said
    page = render(shown, "html").encode()
    runs = list(shown.runs)
    first = next(i for i, r in enumerate(runs) if r["status"] == "ok")
    runs[first] = {**runs[first], "metrics": {**runs[first]["metrics"], "wall": runs[first]["metrics"]["wall"] * 1.5}}
    said = difference(page, render(shown.with_runs(runs), "html").encode(), "metrics/html.html", html=True)
    assert said is not None
    assert "<use" in said or "<path" in said or matplotlib.__version__ != MATPLOTLIB  # a point of a plot moved
