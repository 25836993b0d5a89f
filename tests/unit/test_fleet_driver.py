"""The driver's side of a fleet without a broker: what it refuses, when it warns, and how it
follows the database; and the one-line errors of `benchlab worker` and `run --fleet`."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchlab.errors import EnvironmentProblem, Interrupted, SpecError
from benchlab.fleet.driver import check_fleet_spec, consumer_timeout_warning, follow
from benchlab.runner import Prepared
from benchlab.spec.validate import spec_from_dict
from benchlab.store.fleet import FleetProgress, Refusal
from tests.conftest import cli


def _prepared(**extra: object) -> Prepared:
    raw = {
        "name": "f",
        "blocks": 2,
        "workloads": [{"name": "t", "command": ["true"]}],
        "variants": [{"name": "a"}, {"name": "b"}],
    }
    return Prepared.from_spec(spec_from_dict({**raw, **extra}, "test"))


class Scripted:
    """A store whose fleet progress is read from a script, one entry per poll."""

    def __init__(self, *steps: FleetProgress) -> None:
        self.steps = list(steps)

    def fleet_progress(self, exp: object) -> FleetProgress:
        return self.steps.pop(0) if len(self.steps) > 1 else self.steps[0]


class Shown:
    def __init__(self) -> None:
        self.seen: list[tuple[int, int]] = []
        self.notes: list[str] = []

    def note(self, text: str) -> None:
        self.notes.append(text)

    def show(self, progress: FleetProgress, total: int) -> None:
        self.seen.append((progress.runs, total))


def test_following_ends_when_every_block_is_stored_whole() -> None:
    store = Scripted(
        FleetProgress(0, frozenset()),
        FleetProgress(2, frozenset({("t", 1)}), {"w1": 2}),
        FleetProgress(4, frozenset({("t", 0), ("t", 1)}), {"w1": 2, "w2": 2}),
    )
    view = Shown()
    follow(store, object(), _prepared(), view, sleep=lambda _: None)  # type: ignore[arg-type]
    assert view.seen == [(0, 4), (2, 4), (4, 4)]


def test_an_awaited_block_is_waited_for_until_an_attempt_after_the_publish_ends_it() -> None:
    """A profiled block is whole once its timed runs are stored; its profiled runs follow them,
    so only the end of the attempt that ran it (done, or skipped where no perf is) says it is done."""
    whole = frozenset({("t", 0), ("t", 1)})
    store = Scripted(
        FleetProgress(4, whole, answered={("t", 0): 5, ("t", 1): 3}),  # block 2's answer is older than the publish
        FleetProgress(4, whole, answered={("t", 0): 5, ("t", 1): 6}),
    )
    view = Shown()
    follow(store, object(), _prepared(), view, since=4, awaited=frozenset(whole), sleep=lambda _: None)  # type: ignore[arg-type]
    assert len(view.seen) == 2


def test_a_slow_read_of_progress_is_made_less_often() -> None:
    times = iter([0.0, 0.5, 10.0, 10.01, 20.0, 20.01])  # each read's start and end
    slept: list[float] = []
    store = Scripted(
        FleetProgress(0, frozenset()), FleetProgress(2, frozenset()), FleetProgress(4, frozenset({("t", 0), ("t", 1)}))
    )
    follow(store, object(), _prepared(), Shown(), sleep=slept.append, clock=lambda: next(times))  # type: ignore[arg-type]
    assert slept == [10.0, 1.0]  # a read of 0.5 s: the next in 10 s; one of 10 ms: the next in the usual second


def test_a_refusal_newer_than_the_publish_ends_the_wait_and_an_older_one_does_not() -> None:
    old = Refusal("t", 0, "w9", "was not allowed then", attempt_id=7, state="refused")
    new = Refusal("t", 1, "w2", "/usr/bin/true is not on this worker's --allow list", attempt_id=9, state="refused")
    store = Scripted(FleetProgress(0, frozenset(), refusals=(old,)), FleetProgress(0, frozenset(), refusals=(old, new)))
    with pytest.raises(EnvironmentProblem, match="worker w2 refused t block 2: /usr/bin/true is not on"):
        follow(store, object(), _prepared(), Shown(), since=8, sleep=lambda _: None)  # type: ignore[arg-type]


def test_a_worker_that_could_not_run_a_block_is_noted_once_and_the_wait_goes_on() -> None:
    failed = Refusal("t", 0, "w2", "a knob journal is left", attempt_id=3, state="failed")
    store = Scripted(
        FleetProgress(0, frozenset(), refusals=(failed,)),
        FleetProgress(2, frozenset({("t", 1)}), refusals=(failed,)),
        FleetProgress(4, frozenset({("t", 0), ("t", 1)}), refusals=(failed,)),
    )
    view = Shown()
    follow(store, object(), _prepared(), view, sleep=lambda _: None)  # type: ignore[arg-type]
    assert view.notes == [
        "worker w2 could not run t block 1 and stopped (the block went back to the queue): a knob journal is left"
    ]


def test_ctrl_c_while_following_leaves_the_fleet_running() -> None:
    def interrupted(_: float) -> None:
        raise KeyboardInterrupt

    with pytest.raises(Interrupted, match="the workers go on"):
        follow(Scripted(FleetProgress(0, frozenset())), object(), _prepared(), Shown(), sleep=interrupted)  # type: ignore[arg-type]


def test_what_a_fleet_cannot_run_is_refused_before_anything_is_stored() -> None:
    with pytest.raises(SpecError, match="until-decided runs on one machine"):
        check_fleet_spec(_prepared(until_decided={"min_blocks": 3, "max_blocks": 6}))
    with pytest.raises(SpecError, match="runs over ssh"):
        check_fleet_spec(_prepared(variants=[{"name": "a"}, {"name": "r", "environment": "ssh://lab@elsewhere"}]))


def test_a_block_longer_than_the_consumer_timeout_is_warned_of() -> None:
    prepared = _prepared(timeout=100, warmup=1)  # two variants, each with a warm-up: 400 s at most
    assert consumer_timeout_warning(prepared, 400) is None
    warning = consumer_timeout_warning(prepared, 399)
    assert warning is not None and "up to 400 s" in warning and "consumer_timeout" in warning


def test_a_worker_is_never_given_a_database_by_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BENCHLAB_DB")
    key = tmp_path / "key"
    key.write_bytes(b"x" * 40)
    key.chmod(0o600)
    proc = cli("worker", "--pool", "lab", "--broker", "amqp://u:p@127.0.0.1:1/v", "--key", str(key), timeout=60)
    assert proc.returncode == 2 and "no database: give --db" in proc.stderr


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        (["worker", "--pool", "lab"], 2, "no broker: give --broker"),
        (["worker", "--pool", "no such pool", "--broker", "amqp://u:p@127.0.0.1/v"], 2, "is no pool name"),
        (["worker", "--pool", "lab", "--broker", "redis://127.0.0.1"], 2, "'redis' is no RabbitMQ URL"),
        (["worker", "--pool", "lab", "--broker", "amqp://u:p@127.0.0.1/v"], 2, "no fleet key: give --key"),
        (["worker", "--pool", "lab", "--broker", "amqp://u:p@127.0.0.1/v", "--key", "KEY", "--allow", "no-such-program"], 2,
         "'no-such-program' is no executable program"),
        (["worker", "--pool", "lab", "--broker", "amqp://u:p@127.0.0.1/v", "--key", "OPEN_KEY"], 3, "readable by other users"),
        (["run", "examples/zstd-levels.toml", "--fleet", "lab", "--broker", "amqp://u:p@127.0.0.1:1/v", "--key", "KEY",
          "--until-decided"], 2, "until-decided runs on one machine"),
        (["run", "examples/zstd-levels.toml", "--fleet", "lab", "--broker", "amqp://u:p@127.0.0.1:1/v", "--key", "KEY"], 3,
         "the broker at amqp://u:**@127.0.0.1:1/v refused the tasks after 0 of"),
    ],
)  # fmt: skip
def test_fleet_commands_refuse_in_one_line(tmp_path: Path, args: list[str], code: int, says: str) -> None:
    key, open_key = tmp_path / "key", tmp_path / "open-key"
    for path, mode in ((key, 0o600), (open_key, 0o644)):
        path.write_bytes(b"x" * 40)
        path.chmod(mode)
    args = [str(key) if a == "KEY" else str(open_key) if a == "OPEN_KEY" else a for a in args]
    proc = cli(*args, timeout=120)
    assert proc.returncode == code, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert says in lines[-1] and "Traceback" not in proc.stderr, proc.stderr
    assert "--fleet" not in args or cli("list").stdout.count("zstd-levels") == 0  # nothing stored
