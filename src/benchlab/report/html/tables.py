"""HTML tables: the report's grids (`views.report_grids`, the same cells as the terminal and
Markdown tables) and the verdict summary at the top of the page. Every cell passes through `esc`."""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Callable

from benchlab.report import cells, layout, safe
from benchlab.report.grid import Grid
from benchlab.report_model import GeomeanRow, MetricRow, Report, ScoreRow
from benchlab.stats.families import PRIMARY

DECIDED = ("better", "worse")
VERDICTS = ("better", "worse", "same", "unclear", "-")
# Characters of a table's text that a laptop's width holds (1,190 px of page at the tables' 12.5 px
# font, with their padding): a wider grid is split into blocks as a terminal's is (report/layout.py),
# so no table needs a scroll bar to be read.
PAGE_COLUMNS = 160


def esc(value: object, *, limit: int = safe.TEXT_MAX) -> str:
    """Stored text as HTML text or an attribute value: control and format characters made
    visible (`safe.text`), then `& < > " '` escaped."""
    return html.escape(safe.text(value, limit=limit), quote=True)


def _verdict_class(text: str) -> str:
    word = text.split(" ", 1)[0]
    return f' class="verdict v-{word}"' if word in VERDICTS[:4] else ' class="verdict"'


def table(header: list[str], rows: list[list[str]], *, left: int = 1, verdicts: tuple[int, ...] = (),
          emphasis: list[bool] | None = None) -> str:  # fmt: skip
    """A table of text cells: the first `left` columns name a row (left-aligned, never wrapped),
    the verdict columns coloured, the rest numbers (right-aligned)."""

    def cell(i: int, text: str, tag: str) -> str:
        kind = ' class="name"' if i < left else _verdict_class(text) if i in verdicts else ""
        return f"<{tag}{kind}>{esc(text)}</{tag}>"

    head = "".join(cell(i, h, "th") for i, h in enumerate(header))
    body = []
    for n, cols in enumerate(rows):
        strong = ' class="em"' if emphasis and emphasis[n] else ""
        body.append(f"<tr{strong}>" + "".join(cell(i, c, "td") for i, c in enumerate(cols)) + "</tr>")
    return f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>'


def grid(g: Grid) -> str:
    """A grid as one table, or as the blocks a page's width holds, then its notes."""
    notes = "".join(f'<p class="note">{esc(n, limit=safe.LINE_MAX)}</p>' for n in g.notes if n)
    drawn = []
    for block in layout.blocks(g, PAGE_COLUMNS):
        b = block.grid
        body = table(b.header, b.rows, left=b.names, verdicts=tuple(b.verdict_columns), emphasis=b.emphasis)
        drawn.append(f"<h3>{esc(b.title, limit=safe.LINE_MAX)}</h3>{body}")
    return "".join(drawn) + notes


def _change_key(row: MetricRow | GeomeanRow | ScoreRow) -> float:
    return -abs(row.change or 0.0)


def _metric_key(report: Report) -> Callable[[MetricRow], tuple[int, bool, float]]:
    place = {v: i for i, v in enumerate(report.variants)}
    return lambda r: (place.get(r.variant, len(place)), r.family != PRIMARY, _change_key(r))


def changed(report: Report) -> str:
    """The better and worse rows: metrics by variant, outcomes (primary) first, largest change
    first; then geometric means and scores."""
    rows = sorted((r for r in report.rows if r.verdict in DECIDED), key=_metric_key(report))
    lines = [
        [r.workload, cells.metric_label(r), r.variant, cells.quantity(r.baseline_median, r.unit),
         cells.quantity(r.median, r.unit), cells.row_change(r), _q(r.q), r.verdict]
        for r in rows
    ]  # fmt: skip
    for g in sorted((g for g in report.geomean if g.verdict in DECIDED), key=_change_key):
        lines.append(["", cells.geomean_label(g.direction), g.variant, "", "", cells.row_change(g), _q(g.q), g.verdict])
    scores = report.scores.rows if report.scores else []
    for s in sorted((s for s in scores if s.verdict in DECIDED), key=_change_key):
        name = f"{s.name} score ({s.mode}{f', over {s.covers}' if s.covers else ''})" if s.level != "suite" else s.mode
        lines.append([report.scores.suite if report.scores else "", name, s.variant, "", cells.quantity(s.score, ""),
                      cells.change(s.change, s.change_ci, log_scale=s.log_scale), _q(s.q), s.verdict])  # fmt: skip
    if not lines:
        return '<p class="quiet">No comparison came out better or worse.</p>'
    change = f"change [{cells.ci_label(report)}]"
    header = ["workload", "metric", "variant", f"{report.baseline} (median)", "median", change, "q", "verdict"]
    notes = [cells.interval_note(report), *cells.change_notes(rows)]
    return table(header, lines, left=3, verdicts=(7,)) + "".join(
        f'<p class="note">{esc(n, limit=safe.LINE_MAX)}</p>' for n in notes
    )


def _q(q: float | None) -> str:
    return "n/a" if q is None else f"{q:.2g}"


def counts(report: Report) -> str:
    """Per compared variant, how many rows came out each way (scores and geometric means included)."""
    judged: list[MetricRow | GeomeanRow | ScoreRow] = [*report.rows, *report.geomean]
    judged += report.scores.rows if report.scores else []
    by_variant: dict[str, Counter[str]] = {}
    for r in judged:
        if r.variant != report.baseline:
            by_variant.setdefault(r.variant, Counter())[r.verdict] += 1
    if not by_variant:
        return '<p class="quiet">One variant only: its runs are described, not compared.</p>'
    header = ["variant", "better", "worse", "same", "unclear", "not judged"]
    rows = [[v, *(str(c[k]) for k in VERDICTS)] for v, c in by_variant.items()]
    return table(header, rows)
