"""A fleet on this machine: RabbitMQ and PostgreSQL on loopback (tests/servers.py), workers as
separate `benchlab worker` processes, the driver as `benchlab run --fleet`; then kills, restarts
and forgeries, checked against what the database holds."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchlab.fleet.app import TASK, make_app, queue_name
from benchlab.fleet.envelope import BlockTask, seal
from benchlab.store import Store
from benchlab.variants import kernels
from tests.conftest import BENCHLAB, need
from tests.servers import Broker, fresh_database

pytestmark = pytest.mark.serial  # the shared broker and database, knobs, guests, timed verdicts

POOL = "lab"


class Fleet:
    """Workers and drivers of one test, each its own process group, all gone at the end."""

    def __init__(self, broker: Broker, db: str, folder: Path) -> None:
        self.broker, self.db, self.folder = broker, db, folder
        self.key = folder / "fleet.key"
        self.key.write_bytes(os.urandom(32).hex().encode())
        self.key.chmod(0o600)
        self.procs: dict[str, subprocess.Popen[str]] = {}

    def _start(self, name: str, args: list[str]) -> subprocess.Popen[str]:
        out, log = (self.folder / f"{name}.out").open("a"), (self.folder / f"{name}.log").open("a")
        proc = subprocess.Popen([BENCHLAB, *args], stdout=out, stderr=log, text=True,
                                start_new_session=True, env={**os.environ, "COLUMNS": "120"})  # fmt: skip
        self.procs[name] = proc
        return proc

    def worker(self, name: str, *extra: str, broker: str | None = None, db: str | None = None) -> subprocess.Popen[str]:
        return self._start(name, ["worker", "--pool", POOL, "--broker", broker or self.broker.url, "--db", db or self.db,
                                  "--key", str(self.key), "--name", name, "--allow", "sleep", *extra])  # fmt: skip

    def driver(self, spec: Path, *extra: str, name: str = "driver", broker: str | None = None) -> subprocess.Popen[str]:
        return self._start(name, ["run", str(spec), "--fleet", POOL, "--broker", broker or self.broker.url,
                                  "--key", str(self.key), "--db", self.db, "--format", "json", *extra])  # fmt: skip

    def kill(self, name: str) -> None:
        """kill -9 of the whole worker (its main process and the pool child running the block)."""
        os.killpg(self.procs[name].pid, signal.SIGKILL)
        self.procs[name].wait()

    def log(self, name: str) -> str:
        return (self.folder / f"{name}.log").read_text(errors="replace")

    def report(self, name: str) -> dict[str, object]:
        """What a driver printed: its JSON report."""
        return json.loads((self.folder / f"{name}.out").read_text())  # type: ignore[no-any-return]

    def finish(self, name: str, timeout: float = 180) -> int:
        try:
            return self.procs[name].wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"{name} did not finish; its log:\n{self.log(name)[-4000:]}") from None

    def close(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for name, proc in self.procs.items():
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                raise AssertionError(f"{name} did not stop on SIGTERM") from None


@pytest.fixture
def fleet(rabbitmq: Broker, postgres_url: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Fleet]:
    name = "fleet_" + "".join(c if c.isalnum() else "_" for c in request.node.name)[:50].lower()
    crew = Fleet(rabbitmq, fresh_database(postgres_url, name), tmp_path)
    try:
        yield crew
    finally:
        crew.close()


def _spec(folder: Path, name: str, *, blocks: int, variants: int = 3, sleep: float = 0.15) -> Path:
    path = folder / f"{name}.toml"
    lines = [f'name = "{name}"', f"blocks = {blocks}", "warmup = 1", "timeout = 60",
             "[[workloads]]", 'name = "nap"', f'command = ["sleep", "{sleep}"]']  # fmt: skip
    for v in range(variants):
        lines += ["[[variants]]", f'name = "v{v}"']
    path.write_text("\n".join(lines) + "\n")
    return path


def _stored(db: str, name: str) -> tuple[Counter[tuple[int, int, int, bool]], dict[str, int], list[tuple[int, int, str, str]]]:
    """Runs per (host, variant, block, warm-up); measured runs per host; attempts (block, attempt, worker, state)."""
    store = Store(db)
    exp = store.require_experiment(name)
    runs = store.load(exp).runs
    keys = Counter(
        (int(h), int(v), int(b), bool(w)) for h, v, b, w in zip(runs.host_id, runs.variant, runs.block, runs.warmup, strict=True)
    )
    with store.engine.connect() as conn:
        attempts = [tuple(r) for r in conn.exec_driver_sql("SELECT block, attempt, worker, state FROM fleet_task ORDER BY id")]
    store.engine.dispose()
    return keys, dict(Counter(int(h) for h, w in zip(runs.host_id, runs.warmup, strict=True) if not w)), attempts  # type: ignore[return-value]


def _wait_for(what: str, check: object, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError(f"never happened: {what}")
        time.sleep(0.05)


def _running(db: str, name: str, worker: str, runs: int) -> bool:
    """Whether `worker` is inside a block with at least `runs` of it stored."""
    store = Store(db)
    try:
        exp = store.find_experiment(name)
        if exp is None:
            return False
        with store.engine.connect() as conn:
            rows = conn.exec_driver_sql(
                "SELECT 1 FROM fleet_task WHERE experiment_id = %(e)s AND worker = %(w)s AND state = 'running' AND runs >= %(r)s",
                {"e": exp.id, "w": worker, "r": runs},
            ).all()
        return bool(rows)
    finally:
        store.engine.dispose()


def test_three_workers_two_killed_mid_block_lose_nothing_and_store_nothing_twice(fleet: Fleet, tmp_path: Path) -> None:
    spec = _spec(tmp_path, "killed", blocks=16)
    for name in ("w1", "w2", "w3"):
        fleet.worker(name)
    fleet.driver(spec)
    chance = random.Random(os.getpid())
    for victim in ("w1", "w2"):  # each at a random run of a block it is running
        at = chance.randint(1, 2)  # of a block's 3 runs: after its last, the attempt ends within milliseconds
        _wait_for(f"{victim} inside a block", lambda v=victim, n=at: _running(fleet.db, "killed", v, n))  # type: ignore[misc]
        fleet.kill(victim)
    assert fleet.finish("driver") == 0, fleet.log("driver")[-4000:]
    keys, measured, attempts = _stored(fleet.db, "killed")
    assert max(keys.values()) == 1  # no run stored twice
    assert sum(measured.values()) == 48  # every block whole: 16 blocks x 3 variants, on this one host
    killed = {w: b for b, _, w, state in attempts if state == "running"}
    assert set(killed) == {"w1", "w2"}  # both died inside a block (maybe the same one, redelivered)...
    for block in killed.values():  # ...which another attempt finished (or found stored whole, killed after its last run)
        assert any(b == block and state in ("done", "skipped") for b, _, _, state in attempts)
    assert fleet.report("driver")["experiment"]["name"] == "killed"  # type: ignore[index]


def test_a_broker_restart_and_a_driver_restart_lose_nothing(fleet: Fleet, rabbitmq: Broker, tmp_path: Path) -> None:
    spec = _spec(tmp_path, "restarts", blocks=12, variants=2)
    for name in ("w1", "w2"):
        fleet.worker(name)
    fleet.driver(spec, name="driver1")
    _wait_for("a block under way", lambda: _running(fleet.db, "restarts", "w1", 1) or _running(fleet.db, "restarts", "w2", 1))
    rabbitmq.stop()
    rabbitmq.start()
    fleet.kill("driver1")  # the driver dies too; the workers go on with what the queue holds
    fleet.driver(spec, "--resume", name="driver2")
    assert fleet.finish("driver2") == 0, fleet.log("driver2")[-4000:]
    keys, measured, _ = _stored(fleet.db, "restarts")
    assert max(keys.values()) == 1
    assert sum(measured.values()) == 24


def test_forged_pickled_and_unauthenticated_messages_are_refused_and_logged(
    fleet: Fleet, rabbitmq: Broker, tmp_path: Path
) -> None:
    fleet.worker("w1")
    spec = _spec(tmp_path, "honest", blocks=2, variants=2, sleep=0.01)
    app = make_app(rabbitmq.url, POOL)
    forged = seal(BlockTask(POOL, "honest", "0" * 64, "nap", 0), b"not the fleet's key, but long enough")
    app.send_task(TASK, args=[forged], queue=queue_name(POOL))
    app.send_task(TASK, args=[{"body": {}, "hmac": ""}], queue=queue_name(POOL), serializer="pickle")
    fleet.driver(spec, name="stranger", broker=rabbitmq.bad_url)
    assert fleet.finish("stranger") == 3
    said = fleet.log("stranger").strip().splitlines()[-1]
    assert "refused the tasks" in said and "ACCESS_REFUSED" in said
    assert rabbitmq.bad_url.split(":")[2].split("@")[0] not in said  # the password is never printed
    rabbitmq.wait_log("invalid credentials")
    _wait_for("the forged task refused", lambda: "refused a message from the queue (bad signature)" in fleet.log("w1"))
    _wait_for("the pickled one refused", lambda: "untrusted content" in fleet.log("w1"))
    app.send_task("benchlab.no_such_task", args=[1], queue=queue_name(POOL))
    app.send_task(TASK, args=[], queue=queue_name(POOL))  # no envelope: fits no call of the task
    _wait_for("the unknown task refused", lambda: "no_such_task" in fleet.log("w1"))
    assert "Traceback" not in fleet.log("w1"), fleet.log("w1")[-4000:]  # one line per refused message
    fleet.driver(spec)
    assert fleet.finish("driver") == 0, fleet.log("driver")[-4000:]  # the worker still serves
    keys, measured, attempts = _stored(fleet.db, "honest")
    assert sum(measured.values()) == 4 and max(keys.values()) == 1
    assert Store(fleet.db).find_experiment("honest") is not None


@pytest.mark.skipif(os.geteuid() != 0, reason="knobs under /proc/sys need root")
def test_a_worker_applies_each_variants_knobs_on_its_machine_and_puts_them_back(fleet: Fleet, tmp_path: Path) -> None:
    knob = Path("/proc/sys/vm/swappiness")
    before = knob.read_text()
    spec = tmp_path / "knobs.toml"
    spec.write_text(
        'name = "knobs"\nblocks = 3\n[[workloads]]\nname = "check"\n'
        # fails (a failed run, exit 5) unless the variant's value is in force while it runs
        """command = ['sh', '-c', 'grep -qx "$WANT" /proc/sys/vm/swappiness']\n"""
        '[[variants]]\nname = "low"\nenv = { WANT = "17" }\nknobs = { "/proc/sys/vm/swappiness" = 17 }\n'
        '[[variants]]\nname = "high"\nenv = { WANT = "83" }\nknobs = { "/proc/sys/vm/swappiness" = 83 }\n'
    )
    fleet.worker("w1", "--allow-shell", "--allow-machine-state", "--allow-env", "WANT")
    fleet.driver(spec)
    assert fleet.finish("driver") == 0, fleet.log("driver")[-4000:] + fleet.log("w1")[-4000:]
    assert knob.read_text() == before
    _, measured, _ = _stored(fleet.db, "knobs")
    assert sum(measured.values()) == 6


def test_a_worker_on_the_wrong_database_gives_its_task_back_and_stops(fleet: Fleet, postgres_url: str, tmp_path: Path) -> None:
    spec = _spec(tmp_path, "misplaced", blocks=3, variants=2, sleep=0.01)
    elsewhere = fresh_database(postgres_url, "fleet_misplaced_elsewhere")
    lost = fleet.worker("lost", db=elsewhere)
    fleet.driver(spec)
    assert lost.wait(60) == 0  # it stopped by itself, at its first task
    assert "cannot run the fleet's tasks" in fleet.log("lost") and "is it the driver's database" in fleet.log("lost")
    fleet.worker("w1")  # a sound worker finds every block still queued
    assert fleet.finish("driver") == 0, fleet.log("driver")[-4000:]
    _, measured, _ = _stored(fleet.db, "misplaced")
    assert sum(measured.values()) == 6


def test_a_worker_with_another_key_than_the_drivers_is_refused_at_start(fleet: Fleet, tmp_path: Path) -> None:
    fleet.worker("w1")
    fleet.driver(_spec(tmp_path, "keyed", blocks=2, variants=2, sleep=0.01))
    assert fleet.finish("driver") == 0, fleet.log("driver")[-4000:]
    fleet.key.write_bytes(os.urandom(32).hex().encode())  # not the key the driver signed with
    assert fleet.worker("w2").wait(60) == 3
    assert "is not the one the fleet's drivers sign with" in fleet.log("w2")


def test_a_block_is_leased_to_one_worker_at_a_time(fleet: Fleet, tmp_path: Path) -> None:
    fleet.worker("w1")
    fleet.driver(_spec(tmp_path, "leased", blocks=2, variants=2, sleep=0.01))
    assert fleet.finish("driver") == 0, fleet.log("driver")[-4000:]
    store = Store(fleet.db)
    exp = store.require_experiment("leased")
    with store.lease_block(exp, "nap", 0) as first, store.lease_block(exp, "nap", 0) as second:
        assert (first, second) == (True, False)
    with store.lease_block(exp, "nap", 0) as again, store.lease_block(exp, "nap", 1) as other:
        assert again and other  # freed when its holder let go; another block's is its own


@pytest.mark.slow
def test_a_vm_guest_variant_runs_on_the_worker_and_pairs_with_its_native_runs(
    fleet: Fleet, guest_kernel: kernels.GuestKernel, tmp_path: Path
) -> None:
    spec = tmp_path / "guest.toml"
    kernel = guest_kernel.source.split("_")[0]
    spec.write_text(
        'name = "guest"\nblocks = 2\ntimeout = 120\n[[workloads]]\nname = "churn"\nbuiltin = "alloc.churn"\n'
        "options = { ops = 20000 }\n"
        '[[variants]]\nname = "native"\n'
        f'[[variants]]\nname = "vm"\nenvironment = {{ kind = "vm", kernel = "{kernel}", accel = "tcg" }}\n'
    )
    fleet.worker("w1")  # without --allow-machine-state: refused, and the driver says so
    fleet.driver(spec, name="refused")
    assert fleet.finish("refused") == 3
    assert "needs --allow-machine-state" in fleet.log("refused")
    fleet.close()
    fleet.worker("w2", "--allow-machine-state")
    fleet.driver(spec, "--resume", name="driver")
    assert fleet.finish("driver", timeout=600) == 0, fleet.log("driver")[-4000:] + fleet.log("w2")[-4000:]
    rows = [r for r in fleet.report("driver")["rows"] if r["variant"] == "vm" and r["metric"] == "items_per_second"]  # type: ignore[index, union-attr]
    assert rows and rows[0]["pairs"] == 2  # each block's guest run paired with its native run


def test_a_fleet_over_tls_checks_the_brokers_certificate(fleet: Fleet, rabbitmq: Broker, tmp_path: Path) -> None:
    spec = _spec(tmp_path, "tls", blocks=2, variants=2, sleep=0.01)
    fleet.driver(spec, name="unchecked", broker=rabbitmq.tls_url)  # the private authority is none of the system's
    assert fleet.finish("unchecked") == 3
    assert "certificate verify failed" in fleet.log("unchecked")
    ca = ["--broker-ca", str(rabbitmq.ca)]
    fleet.worker("w1", *ca, broker=rabbitmq.tls_url)
    fleet.driver(spec, *ca, broker=rabbitmq.tls_url)
    assert fleet.finish("driver") == 0, fleet.log("driver")[-4000:]
    _, measured, _ = _stored(fleet.db, "tls")
    assert sum(measured.values()) == 4


def test_a_worker_profiles_its_blocks_into_the_shared_database(fleet: Fleet, tmp_path: Path) -> None:
    """Profiled runs on a worker: stored compressed in the shared PostgreSQL database under the
    worker's host, beside that block's timed runs, and explained from there."""
    need("perf")
    spec = tmp_path / "profiled.toml"
    spec.write_text(
        'name = "fleet-profiled"\nblocks = 3\nwarmup = 0\nprofile = true\n[[workloads]]\nname = "churn"\n'
        'builtin = "alloc.churn"\noptions = { threads = 1, ops = 100000 }\n[[variants]]\nname = "base"\n'
        '[[variants]]\nname = "same"\n'
    )
    fleet.worker("w1")
    fleet.driver(spec)
    assert fleet.finish("driver") == 0, fleet.log("driver")[-4000:]
    profiles = fleet.report("driver")["profiles"]
    assert (profiles["runs"], profiles["failed"]) == (6, 0), profiles  # type: ignore[index]
    store = Store(fleet.db)
    exp = store.require_experiment("fleet-profiled")
    stored = store.profiled_runs(exp)
    timed_hosts = set(store.load(exp).runs.host_id.tolist())
    store.engine.dispose()
    assert {r.host_id for r in stored} == timed_hosts and len(timed_hosts) == 1  # the worker's host
    assert all(r.profile is not None and r.profile[:1] == b"\x78" for r in stored)  # zlib, as stacks.encode writes
    explained = subprocess.run([BENCHLAB, "explain", "fleet-profiled", "--db", fleet.db, "--format", "json"],
                               capture_output=True, text=True, timeout=120)  # fmt: skip
    assert explained.returncode == 0, explained.stderr
    assert any(r["name"].endswith("::churn") for r in json.loads(explained.stdout)["rows"])


def test_fleet_and_single_machine_verdicts_agree(fleet: Fleet, tmp_path: Path) -> None:
    raw = """
