"""A progress bar for a bulk load, taken from the collection's own stats.

What counts is what the service has *indexed*, not what it has accepted: a write is indexed
once it has left the collection's queue. `GET /v1/collections/{c}/stats` gives the queue, so
indexed = acknowledged - (still queued now - queued when the load began), which also holds when
the load overwrites documents that exist (doc_count would not move). Rate and ETA come from the
last RATE_WINDOW_S of samples, so a slow start does not weigh on the estimate forever.
"""

from __future__ import annotations

import sys
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TextIO

RATE_WINDOW_S = 30.0
BAR_WIDTH = 28
LINE_EVERY_S = 10.0  # when the output is not a terminal: one line this often


def outstanding(stats: Mapping[str, Any]) -> int:
    """Writes of the collection still waiting to be indexed (queued or requeued, not failed)."""
    queue = stats.get("queue") or {}
    return sum(
        int(queue.get(key, 0))
        for key in ("queued_upsert", "queued_delete", "requeued_upsert", "requeued_delete")
    )


def failed(stats: Mapping[str, Any]) -> int:
    queue = stats.get("queue") or {}
    return int(queue.get("failed_upsert", 0)) + int(queue.get("failed_delete", 0))


@dataclass
class Snapshot:
    total: int  # documents in the load (this run's share when resumed)
    sent: int  # acknowledged by the service
    indexed: int
    failed: int
    docs_s: float | None  # indexed per second over the rate window
    eta_s: float | None

    def line(self) -> str:
        done = min(1.0, self.indexed / self.total) if self.total else 1.0
        filled = int(done * BAR_WIDTH)
        bar = "#" * filled + "." * (BAR_WIDTH - filled)
        rate = f"{self.docs_s:,.1f} docs/s" if self.docs_s is not None else "-- docs/s"
        eta = f"ETA {_clock(self.eta_s)}" if self.eta_s is not None else "ETA --"
        failures = f", {self.failed:,} failed" if self.failed else ""
        return (
            f"[{bar}] {self.indexed:,}/{self.total:,} indexed  {rate}  {eta}"
            f"  (sent {self.sent:,}{failures})"
        )


def _clock(seconds: float) -> str:
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s"


class Progress:
    """Feed it the stats (`sample`) and the acknowledged count (`sent`); it draws the bar."""

    def __init__(self, total: int, out: TextIO | None = None) -> None:
        self.total = total
        self.sent = 0
        self._waiting_before = self._failed_before = 0
        self._out = out if out is not None else sys.stderr
        self._tty = self._out.isatty()
        self._samples: deque[tuple[float, int]] = deque()
        self._last_line = float("-inf")
        self.last: Snapshot | None = None

    def begin(self, stats: Mapping[str, Any]) -> None:
        """The collection's queue before the load: what it held is not this load's."""
        self._waiting_before, self._failed_before = outstanding(stats), failed(stats)

    def sample(self, stats: Mapping[str, Any], now: float | None = None) -> Snapshot:
        now = time.monotonic() if now is None else now
        waiting = max(0, outstanding(stats) - self._waiting_before)
        gave_up = max(0, failed(stats) - self._failed_before)
        indexed = max(0, min(self.sent, self.sent - waiting - gave_up))
        self._samples.append((now, indexed))
        while len(self._samples) > 2 and now - self._samples[0][0] > RATE_WINDOW_S:
            self._samples.popleft()
        docs_s = eta_s = None
        first_at, first_indexed = self._samples[0]
        if now - first_at > 0 and indexed > first_indexed:
            docs_s = (indexed - first_indexed) / (now - first_at)
            eta_s = max(0, self.total - indexed) / docs_s
        self.last = Snapshot(self.total, self.sent, indexed, gave_up, docs_s, eta_s)
        self._draw(self.last, now)
        return self.last

    def _draw(self, snapshot: Snapshot, now: float) -> None:
        if self._tty:
            self._out.write("\r" + snapshot.line() + "\x1b[K")
            self._out.flush()
        elif now - self._last_line >= LINE_EVERY_S or snapshot.indexed >= snapshot.total:
            self._out.write(snapshot.line() + "\n")
            self._out.flush()
            self._last_line = now

    def finish(self) -> None:
        if self._tty:
            self._out.write("\n")
            self._out.flush()
