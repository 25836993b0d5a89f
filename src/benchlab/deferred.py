"""Packages that scipy's import loads and benchlab never uses, run only where something uses them.

Every command that judges imports `scipy.special`, whose import loads more than its functions:
its own import of numpy's array API (`scipy._lib.array_api_compat.numpy`) runs
`from numpy import *`, and numpy's `__all__` names its lazily loaded packages `f2py` and
`testing` (Fortran's parser, unittest); its orthogonal polynomials import `scipy.linalg` for a
function called only when one computes their roots. Together 110-150 ms of CPU of every such
command (`from scipy import special` with benchlab.blas: 0.28-0.34 -> 0.16-0.21 s here), about a
sixth of its start. The standard library's `importlib.util.LazyLoader` makes each a module that
runs its code at its first attribute access, so an import binds it unrun and a use (a sweep's
fit, through scipy.optimize) still finds the whole package. Installed by the `benchlab`
executable only, like `benchlab.blas`.

Python 3.11's lazy module is not safe to touch first from two threads at once; benchlab's only
threads (`stats.judge`'s rows) use numpy and scipy.special's functions, which reach none of these.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing's own costs a help 6 ms to import
if TYPE_CHECKING:
    from collections.abc import Sequence
    from importlib.machinery import ModuleSpec
    from types import ModuleType

DEFERRED = ("numpy.f2py", "numpy.testing", "scipy.linalg")


def install() -> None:
    """For the `benchlab` executable, before anything imports numpy or scipy."""
    if not any(isinstance(f, _DeferringFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _DeferringFinder())


class _DeferringFinder:
    """The path finder's spec of a deferred package, its loader made lazy."""

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None) -> ModuleSpec | None:
        if fullname not in DEFERRED:
            return None
        from importlib import machinery, util  # once numpy or scipy is imported: never on a help's path

        spec = machinery.PathFinder.find_spec(fullname, path, target)
        if spec is not None and spec.loader is not None:
            spec.loader = util.LazyLoader(spec.loader)
        return spec
