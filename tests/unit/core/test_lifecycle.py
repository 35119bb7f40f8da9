"""Periodic tasks survive failing ticks; a service is started, then closed on SIGTERM."""

from __future__ import annotations

import asyncio
import os
import signal

import pytest

from core.lifecycle import Periodic, run_until_signalled


async def test_a_failing_tick_does_not_end_the_loop() -> None:
    calls = 0
    recovered = asyncio.Event()

    async def tick() -> None:
        nonlocal calls
        calls += 1
        if calls <= 3:
            raise ConnectionError("redis is down")
        recovered.set()

    periodic = Periodic("test", 0.0, tick)
    periodic.start()
    await asyncio.wait_for(recovered.wait(), 10)
    assert periodic.failures == 0 and periodic.running
    await periodic.stop()
    assert not periodic.running


async def test_run_once_reports_failure_and_counts_the_streak() -> None:
    async def tick() -> None:
        raise RuntimeError("boom")

    periodic = Periodic("test", 1.0, tick)
    assert await periodic.run_once() is False
    assert await periodic.run_once() is False
    assert periodic.failures == 2


async def test_stop_cancels_a_tick_in_progress() -> None:
    started = asyncio.Event()

    async def tick() -> None:
        started.set()
        await asyncio.Event().wait()  # never ends by itself

    periodic = Periodic("test", 1.0, tick)
    periodic.start()
    await asyncio.wait_for(started.wait(), 10)
    await asyncio.wait_for(periodic.stop(), 10)
    assert not periodic.running


class _Service:
    def __init__(self, close_s: float = 0.0) -> None:
        self.events: list[str] = []
        self.close_s = close_s

    async def start(self) -> None:
        self.events.append("start")
        os.kill(os.getpid(), signal.SIGTERM)  # as supervisord's stop would

    async def close(self) -> None:
        self.events.append("close")
        await asyncio.sleep(self.close_s)
        self.events.append("closed")


async def test_a_service_starts_then_closes_on_sigterm() -> None:
    service = _Service()

    async def make() -> _Service:
        return service

    await asyncio.wait_for(run_until_signalled("test", make), 10)
    assert service.events == ["start", "close", "closed"]


async def test_a_close_that_hangs_is_cut_at_the_bound(caplog: pytest.LogCaptureFixture) -> None:
    service = _Service(close_s=3600)

    async def make() -> _Service:
        return service

    await asyncio.wait_for(run_until_signalled("test", make, stop_bound_s=0.05), 10)
    assert service.events == ["start", "close"]
    assert "did not stop within" in caplog.text
