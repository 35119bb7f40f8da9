"""Opening the broker connection: one that fails leaves nothing behind for another thread."""

from __future__ import annotations

import asyncio
import gc
import logging
import warnings

import pytest

from core.delivery import connect
from harness.stack import free_ports


async def test_a_connection_that_fails_to_open_leaves_no_coroutine_to_warn_in_another_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # An encoder starts before the broker and retries; the garbage collector may then run in the
    # thread that loads a model, where a warning's imports broke torch's import (a 500).
    # aiormq logs each failure with its traceback, which pytest's log capture would keep alive.
    monkeypatch.setattr(logging.getLogger("aiormq.connection"), "disabled", True)
    (port,) = free_ports(1)  # nothing listens there
    failures = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            with pytest.raises(ConnectionError) as failed:
                await connect(f"amqp://guest:guest@127.0.0.1:{port}/", timeout_s=5)
            failures.append(failed.value)  # its traceback holds what the attempt made
        del failed
        await asyncio.to_thread(lambda: (failures.clear(), gc.collect()))
    unawaited = [str(w.message) for w in caught if "never awaited" in str(w.message)]
    assert unawaited == []
