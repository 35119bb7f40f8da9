"""Serving the api: several processes on one port, and connections that cannot hang forever.

Every api process binds the port with SO_REUSEPORT, so the kernel spreads connections over them
and a process that dies drops only its own connections. A connection must send its request
headers within `header_timeout_s` (uvicorn bounds only idle keep-alive time), so half-open
connections cannot pile up; the body read timeout lives in app.http.limits.

An answer leaves in one system call: uvicorn writes the status line and headers, then the body,
and uvloop sends each write at once, so every answer cost two writes and reached the client as
two segments. `OneWritePerTurn` holds what is written during a turn of the event loop and sends
it together at the turn's end.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterable
from typing import Any

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from core.settings import Settings

REQUEST_TIMEOUT = b"HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"


class OneWritePerTurn(asyncio.Transport):
    """A connection's transport whose writes wait for the end of the loop's turn, to go as one.

    Whatever would end the connection sends what is held first; the rest is the real transport's.
    """

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__()
        self._transport = transport
        self._loop = loop
        self._held: list[bytes] = []

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not self._held:
            self._loop.call_soon(self._send)
        self._held.append(bytes(data))

    def writelines(self, list_of_data: Iterable[bytes | bytearray | memoryview]) -> None:
        for data in list_of_data:
            self.write(data)

    def _send(self) -> None:
        held, self._held = self._held, []
        if held and not self._transport.is_closing():
            self._transport.writelines(held)

    def close(self) -> None:
        self._send()
        self._transport.close()

    def write_eof(self) -> None:
        self._send()
        self._transport.write_eof()

    def abort(self) -> None:
        self._held = []
        self._transport.abort()

    def can_write_eof(self) -> bool:
        return self._transport.can_write_eof()

    def is_closing(self) -> bool:
        return self._transport.is_closing()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self._transport.get_extra_info(name, default)

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        self._transport.set_protocol(protocol)

    def get_protocol(self) -> asyncio.BaseProtocol:
        return self._transport.get_protocol()

    def is_reading(self) -> bool:
        return self._transport.is_reading()

    def pause_reading(self) -> None:
        self._transport.pause_reading()

    def resume_reading(self) -> None:
        self._transport.resume_reading()

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        self._transport.set_write_buffer_limits(high, low)

    def get_write_buffer_size(self) -> int:
        return self._transport.get_write_buffer_size() + sum(map(len, self._held))

    def get_write_buffer_limits(self) -> tuple[int, int]:
        return self._transport.get_write_buffer_limits()


def header_timeout_protocol(timeout_s: float) -> type[HttpToolsProtocol]:
    """uvicorn's httptools protocol, closing connections whose headers take over `timeout_s`,
    its answers written once a turn (`OneWritePerTurn`)."""

    class HeaderTimeoutProtocol(HttpToolsProtocol):
        _header_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(OneWritePerTurn(transport, self.loop))
            self._arm()

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self._arm()

        def on_headers_complete(self) -> None:
            self._disarm()
            super().on_headers_complete()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _arm(self) -> None:
            if self._header_timer is None:
                self._header_timer = self.loop.call_later(timeout_s, self._headers_too_slow)

        def _disarm(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _headers_too_slow(self) -> None:
            self._header_timer = None
            if not self.transport.is_closing():
                self.transport.write(REQUEST_TIMEOUT)
                self.transport.close()

    return HeaderTimeoutProtocol


def shared_socket(host: str, port: int) -> socket.socket:
    """A listening-ready socket that other api processes may bind too (SO_REUSEPORT)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    return sock


def serve(app: Any, settings: Settings) -> None:
    """Run the api on the shared port until SIGTERM/SIGINT (uvicorn handles both)."""
    config = uvicorn.Config(
        app,
        loop="uvloop",
        http=header_timeout_protocol(settings.header_timeout_s),
        log_level=settings.log_level,
        access_log=False,
        timeout_keep_alive=5,
        timeout_graceful_shutdown=5,
    )
    uvicorn.Server(config).run(sockets=[shared_socket(settings.host, settings.port)])
