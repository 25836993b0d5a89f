"""numpy's f2py and testing packages, which benchlab never uses, loaded only where something uses them.

scipy's import of numpy's array API (`scipy._lib.array_api_compat.numpy`, loaded by
`scipy.special`, which every command that judges needs) runs `from numpy import *`, and numpy's
`__all__` names its lazily loaded packages `f2py` and `testing`: the star import loads both, and
with them Fortran's parser and unittest. That was 70-110 ms of CPU of every command that judges
anything (`from scipy import special`: 0.56-0.60 -> 0.45-0.49 s here, bench/startup.py), about a
sixth of its start. The standard library's `importlib.util.LazyLoader` makes each a module that
runs its code at its first attribute access, so the star import binds it unrun and a use still
finds the whole package. Installed by the `benchlab` executable only, like `benchlab.blas`.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing's own costs a help 6 ms to import
if TYPE_CHECKING:
    from collections.abc import Sequence
    from importlib.machinery import ModuleSpec
    from types import ModuleType

DEFERRED = ("numpy.f2py", "numpy.testing")


def install() -> None:
    """For the `benchlab` executable, before anything imports numpy."""
    if not any(isinstance(f, _DeferringFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _DeferringFinder())


class _DeferringFinder:
    """The path finder's spec of a deferred package, its loader made lazy."""

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None) -> ModuleSpec | None:
        if fullname not in DEFERRED:
            return None
        from importlib import machinery, util  # once numpy is imported: never on a help's path

        spec = machinery.PathFinder.find_spec(fullname, path, target)
        if spec is not None and spec.loader is not None:
            spec.loader = util.LazyLoader(spec.loader)
        return spec
