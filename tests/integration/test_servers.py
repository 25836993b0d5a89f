"""The private RabbitMQ broker the fleet tests share (tests/servers.py) is what they rely on: a password,
refusals logged, no `guest`, a consumer timeout above the longest task, durable messages over a restart."""

from __future__ import annotations

import secrets

import kombu
import pytest
from amqp.exceptions import AccessRefused

from tests.servers import CONSUMER_TIMEOUT_MS, Broker


def test_a_client_needs_the_password_and_a_refused_one_is_logged(rabbitmq: Broker) -> None:
    with kombu.Connection(rabbitmq.url) as conn:
        conn.connect()
        assert conn.connected
    before = len(rabbitmq.log_text())
    with kombu.Connection(rabbitmq.bad_url) as conn, pytest.raises(AccessRefused):
        conn.connect()
    rabbitmq.wait_log("PLAIN login refused: user 'benchlab' - invalid credentials", since=before)
    assert rabbitmq.ctl("list_users").split()[2:] == ["benchlab", "[administrator]"]  # under a header; no guest
    assert rabbitmq.ctl("eval", "application:get_env(rabbit, consumer_timeout).").strip() == f"{{ok,{CONSUMER_TIMEOUT_MS}}}"


def test_persistent_messages_of_a_durable_queue_outlive_a_broker_restart(rabbitmq: Broker) -> None:
    name = f"restart-{secrets.token_hex(4)}"
    queue = kombu.Queue(name, routing_key=name, durable=True)
    with kombu.Connection(rabbitmq.url, transport_options={"confirm_publish": True}) as conn:
        producer = conn.Producer(serializer="json")
        producer.publish({"block": 1}, routing_key=name, declare=[queue], delivery_mode="persistent")
        producer.publish({"block": 2}, routing_key=name, delivery_mode="transient")  # dropped by a real restart
    rabbitmq.stop()
    rabbitmq.start()
    with kombu.Connection(rabbitmq.url) as conn:
        bound = queue(conn.default_channel)
        message = bound.get()
        assert message is not None and message.payload == {"block": 1}
        message.ack()
        assert bound.get() is None
