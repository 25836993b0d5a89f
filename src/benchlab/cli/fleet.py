"""`benchlab worker`, and the options `benchlab run --fleet` adds to a run (what it does with
them: `fleet_target`)."""

from __future__ import annotations

import functools
import os

from benchlab.cli import options
from benchlab.cli.parser import Commands, Container, Parser, file_path, number, option, repeated, switch
from benchlab.errors import EnvironmentProblem, SpecError
from benchlab.report import safe

TYPE_CHECKING = False  # typing's flag without importing typing (3 ms of every start); mypy reads it alike
if TYPE_CHECKING:
    from pathlib import Path


def broker_options(parser: Container) -> None:
    """The broker and the fleet's key, which drivers and workers both need."""
    option(
        parser, "--broker", metavar="URL", help="RabbitMQ URL, amqp://USER:PASSWORD@HOST/VHOST or amqps:// [env: BENCHLAB_BROKER]"
    )
    option(
        parser, "--key", type=file_path, metavar="FILE", help="the fleet's shared key file (chmod 600) [env: BENCHLAB_FLEET_KEY]"
    )
    option(
        parser,
        "--broker-ca",
        type=file_path,
        metavar="FILE",
        help="with amqps://: the authority the broker's certificate is signed by",
    )


def driver_options(parser: Parser) -> None:
    """`run --fleet POOL` and its broker, in a section of their own."""
    group = parser.add_argument_group("Fleet (Celery over RabbitMQ; see docs/fleet.md)")
    option(group, "--fleet", metavar="POOL", help="run on the workers of this pool instead of here")
    broker_options(group)
    option(
        group,
        "--consumer-timeout",
        type=number,
        metavar="SECONDS",
        help="the broker's consumer_timeout in seconds (default RabbitMQ's 1800)",
    )


def worker(
    *,
    pool: str,
    broker: str | None,
    db: str | None,
    key: Path | None,
    allow: list[str],
    allow_shell: bool,
    allow_machine_state: bool,
    allow_env: list[str],
    name: str | None,
    broker_ca: Path | None,
) -> int:
    """Serve a pool: take one block at a time from its queue, run it here, store each run."""
    from benchlab import notes
    from benchlab.cli.fleet_target import broker_url, key_of
    from benchlab.fleet.allowlist import AllowList
    from benchlab.fleet.app import check_pool
    from benchlab.fleet.envelope import key_check
    from benchlab.fleet.worker import WorkerSettings, serve
    from benchlab.store import Store

    check_pool(pool)
    url, secret = broker_url(broker), key_of(key)
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
    escape = functools.partial(safe.text, limit=safe.LINE_MAX)
    notes.to_stderr("", escape, name="benchlab.fleet", fmt="%(asctime)s %(levelname)s %(message)s")
    return serve(settings, broker=url, ca_file=broker_ca)


def register(commands: Commands) -> None:
    commands.command("worker", worker, _worker_options)


def _worker_options(parser: Parser) -> None:
    option(parser, "--pool", required=True, help="the pool of identical machines this one serves")
    broker_options(parser)
    options.db(parser)
    repeated(parser, "--allow", help="a program tasks may run here (repeat); built-in workloads need none")
    switch(parser, "--allow-shell", help="let tasks run shells, and so any text given to them")
    switch(parser, "--allow-machine-state", help="let tasks change this machine: knobs, memory and swap, containers, vm guests")
    repeated(
        parser,
        "--allow-env",
        metavar="NAME",
        help="a variable a variant's env may set here, besides the defaults (repeat; NAME_* for a program's own family)",
    )
    option(parser, "--name", help="this worker's name in progress and logs (default HOST-PID)")
