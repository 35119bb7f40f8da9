"""Rate-limited log lines: one per key per window, and the count of those held back."""

from __future__ import annotations

import pytest

from core.throttle import LogThrottle


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


# (seconds since the start, key) -> what admit answers: None held back, else lines held before.
TABLE: list[tuple[float, str, int | None]] = [
    (0.0, "queue_full", 0),  # the first line of a key is logged
    (0.1, "queue_full", None),
    (5.0, "queue_full", None),
    (5.0, "redis_down", 0),  # keys have windows of their own
    (9.9, "queue_full", None),
    (10.0, "queue_full", 3),  # a window later: logged, with the 3 held back
    (10.5, "redis_down", None),
    (19.9, "queue_full", None),
    (20.0, "queue_full", 1),
    (60.0, "queue_full", 0),  # after a quiet spell nothing was held back
    (60.0, "redis_down", 1),
]


def test_one_line_per_key_per_window_with_the_count_held_back() -> None:
    clock = Clock()
    throttle = LogThrottle(window_s=10.0, clock=clock)
    answers = []
    for at, key, _ in TABLE:
        clock.now = 1000.0 + at
        answers.append(throttle.admit(key))
    assert answers == [expected for _, _, expected in TABLE]


@pytest.mark.parametrize("window_s", [0.5, 10.0, 60.0])
def test_a_steady_stream_logs_once_per_window(window_s: float) -> None:
    clock = Clock()
    throttle = LogThrottle(window_s=window_s, clock=clock)
    logged = []
    for step in range(1000):  # 100 lines a second for 10 s
        clock.now = 1000.0 + step / 100
        if (held := throttle.admit("k")) is not None:
            logged.append(held)
    assert len(logged) == pytest.approx(10.0 / window_s, abs=1)
    assert len(logged) + sum(logged) <= 1000  # every line is logged or counted, once
    assert 1000 - (len(logged) + sum(logged)) < window_s * 100  # the last window's, still held
