"""Fixtures that run the real stack: `stack` and `client` (per session), `make_stack` (custom)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path

import httpx
import pytest

from harness.stack import Stack, StackFactory

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Everything under tests/integration carries the `integration` marker."""
    for item in items:
        if HERE in item.path.parents:
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def stack() -> Iterator[Stack]:
    """The whole stack with default settings, ready (GET /v1/health/ready answers 200)."""
    running = Stack({"BRAID_ENCODERS": "2", "BRAID_ENCODER_MODELS": "1"})
    try:
        running.start()
        yield running
    finally:
        running.stop()


@pytest.fixture(scope="session")
def client(stack: Stack) -> Iterator[httpx.Client]:
    """An HTTP client on the session stack's API (base_url set; paths like "/v1/...")."""
    with httpx.Client(base_url=stack.base_url, timeout=60.0) as http:
        yield http


@pytest.fixture
def make_stack() -> Iterator[StackFactory]:
    """Starts stacks with other settings: make_stack({"BRAID_ENCODERS": "3"}); stops them after."""
    made: list[Stack] = []

    def factory(
        extra_env: Mapping[str, str] | None = None,
        *,
        wait_ready: bool = True,
        timeout: float = 180.0,
    ) -> Stack:
        new = Stack(extra_env)
        made.append(new)
        return new.start(timeout=timeout, wait_ready=wait_ready)

    yield factory
    errors = []
    for made_stack in reversed(made):
        try:
            made_stack.stop()
        except Exception as exc:  # stop every stack, then report
            errors.append(exc)
    if errors:
        raise errors[0]
