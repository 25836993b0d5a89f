"""Constrained value types shared by every input path: TOML specs, the quick form and bundles.

One definition per kind of value, so a name refused in a spec is refused in a bundle too and a
number that is not finite never reaches the database, a report or a command line.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._+-]*$"
NAME_MAX = 100
TEXT_MAX = 4096  # an argument, an environment value, a knob value
MESSAGE_MAX = 64 * 1024  # a stored message or stderr tail from a bundle

# experiment, workload and variant names: they become labels in reports and parts of file names
Name = Annotated[str, Field(pattern=NAME_PATTERN, min_length=1, max_length=NAME_MAX)]


def _no_nul(value: str) -> str:
    if "\x00" in value:
        raise ValueError("contains a NUL byte")
    return value


def _one_line(value: str) -> str:
    bad = next((c for c in value if ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0), None)
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
Label = Annotated[str, Field(min_length=1, max_length=256), AfterValidator(_one_line)]
