"""Process lifecycle shared by every Braid process: periodic tasks, start/run/stop, and child
processes that run Braid's own modules (`start_module`).

A `Periodic` runs one async tick every interval and survives a failing tick (a Redis blip must
not end a heartbeat for good). `run_until_signalled` is the body of each process's `__main__`:
start the service, wait for SIGTERM/SIGINT, then close it within a bound that stays well inside
supervisord's `stopwaitsecs`, so the process exits on its own with its resources closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Protocol

import uvloop

log = logging.getLogger(__name__)

# supervisord waits 15 s (stopwaitsecs) before SIGKILL; a stop must end well inside that.
STOP_BOUND_S = 8.0
# Where `python3 -m` finds Braid's modules, whatever the working folder of the process.
_PROJECT = Path(__file__).resolve().parents[1]


class Periodic:
    """Calls `tick` every `interval_s` seconds until `stop`; an exception in one tick is logged
    (once per streak of failures, with the last error) and the next tick runs as usual."""

    def __init__(self, name: str, interval_s: float, tick: Callable[[], Awaitable[None]]) -> None:
        self.name = name
        self._interval_s = interval_s
        self._tick = tick
        self._task: asyncio.Task[None] | None = None
        self.failures = 0  # consecutive failed ticks

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name=self.name)

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    async def stop(self) -> None:
        """Cancel the loop and wait for it; a tick in progress is cancelled too."""
        task, self._task = self._task, None
        if task is None:
            return
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    async def _run(self) -> None:
        while True:
            await self.run_once()
            await asyncio.sleep(self._interval_s)

    async def run_once(self) -> bool:
        """One tick; False if it failed (logged, never raised)."""
        try:
            await self._tick()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the loop's boundary: log and keep ticking
            if self.failures == 0:
                log.warning("%s failed: %s; trying every %.1f s", self.name, exc, self._interval_s)
            self.failures += 1
            return False
        if self.failures:
            log.info("%s recovered after %d failed ticks", self.name, self.failures)
        self.failures = 0
        return True


class Service(Protocol):
    """What a process runs: start serving, then close (stop taking work, finish, release)."""

    async def start(self) -> None: ...

    async def close(self) -> None: ...


def stop_event_on_signals() -> asyncio.Event:
    """An event set by SIGTERM or SIGINT (the running loop's handlers)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    return stop


def run_process(name: str, make: Callable[[], Awaitable[Service]]) -> None:
    """A process's main: `run_until_signalled` on uvloop, as uvicorn runs the api (the stock
    loop's Python-level selector and socket writes were a fifth of a search node's time)."""
    uvloop.run(run_until_signalled(name, make))


async def run_until_signalled(
    name: str, make: Callable[[], Awaitable[Service]], stop_bound_s: float = STOP_BOUND_S
) -> None:
    """Build and start the service, serve until SIGTERM/SIGINT, then close it within a bound."""
    stop = stop_event_on_signals()
    service = await make()
    try:
        await service.start()
        log.info("%s ready", name)
        await stop.wait()
        log.info("%s stopping", name)
    finally:
        try:
            await asyncio.wait_for(service.close(), stop_bound_s)
            log.info("%s stopped", name)
        except TimeoutError:
            log.error("%s did not stop within %.0f s; exiting anyway", name, stop_bound_s)


async def start_module(module: str, *args: str, **options: Any) -> asyncio.subprocess.Process:
    """A child process running `python3 -m module args` of this checkout, on this Python;
    `options` go to `asyncio.create_subprocess_exec` (pipes, for one)."""
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", module, *args, cwd=_PROJECT, **options
    )
