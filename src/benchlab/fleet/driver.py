"""`benchlab run SPEC --fleet POOL`: store the experiment, publish its blocks, follow the database.

The driver holds no state a crash could lose: the experiment and every run are in the database,
the tasks in durable queues. Restarted with `--resume`, it publishes again only the blocks not
stored whole on some host, counting a run stored as failed as missing unless `--keep-failed`
(as a local resume does: `Runner.run`'s `retry_failed`): such a block's task says so, and the
worker runs its failed runs again, each replacing its failure, its ok runs never. A block still
queued from before then arrives twice, and its second delivery finds it stored and is skipped.
Following is reading: the runs stored, the attempts per worker, and any refusal, which ends the
wait (the block will not run until the worker's operator acts, and the runs stored so far stay).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from benchlab.errors import EnvironmentProblem, Interrupted, SpecError
from benchlab.fleet.allowlist import unfleetable
from benchlab.fleet.app import TASK, make_app, queue_name
from benchlab.fleet.envelope import BlockTask, key_check, seal
from benchlab.runner import Prepared, Runner, identity_digest
from benchlab.store import ExperimentRecord, Store
from benchlab.store.fleet import FAILED, FleetProgress


class FleetView(Protocol):
    def show(self, progress: FleetProgress, total: int) -> None: ...

    def note(self, text: str) -> None:
        """Something the user should know once: a worker that could not run a block."""
        ...


def check_fleet_spec(prepared: Prepared) -> None:
    reason = unfleetable(prepared.spec)
    if reason:
        raise SpecError(reason, where="--fleet")


def longest_block(prepared: Prepared) -> float:
    """The most seconds one task may take: its workload's warm-ups and block, every run (and its
    clean step) at its timeout; a setup step, once per worker, is left out."""
    spec = prepared.spec
    per_run = max((w.timeout or spec.timeout) * (2 if w.clean else 1) for w in spec.workloads)  # a clean step before each
    return per_run * len(spec.variants) * (1 + spec.warmup)


def consumer_timeout_warning(prepared: Prepared, consumer_timeout: float) -> str | None:
    longest = longest_block(prepared)
    if longest <= consumer_timeout:
        return None
    return (
        f"a block may take up to {longest:.0f} s (every run at its timeout), above the broker's consumer timeout "
        f"({consumer_timeout:.0f} s): RabbitMQ would hand a block still running to another worker; raise "
        f"consumer_timeout in rabbitmq.conf (and pass --consumer-timeout) or lower the spec's timeout"
    )


def profiled_workloads(prepared: Prepared) -> frozenset[str]:
    """The workloads the spec profiles: their blocks are whole with their profiled runs."""
    spec = prepared.spec
    return frozenset(w.name for w in spec.workloads if spec.profiling(w) is not None)


def missing_blocks(
    store: Store, exp: ExperimentRecord, prepared: Prepared, *, retry_failed: bool = False
) -> list[tuple[str, int]]:
    """The blocks to publish: those not stored whole on some host (`retry_failed`: whole with runs
    that ended well), profiled runs included where the spec profiles (a worker without perf
    answers such a block as whole without them)."""
    complete = store.complete_blocks(exp, ok_only=retry_failed, profiled=profiled_workloads(prepared))
    return [
        (w.name, block) for block in range(prepared.spec.blocks) for w in prepared.spec.workloads
        if (w.name, block) not in complete
    ]  # fmt: skip


class PublishFailed(EnvironmentProblem):
    """The broker took `sent` tasks and then refused the rest."""

    def __init__(self, message: str, sent: int) -> None:
        super().__init__(message)
        self.sent = sent


def publish(broker: str, pool: str, key: bytes, tasks: list[BlockTask], *, ca_file: Path | None = None) -> None:
    """Sends every task, each confirmed by the broker (RabbitMQ's publisher confirms)."""
    from amqp.exceptions import AMQPError
    from kombu.exceptions import KombuError
    from kombu.utils.url import maybe_sanitize_url

    app = make_app(broker, pool, ca_file=ca_file)
    app.conf.broker_transport_options = {"confirm_publish": True}
    queue = queue_name(pool)
    sent = 0
    try:
        with app.producer_or_acquire() as producer:
            for task in tasks:
                app.send_task(TASK, args=[seal(task, key)], queue=queue, routing_key=queue, producer=producer)
                sent += 1
    except (OSError, KombuError, AMQPError) as exc:
        raise PublishFailed(
            f"the broker at {maybe_sanitize_url(broker)} refused the tasks after {sent} of {len(tasks)}: "
            f"{str(exc).strip().splitlines()[0]}",
            sent,
        ) from None


def follow(
    store: Store,
    exp: ExperimentRecord,
    prepared: Prepared,
    view: FleetView,
    *,
    since: int = 0,
    awaited: frozenset[tuple[str, int]] = frozenset(),
    poll: float = 1.0,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> None:
    """Until every block is stored whole on some host and each of `awaited` answered by an attempt
    newer than `since`: the blocks published stored whole but with a failed run, to run it
    again, and those whose profiled runs follow their timed runs (whole without them where a
    worker has no perf, so only the attempt's end says they are done). A refusal of a block not stored whole,
    by an attempt newer than `since` (the newest before this publish: an older one was answered
    by it), ends the wait as an error; a worker that could not run a block (its task went back
    to the queue) is noted once. It reads once every `poll` seconds, or less often where a read
    takes longer than a twentieth of that (its counts grow with the experiment: 120 ms at
    100,000 runs), so that following an experiment never takes more than 5% of the database's time."""
    wanted = {(w.name, b) for b in range(prepared.spec.blocks) for w in prepared.spec.workloads}
    total = len(wanted) * len(prepared.spec.variants)
    noted: set[int] = set()
    try:
        while True:
            asked = clock()
            progress = store.fleet_progress(exp)
            cost = clock() - asked
            view.show(progress, total)
            new = [r for r in progress.refusals if r.attempt_id > since and (r.workload, r.block) not in progress.complete]
            for failed in (r for r in new if r.state == FAILED and r.attempt_id not in noted):
                noted.add(failed.attempt_id)
                view.note(f"worker {failed.worker} could not run {failed.workload} block {failed.block + 1} and stopped "
                          f"(the block went back to the queue): {failed.message}")  # fmt: skip
            refused = [r for r in new if r.state != FAILED]
            if refused:
                first = refused[0]
                raise EnvironmentProblem(
                    f"worker {first.worker} refused {first.workload} block {first.block + 1}: {first.message}",
                    hint="fix that worker (or start another), then `benchlab run SPEC --fleet POOL --resume`",
                )
            if wanted <= progress.complete and all(progress.answered.get(b, 0) > since for b in awaited):
                return
            sleep(max(poll, 20 * cost))
    except KeyboardInterrupt:
        raise Interrupted(
            "stopped following; the workers go on with the published blocks and store each run as it ends; "
            "follow again with `benchlab run SPEC --fleet POOL --resume`"
        ) from None


def run_on_fleet(
    prepared: Prepared,
    store: Store,
    view: FleetView,
    *,
    pool: str,
    broker: str,
    key: bytes,
    resume: bool,
    retry_failed: bool = False,
    ca_file: Path | None = None,
) -> ExperimentRecord:
    """Publishes the blocks not stored yet (`retry_failed`, a resume's default: and those holding
    a run stored as failed) and follows them to the end."""
    check_fleet_spec(prepared)
    created = store.find_experiment(prepared.spec.name) is None
    exp = Runner(store).open_experiment(prepared, resume=resume)
    digest = identity_digest(exp.spec_document)
    missing = missing_blocks(store, exp, prepared, retry_failed=retry_failed)
    tasks = [BlockTask(pool, exp.name, digest, workload, block, retry_failed) for workload, block in missing]
    profiled = profiled_workloads(prepared)
    retried = frozenset(missing) & store.complete_blocks(exp, profiled=profiled)
    if retried:
        view.note(f"{len(retried)} block(s) with a run stored as failed run again (--keep-failed keeps them)")
    store.register_fleet_key(key_check(key))
    since = store.last_attempt(exp)
    try:
        publish(broker, pool, key, tasks, ca_file=ca_file)
    except PublishFailed as failed:
        if created and failed.sent == 0:  # nothing of it can run: its name stays free
            store.drop_experiment(exp)
        raise
    follow(store, exp, prepared, view, since=since, awaited=retried | {b for b in missing if b[0] in profiled})
    return exp
