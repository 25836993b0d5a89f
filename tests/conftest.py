"""Shared fixtures: a private results database and knob journal per test, and the real CLI; and the
suite's two phases (docs/design.md, "Tests"): `--phase=parallel` selects the tests that may run beside
each other under pytest-xdist (those sharing a costly session fixture on one worker, `--dist
loadgroup`), `--phase=serial` those marked `serial`, which run alone after them."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

BENCHLAB = str(Path(sys.executable).parent / "benchlab")

pytest_plugins = ["tests.servers"]  # the PostgreSQL and RabbitMQ servers, one of each per session

# Session fixtures that start something costly and shared (a server, a guest's kernel, a root filesystem),
# each in its group: the parallel phase runs every test of a group on one worker (pytest-xdist's
# `--dist loadgroup`), which starts the fixture once for all of them rather than each worker its own.
# A test that reaches one through `request.getfixturevalue` names its group: `@pytest.mark.shared(GROUP)`.
SHARED = {"postgres_url": "servers", "rabbitmq": "servers", "guest_kernel": "guests", "rootfs": "rootfs"}

# The groups that keep a worker busy for minutes each (guests booted under TCG; the clean root's
# install, build and demo): handed out first, one to a worker, so that the other tests fill in around
# them instead of one starting when most of the phase is over (`scheduled_first`).
FIRST = ("guests", "clean-root")


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--phase") == "parallel" and hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False  # pytest-xdist hands groups out as collected: `scheduled_first`


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--phase", choices=["parallel", "serial"], default=None,
                     help="only the tests that may run beside others (parallel), or only those marked serial "
                          "(which change machine-wide state, use a shared server or guest, or measure speed); "
                          "both when not given")  # fmt: skip
    parser.addoption(
        "--update-golden",
        action="store_true",
        help="rewrite tests/golden's files from the renderers as they are (./dev golden; read the diff before committing)",
    )


def shared_groups(item: pytest.Item) -> set[str]:
    """The groups of the shared session fixtures a test uses, named or marked."""
    groups = {SHARED[name] for name in getattr(item, "fixturenames", ()) if name in SHARED}
    return groups | {str(mark.args[0]) for mark in item.iter_markers("shared")}


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own, which reads the groups into the test's id
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("serial") is None:
            for group in sorted(shared_groups(item)):
                item.add_marker(pytest.mark.xdist_group(group))
    phase = config.getoption("--phase")
    if phase is None:
        return
    keep: list[pytest.Item] = []
    other: list[pytest.Item] = []
    for item in items:
        (keep if (item.get_closest_marker("serial") is not None) == (phase == "serial") else other).append(item)
    if other:
        config.hook.pytest_deselected(items=other)
    items[:] = keep
    if phase == "parallel":
        scheduled_first(items)


def scheduled_first(items: list[pytest.Item]) -> None:
    """Orders the parallel phase as pytest-xdist hands its work out, a group (or a test of none) at a
    time in the order first collected (its reordering by size is off: `pytest_configure`): the
    groups of FIRST, then larger groups before smaller as its own order has them, then as collected."""

    def group(item: pytest.Item) -> str:
        mark = item.get_closest_marker("xdist_group")  # the mark pytest-xdist reads
        return str(mark.args[0]) if mark is not None and mark.args else item.nodeid

    size = Counter(group(item) for item in items)
    seen: dict[str, int] = {}
    for index, item in enumerate(items):
        seen.setdefault(group(item), index)

    def rank(item: pytest.Item) -> tuple[int, int, int]:
        name = group(item)
        return (FIRST.index(name) if name in FIRST else len(FIRST), -size[name], seen[name])

    items.sort(key=rank)


@pytest.fixture(autouse=True)
def private_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No test touches the user's database or journal."""
    monkeypatch.setenv("BENCHLAB_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("BENCHLAB_DB", str(tmp_path / "results.db"))
    return tmp_path


def cli(*args: str, check: bool = False, timeout: float = 300, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Runs the installed `benchlab` executable, as a user would."""
    proc = subprocess.run([BENCHLAB, *args], capture_output=True, text=True, timeout=timeout, cwd=cwd, env=os.environ.copy())
    if check and proc.returncode != 0:
        raise AssertionError(f"benchlab {' '.join(args)} exited {proc.returncode}:\n{proc.stderr}")
    return proc


def experiment_rows(spec: dict[str, Any], version: str = "v1") -> dict[str, Any]:
    """What `Store.create_experiment` takes, made from a spec as a user writes it the way the
    runner makes it (a stored spec is read back against the spec model): the spec validated and
    dumped, its workloads at `version`, its variants' configs and baseline."""
    from benchlab.spec.validate import spec_from_dict

    model = spec_from_dict(spec)
    stored = model.model_dump(mode="json")
    return {
        "name": model.name,
        "spec": stored,
        "workloads": [(w.name, w.kind, version) for w in model.workloads],
        "variants": [(v["name"], v, v["name"] == model.baseline_name) for v in stored["variants"]],
    }


def need(tool: str) -> str:
    path = shutil.which(tool)
    if path is None:
        pytest.skip(f"{tool} is not installed (the README's test command installs it)")
    return path


@pytest.fixture(scope="session")
def rootfs(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A container root filesystem, built once per test session by `benchlab container build`."""
    if os.geteuid() != 0:
        pytest.skip("containers need root")
    if shutil.which("mmdebstrap") is None:
        pytest.skip("mmdebstrap is not installed (the README's test command installs it)")
    path = tmp_path_factory.mktemp("container") / "rootfs"
    proc = subprocess.run([BENCHLAB, "container", "build", "--path", str(path)], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr
    return str(path)


def signals_as_at_a_terminal() -> None:
    """A child's stop signals at their defaults, as a shell at a terminal gives them: the suite itself may run
    under nohup (SIGHUP ignored) or as a background job of a script (SIGINT and SIGQUIT
    ignored), and benchlab rightly keeps an inherited SIG_IGN (see the nohup test)."""
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(signum, signal.SIG_DFL)
