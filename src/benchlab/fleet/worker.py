"""`benchlab worker`: one per lab machine, taking one block at a time from its pool's queue.

What a delivery does (`BlockWorker.handle`, which needs no broker and is tested without one):
the envelope's signature and pool are checked, the experiment and its spec are read from the
database and must be the signed ones, the spec must pass this worker's allow-list and resolve
on this machine at the experiment's workload versions; then, unless the block is stored whole
on some host already (a redelivery after its acknowledgement was lost), the block runs through
the runner as a local run would, with this machine's state applied and restored around each
run. Runs this host stored before (a worker killed mid-block and back) are skipped: the block
resumes where it stopped. Warm-ups are per host, run before the host's first block of a workload.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy.exc import SQLAlchemyError

from benchlab.errors import BenchlabError, StoreError
from benchlab.fleet.allowlist import AllowList, Refused
from benchlab.fleet.app import TASK, make_app, queue_name
from benchlab.fleet.envelope import BlockTask, Forged, open_envelope
from benchlab.runner import Prepared, Runner, identity_digest
from benchlab.spec.models import ExperimentSpec
from benchlab.store import Store
from benchlab.store.fleet import DONE, FAILED, REFUSED, SKIPPED

if TYPE_CHECKING:
    from benchlab.measure.process import Executor
    from benchlab.plan import PlannedRun

log = logging.getLogger("benchlab.fleet")


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
        """What became of the task: done or skipped. Forged (a message to log and drop) and
        Refused (a task this worker will not run, or a bug, stored with its attempt) are raised;
        so is a database error (StoreError, SQLAlchemyError), after which the task comes again."""
        task = open_envelope(envelope, self.settings.key, pool=self.settings.pool)
        exp = self.store.find_experiment(task.experiment)
        if exp is None:
            raise Refused(f"no experiment named {task.experiment!r} in {self.store.shown}")
        if task.workload not in exp.workload_ids:
            raise Forged(f"signed, but experiment {exp.name!r} has no workload {task.workload!r}")
        if self._host is None:
            self._host = self.fingerprint()
        host_id = self.store.host_id(self._host)
        where = f"{exp.name}: {task.workload} block {task.block + 1}"
        attempt = self.store.begin_attempt(exp, task.workload, task.block, worker=self.settings.name, host_id=host_id)
        try:
            state = self._run(task, exp, host_id, attempt, where)
        except (Refused, Forged) as exc:
            self.store.end_attempt(attempt, REFUSED, str(exc))
            raise
        except StoreError:
            raise  # the database is away: the attempt stays running, the task comes again
        except BenchlabError as exc:
            self.store.end_attempt(attempt, FAILED, str(exc))
            raise Refused(str(exc)) from None
        except SQLAlchemyError:
            raise  # as a StoreError: the task comes again
        except Exception as exc:  # a bug: the driver must hear of it rather than wait for a block never stored
            log.exception("%s: failed", where)
            self.store.end_attempt(attempt, FAILED, f"internal error (please report it): {type(exc).__name__}: {exc}")
            raise Refused(f"internal error: {exc}") from None
        self.store.end_attempt(attempt, state)
        log.info("%s: %s", where, state)
        return state

    def _run(self, task: BlockTask, exp: Any, host_id: int, attempt: int, where: str) -> str:
        if identity_digest(exp.spec) != task.spec_hash:
            raise Forged(f"the stored spec of {exp.name!r} is not the one the task was signed for")
        spec = ExperimentSpec.model_validate(exp.spec)
        if not 0 <= task.block < spec.blocks:
            raise Forged(f"signed, but {exp.name!r} has blocks 1 to {spec.blocks}, not {task.block + 1}")
        if spec.until_decided is not None:
            raise Refused("a fleet runs a fixed number of blocks; this experiment runs until decided")
        self.settings.allow.check(spec)
        if self.store.block_complete(exp, task.workload, task.block):
            return SKIPPED
        prepared = Prepared.from_spec(spec)
        progress = AttemptProgress(self.store, attempt, where)
        runner = Runner(self.store, executor=self.executor, progress=progress, host=self._host)

        def selected(planned: PlannedRun) -> bool:
            return planned.workload == task.workload and (planned.warmup or planned.block == task.block)

        runner.run(prepared, resume=True, only=selected)
        if not self.store.block_complete(exp, task.workload, task.block):  # never "done" with a run missing
            raise StoreError(f"{task.workload} block {task.block + 1} is not stored whole after its attempt")
        return DONE


def serve(settings: WorkerSettings, *, broker: str, ca_file: Path | None, loglevel: str = "INFO") -> int:
    """Runs the Celery worker until it is stopped (SIGTERM: after the block in hand)."""
    from celery.exceptions import Reject

    app = make_app(broker, settings.pool, ca_file=ca_file)
    worker = BlockWorker(settings)

    @app.task(name=TASK, bind=True)
    def run_block(self: Any, envelope: object) -> str:
        try:
            return worker.handle(envelope)
        except Forged as exc:
            log.warning("refused a message from the queue (%s); nothing was run", exc)
            raise Reject(str(exc), requeue=False) from None
        except Refused as exc:
            log.warning("refused a task (%s); nothing more of it is run here", exc)
            raise Reject(str(exc), requeue=False) from None
        except (StoreError, SQLAlchemyError) as exc:
            log.warning("the database is unreachable (%s); the task will be taken again in 10 s", str(exc).splitlines()[0])
            raise self.retry(countdown=10, max_retries=None) from None

    node = app.Worker(
        hostname=f"{settings.name}@{socket.gethostname()}", queues=[queue_name(settings.pool)], pool="prefork",
        concurrency=1, loglevel=loglevel, without_mingle=True, without_gossip=True, without_heartbeat=True,
    )  # fmt: skip
    node.start()
    return int(node.exitcode or 0)
