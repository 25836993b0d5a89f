"""How far one RabbitMQ and one PostgreSQL carry a fleet, measured on this machine.

Everything runs here: a private RabbitMQ and PostgreSQL (tests/servers.py), `benchlab worker`
processes, and `benchlab run --fleet` drivers, on a fake fast workload (`true`, warm-up 0), so
that what is measured is the fleet's own cost per run and per task, not a benchmark's:

1. runs and tasks per second end to end (from the experiment's creation, just before the driver
   publishes, to the last run stored) for 1, 2, 5, 10, 20 workers, with each worker's own
   overhead read from the database's timestamps (task received to its first run, run stored to
   the next run, task ended to the next task received) and the CPU time each party spent;
2. PostgreSQL's write rate: runs committed per second through `Store.record_run` (one
   transaction per run, nine metrics and details, as a real run stores) from 1, 5, 20 processes;
3. RabbitMQ's rate: signed tasks published (with the driver's own `publish`: persistent,
   publisher confirms) and consumed by no-op consumers (prefetch 1, one ack each, as a worker);
4. what the database does per task and per poll once an experiment is large: the driver's
   progress query (every run of the experiment, once a second at most), the worker's
   `block_complete` (one block's runs, though found by a scan: no index leads with the block) and
   its runner's `stored_keys` (the runs its host stored of the task's workload and block), per task.

This machine has two cores: beyond two workers the figures measure overhead under contention,
not scale. What carries over to a real lab is each central component's CPU time per task and
per run (read from /proc: psutil is no dependency of benchlab), which the estimate at the end
turns into a ceiling per core of the broker and of the database server.

    uv run python bench/fleet_scale.py [--quick] [--workers 1,2,5,10,20] [--tasks 120] [--variants 4]
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kombu
from amqp.exceptions import NotFound

from benchlab.fleet.app import make_app, queue_name
from benchlab.fleet.driver import publish
from benchlab.fleet.envelope import BlockTask
from benchlab.metrics import Metric
from benchlab.store import ExperimentRecord, Store

sys.path[:0] = [str(Path(__file__).resolve().parents[1])]  # tests.servers, when run as a script
from store_speed import DETAILS, METRICS  # noqa: E402 - what a command run stores, as bench/store_speed.py

from tests.conftest import experiment_rows  # noqa: E402
from tests.servers import Broker, Postgres, fresh_database, postgres_server, rabbitmq_server  # noqa: E402

POOL = "scale"
CORES = os.cpu_count() or 1
TICK = os.sysconf("SC_CLK_TCK")
BENCHLAB = str(Path(sys.executable).parent / "benchlab")
RUN_LENGTHS = (1.0, 10.0, 60.0)


# -- CPU time from /proc ------------------------------------------------------------------------


def _stat(pid: int) -> list[str] | None:
    """/proc/PID/stat's fields after the command name (which may hold spaces), or None: gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2 :].split()


def _processes() -> Iterator[tuple[int, list[str]]]:
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (fields := _stat(int(entry))) is not None:
            yield int(entry), fields


def _cpu(fields: list[str]) -> float:
    """A process's CPU seconds, its own and its reaped children's (utime stime cutime cstime):
    summed over the live processes of a group, each second is counted once."""
    return sum(int(v) for v in fields[11:15]) / TICK


def cpu_of(*, sessions: Collection[int] = (), parents: Collection[int] = ()) -> float:
    """CPU seconds so far of every process in `sessions` (a worker, the broker's node) and of
    `parents` with their children (the postmaster and its backends, which it reaps)."""
    total = 0.0
    for pid, fields in _processes():
        if int(fields[3]) in sessions or pid in parents or int(fields[1]) in parents:
            total += _cpu(fields)
    return total


