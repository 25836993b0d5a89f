"""`benchlab worker`, and what `benchlab run --fleet` adds to a run: the options, the progress."""

from __future__ import annotations

import logging
import math
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.progress import TextColumn

from benchlab.cli.console import err
from benchlab.cli.options import Db
from benchlab.cli.progress import print_note, progress_bar
from benchlab.errors import EnvironmentProblem, SpecError
from benchlab.report import safe

if TYPE_CHECKING:
    from types import TracebackType

    from benchlab.runner import Prepared
    from benchlab.store import ExperimentRecord, Store
    from benchlab.store.fleet import FleetProgress

PANEL = "Fleet (Celery over RabbitMQ; see docs/fleet.md)"
Broker = Annotated[
    str | None,
    typer.Option(
        "--broker", help="RabbitMQ URL, amqp://USER:PASSWORD@HOST/VHOST or amqps:// [env: BENCHLAB_BROKER]", rich_help_panel=PANEL
    ),
]
KeyFile = Annotated[
    Path | None,
    typer.Option("--key", help="the fleet's shared key file (chmod 600) [env: BENCHLAB_FLEET_KEY]", rich_help_panel=PANEL),
]
BrokerCa = Annotated[
    Path | None,
    typer.Option("--broker-ca", help="with amqps://: the authority the broker's certificate is signed by", rich_help_panel=PANEL),
]
Fleet = Annotated[
    str | None,
    typer.Option("--fleet", help="run on the workers of this pool instead of here", rich_help_panel=PANEL),
]
ConsumerTimeout = Annotated[
    float | None,
    typer.Option(
        "--consumer-timeout", help="the broker's consumer_timeout in seconds (default RabbitMQ's 1800)", rich_help_panel=PANEL
    ),
]


def _broker(url: str | None) -> str:
    from benchlab.fleet.app import check_broker

    return check_broker(url or os.environ.get("BENCHLAB_BROKER"))


def _key(path: Path | None) -> bytes:
    from benchlab.fleet.envelope import default_key_file, read_key

    path = path or default_key_file()
    if path is None:
        raise SpecError("no fleet key: give --key FILE (or set BENCHLAB_FLEET_KEY)")
    return read_key(path)


class FleetBar:
    """The driver's view of a fleet: runs stored of all, and per worker what it stored and runs now."""

    def __init__(self) -> None:
        self.bar = progress_bar(TextColumn("{task.fields[workers]}", markup=False))
        self.task = self.bar.add_task("runs", total=0, workers="waiting for workers")

    def __enter__(self) -> FleetBar:
        self.bar.start()
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.bar.stop()

    def show(self, progress: FleetProgress, total: int) -> None:
        workers = " · ".join(
            f"{name} {runs}" + (f" ({progress.running[name]})" if name in progress.running else "")
            for name, runs in sorted(progress.per_worker.items())
        )
        text = safe.text(workers or "waiting for workers", limit=safe.LINE_MAX)
        self.bar.update(self.task, total=total, completed=min(progress.runs, total), workers=text)

    def note(self, text: str) -> None:
        print_note(self.bar, text)


