"""The layers of pyproject's [tool.importlinter] hold: a module imports only from layers below its
own (imports inside functions count too, so none can dodge a cycle), no package's modules
import each other in a circle, the statistics core imports only numpy, scipy and the bottom
layer, and the renderers only the report model and the bottom layer."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
LINT_IMPORTS = str(Path(sys.executable).parent / "lint-imports")
BOTTOM = (
    "metrics",
    "errors",
    "escapes",
    "notes",
    "terms",
    "histogram",
    "stacks",
)  # the layers' bottom, importing nothing of benchlab


def lint(*contracts: str, cwd: Path = ROOT, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    argv = [LINT_IMPORTS, str(ROOT / "pyproject.toml"), "--no-cache", "--no-logo"]
    for contract in contracts:
        argv += ["--contract", contract]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=cwd, env=env)


def broken_copy(tmp_path: Path, module: str, line: str, contract: str) -> subprocess.CompletedProcess[str]:
    """`contract` checked against a copy of the package with `line` added to `module`."""
    copy = tmp_path / "benchlab"
    shutil.copytree(ROOT / "src" / "benchlab", copy, ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    with open(copy / module, "a") as f:
        f.write("\n\n" + line)
    return lint(contract, cwd=tmp_path, env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"})


@pytest.mark.parametrize("contract", ["layers", "acyclic", "pure-stats", "report-reads-the-model", "views-apart-from-formats"])
def test_the_import_contract_is_kept(contract: str) -> None:
    proc = lint(contract)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize(
    ("module", "line", "broken"),
    [
        # a low layer reaching up, from inside a function as a cycle would be dodged
        (
            "errors.py",
            "def _dodge() -> None:\n    import benchlab.cli  # noqa\n",
            "benchlab.errors is not allowed to import benchlab.cli",
        ),
        # siblings of one layer are independent
        ("measure/host.py", "import benchlab.store\n", "benchlab.measure is not allowed to import benchlab.store"),
    ],
)
def test_an_import_against_the_layers_is_caught(tmp_path: Path, module: str, line: str, broken: str) -> None:
    """The contract is checked against a copy of the package with one bad import added: the test
    above cannot pass merely because the checker looked at nothing."""
    proc = broken_copy(tmp_path, module, line, "layers")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert broken in proc.stdout


@pytest.mark.parametrize(
    ("module", "line", "broken"),
    [
        # the core reaching into the lab, from inside a function
        (
            "stats/fit.py",
            "def _store() -> None:\n    import benchlab.store  # noqa\n",
            "benchlab.stats is not allowed to import benchlab.store",
        ),
        # a third-party package other than numpy and scipy
        ("stats/verdict.py", "import pydantic  # noqa\n", "benchlab.stats is not allowed to import pydantic"),
        # the same, through the bottom layer the core may import
        ("metrics.py", "import pydantic  # noqa\n", "benchlab.stats is not allowed to import pydantic"),
    ],
)
def test_an_impure_statistics_core_is_caught(tmp_path: Path, module: str, line: str, broken: str) -> None:
    proc = broken_copy(tmp_path, module, line, "pure-stats")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert broken in proc.stdout


def _contract(name: str) -> dict[str, object]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (contract,) = (c for c in config["contracts"] if c["id"] == name)
    return contract  # type: ignore[no-any-return]


def _top_level() -> tuple[set[str], set[str]]:
    """benchlab's top-level modules and the third-party packages the import graph holds."""
    import grimp

    graph = grimp.build_graph("benchlab", include_external_packages=True, cache_dir=None)
    ours = {m for m in graph.modules if m.count(".") == 1 and m.startswith("benchlab.")}
    third_party = {m for m in graph.modules if "." not in m and m != "benchlab" and m not in sys.stdlib_module_names}
    assert {"benchlab.store", "benchlab.report_model"} <= ours and {"pydantic", "numpy"} <= third_party  # read
    return ours, third_party