def box_busy() -> tuple[float, float]:
    """(busy, all) CPU seconds of the whole machine so far, whoever spent them (/proc/stat)."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = values[3] + values[4]
    return (sum(values[:8]) - idle) / TICK, sum(values[:8]) / TICK


@dataclass
class Clock:
    """Wall time, CPU time of each party, and the whole machine's busy time over one measurement."""

    parties: dict[str, Callable[[], float]]

    def __enter__(self) -> Clock:
        self.start = time.time()
        self.box = box_busy()
        self.first = {name: read() for name, read in self.parties.items()}
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.time() - self.start
        busy, every = box_busy()
        self.box_share = (busy - self.box[0]) / max(every - self.box[1], 1e-9)
        self.cpu = {name: read() - self.first[name] for name, read in self.parties.items()}


# -- the servers and the fleet's processes --------------------------------------------------------


class Lab:
    """The broker, the database and every process this script starts, each in a session of its
    own (so a Ctrl-C here reaches them only through `close`), all gone at the end."""

    def __init__(self, broker: Broker, postgres: Postgres, folder: Path) -> None:
        self.broker, self.postgres, self.folder = broker, postgres, folder
        self.db = fresh_database(postgres.url, "fleet_scale")
        Store(self.db, migrate=True).engine.dispose()
        self.key = folder / "fleet.key"
        self.key.write_bytes(os.urandom(32).hex().encode())
        self.key.chmod(0o600)
        self.env = {**os.environ, "BENCHLAB_STATE_DIR": str(folder / "state"), "COLUMNS": "120"}
        self.workers: list[subprocess.Popen[bytes]] = []
        self.store = Store(self.db, migrate=False)

    def parties(self) -> dict[str, Callable[[], float]]:
        workers = {p.pid for p in self.workers}
        broker = {self.broker.session} if self.broker.session else set()
        return {
            "workers": lambda: cpu_of(sessions=workers),
            "postgres": lambda: cpu_of(parents={self.postgres.pid}),
            "broker": lambda: cpu_of(sessions=broker),
        }

    def _spawn(self, name: str, args: list[str]) -> subprocess.Popen[bytes]:
        with (self.folder / f"{name}.log").open("ab") as log:
            return subprocess.Popen([BENCHLAB, *args], stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                    env=self.env, start_new_session=True)  # fmt: skip

    def grow(self, count: int) -> None:
        """Starts workers until there are `count`, and returns once each consumes the pool's queue."""
        while len(self.workers) < count:
            name = f"w{len(self.workers) + 1:02d}"
            self.workers.append(self._spawn(name, ["worker", "--pool", POOL, "--broker", self.broker.url, "--db", self.db,
                                                   "--key", str(self.key), "--name", name, "--allow", "true"]))  # fmt: skip
        deadline = time.monotonic() + 60 + 5 * count
        while self.consumers() < count:
            dead = [p.args for p in self.workers if p.poll() is not None]
            if dead or time.monotonic() > deadline:
                raise RuntimeError(f"workers did not start ({dead or 'too slow'}); see their logs in {self.folder}")
            time.sleep(0.2)

    def consumers(self) -> int:
        with kombu.Connection(self.broker.url) as conn:
            try:
                return int(conn.default_channel.queue_declare(queue=queue_name(POOL), passive=True).consumer_count)
            except NotFound:  # no worker declared it yet
                return 0

    def spec(self, name: str, *, blocks: int, variants: int) -> Path:
        path = self.folder / f"{name}.toml"
        lines = [f'name = "{name}"', f"blocks = {blocks}", "warmup = 0", "timeout = 30",
                 "[[workloads]]", 'name = "tick"', 'command = ["true"]']  # fmt: skip
        for v in range(variants):
            lines += ["[[variants]]", f'name = "v{v}"']
        path.write_text("\n".join(lines) + "\n")
        return path

    def drive(self, name: str, *, blocks: int, variants: int) -> tuple[float, float]:
        """Runs an experiment on the fleet; (when the driver ended, its CPU seconds)."""
        spec = self.spec(name, blocks=blocks, variants=variants)
        proc = self._spawn(f"driver-{name}", ["run", str(spec), "--fleet", POOL, "--broker", self.broker.url,
                                              "--key", str(self.key), "--db", self.db, "--format", "csv"])  # fmt: skip
        try:
            _, status, usage = os.wait4(proc.pid, 0)  # its CPU time with its exit
        except BaseException:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            raise RuntimeError(f"the driver of {name} exited {proc.returncode}; see {self.folder}/driver-{name}.log")
        return time.time(), usage.ru_utime + usage.ru_stime

    def stop_workers(self) -> None:
        for proc in self.workers:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)  # Celery's warm shutdown: after the block in hand
        for proc in self.workers:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        self.workers = []

    def close(self) -> None:
        self.stop_workers()
        self.store.engine.dispose()


