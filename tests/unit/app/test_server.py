"""The api's server: slow request headers are cut off; the port can be shared."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest
import uvicorn
from starlette.types import Receive, Scope, Send

from app.server import header_timeout_protocol, shared_socket


async def hello(scope: Scope, receive: Receive, send: Send) -> None:
    if scope["type"] != "http":
        return
    await send(
        {"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"5")]}
    )
    await send({"type": "http.response.body", "body": b"hello"})


@pytest.fixture
async def port() -> AsyncIterator[int]:
    sock = shared_socket("127.0.0.1", 0)
    config = uvicorn.Config(hello, http=header_timeout_protocol(0.2), log_level="warning")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        await asyncio.sleep(0.01)
    yield sock.getsockname()[1]
    server.should_exit = True
    await asyncio.wait_for(task, 10)


async def test_headers_that_never_end_get_408_and_a_closed_connection(port: int) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET / HTTP/1.1\r\nHost: x\r\n")  # no blank line: the headers never end
    await writer.drain()
    answer = await asyncio.wait_for(reader.read(), 10)  # read() returns at EOF
    assert answer.startswith(b"HTTP/1.1 408")
    writer.close()


async def test_a_whole_request_is_served_and_the_connection_kept(port: int) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    for _ in range(2):
        writer.write(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        await writer.drain()
        head = await asyncio.wait_for(reader.readuntil(b"hello"), 10)
        assert head.startswith(b"HTTP/1.1 200")
    writer.close()
    with contextlib.suppress(ConnectionError):
        await writer.wait_closed()


def test_two_sockets_can_share_one_port() -> None:
    first = shared_socket("127.0.0.1", 0)
    port = first.getsockname()[1]
    second = shared_socket("127.0.0.1", port)
    assert second.getsockname()[1] == port
    first.close()
    second.close()
