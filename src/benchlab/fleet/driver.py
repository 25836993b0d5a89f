"""`benchlab run SPEC --fleet POOL`: store the experiment, publish its blocks, follow the database.

The driver holds no state a crash could lose: the experiment and every run are in the database,
the tasks in durable queues. Restarted with `--resume`, it publishes again only the blocks not
stored whole on some host; a block still queued from before then arrives twice, and its second
delivery finds it stored and is skipped. Following is reading: the runs stored, the attempts
per worker, and any refusal, which ends the wait (the block will not run until the worker's
operator acts, and the runs stored so far stay).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from benchlab.errors import EnvironmentProblem, Interrupted, SpecError
from benchlab.fleet.app import TASK, make_app, queue_name
from benchlab.fleet.envelope import BlockTask, seal
from benchlab.runner import Prepared, Runner, identity_digest
from benchlab.store import ExperimentRecord, Store
from benchlab.store.fleet import FleetProgress


class FleetView(Protocol):
    def show(self, progress: FleetProgress, total: int) -> None: ...


def check_fleet_spec(prepared: Prepared) -> None:
    """What a fleet cannot run: a sequential experiment (its looks need one runner deciding
    after each block) and variants on other hosts (each worker runs every variant itself)."""
    spec = prepared.spec
    if spec.until_decided is not None:
        raise SpecError("a fleet runs a fixed number of blocks; --until-decided runs on one machine", where="--fleet")
    remote = [v.name for v in spec.variants if v.environment.kind == "ssh"]
    if remote:
        raise SpecError(f"variant {remote[0]} runs over ssh; on a fleet each worker runs every variant itself", where="--fleet")


def longest_block(prepared: Prepared) -> float:
    """The most seconds one task may take: its workload's warm-ups and block, every run at its timeout."""
    spec = prepared.spec
    per_run = max((w.timeout or spec.timeout) for w in spec.workloads)
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


def missing_blocks(store: Store, exp: ExperimentRecord, prepared: Prepared) -> list[tuple[str, int]]:
    complete = store.complete_blocks(exp)
    return [
        (w.name, block) for block in range(prepared.spec.blocks) for w in prepared.spec.workloads
        if (w.name, block) not in complete
    ]  # fmt: skip


def publish(broker: str, pool: str, key: bytes, tasks: list[BlockTask], *, ca_file: Path | None = None) -> None:
    """Sends every task, confirmed by the broker (RabbitMQ's publisher confirms), before returning."""
    app = make_app(broker, pool, ca_file=ca_file)
    app.conf.broker_transport_options = {"confirm_publish": True}
    queue = queue_name(pool)
    try:
        with app.producer_or_acquire() as producer:
            for task in tasks:
                app.send_task(TASK, args=[seal(task, key)], queue=queue, routing_key=queue, producer=producer)
    except Exception as exc:  # a socket's, or kombu's and amqp's own: refused credentials, a closed channel
        if not isinstance(exc, OSError) and type(exc).__module__.split(".")[0] not in ("amqp", "kombu"):
            raise
        from kombu.utils.url import maybe_sanitize_url

        raise EnvironmentProblem(
            f"the broker at {maybe_sanitize_url(broker)} refused the tasks: {str(exc).strip().splitlines()[0]}"
        ) from None


def follow(
    store: Store,
    exp: ExperimentRecord,
    prepared: Prepared,
    view: FleetView,
    *,
    poll: float = 1.0,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.time,
) -> None:
    """Until every block is stored whole on some host. A refusal since this wait began, of a
    block not stored whole, ends it as an error (an older one was answered by this publish).
    It reads once every `poll` seconds, or less often where a read takes longer than a
    twentieth of that (its counts grow with the experiment: 85 ms at 100,000 runs), so that
    following an experiment never takes more than 5% of the database's time."""
    began = clock()
    wanted = {(w.name, b) for b in range(prepared.spec.blocks) for w in prepared.spec.workloads}
    total = len(wanted) * len(prepared.spec.variants)
    try:
        while True:
            asked = clock()
            progress = store.fleet_progress(exp)
            cost = clock() - asked
            view.show(progress, total)
            refused = [r for r in progress.refusals if r.ended_at >= began and (r.workload, r.block) not in progress.complete]
            if refused:
                first = refused[0]
                raise EnvironmentProblem(
                    f"worker {first.worker} refused {first.workload} block {first.block + 1}: {first.message}",
                    hint="fix that worker (or start another), then `benchlab run SPEC --fleet POOL --resume`",
                )
            if wanted <= progress.complete:
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
    ca_file: Path | None = None,
) -> ExperimentRecord:
    check_fleet_spec(prepared)
    created = store.find_experiment(prepared.spec.name) is None
    exp = Runner(store).open_experiment(prepared, resume=resume)
    digest = identity_digest(exp.spec)
    tasks = [BlockTask(pool, exp.name, digest, workload, block) for workload, block in missing_blocks(store, exp, prepared)]
    try:
        publish(broker, pool, key, tasks, ca_file=ca_file)
    except BaseException:
        if created:  # nothing of it can run: its name stays free
            store.drop_experiment(exp)
        raise
    follow(store, exp, prepared, view)
    return exp
