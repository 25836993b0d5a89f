"""The `allocator` field: a malloc implementation preloaded into the workload."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from benchlab.errors import SpecError
from benchlab.measure.libraries import LIBRARIES, find_library


def preload_for(name: str | None, where: str) -> list[str]:
    if name is None or name == "glibc":
        return []
    path = find_library(name)
    if path is None:
        lib = LIBRARIES[name]
        raise SpecError(
            f"{name} is not installed (looked for {', '.join(lib.sonames)})",
            where=where,
            hint=f"apt-get install {lib.debian_package}",
        )
    return [path]


# each allocator's file names up to ".so" (`libjemalloc.so.2` -> `libjemalloc.so`): every run is matched
_FILE_PREFIXES = {name: tuple(soname.split(".so")[0] + ".so" for soname in lib.sonames) for name, lib in LIBRARIES.items()}


def mapped_allocator(mapped: Sequence[str]) -> tuple[str, str | None]:
    """(name, library) of the malloc a process really ran, from the files it mapped: the
    allocator library it loaded (a preload comes before every other library), else glibc's
    when it mapped libc, else "static" (a statically linked program keeps its own)."""
    for path in mapped:
        base = os.path.basename(path)
        for name, prefixes in _FILE_PREFIXES.items():
            if base.startswith(prefixes):
                return name, path
    glibc = next((p for p in mapped if os.path.basename(p).startswith("libc.so")), None)
    return ("glibc", glibc) if glibc else ("static", None)


_COMPLAINTS = (
    # the dynamic loader skips a preload it cannot load and runs the program anyway
    re.compile(rb"ERROR: ld\.so: object '([^']*)' from LD_PRELOAD cannot be preloaded \(([^)]*)\)"),
    # jemalloc ignores an option it does not know and runs on with its defaults
    re.compile(rb"<jemalloc>: (Invalid conf (?:pair|value): \S+)"),
)


def allocator_complaint(stderr: bytes) -> str | None:
    """Why a run did not measure the allocator its variant asked for, from what the loader or the
    allocator printed; such a run exits 0, so without this it would be measured as if it had."""
    for pattern in _COMPLAINTS:
        found = pattern.search(stderr)
        if found:
            detail = ": ".join(g.decode(errors="replace") for g in found.groups())
            return f"the allocator the variant asks for was not in force ({detail})"
    return None
