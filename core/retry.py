"""Retry policy for failed queue items, as pure functions."""

from __future__ import annotations


def backoff_s(try_count: int, base_s: float = 0.5, cap_s: float = 30.0) -> float:
    """Delay before retry number `try_count` (1-based): exponential, capped."""
    if try_count <= 0:
        return 0.0
    return float(min(cap_s, base_s * 2 ** (try_count - 1)))


def should_give_up(try_count: int, max_tries: int) -> bool:
    """After `max_tries` failed attempts the item is marked failed and leaves the queue."""
    return try_count >= max_tries


RECONNECT_BACKOFF_S = (0.2, 0.5, 1.0, 2.0)


def reconnect_delay_s(attempt: int) -> float:
    """Delay before reconnect attempt `attempt` (0-based) to the broker: short first, then every
    2 s."""
    return RECONNECT_BACKOFF_S[min(attempt, len(RECONNECT_BACKOFF_S) - 1)]
