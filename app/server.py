"""Serving the api: several processes on one port, and connections that cannot hang forever.

Every api process binds the port with SO_REUSEPORT, so the kernel spreads connections over them
and a process that dies drops only its own connections. A connection must send its request
headers within `header_timeout_s` (uvicorn bounds only idle keep-alive time), so half-open
connections cannot pile up; the body read timeout lives in app.limits.
"""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from core.settings import Settings

REQUEST_TIMEOUT = b"HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"


def header_timeout_protocol(timeout_s: float) -> type[HttpToolsProtocol]:
    """uvicorn's httptools protocol, closing connections whose headers take over `timeout_s`."""

    class HeaderTimeoutProtocol(HttpToolsProtocol):
        _header_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
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
