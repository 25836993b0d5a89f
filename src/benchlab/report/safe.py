"""Stored text made safe to show: the one place every rendering (terminal, Markdown, CSV) passes data through.

Names and messages come from specs, bundles of other machines and the stderr of failing
workloads, so they may carry terminal escapes (colours, OSC 8 links, a title change, a
cursor move that rewrites earlier lines), carriage returns, bidi overrides that reverse
what a reader sees, or text that a spreadsheet runs as a formula. Every character that is
not printable is shown as a visible escape (`\\x1b`, `\\u202e`), overlong text is cut with
a count, Markdown's table and code characters are backslashed, and a CSV text cell that a
spreadsheet would evaluate is prefixed with `'` (OWASP's advice). JSON needs none of this:
`json.dumps` escapes every control and non-ASCII character itself.
"""

from __future__ import annotations

import re

from benchlab.escapes import escaped

TEXT_MAX = 1000  # a name, a message or a cell: longer text is cut, with a count of what was left out
LINE_MAX = 4096  # a line of benchlab's own with data in it: an error, a title, a note, a footer
BLOCK_MAX = 64 * 1024  # a block printed deliberately (a stderr tail)
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
FILE_NAME_MAX = 100
NOT_IN_FILE_NAMES = re.compile(r"[^A-Za-z0-9._+-]+")
MARKDOWN_SPECIAL = str.maketrans({c: "\\" + c for c in "\\|`*<>"})


def _shown(c: str, newlines: bool) -> str:
    import unicodedata  # only for text that is not all printable

    if c.isprintable() or (newlines and c == "\n") or unicodedata.category(c) == "Zs":
        return c
    return escaped(c)


def text(value: object, *, newlines: bool = False, limit: int = TEXT_MAX) -> str:
    """`value` as text that cannot change the terminal: C0 and C1 controls, DEL, bidi and other
    format characters escaped (newlines kept only when `newlines`), cut after `limit` characters."""
    raw = str(value)
    if len(raw) > limit:
        raw = f"{raw[:limit]}... ({len(raw) - limit} more characters)"
    if newlines:
        raw = raw.replace("\r\n", "\n")
    if raw.isprintable():  # the common case, checked at C speed
        return raw
    return "".join(_shown(c, newlines) for c in raw)


def block(value: object) -> str:
    """A block of text printed as lines (a stderr tail): newlines kept, everything else escaped."""
    return text(value, newlines=True, limit=BLOCK_MAX)


def markdown(value: object, *, limit: int = TEXT_MAX) -> str:
    """A Markdown table cell or line: escaped as `text`, with `| ` * < >` and backslashes backslashed
    and `](` broken, so data cannot end a cell, open code or emphasis, or write a link or HTML
    (`[95% CI]` and `BM_copy` stay as they read)."""
    return text(value, limit=limit).translate(MARKDOWN_SPECIAL).replace("](", "]\\(")


def csv_cell(value: object) -> object:
    """A CSV cell: numbers (and empty cells) as they are; text escaped as `text` and, where it starts
    like a formula (`= + - @`, tab, CR), prefixed with `'` so a spreadsheet shows it as text."""
    if value is None or isinstance(value, bool | int | float):
        return value
    raw = str(value)
    return f"'{text(raw)}" if raw.startswith(FORMULA_START) else text(raw)


def file_name(name: str) -> str:
    """A stored name as the name of a file in the current folder: runs of characters other than
    letters, digits and `._+-` become `_`, leading dots go (no `..`, no hidden file), cut at 100."""
    cleaned = NOT_IN_FILE_NAMES.sub("_", name).lstrip(".")[:FILE_NAME_MAX]
    return cleaned or "experiment"