name = "NAME"
blocks = 10
[[workloads]]
name = "churn"
builtin = "alloc.churn"
options = { threads = 2, ops = 300000 }
[[variants]]
name = "base"
[[variants]]
name = "one-cpu"
cpus = 0
"""
    local_spec, fleet_spec = tmp_path / "local.toml", tmp_path / "fleet.toml"
    local_spec.write_text(raw.replace("NAME", "agree-local"))
    fleet_spec.write_text(raw.replace("NAME", "agree-fleet"))
    fleet.worker("w1")
    fleet.driver(fleet_spec)
    assert fleet.finish("driver") == 0, fleet.log("driver")[-4000:]
    local = subprocess.run([BENCHLAB, "run", str(local_spec), "--db", str(tmp_path / "local.db"), "--format", "json"],
                           capture_output=True, text=True, timeout=300)  # fmt: skip
    assert local.returncode == 0, local.stderr
    on_fleet = fleet.report("driver")
    here = json.loads(local.stdout)

    def rows(report: dict[str, object]) -> dict[str, dict[str, object]]:
        return {r["metric"]: r for r in report["rows"] if r["family"] == "primary"}  # type: ignore[index, union-attr]

    decided = 0
    for metric, row in rows(here).items():  # the rows the change is large in: a few % of CPU time
        other = rows(on_fleet)[metric]  # moves with whatever else this 2-core machine runs meanwhile
        if max(abs(row["change"]), abs(other["change"])) < 0.2:  # type: ignore[arg-type]
            continue
        (low, high), (other_low, other_high) = row["change_ci"], other["change_ci"]  # type: ignore[misc]
        assert other_low <= high and low <= other_high, metric  # the two intervals meet
        assert {other["verdict"], row["verdict"]} != {"better", "worse"}, metric  # never opposite
        decided += other["verdict"] == row["verdict"] != "unclear"
    # two threads squeezed onto one CPU: real time and the rate, found by both (a CI run's 6 blocks
    # once left the local rate unclear; 10 give the signed-rank test room for a noisy block)
    assert decided >= 2


def test_a_fleet_resume_runs_failed_runs_again_and_keep_failed_keeps_them(fleet: Fleet, tmp_path: Path) -> None:
    """As a local `--resume` (tests/integration/test_resume_failed.py): the blocks holding a run stored
    as failed are published again and their failed runs rerun, each replacing its failure; a
    block whose runs all ended well is never published again, and nothing is stored twice."""
    spec = tmp_path / "flaky.toml"
    spec.write_text(
        'name = "flaky"\nblocks = 2\nwarmup = 0\ntimeout = 60\n'
        f'[[workloads]]\nname = "flaky"\ncommand = ["test", "-e", "{tmp_path / "ok"}"]\n'  # fails until `ok` exists
        '[[workloads]]\nname = "nap"\ncommand = ["sleep", "0.01"]\n'
        '[[variants]]\nname = "a"\n[[variants]]\nname = "b"\n'
    )
    fleet.worker("w1", "--allow", "test")
    fleet.driver(spec, name="first")
    assert fleet.finish("first") == 5, fleet.log("first")[-4000:]
    before = {(r["workload"], r["variant"], r["block"]): r for r in fleet.report("first")["runs"]}  # type: ignore[union-attr]
    assert {k: r["status"] for k, r in before.items() if k[0] == "flaky"} == dict.fromkeys(
        [("flaky", v, b) for v in "ab" for b in (0, 1)], "failed"
    )
    attempts = len(_stored(fleet.db, "flaky")[2])

    fleet.driver(spec, "--resume", "--keep-failed", name="kept")
    assert fleet.finish("kept") == 5, fleet.log("kept")[-4000:]
    assert len(_stored(fleet.db, "flaky")[2]) == attempts  # nothing published, nothing ran

    (tmp_path / "ok").touch()  # the fault has passed
    fleet.driver(spec, "--resume", name="again")
    assert fleet.finish("again") == 0, fleet.log("again")[-4000:] + fleet.log("w1")[-4000:]
    assert "2 block(s) with a run stored as failed run again" in fleet.log("again")
    runs = fleet.report("again")["runs"]
    after = {(r["workload"], r["variant"], r["block"]): r for r in runs}  # type: ignore[union-attr]
    assert len(runs) == 8 and set(after) == set(before)  # type: ignore[arg-type] # nothing stored twice
    assert all(r["status"] == "ok" for r in after.values())
    for key, run in after.items():
        if key[0] == "nap":
            assert run == before[key]  # a block whose runs all ended well never runs again
        else:
            (earlier,) = run["details"]["earlier_attempts"]
            assert earlier["status"] == "failed" and run["started_at"] > before[key]["ended_at"]
    assert sorted(b for b, *_ in _stored(fleet.db, "flaky")[2][attempts:]) == [0, 1]  # the two flaky blocks, once each
