"""The api's server: slow request headers are cut off; an answer is one write; the port can be
shared."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterable

import pytest
import uvicorn
from starlette.types import Receive, Scope, Send

from app.server import OneWritePerTurn, header_timeout_protocol, shared_socket


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


class Recording(asyncio.Transport):
    """A transport that records what reaches it, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, list[bytes]]] = []
        self.closing = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.calls.append(("write", [bytes(data)]))

    def writelines(self, list_of_data: Iterable[bytes | bytearray | memoryview]) -> None:
        self.calls.append(("writelines", [bytes(data) for data in list_of_data]))

    def close(self) -> None:
        self.calls.append(("close", []))
        self.closing = True

    def abort(self) -> None:
        self.calls.append(("abort", []))
        self.closing = True

    def is_closing(self) -> bool:
        return self.closing

    def get_write_buffer_size(self) -> int:
        return 0


async def test_what_a_turn_writes_leaves_in_one_call_at_its_end() -> None:
    real = Recording()
    held = OneWritePerTurn(real, asyncio.get_running_loop())
    held.write(b"HTTP/1.1 200 OK\r\n\r\n")
    held.write(b"hello")
    assert real.calls == [] and held.get_write_buffer_size() == 24
    await asyncio.sleep(0)  # the turn ends
    assert real.calls == [("writelines", [b"HTTP/1.1 200 OK\r\n\r\n", b"hello"])]
    held.write(b"bye")
    held.close()  # sends what it holds first
    await asyncio.sleep(0)
    assert real.calls[1:] == [("writelines", [b"bye"]), ("close", [])]


async def test_an_aborted_connection_sends_nothing_it_held() -> None:
    real = Recording()
    held = OneWritePerTurn(real, asyncio.get_running_loop())
    held.write(b"half an answer")
    held.abort()
    await asyncio.sleep(0)
    assert real.calls == [("abort", [])]