def test_the_pure_stats_contract_forbids_everything_but_numpy_scipy_and_the_bottom_layer() -> None:
    """A forbidden contract lists what is forbidden, so the list must name every other top-level
    module of benchlab and every third-party package benchlab imports: one added later and left
    out of the list would be a way around the contract."""
    contract = _contract("pure-stats")
    ours, third_party = _top_level()
    allowed = {"benchlab.stats", "benchlab.metrics", "benchlab.errors", "benchlab.terms", "numpy", "scipy"}
    assert sorted((ours | third_party) - allowed - set(contract["forbidden_modules"])) == []  # type: ignore[call-overload]
    assert contract["source_modules"] == ["benchlab.stats"] and not contract.get("allow_indirect_imports")


def test_the_report_contract_forbids_everything_but_the_model_and_the_bottom_layer() -> None:
    """The same for the renderers: every top-level module but the report model and the bottom
    layer is forbidden (third-party libraries are the renderers' own), and the one exception is
    the bisection's lines reading the bisection's state, named."""
    contract = _contract("report-reads-the-model")
    ours, _ = _top_level()
    allowed = {"benchlab.report", "benchlab.report_model", *(f"benchlab.{m}" for m in BOTTOM)}
    assert sorted(ours - allowed - set(contract["forbidden_modules"])) == []  # type: ignore[call-overload]
    assert contract["source_modules"] == ["benchlab.report"] and not contract.get("allow_indirect_imports")
    assert contract["ignore_imports"] == ["benchlab.report.bisect_lines -> benchlab.stats.bisection"]
    layers = _contract("layers")["layers"]
    assert layers[-1] == " | ".join(BOTTOM)  # type: ignore[index]


@pytest.mark.parametrize(
    ("module", "line", "broken"),
    [
        # a renderer reaching into the workloads for a constant, from inside a function
        (
            "report/formats/html/figures.py",
            "def _grid() -> None:\n    import benchlab.workloads.probe  # noqa\n",
            "benchlab.report is not allowed to import benchlab.workloads",
        ),
        # a view reading the statistics core rather than the model's field
        (
            "report/views/cells.py",
            "import benchlab.stats.families  # noqa\n",
            "benchlab.report is not allowed to import benchlab.stats",
        ),
        # a format reading the store, through the analysis
        (
            "report/formats/markdown.py",
            "import benchlab.analysis.history  # noqa\n",
            "benchlab.report is not allowed to import benchlab.analysis",
        ),
    ],
)
def test_a_renderer_reading_past_the_report_model_is_caught(tmp_path: Path, module: str, line: str, broken: str) -> None:
    proc = broken_copy(tmp_path, module, line, "report-reads-the-model")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert broken in proc.stdout


def test_a_view_drawing_itself_in_a_format_is_caught(tmp_path: Path) -> None:
    """A view that reached for a format (here the terminal table's layout) would make its grid
    depend on one medium: the contract between the report's formats and views says no."""
    line = "def _fit() -> None:\n    import benchlab.report.formats.layout  # noqa\n"
    proc = broken_copy(tmp_path, "report/views/metric_grid.py", line, "views-apart-from-formats")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "benchlab.report.views.metric_grid -> benchlab.report.formats.layout" in proc.stdout


def test_a_module_outside_every_layer_is_caught(tmp_path: Path) -> None:
    """A new top-level module must be given its place in the layers, or nothing checks its imports."""
    copy = tmp_path / "benchlab"
    shutil.copytree(ROOT / "src" / "benchlab", copy, ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    (copy / "stray.py").write_text("import benchlab.cli\n")
    proc = lint("layers", cwd=tmp_path, env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 1 and "benchlab.stray" in proc.stdout, proc.stdout + proc.stderr


def test_the_command_line_starts_without_the_heavy_libraries() -> None:
    """Every command pays for what `benchlab` imports before it parses its arguments (0.33 s on this
    VM; 1.0 s once a report module pulled in scipy and SQLAlchemy): the libraries a command needs
    load inside it, only for it."""
    heavy = ("scipy", "sqlalchemy", "matplotlib", "pandas", "otava", "orjson", "celery", "kombu")
    code = f"import sys, benchlab.entry, benchlab.cli; print(' '.join(m for m in {heavy!r} if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.split() == []