# -- 1. the fleet, end to end -------------------------------------------------------------------


@dataclass(frozen=True)
class FleetStep:
    workers: int
    tasks: int
    runs: int
    wall: float  # the experiment's creation to its last run stored
    setup: float  # median: task received (attempt begun) to its first run started
    between_runs: float  # median: a run's end (then stored) to the next run's start, in a task
    run: float  # median: one run of `true`, launched by the served launcher
    closing: float  # median: a task's last run ended to its attempt ended
    between_tasks: float  # median: one worker's attempt ended to its next begun
    driver_lag: float  # the last run stored to the driver's exit (its poll, then its report)
    cpu: dict[str, float]  # CPU seconds per party over the step
    box_share: float  # the whole machine's busy share over the step (other users included)

    @property
    def per_run_ms(self) -> dict[str, float]:
        return {name: seconds / self.runs * 1000 for name, seconds in self.cpu.items()}


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def fleet_step(lab: Lab, workers: int, *, tasks: int, variants: int) -> FleetStep:
    lab.grow(workers)
    lab.drive(f"warm-{workers}", blocks=2 * workers, variants=variants)  # each new worker's first task (fingerprint)
    name = f"scale-{workers}"
    parties = lab.parties()
    with Clock(parties) as clock:
        ended, driver_cpu = lab.drive(name, blocks=tasks, variants=variants)
    exp = lab.store.require_experiment(name)
    with lab.store.engine.connect() as conn:
        attempts = conn.exec_driver_sql(
            "SELECT worker, block, started_at, ended_at FROM fleet_task WHERE experiment_id = %(e)s AND state = 'done'",
            {"e": exp.id},
        ).all()
        runs = conn.exec_driver_sql(
            "SELECT block, started_at, ended_at FROM run WHERE experiment_id = %(e)s AND NOT warmup ORDER BY started_at",
            {"e": exp.id},
        ).all()
    by_block: dict[int, list[Any]] = defaultdict(list)
    for run in runs:
        by_block[run.block].append(run)
    setup, closing, between_runs = [], [], []
    for attempt in attempts:
        block = by_block[attempt.block]
        setup.append(block[0].started_at - attempt.started_at)
        closing.append(attempt.ended_at - block[-1].ended_at)
        between_runs += [b.started_at - a.ended_at for a, b in zip(block, block[1:], strict=False)]
    between_tasks = []
    per_worker: dict[str, list[Any]] = defaultdict(list)
    for attempt in sorted(attempts, key=lambda a: a.started_at):
        per_worker[attempt.worker].append(attempt)
    for mine in per_worker.values():
        between_tasks += [b.started_at - a.ended_at for a, b in zip(mine, mine[1:], strict=False)]
    last = max(r.ended_at for r in runs)
    return FleetStep(
        workers=workers, tasks=len(attempts), runs=len(runs), wall=last - exp.created_at, setup=_median(setup),
        between_runs=_median(between_runs), run=_median([r.ended_at - r.started_at for r in runs]),
        closing=_median(closing), between_tasks=_median(between_tasks), driver_lag=ended - last,
        cpu={**clock.cpu, "driver": driver_cpu}, box_share=clock.box_share,
    )  # fmt: skip


