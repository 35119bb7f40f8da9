"""Rate-limited log lines: at most one per key per window, and a count of the ones held back.

A burst of the same failure (every request while a dependency is down) says nothing new after
its first line, but a log that goes silent looks like nothing happened: the next line that is
let through says how many were held back since the last one.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class _Window:
    opened: float  # when the last line of the key was let through
    held: int = 0  # lines held back since


class LogThrottle:
    """Decides per key; not thread-safe (one event loop calls it). Keys should come from a
    closed vocabulary: each one keeps a window for the life of the process."""

    def __init__(self, window_s: float = 10.0, clock: Callable[[], float] = time.monotonic) -> None:
        self._window_s = window_s
        self._clock = clock
        self._windows: dict[str, _Window] = {}

    def admit(self, key: str) -> int | None:
        """None to hold this line back; else log it, adding the number returned: the lines of
        `key` held back since the last one let through."""
        now = self._clock()
        window = self._windows.get(key)
        if window is not None and now - window.opened < self._window_s:
            window.held += 1
            return None
        self._windows[key] = _Window(now)
        return window.held if window is not None else 0
