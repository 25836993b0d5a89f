"""A character no terminal should act on, shown as the escape a reader can see. Kept apart from
the spec's value types (pydantic) and the renderers so that every error line can be escaped
without loading either."""

from __future__ import annotations


def is_control(c: str) -> bool:
    """C0 and C1 controls and DEL: what a terminal acts on instead of printing."""
    return ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0


def escaped(c: str) -> str:
    """A character as a visible escape (`\\x1b`, `\\u202e`)."""
    code = ord(c)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"