# -- 2. PostgreSQL's write rate ------------------------------------------------------------------


def _writer(db: str, exp_name: str, index: int, seconds: float, counted: bool, start: Any, out: Any) -> None:
    """One process storing runs as fast as it can for `seconds`, each its own transaction;
    `counted`: each run also counted on an attempt (its own transaction), as a fleet's worker does."""
    store = Store(db, migrate=False)
    exp = store.require_experiment(exp_name)
    host = store.host_id({"hostname": f"writer-{index}"})
    attempt = store.begin_attempt(exp, "w", index, worker=f"writer-{index}", host_id=host)
    variants = list(exp.variant_ids)
    start.wait()
    began = time.time()
    cpu = time.process_time()
    deadline = began + seconds
    count = 0
    while time.time() < deadline:
        metrics = [Metric(name, float(count + k), unit, "lower") for k, (name, unit) in enumerate(METRICS)]
        store.record_run(
            exp, host_id=host, workload="w", variant=variants[count % len(variants)], block=count // len(variants),
            warmup=False, position=count, status="ok", started_at=float(count), ended_at=count + 0.5, exit_code=0,
            metrics=metrics, details=DETAILS,
        )  # fmt: skip
        if counted:
            store.count_attempt_run(attempt)
        count += 1
    out.put((count, time.time() - began, time.process_time() - cpu))
    store.engine.dispose()


@dataclass(frozen=True)
class WriteStep:
    processes: int
    counted: bool
    runs: int
    wall: float
    client_cpu: float
    server_cpu: float
    box_share: float

    @property
    def rate(self) -> float:
        return self.runs / self.wall


def write_step(lab: Lab, processes: int, seconds: float, *, counted: bool = False) -> WriteStep:
    name = f"writes-{processes}-{counted}"
    lab.store.create_experiment(
        **experiment_rows(
            {"name": name, "workloads": [{"name": "w", "command": ["true"]}], "variants": [{"name": "a"}, {"name": "b"}]},
            "command:true",
        )
    )
    ctx = multiprocessing.get_context("spawn")  # each writer its own connections, nothing inherited
    start, out = ctx.Barrier(processes + 1), ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(lab.db, name, i, seconds, counted, start, out)) for i in range(processes)]
    for proc in procs:
        proc.start()
    try:
        start.wait(120)
        with Clock({"postgres": lab.parties()["postgres"]}) as clock:
            results = [out.get(timeout=seconds + 60) for _ in procs]
            for proc in procs:
                proc.join(30)
            time.sleep(0.2)  # the backends of the writers gone, reaped into the postmaster's time
    finally:
        for proc in procs:
            if proc.is_alive():
                proc.kill()
    return WriteStep(
        processes, counted, sum(r[0] for r in results), max(r[1] for r in results), sum(r[2] for r in results),
        clock.cpu["postgres"], clock.box_share,
    )  # fmt: skip


# -- 3. RabbitMQ's rate --------------------------------------------------------------------------


def _consumer(url: str, pool: str, start: Any, out: Any) -> None:
    """A no-op worker: prefetch 1, one ack per message, until the queue has been empty for 1 s."""
    app = make_app(url, pool)
    queue = app.amqp.queues[queue_name(pool)]
    got, first, last = 0, 0.0, 0.0

    def take(_body: object, message: Any) -> None:
        nonlocal got, first, last
        message.ack()
        got += 1
        last = time.time()
        first = first or last

    with app.connection_for_read() as conn, conn.Consumer(queue, callbacks=[take], prefetch_count=1, accept=["json"]):
        start.wait()
        while True:
            try:
                conn.drain_events(timeout=1.0)
            except TimeoutError:
                break
    out.put((got, first, last))


@dataclass(frozen=True)
class BrokerStep:
    what: str
    messages: int
    wall: float
    broker_cpu: float

    @property
    def rate(self) -> float:
        return self.messages / self.wall


