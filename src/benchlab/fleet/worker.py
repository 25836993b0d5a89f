"""`benchlab worker`: one per lab machine, taking one block at a time from its pool's queue.

What a delivery does (`BlockWorker.handle`, which needs no broker and is tested without one):
the envelope's signature and pool are checked, the experiment and its spec are read from the
database and must be the signed ones, the spec must pass this worker's allow-list and resolve
on this machine at the experiment's workload versions; then, unless the block is stored whole
on some host already (a redelivery after its acknowledgement was lost) or another worker holds
its lease (it is still running there), the block runs through the runner as a local run would,
with this machine's state applied and restored around each run. Runs this host stored before (a
worker killed mid-block and back) are skipped: the block resumes where it stopped. Warm-ups are
per host, run before the host's first block of a workload.

What becomes of a task that does not end `done` or `skipped` depends on whose fault it is:

- Forged: the message is no task of this fleet's. Logged in one line (never a traceback: see
  `OneLine`) and dropped.
- Refused: the task asks for what this worker does not allow. Recorded (the driver stops with
  the reason) and dropped: another worker of the pool would be asked the same.
- Unfit: this machine cannot run it now (an allocator library missing, a workload of another version, a
  knob journal left by a killed run, another database than the driver's, a bug). The
  task goes back to the queue for a sound machine, the attempt says why, and this worker stops
  rather than drain the queue by failing every task in a millisecond.
- Later: nothing is wrong but now is not the time (the database is away, the block runs on
  another machine). The task comes again after a pause.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy.exc import OperationalError

from benchlab.errors import BenchlabError, DatabaseUnavailable
from benchlab.fleet.allowlist import AllowList, Refused
from benchlab.fleet.app import TASK, make_app, queue_name
from benchlab.fleet.envelope import BlockTask, Forged, open_envelope
from benchlab.runner import Prepared, Runner, identity_digest
from benchlab.store import ExperimentRecord, Store
from benchlab.store.fleet import DONE, FAILED, REFUSED, SKIPPED

if TYPE_CHECKING:
    from benchlab.measure.process import Executor
    from benchlab.plan import PlannedRun

log = logging.getLogger("benchlab.fleet")


class Unfit(Exception):
    """This machine cannot run the task now: it goes back to the queue and this worker stops."""


class Later(Exception):
    """The task is sound and this machine too, but not now: it comes again after `pause` seconds."""

    def __init__(self, message: str, pause: float) -> None:
        super().__init__(message)
        self.pause = pause


@dataclass(frozen=True)
class WorkerSettings:
    pool: str
    db: str
    key: bytes
    allow: AllowList
    name: str = field(default_factory=lambda: f"{socket.gethostname()}-{os.getpid()}")


class AttemptProgress:
    """The runner's progress as a worker reports it: each stored run counted on its attempt
    (what the driver's bar shows per worker) and logged."""

    def __init__(self, store: Store, attempt_id: int, where: str) -> None:
        self.store, self.attempt_id, self.where = store, attempt_id, where

    def start(self, total: int, done: int) -> None:
        log.info("%s: %d of %d runs to go", self.where, total - done, total)

    def advance(self, run: PlannedRun, status: str) -> None:
        self.store.count_attempt_run(self.attempt_id)
        what = "warm-up" if run.warmup else f"block {run.block + 1}"
        log.info("%s: %s %s: %s", self.where, run.variant, what, status)

    def note(self, text: str) -> None:
        log.info("%s: note: %s", self.where, text)


class BlockWorker:
    """Handles one delivered envelope at a time. The database is opened on first use, in the
    process that runs the task (Celery's pool child), never shared across a fork."""

    def __init__(
        self,
        settings: WorkerSettings,
        *,
        fingerprint: Callable[[], dict[str, Any]] | None = None,
        executor: Executor | None = None,
    ) -> None:
        """`fingerprint` and `executor` are injected by tests, which fake a host and its runs."""
        from benchlab.measure.host import fingerprint as local

        self.settings = settings
        self.fingerprint = fingerprint or local
        self.executor = executor
        self._store: Store | None = None
        self._host: dict[str, Any] | None = None

    @property
    def store(self) -> Store:
        if self._store is None:
            self._store = Store(self.settings.db, migrate=False)
        return self._store

    def handle(self, envelope: object) -> str:
        """What became of the task: done or skipped; else Forged, Refused, Unfit or Later (the
        module's docstring says what each means for the task)."""
        try:
            return self._handle(envelope)
        except (DatabaseUnavailable, OperationalError) as exc:
            raise Later(f"the database is unreachable ({str(exc).strip().splitlines()[0]})", 10) from None

    def _handle(self, envelope: object) -> str:
        task = open_envelope(envelope, self.settings.key, pool=self.settings.pool)
        exp = self.store.find_experiment(task.experiment)
        if exp is None:
            raise Unfit(f"no experiment named {task.experiment!r} in {self.store.shown}: is it the driver's database?")
        if task.workload not in exp.workload_ids:
            raise Forged(f"signed, but experiment {exp.name!r} has no workload {task.workload!r}")
        if self._host is None:
            self._host = self.fingerprint()
        host_id = self.store.host_id(self._host)
        where = f"{exp.name}: {task.workload} block {task.block + 1}"
        with self.store.lease_block(exp, task.workload, task.block) as held:
            if not held:
                raise Later(f"{where} is running on another worker", 30)
            attempt = self.store.begin_attempt(exp, task.workload, task.block, worker=self.settings.name, host_id=host_id)
            try:
                state = self._run(task, exp, attempt, where)
            except (Refused, Forged) as exc:
                self.store.end_attempt(attempt, REFUSED, str(exc))
                raise
            except (DatabaseUnavailable, OperationalError):
                raise  # the attempt stays running; the task comes again
            except Exception as exc:  # noqa: BLE001 - whatever it is, it is this machine's, and the block must not be lost
                if not isinstance(exc, BenchlabError | Unfit):
                    log.exception("%s: failed", where)
                reason = str(exc) if isinstance(exc, BenchlabError | Unfit) else f"internal error (please report it): {exc!r}"
                self.store.end_attempt(attempt, FAILED, reason)
                raise Unfit(reason) from None
        self.store.end_attempt(attempt, state)
        log.info("%s: %s", where, state)
        return state

    def _run(self, task: BlockTask, exp: ExperimentRecord, attempt: int, where: str) -> str:
        if identity_digest(exp.spec_document) != task.spec_hash:
            raise Forged(f"the stored spec of {exp.name!r} is not the one the task was signed for")
        spec = exp.spec
        if not 0 <= task.block < spec.blocks:
            raise Forged(f"signed, but {exp.name!r} has blocks 1 to {spec.blocks}, not {task.block + 1}")
        self.settings.allow.check(spec)
        prepared = Prepared.from_spec(spec)
        progress = AttemptProgress(self.store, attempt, where)
        runner = Runner(self.store, executor=self.executor, progress=progress, host=self._host)
        # a block killed between its timed and its profiled runs is not whole where perf is there
        # to profile it; where perf is missing it is whole without them (its runner says why)
        profiled = task.workload in runner.profiled_workloads(prepared)
        if self.store.block_complete(exp, task.workload, task.block, ok_only=task.retry_failed, profiled=profiled):
            return SKIPPED
        changed = [name for name, w in prepared.workloads.items() if exp.workload_versions.get(name) != w.version]
        if changed:
            raise Unfit(f"workload {changed[0]} here is of another version than the experiment's (another build?)")

        def selected(planned: PlannedRun) -> bool:
            return planned.workload == task.workload and (planned.warmup or planned.block == task.block)

        runner.run(prepared, retry_failed=task.retry_failed, only=selected, joined=exp)
        if not self.store.block_complete(exp, task.workload, task.block, profiled=profiled):  # never "done" with a run missing
            raise Unfit(f"{task.workload} block {task.block + 1} is not stored whole after its attempt")
        return DONE


# Celery's loggers that report a message it or the task refused (Reject, a pickle, an unknown task
# name, arguments that fit no call), each with the traceback of whatever the sender made raise.
CELERY_REFUSALS = ("celery.app.trace", "celery.worker.consumer.consumer", "celery.worker.strategy")


class OneLine(logging.Filter):
    """Celery's report of a refused message as one line without a traceback: the sender chose what
    raised, so a traceback says nothing of this worker, and a queue of forged messages must not
    bury its log. A task's own refusal (Reject) is dropped: the task logged why, in one line."""

    def filter(self, record: logging.LogRecord) -> bool:
        from celery.exceptions import Reject

        if not record.exc_info and not record.exc_text:
            return True
        if record.exc_info and isinstance(record.exc_info[1], Reject):
            return False
        record.msg, record.args = " ".join(record.getMessage().split()), None
        record.exc_info, record.exc_text, record.stack_info = None, None, None
        return True


def serve(settings: WorkerSettings, *, broker: str, ca_file: Path | None, loglevel: str = "INFO") -> int:
    """Runs the Celery worker until it is stopped (SIGTERM: after the block in hand), or until
    this machine turns out unfit for the fleet's tasks."""
    from celery.exceptions import Reject

    app = make_app(broker, settings.pool, ca_file=ca_file)
    worker = BlockWorker(settings)

    @app.task(name=TASK, bind=True, max_retries=None)  # None here: retried for as long as it takes
    def run_block(self: Any, envelope: object) -> str:
        try:
            return worker.handle(envelope)
        except Forged as exc:
            log.warning("refused a message from the queue (%s); nothing was run", exc)
            raise Reject(str(exc), requeue=False) from None
        except Refused as exc:
            log.warning("refused a task (%s); nothing more of it is run here", exc)
            raise Reject(str(exc), requeue=False) from None
        except Unfit as exc:
            log.error("this machine cannot run the fleet's tasks (%s): the task is back in the queue; stopping", exc)
            os.kill(os.getppid(), signal.SIGTERM)  # the worker's main process: a warm shutdown, after this task
            raise Reject(str(exc), requeue=True) from None
        except Later as exc:
            log.warning("%s; the task comes again in %.0f s", exc, exc.pause)
            raise self.retry(countdown=exc.pause) from None

    for name in CELERY_REFUSALS:
        logging.getLogger(name).addFilter(OneLine())
    app.finalize()
    for name in [name for name in app.tasks if name != TASK]:  # Celery's own (chords, maps...): no message may run them
        app.tasks.unregister(name)
    node = app.Worker(
        hostname=f"{settings.name}@{socket.gethostname()}", queues=[queue_name(settings.pool)], pool="prefork",
        concurrency=1, loglevel=loglevel, without_mingle=True, without_gossip=True, without_heartbeat=True,
    )  # fmt: skip
    node.start()
    return int(node.exitcode or 0)
