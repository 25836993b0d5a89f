"""How the `benchlab` executable imports: what it never uses stays unrun, and the cyclic garbage
collector waits for an import to end and then leaves what it made alone. Both shorten every
command that works, most of whose start is imports (docs/design.md, "Start-up").

Packages loaded for nothing. Every command that judges imports `scipy.special`, whose import loads
more than its functions: its own import of numpy's array API (`scipy._lib.array_api_compat.numpy`)
runs `from numpy import *`, and numpy's `__all__` names its lazily loaded packages `f2py` and
`testing` (Fortran's parser, unittest); its orthogonal polynomials import `scipy.linalg` for a
function called only when one computes their roots. Together 110-150 ms of CPU of every such
command (`from scipy import special` with benchlab.blas: 0.28-0.34 -> 0.16-0.21 s here). The
standard library's `importlib.util.LazyLoader` makes each a module that runs its code at its first
attribute access, so an import binds it unrun and a use (a sweep's fit, through scipy.optimize)
still finds the whole package. Python 3.11's lazy module is not safe to touch first from two
threads at once; benchlab's only threads (`stats.judge`'s rows) use numpy and scipy.special's
functions, which reach none of these.

The collector during an import. A command's imports make some 130,000 objects (modules,
functions, classes) that live as long as the process, and the cyclic collector, run every 700
new objects, walked them again and again as they were made: 200 collections and 50-70 ms of CPU
in `benchlab report` of a small experiment, and as many in `compare`. So the collector is paused
while an import runs (the outermost one: commands import what they use when they use it) and,
where it ran modules, what exists when it ends is frozen (`gc.freeze`: never walked again, still
freed when its last reference goes; only a reference cycle made by then and dropped later is
kept; an import of modules loaded already, as a function called per run makes, freezes nothing):
8-9 collections and under 2 ms. Where something has paused the collector already (`cli/results.py` while it
loads an experiment), an import leaves it so. What is frozen is never collected, not even by the
interpreter's last collections as it exits, which is a gain too: unfrozen at exit, the heap's
last walk costs `report` and `show` of a small experiment a further 0.1 s of CPU (0.57 -> 0.69 s
and 0.45 -> 0.55 s, medians of 11 interleaved runs). A resource that must be released as the
process ends is therefore released explicitly, never by a collection: the database's
connections (`store/url.py`).
"""

from __future__ import annotations

import builtins
import gc
import sys

TYPE_CHECKING = False  # typing's own costs a help 6 ms to import
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from importlib.machinery import ModuleSpec
    from types import ModuleType

LAZY = ("numpy.f2py", "numpy.testing", "scipy.linalg")


def install() -> None:
    """For the `benchlab` executable, before anything imports numpy or scipy; after
    `interrupts.install`, whose import it wraps."""
    if not any(isinstance(f, _LazyFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _LazyFinder())
    global _inner_import
    if builtins.__import__ is not _paused_import:
        _inner_import, builtins.__import__ = builtins.__import__, _paused_import


class _LazyFinder:
    """The path finder's spec of a lazy package, its loader made lazy."""

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None) -> ModuleSpec | None:
        if fullname not in LAZY:
            return None
        from importlib import machinery, util  # once numpy or scipy is imported: never on a help's path

        spec = machinery.PathFinder.find_spec(fullname, path, target)
        if spec is not None and spec.loader is not None:
            spec.loader = util.LazyLoader(spec.loader)
        return spec


_inner_import: Callable[..., ModuleType] = builtins.__import__  # what `_paused_import` calls: set by `install`


def _paused_import(*args: object, **kwargs: object) -> ModuleType:
    """`builtins.__import__` (its arguments passed on as given) with the collector paused while the
    outermost import runs, and what it made frozen when it ends."""
    if not gc.isenabled():  # inside an import, or paused by its caller
        return _inner_import(*args, **kwargs)
    loaded = len(sys.modules)
    gc.disable()
    try:
        return _inner_import(*args, **kwargs)
    finally:
        if len(sys.modules) != loaded:  # modules were run (not an import of loaded ones, as in a loop)
            gc.freeze()
        gc.enable()