def broker_steps(lab: Lab, messages: int, consumers: tuple[int, ...]) -> list[BrokerStep]:
    pool = "brokerbench"
    key = lab.key.read_bytes().strip()
    tasks = [BlockTask(pool, "bench", "0" * 64, "tick", i) for i in range(messages)]
    broker = {"broker": lab.parties()["broker"]}
    steps = []
    for count in consumers:
        with Clock(broker) as clock:
            publish(lab.broker.url, pool, key, tasks)
        steps.append(BrokerStep("published, confirmed (1 publisher)", messages, clock.wall, clock.cpu["broker"]))
        ctx = multiprocessing.get_context("spawn")
        start, out = ctx.Barrier(count + 1), ctx.Queue()
        procs = [ctx.Process(target=_consumer, args=(lab.broker.url, pool, start, out)) for _ in range(count)]
        for proc in procs:
            proc.start()
        try:
            start.wait(120)
            with Clock(broker) as clock:
                results = [out.get(timeout=600) for _ in procs]
        finally:
            for proc in procs:
                proc.join(10)
                if proc.is_alive():
                    proc.kill()
        got = sum(r[0] for r in results)
        span = max(r[2] for r in results) - min(r[1] for r in results if r[1])
        steps.append(BrokerStep(f"consumed, acked ({count} consumer{'s' * (count > 1)})", got, span, clock.cpu["broker"]))
    return steps


# -- 4. what a large experiment costs per poll and per task ------------------------------------------


@dataclass(frozen=True)
class Read:
    wall: float  # mean seconds per call, client included
    server: float  # mean PostgreSQL CPU seconds per call


@dataclass(frozen=True)
class Reads:
    runs: int
    progress: Read  # the driver's poll, once a second
    complete: Read  # a worker's check that its block is not stored whole already (block_complete), per task
    stored: Read  # a worker's runner's read of what this host stored, per task

    @property
    def per_task(self) -> float:
        """PostgreSQL CPU seconds a task's reads cost: a host of the fleet holds only its own
        runs, so `stored` is this much only where one machine ran them all."""
        return self.complete.server + self.stored.server


def _timed(lab: Lab, read: Callable[[], object], repeats: int = 20) -> Read:
    read()  # the plan and the pages cached
    with Clock({"postgres": lab.parties()["postgres"]}) as clock:
        for _ in range(repeats):
            read()
    return Read(clock.wall / repeats, clock.cpu["postgres"] / repeats)


