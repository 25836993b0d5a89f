"""A forged fleet message is logged in one line: Celery logged a traceback for each message it or
the task refused (a pickle, an unknown task, a task's Reject), which a queue of forged messages
turns into pages of log. The filter is tested on Celery's own loggers; tests/integration/test_fleet.py
sends the messages through RabbitMQ."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator

import pytest
from celery.exceptions import Reject
from kombu.exceptions import ContentDisallowed

from benchlab.fleet.worker import CELERY_REFUSALS, OneLine


@pytest.fixture
def logged() -> Iterator[io.StringIO]:
    text = io.StringIO()
    handler = logging.StreamHandler(text)
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    filters = []
    for name in CELERY_REFUSALS:
        logger = logging.getLogger(name)
        logger.addHandler(handler)
        filters.append((logger, OneLine()))
        logger.addFilter(filters[-1][1])
    yield text
    for logger, one in filters:
        logger.removeFilter(one)
        logger.removeHandler(handler)


def _raise(exc: Exception) -> None:
    raise exc


def test_refused_messages_are_one_line_each_without_a_traceback(logged: io.StringIO) -> None:
    consumer = logging.getLogger("celery.worker.consumer.consumer")
    try:
        _raise(ContentDisallowed("Refusing to deserialize untrusted content of type pickle"))
    except ContentDisallowed as exc:
        consumer.critical("Can't decode message body: %r\nbody: %s", exc, "b'\\x80\\x04...'\n[more]", exc_info=True)
    try:
        _raise(TypeError("run_block() missing 1 required positional argument: 'envelope'"))
    except TypeError:
        logging.getLogger("celery.app.trace").error("Task %s raised unexpected: %s", "benchlab.block", "TypeError", exc_info=True)
    try:
        _raise(Reject("bad signature", requeue=False))
    except Reject:
        logging.getLogger("celery.app.trace").warning("Task benchlab.block[x] rejected", exc_info=True)
    lines = logged.getvalue().splitlines()
    assert "Traceback" not in logged.getvalue()
    assert len(lines) == 2, lines  # the Reject's line is the task's own, logged by the worker
    assert "untrusted content" in lines[0] and "[more]" in lines[0] and lines[1].startswith("ERROR Task benchlab.block")
