"""numpy's f2py and testing and scipy's linalg, which `scipy.special`'s import loads, stay unrun in
the `benchlab` executable until something uses them, and then work whole."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

LOAD = """
import json, sys
from benchlab import deferred
if sys.argv[1] == "installed":
    deferred.install()
from scipy import special
loaded = {m: m in sys.modules for m in ("numpy.f2py.crackfortran", "numpy.testing._private.utils", "unittest", "scipy.linalg._basic")}
import numpy
from scipy import optimize
numpy.testing.assert_allclose(special.ndtr(0.0), 0.5)
fit = optimize.least_squares(lambda p: p - numpy.array([1.0, 2.0]), numpy.zeros(2)).x.tolist()  # through scipy.linalg
print(json.dumps({"loaded": loaded, "include": numpy.f2py.get_include(), "after": "unittest" in sys.modules, "fit": fit}))
"""


def loads(how: str) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-c", LOAD, how], capture_output=True, text=True, check=True)
    seen: dict[str, Any] = json.loads(done.stdout)
    return seen


def test_scipy_loads_without_f2py_testing_and_linalg_which_still_work_when_used() -> None:
    plain, installed = loads("plain"), loads("installed")
    assert all(plain["loaded"].values())  # what the star import costs without it
    assert not any(installed["loaded"].values())
    assert installed["include"] == plain["include"] and str(installed["include"]).endswith("src")
    assert installed["after"] is True  # numpy.testing ran at its first use
    assert installed["fit"] == plain["fit"] == [1.0, 2.0]
