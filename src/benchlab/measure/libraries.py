"""The malloc libraries benchlab knows and where this machine has them installed.

Measurement reads this (the host fingerprint lists the allocators a machine offers) as much as
the variants do (a variant preloads one), so it lives here, below both.
"""

from __future__ import annotations

import functools
import os
import subprocess
from dataclasses import dataclass


@dataclass(frozen=True)
class AllocatorLibrary:
    sonames: tuple[str, ...]
    debian_package: str


LIBRARIES = {
    "jemalloc": AllocatorLibrary(("libjemalloc.so.2",), "libjemalloc2"),
    "tcmalloc": AllocatorLibrary(("libtcmalloc_minimal.so.4", "libtcmalloc.so.4"), "libtcmalloc-minimal4"),
    "mimalloc": AllocatorLibrary(("libmimalloc.so.2", "libmimalloc.so.3"), "libmimalloc2.0"),
}

_SEARCH_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/local/lib")


@functools.cache
def _ldconfig_paths() -> dict[str, str]:
    """soname -> path from the dynamic linker's cache, the list the loader itself consults."""
    try:
        out = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    paths: dict[str, str] = {}
    for line in out.splitlines():
        name, sep, path = line.strip().partition(" => ")
        if sep:
            paths.setdefault(name.split(" ", 1)[0], path.strip())
    return paths


def find_library(name: str) -> str | None:
    """The installed library for an allocator name, or None (glibc needs none)."""
    for soname in LIBRARIES[name].sonames:
        path = _ldconfig_paths().get(soname)
        if path and os.path.exists(path):
            return path
        for folder in _SEARCH_DIRS:
            candidate = os.path.join(folder, soname)
            if os.path.exists(candidate):
                return candidate
    return None
