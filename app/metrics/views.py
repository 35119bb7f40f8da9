"""Pure shaping of counters into the metrics answers: windows and trend buckets."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from app.metrics.definitions import definition
from app.metrics.models import (
    MetricsBucket,
    MetricTrend,
    NodeMetricSeries,
    NodeView,
    WindowSample,
)
from app.metrics.store import SLOT_S, Counters, Node, NodeCounters

Lookup = Callable[[int], NodeCounters | None]


def increase(end: float, start: float | None) -> float:
    """A counter's increase; a counter that went down was reset (its process restarted)."""
    if start is None or end < start:
        return end
    return end - start


def node_increase(end: NodeCounters, start: NodeCounters) -> Counters:
    """Per key, summed over nodes. A node absent from `start` counts from zero; a gauge is its
    level at the end."""
    total: Counters = {}
    for node, counters in end.items():
        before = start.get(node, {})
        for key, value in counters.items():
            change = value if definition(key).gauge else increase(value, before.get(key))
            total[key] = total.get(key, 0.0) + change
    return total


def _sample(key: str, delta: Counters) -> tuple[float, int | None]:
    count_key = definition(key).count_key
    n = int(delta.get(count_key, 0)) if count_key else None
    return delta.get(key, 0.0), n


def node_view(
    node_id: str, node: Node, base: NodeCounters | None, window: int, keys: set[str] | None
) -> NodeView:
    """A node with one series per counter; the window sample is the increase since `base`."""
    delta = node_increase({node_id: node.counters}, base) if base is not None else None
    series = []
    for key in sorted(node.counters):
        if keys is not None and key not in keys:
            continue
        windows = {}
        if delta is not None:
            value, n = _sample(key, delta)
            windows[str(window)] = WindowSample(value=value, n=n)
        series.append(
            NodeMetricSeries(key=key, windows=windows, last_seen=node.last_seen),
        )
    return NodeView(role=node.role, last_seen=node.last_seen, meta=node.meta, metrics=series)


def candidate_slots(boundary: int, resolution: int, now: float) -> list[int]:
    """Where a bucket boundary's value may be found: its own slot, and for recent boundaries
    also the later slots of the bucket (the first partial bucket after a start has only those)."""
    if now - boundary > 600:
        return [boundary]
    return [s for s in range(boundary, boundary + resolution, SLOT_S) if s <= now]


def bucket_starts(since: float, until: float, resolution: int, now: float) -> list[int]:
    first = int(since // resolution) * resolution
    return list(range(first, int(min(until, now + 1)), resolution))


def trends(
    starts: list[int],
    resolution: int,
    lookup: Lookup,
    live: NodeCounters,
    now: float,
    keys: Iterable[str] | None,
) -> list[MetricTrend]:
    """One trend per key; a bucket is left out when no snapshot tells where it began or ended."""
    increases: list[tuple[int, Counters]] = []
    for start in starts:
        begin = _first(lookup, candidate_slots(start, resolution, now))
        end_at = start + resolution
        end = None if end_at > now else _first(lookup, candidate_slots(end_at, resolution, now))
        if end is None and end_at > now - SLOT_S:  # in progress, or its snapshot is not due yet
            end = live
        if begin is not None and end is not None:
            increases.append((start, node_increase(end, begin)))
    wanted = set(keys) if keys else {k for counters in live.values() for k in counters}
    out = []
    for key in sorted(wanted):
        buckets = []
        for start, delta in increases:
            value, n = _sample(key, delta)
            buckets.append(
                MetricsBucket(
                    key=key, bucket_start=start, bucket_seconds=resolution, value=value, n=n
                )
            )
        out.append(MetricTrend(key=key, bucket_seconds=resolution, buckets=buckets))
    return out


def _first(lookup: Lookup, slots: list[int]) -> NodeCounters | None:
    for slot in slots:
        found = lookup(slot)
        if found is not None:
            return found
    return None
