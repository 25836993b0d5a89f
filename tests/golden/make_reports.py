"""How the fixed reports in tests/golden/reports/ were made: once, from the fake machines the unit
tests run experiments on, then frozen. Not run by the tests, and not by `./dev golden`: the golden
files test the renderers on these inputs, so a change to the analysis or the statistics must not
move them (rerun this only to add a report or a field the model gained, and read its diff).

    python -m tests.golden.make_reports    # from the repository root, with benchlab importable

Every time, path and host a run would take from the machine is fixed here (the fake runners'
clocks count from 1000 s; an experiment's creation time is set to 1,800,000,000 s, 2027-01-15 08:00
UTC; a temporary folder is written `/lab`), and
names are made hostile afterwards (`hostile`), as a bundle from another machine could carry them.
"""

from __future__ import annotations

import itertools
import json
import tempfile
from pathlib import Path
from typing import Any

from benchlab.analysis.analyze import analyze
from benchlab.analysis.changepoints import Settings
from benchlab.analysis.history import Selection, history
from benchlab.runner import Prepared, Runner
from benchlab.spec.validate import spec_from_dict
from benchlab.store import Store
from tests.unit.test_app_cycle_grid import SPEC as APP_CYCLE_SPEC
from tests.unit.test_app_cycle_grid import report as app_cycle_report
from tests.unit.test_diff import diffed, stored
from tests.unit.test_history import nightly
from tests.unit.test_html_report import renamed
from tests.unit.test_runner import HOST, FakeJournal, JitteryExecutor
from tests.unit.test_scores import run_suite
from tests.unit.test_sweeps import WORKLOADS, RateMachine

REPORTS = Path(__file__).parent / "reports"
CREATED = 1_800_000_000.0
# Text that must stay text in every format: Markdown's cell and emphasis marks, HTML and rich markup,
# a terminal escape, a bidi override, wide characters (two columns each) and a `$` mathtext would read.
HOSTILE = '<b>&"x"</b>|*`[bold]\x1b[31m\u202e変種$x^2$'
HOST_NAME = "[red]evil[/red] <b>|*"  # a host name the store takes (no control character), from test_diff


def _run(tmp: Path, executor: Any, data: dict[str, Any]) -> Any:
    store = Store(str(tmp / f"{data['name']}.db"))
    clock = itertools.count(1000.0, 0.5)
    runner = Runner(store, executor=executor, clock=lambda: next(clock), journal=FakeJournal(), host=HOST)  # type: ignore[arg-type]
    return analyze(store.load(runner.run(Prepared.from_spec(spec_from_dict(data))), every_record=True)).report()


def metrics(tmp: Path) -> dict[str, Any]:
    """Two workloads, a variant of each verdict and one whose every run failed (n/a cells)."""
    env = {"FAKE_NOISE": "0.002"}
    variants = [
        {"name": "base", "env": {**env, "FAKE_WALL": "1.0"}},
        {"name": "faster", "env": {**env, "FAKE_WALL": "0.9"}},
        {"name": "slower", "env": {**env, "FAKE_WALL": "1.1"}},
        {"name": "twin", "env": {**env, "FAKE_WALL": "1.0"}},
        {"name": "noisy", "env": {"FAKE_WALL": "1.02", "FAKE_NOISE": "0.3"}},
        {"name": "broken", "env": {"FAKE_FAIL": "1"}},
    ]
    workloads = [{"name": "build", "command": ["true"]}, {"name": "odd", "command": ["true"]}]
    report = _run(tmp, JitteryExecutor(), {"name": "golden", "blocks": 8, "workloads": workloads, "variants": variants})
    names = {"golden": f"golden {HOSTILE}", "odd": f"odd {HOSTILE}", "noisy": f"noisy {HOSTILE}"}
    document = json.loads(renamed(report, names, failed_message=f"exit 3 {HOSTILE}").to_json())
    document["warnings"].append(f"a warning naming {HOSTILE}")
    return document


def scores(tmp: Path) -> dict[str, Any]:
    variants: list[dict[str, Any]] = [{"name": "base"}, {"name": "fast", "env": {"FAKE_SPEED": "1.1"}}]
    return run_suite(tmp / "suite", variants, blocks=6, workloads=["html5", "sqlite", "nbody"], shared=False)


def sweep(tmp: Path) -> dict[str, Any]:
    data = {
        "name": "rate", "workloads": WORKLOADS, "variants": [{"name": "none"}], "blocks": 8,
        "sweep": {"fit": "reciprocal", "parameters": [{"field": "env.N", "values": [0, 1, 2, 10, 100]}]},
    }  # fmt: skip
    return json.loads(_run(tmp, RateMachine(), data).to_json())


def app_cycle() -> dict[str, Any]:
    return json.loads(app_cycle_report(APP_CYCLE_SPEC, ["base", "mglru", "thin"]).to_json())  # type: ignore[arg-type]


def diff(tmp: Path) -> dict[str, Any]:
    store = Store(str(tmp / "results.db"))
    stored(store, "mine", {"base": [1.00, 1.02, 0.99, 1.01, 1.00, 0.98]}, at=CREATED, user=True)
    stored(store, "theirs", {"base": [1.10, 1.12, 1.09, 1.11, 1.13, 1.10]}, at=CREATED + 86_400, host=HOST_NAME, user=True)
    return json.loads(diffed(store, "mine", "theirs").to_json())


def changes(tmp: Path) -> dict[str, Any]:
    store = nightly(tmp / "history.db", [1.0] * 5 + [1.3] * 5)
    return json.loads(history(store, Selection(), Settings()).to_json())


def fixed(value: Any, tmp: str) -> Any:
    """Every temporary path replaced by `/lab`."""
    if isinstance(value, dict):
        return {k: fixed(v, tmp) for k, v in value.items()}
    if isinstance(value, list):
        return [fixed(v, tmp) for v in value]
    return value.replace(tmp, "/lab") if isinstance(value, str) else value


def main() -> None:
    REPORTS.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        made = {
            "metrics": metrics(tmp),
            "scores": scores(tmp),
            "sweep": sweep(tmp),
            "app-cycle": app_cycle(),
            "diff": diff(tmp),
            "history": changes(tmp),
        }
        for name, document in made.items():
            if "experiment" in document:  # the runner's clock is fake, the store's creation time is not
                document["experiment"]["created_at"] = CREATED
            (REPORTS / f"{name}.json").write_text(json.dumps(fixed(document, folder), indent=2) + "\n")


if __name__ == "__main__":
    main()
