"""The Celery application both ends share: one queue per pool, and the settings that keep a
block's runs safe on RabbitMQ.

- `task_acks_late` and `task_reject_on_worker_lost`: a task is acknowledged only after its block
  is stored, so a worker killed mid-block leaves it unacknowledged and RabbitMQ delivers it
  again (to this worker when it returns, or to another of the pool).
- `worker_prefetch_multiplier = 1` and a concurrency of 1: a worker holds one block at a time,
  so a machine never runs two blocks at once and never sits on blocks others could run.
- The prefork pool (one child) rather than `solo`: the worker's main process keeps answering
  the broker's heartbeats while a long block runs in the child.
- JSON only (`accept_content`): a message in pickle, which would run code while being read, is
  refused before any task sees it. Remote control is off: nobody on the broker can shut a worker
  down, change its pool or read its state. No result backend: results go to the database.
- Queues and messages are durable, so a broker restart loses no task.
- The broker's `consumer_timeout` (rabbitmq.conf; 30 minutes by default) must exceed the longest
  block, or RabbitMQ hands a block that is still running to another worker; the driver warns.
"""

from __future__ import annotations

import re
import ssl
import urllib.parse
from pathlib import Path
from typing import Any

from benchlab.errors import SpecError

TASK = "benchlab.run_block"
POOL = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
DEFAULT_CONSUMER_TIMEOUT = 1800.0  # RabbitMQ's own default, in seconds


def check_pool(pool: str) -> str:
    if not POOL.fullmatch(pool):
        raise SpecError(f"{pool[:80]!r} is no pool name (letters, digits, '_', '.', '-'; at most 64)", where="--fleet/--pool")
    return pool


def queue_name(pool: str) -> str:
    return f"benchlab.{pool}"


def check_broker(url: str | None) -> str:
    if not url:
        raise SpecError("no broker: give --broker amqp://USER:PASSWORD@HOST/VHOST (or set BENCHLAB_BROKER)")
    scheme = url.split("://", 1)[0] if "://" in url else ""
    if scheme not in ("amqp", "amqps", "pyamqp"):
        raise SpecError(f"{scheme or url[:40]!r} is no RabbitMQ URL (amqp:// or amqps://)", where="--broker")
    return url


def make_app(broker: str, pool: str, *, ca_file: Path | None = None) -> Any:
    """The app for one pool. `ca_file`: the authority a TLS broker's certificate must be signed
    by (with an amqps:// URL); without it the system's authorities are used."""
    from celery import Celery  # loaded only by the fleet's commands
    from kombu import Queue

    app = Celery("benchlab", broker=broker, set_as_current=False)
    queue = queue_name(check_pool(pool))
    tls: dict[str, Any] | bool = False
    if broker.startswith("amqps://"):  # the certificate checked, and made out to the host the URL names
        tls = {"cert_reqs": ssl.CERT_REQUIRED, "server_hostname": urllib.parse.urlsplit(broker).hostname}
        if ca_file is not None:
            tls["ca_certs"] = str(ca_file)
    app.conf.update(
        broker_use_ssl=tls,
        broker_connection_retry_on_startup=True,
        broker_connection_max_retries=None,  # a broker restart is waited out, never a reason to stop
        task_serializer="json",
        accept_content=["json"],
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        task_ignore_result=True,
        task_default_queue=queue,
        task_queues=[Queue(queue, routing_key=queue, durable=True)],
        task_default_delivery_mode="persistent",
        task_routes={TASK: {"queue": queue, "routing_key": queue}},
        worker_prefetch_multiplier=1,
        worker_concurrency=1,
        worker_enable_remote_control=False,
        worker_send_task_events=False,
        worker_hijack_root_logger=False,
        worker_redirect_stdouts=False,
    )
    return app
