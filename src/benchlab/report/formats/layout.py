"""A grid laid out for a terminal of a given width, cutting no value.

Left to itself, rich fits a table that is too wide by wrapping its columns and then by
cropping them with an ellipsis (`jema…`), so a number could read over two lines or cut short.
Here the widths are decided before rich draws anything: a value column is as wide as its
widest value (a number never wraps), while a header or a name may fold onto more lines. A grid
wider than the terminal is split into blocks, each repeating the grid's shared columns (its
names and the baseline's values) before as many variants' groups as fit. Layouts are tried
from the fewest blocks on, each as it is and with its first name column (the workload)
lifted into section rows, which saves that column on every line; then with the shared values
in a block of their own, so that a variant's block holds only the names and its group. The
first layout that fits is drawn; where none does (a terminal narrower than one group), the
last is squeezed and its cells fold, still cutting nothing. Hand-written: rich measures and
draws a table but has no notion of splitting one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from rich.cells import cell_len

from benchlab.report.views.grid import Grid

WIDTH = 100  # what a pipe or a file gets: a layout that reads the same wherever it is shown
SEPARATOR = 3  # " │ " between two columns; the tables have no outer edge
NAME_WORD = 20  # a name column narrows to its longest word, but no further than this: longer words fold
HEADER_WORD = 12  # likewise a header's longest word, over a value column narrower than its header
NAME_FLOOR = 8  # where nothing fits, names are squeezed to this (folding inside words) before a value is
FLOOR = 3  # the narrowest anything is squeezed to


class Measure(NamedTuple):
    """A column's widths, from its cells and header: what a layout reserves for it (`least`)
    decides which layouts fit, and the rest of the width goes towards `most`."""

    least: int  # the narrowest a layout draws it
    most: int  # every cell on one line
    floor: int  # the narrowest it may be squeezed to before a value in it folds


@dataclass
class Block:
    """One table to draw: its grid (title, header, rows), each column's width, and the rows after
    which a rule is drawn (before rows outside every lifted section: the geometric means)."""

    grid: Grid
    widths: list[int]
    rules: set[int]


def table_width(widths: list[int]) -> int:
    return sum(widths) + SEPARATOR * (len(widths) - 1)


def blocks(grid: Grid, width: int = WIDTH) -> list[Block]:
    """The grid as the fewest tables that fit `width` columns (see the module's docstring)."""
    modes = [(grid, set[int]())]
    if _liftable(grid):
        modes.append(_lifted(grid))
    least = [[_measure(g, i).least for i in range(len(g.header))] for g, _ in modes]  # measured once: rows may be thousands
    split = [(g, rules, parts) for (g, rules), m in zip(modes, least, strict=True)
             if (parts := _parts(g, m, _shared(g), width)) is not None]  # fmt: skip
    if not split:
        split = [(g, rules, parts) for (g, rules), m in zip(modes, least, strict=True)
                 if (parts := _apart(g, m, width)) is not None]  # fmt: skip
    if split:
        g, rules, parts = min(split, key=lambda found: len(found[2]))  # the first mode wins a tie
    else:
        (g, rules), parts = modes[-1], _squeezed(modes[-1][0])
    out = []
    for n, columns in enumerate(parts, start=1):
        title = g.title if len(parts) == 1 else f"{g.title} ({n} of {len(parts)})"
        block = _select(g, columns, title, rules)
        block.widths = _widths([_measure(block.grid, i) for i in range(len(columns))], block.grid.names, width)
        out.append(block)
    return out


def _shared(grid: Grid) -> int:
    return grid.shared or grid.names


def _groups(grid: Grid) -> list[list[int]]:
    rest = list(range(_shared(grid), len(grid.header)))
    size = grid.group or len(rest) or 1
    return [rest[i : i + size] for i in range(0, len(rest), size)]


def _parts(grid: Grid, least: list[int], lead: int, width: int) -> list[list[int]] | None:
    """Each block's columns, the `lead` first ones and then as many groups as fit, packed in
    order (the fewest blocks any in-order split can have); None where a group alone does not fit.
    `least`: each column's narrowest width."""

    def fits(columns: list[int]) -> bool:
        return table_width([least[i] for i in columns]) <= width

    leading = list(range(lead))
    parts: list[list[int]] = []
    for group in _groups(grid):
        if parts and fits(parts[-1] + group):
            parts[-1] += group
        elif fits(leading + group):
            parts.append(leading + group)
        else:
            return None
    return parts or ([leading] if fits(leading) else None)


def _apart(grid: Grid, least: list[int], width: int) -> list[list[int]] | None:
    """The shared values (the baseline's) in a block of their own, then the groups under the names alone."""
    shared = list(range(_shared(grid)))
    if len(shared) <= grid.names or table_width([least[i] for i in shared]) > width:
        return None
    rest = _parts(grid, least, grid.names, width)
    return None if rest is None else [shared, *rest]


def _squeezed(grid: Grid) -> list[list[int]]:
    """The narrowest layout, for a terminal too narrow for any: as `_apart`, each group a block."""
    names = list(range(grid.names))
    groups = [names + group for group in _groups(grid)]
    return ([list(range(_shared(grid)))] if _shared(grid) > grid.names else []) + groups


def _words(text: str) -> int:
    return max((cell_len(word) for word in text.split()), default=0)


def _measure(grid: Grid, i: int) -> Measure:
    """A name column may fold to its longest word (at most NAME_WORD); a value column is never
    narrower than its widest value, and its header folds down to that (or to HEADER_WORD)."""
    cells = [row[i] for row in grid.rows]
    header = grid.header[i]
    if i < grid.names:
        least = max(1, min(max(_words(c) for c in [header, *cells]), NAME_WORD))
        floor = min(least, NAME_FLOOR)
    else:
        floor = max([1, *(cell_len(c) for c in cells)])
        least = max(floor, min(_words(header), HEADER_WORD))
    return Measure(least, max(least, *(cell_len(c) for c in [header, *cells])), floor)


def _widths(measures: list[Measure], names: int, width: int) -> list[int]:
    """Every column at its narrowest, then widened towards its natural width in order (names
    first) while the table fits. Where even the narrowest does not fit: value headers fold down
    to their values, then names fold inside words, and only then, as a last resort, values."""
    widths = [m.least for m in measures]
    spare = width - table_width(widths)
    for i, m in enumerate(measures):
        grow = max(0, min(spare, m.most - widths[i]))
        widths[i] += grow
        spare -= grow
    headers = [m.least if i < names else m.floor for i, m in enumerate(measures)]
    for floors in (headers, [m.floor for m in measures], [FLOOR] * len(widths)):
        while spare < 0 and (squeezable := [i for i, w in enumerate(widths) if w > floors[i]]):
            widest = max(squeezable, key=widths.__getitem__)
            widths[widest] -= 1
            spare += 1
    return widths


def _liftable(grid: Grid) -> bool:
    """Worth lifting: two name columns, the first repeated down the rows (a workload's metrics)."""
    firsts = [row[0] for row in grid.rows]
    return grid.names >= 2 and any(a == b != "" for a, b in zip(firsts, firsts[1:], strict=False))


def _lifted(grid: Grid) -> tuple[Grid, set[int]]:
    """The grid with its first column as section rows: each run of one value (a workload) under
    a row naming it, and a rule before rows that name none (the geometric means)."""
    out = Grid(
        title=grid.title,
        header=[f"{grid.header[0]} / {grid.header[1]}", *grid.header[2:]],
        names=grid.names - 1,
        verdict_columns=[c - 1 for c in grid.verdict_columns if c > 0],
        notes=grid.notes,
        shared=_shared(grid) - 1,
        group=grid.group,
    )
    rules: set[int] = set()
    current: str | None = None
    for cols, emphasis in zip(grid.rows, grid.emphasis, strict=True):
        if cols[0] != current:
            if cols[0]:
                out.add([cols[0], *[""] * (len(cols) - 2)], emphasis=True)
            elif out.rows:
                rules.add(len(out.rows) - 1)
            current = cols[0]
        out.add(cols[1:], emphasis=emphasis)
    return out, rules


def _select(grid: Grid, columns: list[int], title: str, rules: set[int]) -> Block:
    """A block of the grid's columns; a summary row (a geometric mean) blank in all of them but
    filled in another block is left out (the baseline has none), a section title row is kept."""
    values = [c for c in columns if c >= grid.names]
    out = Grid(
        title=title,
        header=[grid.header[i] for i in columns],
        verdict_columns=[columns.index(c) for c in grid.verdict_columns if c in columns],
        names=len(columns) - len(values),
    )
    kept_rules = set()
    for n, (cols, emphasis) in enumerate(zip(grid.rows, grid.emphasis, strict=True)):
        if emphasis and not any(cols[i] for i in values) and any(cols[grid.names :]):
            continue
        out.add([cols[i] for i in columns], emphasis=emphasis)
        if n in rules:
            kept_rules.add(len(out.rows) - 1)
    return Block(out, [], kept_rules - {len(out.rows) - 1})