def big_experiment(lab: Lab, runs: int, variants: int) -> Reads:
    """An experiment of `runs` runs on one host, written by SQL in one statement (the read
    queries are what is measured, and the insert path would take minutes at this size)."""
    name = f"big-{runs}"
    spec = {
        "name": name,
        "workloads": [{"name": "tick", "command": ["true"]}],
        "variants": [{"name": f"v{i}"} for i in range(variants)],
    }
    exp = lab.store.create_experiment(**experiment_rows(spec, "command:true"))
    host = lab.store.host_id({"hostname": "big"})
    ids = ",".join(str(exp.variant_ids[f"v{i}"]) for i in range(variants))
    with lab.store.transaction() as conn:
        conn.exec_driver_sql(
            "INSERT INTO run (uuid, experiment_id, workload_id, variant_id, host_id, block, warmup, position, status, "
            "started_at, ended_at, exit_code, workload_version) "
            f"SELECT gen_random_uuid()::text, %(e)s, %(w)s, (ARRAY[{ids}])[g %% {variants} + 1], %(h)s, g / {variants}, "
            "false, g, 'ok', g, g + 0.5, 0, 'command:true' FROM generate_series(0, %(n)s - 1) AS g",
            {"e": exp.id, "w": exp.workload_ids["tick"], "h": host, "n": runs},
        )
    with lab.store.engine.connect() as conn:
        conn.exec_driver_sql("ANALYZE run")
    record: ExperimentRecord = lab.store.require_experiment(name)
    return Reads(
        runs, _timed(lab, lambda: lab.store.fleet_progress(record)),
        _timed(lab, lambda: lab.store.block_complete(record, "tick", runs // variants // 2)),
        _timed(lab, lambda: lab.store.stored_keys(record, host, workloads={"tick"}, blocks={runs // variants // 2})),
    )  # fmt: skip


# -- the printout --------------------------------------------------------------------------------


def print_fleet(steps: list[FleetStep], variants: int) -> None:
    print(f"\n1. The fleet end to end: `true` x {variants} variants per task (a block), warm-up 0, workers on this machine")
    print(f"   ({CORES} cores: with more workers than cores they share them with PostgreSQL, RabbitMQ and the driver;")
    print("   what grows then is contention on this box, not a limit of the fleet)")
    print(f"{'workers':>8} {'tasks':>6} {'runs':>6} {'wall s':>7} {'runs/s':>7} {'tasks/s':>8} {'box busy':>9}"
          f"   CPU ms per run: {'workers':>7} {'postgres':>9} {'broker':>7}   driver CPU s")  # fmt: skip
    for s in steps:
        ms = s.per_run_ms
        print(f"{s.workers:>8} {s.tasks:>6} {s.runs:>6} {s.wall:>7.2f} {s.runs / s.wall:>7.1f} {s.tasks / s.wall:>8.2f}"
              f" {s.box_share:>8.0%}   {'':>15} {ms['workers']:>7.2f} {ms['postgres']:>9.2f} {ms['broker']:>7.2f}"
              f"   {s.cpu['driver']:>12.2f}")  # fmt: skip
    print("   wall: the experiment's creation (the driver then publishes) to its last run stored; box busy: the whole")
    print("   machine's CPU over it, other users included; driver CPU: its whole process (start, publish, polls, report).")
    print("\n   A worker's own time, medians (ms), from the database's timestamps:")
    print(f"{'workers':>8} {'task set-up':>12} {'run':>7} {'stored->next run':>17} {'task closing':>13}"
          f" {'task->next task':>16} {'driver lag':>11}")  # fmt: skip
    for s in steps:
        print(f"{s.workers:>8} {s.setup * 1000:>12.1f} {s.run * 1000:>7.2f} {s.between_runs * 1000:>17.2f}"
              f" {s.closing * 1000:>13.2f} {s.between_tasks * 1000:>16.1f} {s.driver_lag * 1000:>11.0f}")  # fmt: skip
    print("   task set-up: attempt begun to its first run started (spec checked, allow-list, block stored?, runner,")
    print("   launcher, lock); run: `true` through the served launcher; stored->next run: a run's end to the next one's")
    print("   start (its commit, the attempt's count, the next launch); task closing: last run to attempt ended;")
    print("   task->next task: attempt ended to this worker's next attempt begun (ack, broker, pool, envelope, host row);")
    print("   driver lag: last run stored to the driver's exit (it polls once a second, then writes its report).")


def print_writes(steps: list[WriteStep]) -> None:
    print(f"\n2. PostgreSQL's write rate: Store.record_run, one transaction per run, {len(METRICS)} metrics and details each")
    print(f"{'processes':>10} {'runs':>7} {'runs/s':>8} {'client CPU ms/run':>18} {'server CPU ms/run':>18} {'box busy':>9}")
    for s in steps:
        what = "  + count_attempt_run per run (a worker's second commit)" if s.counted else ""
        print(f"{s.processes:>10} {s.runs:>7} {s.rate:>8.0f} {s.client_cpu / s.runs * 1000:>18.3f}"
              f" {s.server_cpu / s.runs * 1000:>18.3f} {s.box_share:>8.0%}{what}")  # fmt: skip


def print_broker(steps: list[BrokerStep]) -> None:
    print("\n3. RabbitMQ's rate: signed tasks, persistent, durable queue (the driver's publish; no-op consumers, prefetch 1)")
    print(f"{'':<38} {'messages':>9} {'per s':>8} {'broker CPU ms/msg':>18}")
    for s in steps:
        print(f"{s.what:<38} {s.messages:>9} {s.rate:>8.0f} {s.broker_cpu / s.messages * 1000:>18.3f}")
    print("   one publisher waits for each confirm: its rate is a round trip's, not the broker's capacity.")


def print_reads(reads: list[Reads]) -> None:
    print("\n4. Reads that grow with the experiment (one host holding every run; mean of 20: wall ms / PostgreSQL CPU ms)")
    print(f"{'runs stored':>12} {'driver poll (1/s)':>20} {'block_complete (per task)':>28} {'stored_keys (per task)':>24}")
    for r in reads:
        cells = [f"{q.wall * 1000:.1f} / {q.server * 1000:.1f}" for q in (r.progress, r.complete, r.stored)]
        print(f"{r.runs:>12} {cells[0]:>20} {cells[1]:>28} {cells[2]:>24}")


@dataclass(frozen=True)
class Ceiling:
    what: str
    cpu_ms: float  # of the component, per unit
    per_task: bool  # the unit is a task (a block of `variants` runs) rather than a run

    def machines(self, length: float, variants: int) -> float:
        """Machines one core of the component serves when a run lasts `length` s: each ends a run
        every `length` s and a task every `variants` x `length` s."""
        return 1000 / self.cpu_ms * length * (variants if self.per_task else 1)


def print_estimate(fleet: list[FleetStep], writes: list[WriteStep], broker: list[BrokerStep], reads: list[Reads],
                   variants: int) -> None:  # fmt: skip
    solo = fleet[0]
    fleet_pg = statistics.median(s.per_run_ms["postgres"] for s in fleet)
    fleet_broker = statistics.median(s.cpu["broker"] / s.tasks * 1000 for s in fleet)
    insert = statistics.median(s.server_cpu / s.runs * 1000 for s in writes if not s.counted)
    per_message = sum(s.broker_cpu for s in broker[:2]) / broker[0].messages * 1000  # one publish, one consume
    ceilings = [
        Ceiling("broker: a task published, delivered, acked (3.)", per_message, True),
        Ceiling("broker: a task, as the fleet ran (1.)", fleet_broker, True),
        Ceiling("database: a run, record_run alone (2.)", insert, False),
        Ceiling("database: a run, as the fleet ran (1.)", fleet_pg, False),
    ]
    ceilings += [
        Ceiling(f"database: a run, as the fleet ran, {r.runs:,} runs stored (4.)", fleet_pg + r.per_task * 1000 / variants, False)
        for r in reads
    ]  # fmt: skip
    lengths = "".join(f"{f'L = {length:.0f} s':>10}" for length in RUN_LENGTHS)
    print("\n5. Machines one core of the broker and of PostgreSQL serve, from the CPU each spent per unit of work")
    print(f"   (a machine ends a run every L s, a task every {variants} x L s; machines = units/s x L; give each server")
    print("   its own cores and multiply; RAM, disk and network are not the limit at these rates)")
    print(f"{'':<62} {'CPU ms':>7} {'units/s':>8} {lengths}")
    for c in ceilings:
        served = "".join(f"{c.machines(length, variants):>10,.0f}" for length in RUN_LENGTHS)
        print(f"{c.what:<62} {c.cpu_ms:>7.3f} {1000 / c.cpu_ms:>8,.0f} {served}")
    best = max(writes, key=lambda s: s.rate)
    consumed = max((s for s in broker if s.what.startswith("consumed")), key=lambda s: s.rate)
    print(f"   measured on this box's {CORES} shared cores: {best.rate:,.0f} runs/s committed ({best.processes} writers),"
          f" {consumed.rate:,.0f} tasks/s consumed, {max(s.runs / s.wall for s in fleet):,.0f} fleet runs/s.")  # fmt: skip
    as_run = [ceilings[1], *ceilings[3:]]  # what the fleet itself cost, not the bare paths
    worst = min(as_run, key=lambda c: c.machines(1.0, variants))
    print(f"   the first ceiling: {worst.what.split(' (')[0]}: {worst.machines(1.0, variants):,.0f} machines per core"
          f" at 1 s runs, {worst.machines(60.0, variants):,.0f} at 60 s.")  # fmt: skip
    big = reads[-1]
    poll = big.progress.server
    print(f"   the driver's poll: {poll * 1000:.1f} ms of PostgreSQL CPU at {big.runs:,} runs; it polls once a second, or"
          f" 20x a poll's time apart when longer: under 5% of a core per driver following ({poll:.1%} at one a second),"
          " whatever the fleet's size.")  # fmt: skip
    overhead = solo.setup + (variants - 1) * solo.between_runs + solo.closing + solo.between_tasks
    print(f"   a worker's own cost beyond its runs, measured alone: {overhead * 1000:.0f} ms per task of {variants} runs,"
          f" {overhead / variants * 1000:.1f} ms per run ({overhead / variants:.2%} of a 1 s run),")  # fmt: skip
    print("   spent on its own machine: no ceiling for the fleet, a share of each machine's time.")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1, 2, 5 workers, fewer tasks and messages (about a minute)")
    parser.add_argument("--workers", help="comma-separated worker counts (default 1,2,5,10,20)")
    parser.add_argument("--tasks", type=int, help="blocks per measured experiment (default 120; --quick 40)")
    parser.add_argument("--variants", type=int, default=4, help="runs per task (default 4)")
    parser.add_argument("--seconds", type=float, help="seconds per write-rate measurement (default 4; --quick 2)")
    parser.add_argument("--messages", type=int, help="tasks per broker measurement (default 2000; --quick 500)")
    parser.add_argument("--big", help="comma-separated sizes of the large experiments (default 10000,100000)")
    args = parser.parse_args()
    workers = [int(n) for n in (args.workers or ("1,2,5" if args.quick else "1,2,5,10,20")).split(",")]
    tasks = args.tasks or (40 if args.quick else 120)
    seconds = args.seconds or (2.0 if args.quick else 4.0)
    messages = args.messages or (500 if args.quick else 2000)
    sizes = [int(n) for n in (args.big or ("10000" if args.quick else "10000,100000")).split(",")]
    writers = (1, 5) if args.quick else (1, 5, 20)
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # a kill cleans up as Ctrl-C does
    began = time.monotonic()
    with contextlib.ExitStack() as stack:
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="benchlab-fleet-scale-")))
        print(f"starting PostgreSQL and RabbitMQ on loopback ({CORES} cores here; load average {os.getloadavg()[0]:.2f})")
        postgres = stack.enter_context(postgres_server())
        broker = stack.enter_context(rabbitmq_server())
        lab = Lab(broker, postgres, folder)
        stack.callback(lab.close)
        fleet = []
        for count in workers:
            fleet.append(fleet_step(lab, count, tasks=tasks, variants=args.variants))
            print(f"  {count} worker(s): {fleet[-1].runs / fleet[-1].wall:.1f} runs/s", flush=True)
        lab.stop_workers()
        print_fleet(fleet, args.variants)
        writes = [write_step(lab, count, seconds) for count in writers]
        writes.append(write_step(lab, writers[1], seconds, counted=True))
        print_writes(writes)
        broker_rates = broker_steps(lab, messages, (1, 5))
        print_broker(broker_rates)
        reads = [big_experiment(lab, size, args.variants) for size in sizes]
        print_reads(reads)
        print_estimate(fleet, writes, broker_rates, reads, args.variants)
    print(f"\n(whole script: {time.monotonic() - began:.0f} s; load average now {os.getloadavg()[0]:.2f})")


if __name__ == "__main__":
    main()
