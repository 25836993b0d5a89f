"""benchlab's own numpy and scipy compute on one BLAS thread.

Each of numpy and scipy maps an OpenBLAS of its own, and each starts a thread per CPU as it
loads; those spin waiting for work that benchlab's statistics (small vectors) never give them.
On a 2-core machine that was 0.3-0.5 s of CPU per command that judges anything (`report` of a
small experiment: 1.4 s of CPU, 0.8 s on one thread), taken from the core a workload or a
parallel test runs on.

OpenBLAS reads OPENBLAS_NUM_THREADS once, in its constructor, when the first extension module
linking it is loaded. Set in benchlab's environment, every workload would inherit it (a numpy
workload measured on one thread); threadpoolctl limits threads only after they have started.
So the variable is set only while a numpy or scipy extension module loads, and removed before
anything else runs. A value the user set is theirs: then nothing is installed.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing's own costs a help 6 ms to import
if TYPE_CHECKING:
    from collections.abc import Sequence
    from importlib.abc import Loader as _Loader
    from importlib.machinery import ModuleSpec
    from types import ModuleType
    from typing import Any
else:
    _Loader = object

VARIABLE = "OPENBLAS_NUM_THREADS"
PACKAGES = ("numpy.", "scipy.")  # the extension modules that link an OpenBLAS are inside these


def install() -> None:
    """For the `benchlab` executable, before anything imports numpy or scipy."""
    if VARIABLE not in os.environ and not any(isinstance(f, _OneThreadFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _OneThreadFinder())


class _OneThreadFinder:
    """A meta path finder for numpy's and scipy's modules: the same spec the path finder gives,
    with an extension module's loader wrapped (importlib.abc's base class costs a help 18 ms)."""

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None) -> ModuleSpec | None:
        if not fullname.startswith(PACKAGES):
            return None
        from importlib import machinery  # once numpy or scipy is imported: never on a help's path

        spec = machinery.PathFinder.find_spec(fullname, path, target)
        if spec is not None and type(spec.loader) is machinery.ExtensionFileLoader:
            spec.loader = _OneThreadLoader(spec.loader)
        return spec


class _OneThreadLoader(_Loader):
    """An extension module's own loader, with the variable set while it maps the module."""

    def __init__(self, loader: Any) -> None:
        self._loader = loader

    def create_module(self, spec: ModuleSpec) -> ModuleType:
        os.environ[VARIABLE] = "1"
        try:
            module: ModuleType = self._loader.create_module(spec)
            return module
        finally:
            del os.environ[VARIABLE]

    def __getattr__(self, name: str) -> Any:  # exec_module, get_filename, is_package...
        return getattr(self._loader, name)