@dataclass(frozen=True)
class FleetTarget:
    """Where `run --fleet` sends an experiment, checked before anything is stored."""

    pool: str
    broker: str
    key: bytes
    ca_file: Path | None
    consumer_timeout: float

    @classmethod
    def given(
        cls, pool: str | None, broker: str | None, key: Path | None, ca_file: Path | None, consumer_timeout: float | None
    ) -> FleetTarget | None:
        """The target `run --fleet POOL` names, or None for a run here; a fleet's option without
        `--fleet` is refused, never silently ignored (the run would happen here, unasked)."""
        if pool is None:
            stray = [flag for flag, value in (("--broker", broker), ("--key", key), ("--broker-ca", ca_file),
                                               ("--consumer-timeout", consumer_timeout)) if value is not None]  # fmt: skip
            if stray:
                raise SpecError("this option is for a fleet: give --fleet POOL too, or leave it out", where=stray[0])
            return None
        return cls.of(pool, broker, key, ca_file, consumer_timeout)

    @classmethod
    def of(
        cls, pool: str, broker: str | None, key: Path | None, ca_file: Path | None, consumer_timeout: float | None
    ) -> FleetTarget:
        from benchlab.fleet.app import DEFAULT_CONSUMER_TIMEOUT, check_pool

        if consumer_timeout is not None and not (math.isfinite(consumer_timeout) and consumer_timeout > 0):
            raise SpecError(f"{consumer_timeout} is no number of seconds above 0", where="--consumer-timeout")
        return cls(check_pool(pool), _broker(broker), _key(key), ca_file, consumer_timeout or DEFAULT_CONSUMER_TIMEOUT)

    def run(self, prepared: Prepared, store: Store, *, resume: bool, retry_failed: bool) -> ExperimentRecord:
        from benchlab.fleet import driver

        warning = driver.consumer_timeout_warning(prepared, self.consumer_timeout)
        if warning:
            err.print(f"warning: {safe.text(warning, limit=safe.LINE_MAX)}", style="yellow", highlight=False)
        with FleetBar() as bar:
            return driver.run_on_fleet(
                prepared,
                store,
                bar,
                pool=self.pool,
                broker=self.broker,
                key=self.key,
                resume=resume,
                retry_failed=retry_failed,
                ca_file=self.ca_file,
            )


class _Escaped(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return safe.text(super().format(record), limit=safe.LINE_MAX)


def worker(
    pool: Annotated[str, typer.Option("--pool", help="the pool of identical machines this one serves")],
    broker: Broker = None,
    db: Db = None,
    key: KeyFile = None,
    allow: Annotated[
        list[str],
        typer.Option("--allow", help="a program tasks may run here (repeat); built-in workloads need none"),
    ] = [],  # noqa: B006
    allow_shell: Annotated[
        bool, typer.Option("--allow-shell", help="let tasks run shells, and so any text given to them")
    ] = False,
    allow_machine_state: Annotated[
        bool,
        typer.Option(
            "--allow-machine-state", help="let tasks change this machine: knobs, memory and swap, containers, vm guests"
        ),
    ] = False,
    allow_env: Annotated[
        list[str],
        typer.Option(
            "--allow-env",
            metavar="NAME",
            help="a variable a variant's env may set here, besides the defaults (repeat; NAME_* for a program's own family)",
        ),
    ] = [],  # noqa: B006
    name: Annotated[str | None, typer.Option("--name", help="this worker's name in progress and logs (default HOST-PID)")] = None,
    broker_ca: BrokerCa = None,
) -> None:
    """Serve a pool: take one block at a time from its queue, run it here, store each run."""
    from benchlab.fleet.allowlist import AllowList
    from benchlab.fleet.app import check_pool
    from benchlab.fleet.envelope import key_check
    from benchlab.fleet.worker import WorkerSettings, serve
    from benchlab.store import Store

    check_pool(pool)
    url, secret = _broker(broker), _key(key)
    allowed = AllowList.of(allow, shell=allow_shell, machine_state=allow_machine_state, env=allow_env)
    target = db or os.environ.get("BENCHLAB_DB")
    if not target:  # never this user's own file by default: tasks of the driver's database would find nothing there
        raise SpecError("no database: give --db with the driver's (a postgresql:// URL; or set BENCHLAB_DB)")
    store = Store(target, migrate=False)  # a database it cannot reach is refused now, not per task
    if store.fleet_key_known(key_check(secret)) is False:
        raise EnvironmentProblem(
            f"this worker's --key is not the one the fleet's drivers sign with (as {store.shown} records); "
            "it would refuse every task as forged"
        )
    store.engine.dispose()
    named = {"name": name} if name else {}
    settings = WorkerSettings(pool=pool, db=target, key=secret, allow=allowed, **named)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_Escaped("%(asctime)s %(levelname)s %(message)s"))
    log = logging.getLogger("benchlab.fleet")
    log.addHandler(handler)
    log.propagate = False
    raise typer.Exit(serve(settings, broker=url, ca_file=broker_ca))


def register(app: typer.Typer) -> None:
    app.command()(worker)
