"""The bundled servers start, answer, restart and stop under supervisord, started like users do."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Iterator

import aio_pika
import pytest
import redis.asyncio as aioredis

from harness.stack import Stack, StackFactory, alive, port_open, session_pids

# Measured from the launch of docker/entrypoint.sh; RabbitMQ needs about 6-10 s here.
START_BUDGET_S = 60.0


@pytest.fixture(scope="module")
def infra() -> Iterator[Stack]:
    """A stack whose infrastructure is up; Braid's own programs may still be crash-looping."""
    running = Stack()
    try:
        running.start(wait_ready=False)
        yield running
    finally:
        running.stop()


def remaining(stack: Stack) -> float:
    return max(1.0, START_BUDGET_S - (time.monotonic() - stack.started_at))


async def amqp_round_trip(url: str, deadline: float) -> bytes:
    """Connect (retrying until `deadline`), publish a persistent message and read it back."""
    while True:
        try:
            connection = await aio_pika.connect(url, timeout=5)
            break
        except (TimeoutError, OSError, aio_pika.exceptions.AMQPError):
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.5)
    async with connection:
        channel = await connection.channel()
        queue = await channel.declare_queue(exclusive=True)
        body = b"braid"
        await channel.default_exchange.publish(
            aio_pika.Message(body, delivery_mode=aio_pika.DeliveryMode.PERSISTENT),
            routing_key=queue.name,
        )
        message = await queue.get(timeout=5, fail=True)
        assert message is not None
        await message.ack()
        return message.body


async def redis_ping(url: str) -> tuple[bool, dict[str | None, str | None]]:
    client = aioredis.from_url(url, decode_responses=True)
    try:
        pong = await client.ping()
        config = await client.config_get("appendonly")
        return bool(pong), config
    finally:
        await client.aclose()


async def test_rabbitmq_accepts_amqp_within_a_minute_of_start(infra: Stack) -> None:
    infra.wait_for_port(infra.amqp_port, remaining(infra))
    body = await amqp_round_trip(infra.amqp_url, time.monotonic() + remaining(infra))
    assert body == b"braid"


async def test_redis_answers_ping_with_append_only_file(infra: Stack) -> None:
    infra.wait_for_port(infra.redis_port, remaining(infra))
    pong, config = await redis_ping(infra.redis_url)
    assert pong is True
    assert config == {"appendonly": "yes"}


def test_only_local_servers_are_started(infra: Stack) -> None:
    infra.wait_for_port(infra.amqp_port, remaining(infra))
    status = {line.split()[0]: line.split()[1] for line in infra.ctl("status").splitlines()}
    assert status["epmd"] == "RUNNING"
    assert status["rabbitmq"] == "RUNNING"
    assert status["redis"] == "RUNNING"
    # No BRAID_QDRANT_URL: the embedded store is used, no Qdrant server.
    assert status["qdrant"] == "STOPPED"
    assert {"encoder:encoder-1", "encoder:encoder-2"} <= status.keys()
    assert "encoder:encoder-3" not in status


async def test_killed_redis_is_restarted_by_supervisord(infra: Stack) -> None:
    infra.wait_for_port(infra.redis_port, remaining(infra))
    old = infra.kill9("redis")
    new = infra.wait_restarted("redis", old, timeout=30)
    assert new != old
    infra.wait_for_port(infra.redis_port, 30)
    pong, _ = await redis_ping(infra.redis_url)
    assert pong is True


async def test_killed_rabbitmq_is_restarted_and_accepts_amqp_again(infra: Stack) -> None:
    infra.wait_for_port(infra.amqp_port, remaining(infra))
    old = infra.kill9("rabbitmq")
    new = infra.wait_restarted("rabbitmq", old, timeout=30)
    assert new != old
    # The Erlang VM died with its launcher (the whole program group), so the port came free
    # and the new node could take it.
    body = await amqp_round_trip(infra.amqp_url, time.monotonic() + 60)
    assert body == b"braid"


def test_stop_leaves_no_process_behind(make_stack: StackFactory) -> None:
    stack = make_stack(wait_ready=False)
    stack.wait_for_port(stack.amqp_port, remaining(stack))
    stack.wait_for_port(stack.redis_port, remaining(stack))
    sid = stack.supervisord_pid
    pids = [stack.pid(name) for name in ("epmd", "rabbitmq", "redis")]
    epmd_port = int(stack.env["BRAID_EPMD_PORT"])
    assert len(session_pids(sid)) > len(pids)  # the Erlang VM and Braid's programs too

    stack.stop()

    assert session_pids(sid) == []
    assert [pid for pid in pids if alive(pid)] == []
    for port in (stack.amqp_port, stack.redis_port, epmd_port):
        assert not port_open(port), f"port {port} still open after stop()"
    assert not stack.data_dir.exists() or os.environ.get("BRAID_TEST_KEEP_DATA")
