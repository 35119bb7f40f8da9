"""Every 503 has a reason from one closed vocabulary, and keeps it across the bus."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import pytest
from aio_pika.abc import AbstractIncomingMessage
from redis import exceptions as redis_errors

from core.delivery import ERROR_MESSAGE, ERROR_REASON, ERROR_STATUS, reply_message
from core.enums import UnavailableReason
from core.errors import (
    BraidError,
    NotFound,
    QueueFull,
    Unavailable,
    dependency_error,
    error_for_status,
)

ROOT = Path(__file__).resolve().parents[3]


@dataclass
class Request:
    """What reply_message reads of the request it answers."""

    correlation_id: str = "c-1"


def crossed(error: BraidError) -> BraidError:
    """The error as the caller of an RPC rebuilds it from the reply's headers."""
    headers = reply_message(cast(AbstractIncomingMessage, Request()), error).headers or {}
    return error_for_status(
        int(str(headers[ERROR_STATUS])), str(headers[ERROR_MESSAGE]), headers.get(ERROR_REASON)
    )


def test_reasons_are_snake_case_words() -> None:
    for reason in UnavailableReason:
        assert reason.value == reason.name.lower()


def test_an_unavailable_without_a_reason_is_unclassified_and_a_full_queue_says_so() -> None:
    assert Unavailable("x").reason is UnavailableReason.UNCLASSIFIED
    assert QueueFull("x").reason is UnavailableReason.QUEUE_FULL
    assert Unavailable("x", 2, UnavailableReason.REDIS_DOWN).reason is UnavailableReason.REDIS_DOWN


@pytest.mark.parametrize("reason", list(UnavailableReason))
def test_every_reason_crosses_the_bus(reason: UnavailableReason) -> None:
    back = crossed(Unavailable("the queue is full; retry later", reason=reason))
    assert isinstance(back, Unavailable)
    assert (back.reason, back.message, back.status) == (
        reason,
        "the queue is full; retry later",
        503,
    )


def test_a_full_queue_crosses_the_bus_as_queue_full() -> None:
    back = crossed(QueueFull("queue 'braid.search' is full; retry later"))
    assert isinstance(back, Unavailable) and back.reason is UnavailableReason.QUEUE_FULL


@pytest.mark.parametrize("sent", [None, "", "a_reason_from_a_newer_peer"])
def test_a_reason_this_process_does_not_know_is_unclassified(sent: object) -> None:
    back = error_for_status(503, "busy; retry", sent)
    assert isinstance(back, Unavailable) and back.reason is UnavailableReason.UNCLASSIFIED


def test_other_errors_cross_without_a_reason() -> None:
    back = crossed(NotFound("Document not found"))
    assert type(back) is NotFound and back.message == "Document not found"


@pytest.mark.parametrize(
    ("exc", "reason"),
    [
        (redis_errors.ConnectionError("gone"), UnavailableReason.REDIS_DOWN),
        (redis_errors.TimeoutError("slow"), UnavailableReason.REDIS_DOWN),
        (redis_errors.BusyLoadingError("loading"), UnavailableReason.REDIS_DOWN),
        (ConnectionRefusedError(111, "refused"), UnavailableReason.DEPENDENCY_DOWN),
        (TimeoutError(), UnavailableReason.DEPENDENCY_DOWN),
        (QueueFull("full; retry later"), UnavailableReason.QUEUE_FULL),  # passed through
        (ValueError("a bug"), None),
    ],
)
def test_a_dependency_failure_is_a_503_naming_the_dependency(
    exc: Exception, reason: UnavailableReason | None
) -> None:
    found = dependency_error(exc)
    assert (found.reason if found is not None else None) is reason
    if found is not None:
        assert "retry later" in found.message


def _unclassified_raises(path: Path) -> list[str]:
    """Calls of Unavailable(...) that give it no reason (a third argument or `reason=`)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not isinstance(node, ast.Call):
            continue
        name = getattr(node.func, "id", getattr(node.func, "attr", None))
        if name == "Unavailable" and len(node.args) < 3:
            if not any(keyword.arg == "reason" for keyword in node.keywords):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def test_every_503_the_code_raises_names_its_reason() -> None:
    files = [
        p
        for package in ("app", "core", "worker", "encoder")
        for p in (ROOT / package).rglob("*.py")
    ]
    assert [where for path in files for where in _unclassified_raises(path)] == []
