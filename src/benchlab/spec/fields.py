"""Constrained value types shared by every input path: TOML specs, the quick form and bundles.

One definition per kind of value, so a name refused in a spec is refused in a bundle too and a
number that is not finite never reaches the database, a report or a command line.
"""

from __future__ import annotations

import hashlib
from typing import Annotated

from pydantic import AfterValidator, Field

from benchlab.escapes import escaped, is_control

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._+-]*$"
NAME_MAX = 100
TEXT_MAX = 4096  # an argument, an environment value, a knob value
MESSAGE_MAX = 64 * 1024  # a stored message or stderr tail from a bundle
METRIC_NAME_MAX = 200  # the schema's column sizes
UNIT_MAX = 20

# experiment, workload and variant names: they become labels in reports and parts of file names
Name = Annotated[str, Field(pattern=NAME_PATTERN, min_length=1, max_length=NAME_MAX)]


def without_nul(text: str | None) -> str | None:
    """A workload's own text (its stderr, a benchmark's message) as every text column and bundle
    takes it: PostgreSQL refuses NUL in text, so it is kept as the escape a report would show."""
    return text.replace("\0", "\\x00") if text else text


def _no_nul(value: str) -> str:
    if "\x00" in value:
        raise ValueError("contains a NUL byte")
    return value


def _one_line(value: str) -> str:
    bad = next((c for c in value if is_control(c)), None)
    if bad is not None:
        raise ValueError(f"contains the control character {bad!r}")
    return value


# an argument or an environment value: anything the kernel can pass (no NUL), bounded
Arg = Annotated[str, Field(max_length=TEXT_MAX), AfterValidator(_no_nul)]
# one line of printable text: knob values and paths, metric names and units, labels
Line = Annotated[str, Field(max_length=TEXT_MAX), AfterValidator(_one_line)]
# free text stored as it came (a message, a stderr tail): bounded, no NUL; escaped when shown
Blob = Annotated[str, Field(max_length=MESSAGE_MAX), AfterValidator(_no_nul)]
Finite = Annotated[float, Field(allow_inf_nan=False)]
# a metric's name or unit as a report shows it ("BM_copy/64/real_time"): one printable line, short
Label = Annotated[str, Field(min_length=1, max_length=METRIC_NAME_MAX), AfterValidator(_one_line)]


def storable_label(text: str, limit: int = METRIC_NAME_MAX) -> str:
    """A name that a workload printed (a third-party benchmark's, a counter's) as a `Label` that
    every database and bundle takes: control characters escaped, and a name over `limit` cut with
    a digest of the whole, so the same name is the same label in every run and two long names that
    differ only at the end stay two labels. A `Label` is refused instead; this is for text that is
    not the user's to fix."""
    shown = "".join(escaped(c) if is_control(c) else c for c in text) if not text.isprintable() else text
    if len(shown) <= limit:
        return shown or "?"
    digest = hashlib.sha256(text.encode(errors="surrogatepass")).hexdigest()[:8]
    return f"{shown[: limit - 9]}~{digest}"
