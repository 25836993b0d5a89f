"""Flame graphs on the page, as plain inline SVG (the page runs no script): per workload, each
variant's graph coloured by the judged change of each frame's function against the baseline
(red: judged worse, blue: judged better, deeper the larger the change; grey: not judged, same or
unclear: a raw difference never colours a frame), and the baseline's own graph in the usual warm
colours. The frames are laid out by the analysis (`analysis.profiles.flame_graph`)."""

from __future__ import annotations

import zlib

from benchlab.report.formats.html.tables import esc
from benchlab.report.views import cells
from benchlab.report_model import FlameFrame, FlameGraph, FunctionRow, Profiles
from benchlab.terms import BETTER, WORSE

WIDTH = 1180  # px of the drawing: the page's width
ROW = 16  # px per frame
CHAR = 6.6  # px per character of the 11 px label font
GREY = "rgb(214,214,214)"


def _judged_colour(row: FunctionRow | None, largest: float) -> str:
    """Red or blue, the deeper the larger the judged change; grey where it is not judged decided."""
    if row is None or row.verdict not in (BETTER, WORSE) or row.change is None:
        return GREY
    depth = min(1.0, abs(row.change) / largest) if largest > 0 else 1.0
    fade = int(215 - 150 * depth)
    return f"rgb(230,{fade},{fade})" if row.verdict == WORSE else f"rgb({fade},{fade},235)"


def _warm_colour(name: str) -> str:
    """FlameGraph's warm palette, fixed per name (so two graphs colour one function alike)."""
    h = zlib.crc32(name.encode())
    return f"rgb({205 + h % 50},{(h >> 8) % 180 + 30},{(h >> 16) % 55})"


def _svg(graph: FlameGraph, colour: dict[tuple[str, str | None], str], rows: dict[tuple[str, str | None], FunctionRow]) -> str:
    depth = max((f.depth for f in graph.frames), default=0) + 1
    height = depth * ROW
    parts = [
        f'<svg class="flame" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" '
        f'height="{height}" font-family="monospace" font-size="11">'
    ]
    for frame in sorted(graph.frames, key=lambda f: (f.depth, f.start)):
        parts.append(
            _frame(frame, graph, colour.get((frame.name, frame.library), GREY), rows.get((frame.name, frame.library)), height)
        )
    parts.append("</svg>")
    return "".join(parts)


def _frame(frame: FlameFrame, graph: FlameGraph, fill: str, row: FunctionRow | None, height: int) -> str:
    x, w = frame.start * WIDTH, frame.width * WIDTH
    y = height - (frame.depth + 1) * ROW  # the root at the bottom, as flame graphs grow
    where = f" ({frame.library})" if frame.library else ""
    tip = f"{frame.name}{where}: {cells.quantity(frame.width * graph.total, graph.unit)} ({frame.width:.1%})"
    if row is not None:
        tip += f"; self time {cells.change(row.change, row.change_ci)} of the whole, {row.verdict}"
    label = frame.name if len(frame.name) * CHAR <= w - 4 else frame.name[: max(0, int((w - 4) / CHAR) - 2)] + ".."
    text = f'<text x="{x + 2:.1f}" y="{y + ROW - 4}">{esc(label)}</text>' if w >= 3 * CHAR else ""
    return (
        f'<g class="frame"><title>{esc(tip)}</title><rect x="{x:.1f}" y="{y}" width="{max(w - 0.5, 0.1):.1f}" '
        f'height="{ROW - 1}" fill="{fill}"/>{text}</g>'
    )


def section(profiles: Profiles | None, baseline: str) -> list[str]:
    """Per workload: each variant's differential flame graph, then the baseline's."""
    if profiles is None or not profiles.flames:
        return []
    functions = [r for r in profiles.rows if r.level == "function"]
    out = [
        "<p class=\"note\">Each variant's flame graph is coloured by the judged change of each frame's own (self) time "
        "against the baseline: red judged worse, blue judged better, deeper the larger; grey not judged, same or "
        "unclear. A frame's width is its time with the function on the stack, the mean of the two variants' per run "
        "(so what only one of them runs is there to see); the baseline's own graph follows. The tables below give "
        "every judged function with its interval (benchlab explain).</p>"
    ]
    for graph in profiles.flames:
        if graph.against is None:
            continue
        rows = {(r.name, r.library): r for r in functions if r.workload == graph.workload and r.variant == graph.variant}
        largest = max(
            (abs(r.change) for r in rows.values() if r.change is not None and r.verdict in (BETTER, WORSE)), default=0.0
        )
        colour = {key: _judged_colour(row, largest) for key, row in rows.items()}
        out.append(
            f"<h3>{esc(graph.workload)}: {esc(graph.variant)} against {esc(graph.against)} ({graph.runs} profiled runs)</h3>"
        )
        out.append(f'<div class="scroll">{_svg(graph, colour, rows)}</div>')
    for graph in profiles.flames:
        if graph.against is None:
            colour = {(f.name, f.library): _warm_colour(f.name) for f in graph.frames}
            which = "the baseline" if graph.variant == baseline else "its own (the baseline has no profiled run)"
            out.append(f"<h3>{esc(graph.workload)}: {esc(graph.variant)}, {which} ({graph.runs} profiled runs)</h3>")
            out.append(f'<div class="scroll">{_svg(graph, colour, {})}</div>')
    return out
