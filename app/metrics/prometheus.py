"""Prometheus text exposition (format 0.0.4) of every node's metrics, from core.metrics.

Each metric of the vocabulary gets one HELP and one TYPE line, then its series from every node
with the node's `node` and `role` labels; cluster-wide gauges (queue depths, read by the api
when scraped) carry neither. Counts print as integers and sums with every digit Python keeps,
so a counter past a million still moves by one.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from core.metrics import BY_NAME, LAST_SEEN, PROCESS_UP, VOCABULARY, Metric, MetricKind
from core.metrics_publish import NodeState

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

Series = list[Any]  # [name, label values, value] as in Recorder.state()


def render(nodes: Iterable[NodeState], cluster: list[Series], now: float) -> str:
    """The exposition: every node's series (labelled node, role), then the cluster's."""
    by_metric: dict[str, list[tuple[list[tuple[str, str]], Any]]] = {}
    for state in nodes:
        own = [("node", state.node), ("role", state.role)]
        for name, label_values, value in state.series:
            _add(by_metric, name, label_values, value, own)
        _add(by_metric, LAST_SEEN.name, [], state.last_seen, own)
        _add(by_metric, PROCESS_UP.name, [], 1 if state.live(now) else 0, own)
    for name, label_values, value in cluster:
        _add(by_metric, name, label_values, value, [])
    lines: list[str] = []
    for metric in VOCABULARY:
        samples = by_metric.get(metric.name)
        if not samples:
            continue
        lines.append(f"# HELP {metric.name} {_escape_help(metric.help)}")
        lines.append(f"# TYPE {metric.name} {metric.kind.value}")
        for labels, value in sorted(samples, key=lambda s: s[0]):
            if metric.kind is MetricKind.HISTOGRAM:
                lines.extend(_histogram_lines(metric, labels, value))
            else:
                lines.append(f"{metric.name}{series_labels(labels)} {number(value)}")
    return "\n".join(lines) + "\n"


def _add(
    by_metric: dict[str, list[tuple[list[tuple[str, str]], Any]]],
    name: str,
    label_values: list[str],
    value: Any,
    own: list[tuple[str, str]],
) -> None:
    metric = BY_NAME.get(name)
    if metric is None or len(label_values) != len(metric.labels):
        return  # a process of another version: its unknown series are left out
    labels = list(zip(metric.labels, label_values, strict=True)) + own
    by_metric.setdefault(name, []).append((labels, value))


def _histogram_lines(metric: Metric, labels: list[tuple[str, str]], value: Any) -> list[str]:
    counts, total, count = value
    lines = [
        f"{metric.name}_bucket{series_labels([*labels, ('le', bound)])} {running}"
        for bound, running in cumulative_buckets(metric, counts)
    ]
    lines.append(f"{metric.name}_sum{series_labels(labels)} {number(total)}")
    lines.append(f"{metric.name}_count{series_labels(labels)} {int(count)}")
    return lines


def cumulative_buckets(metric: Metric, counts: list[int]) -> list[tuple[str, int]]:
    """(le, count at or below it) per bucket, +Inf last, from per-bucket counts."""
    bounds = [*(number(b) for b in metric.buckets), "+Inf"]
    out, running = [], 0
    for bound, n in zip(bounds, counts, strict=True):
        running += n
        out.append((bound, running))
    return out


def number(value: float) -> str:
    """Integers as integers, other floats in full (repr round-trips), and the special values."""
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer()):
        return str(int(value))
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


def series_labels(labels: list[tuple[str, str]]) -> str:
    """`{a="x",b="y"}` as a series is written, or "" without labels."""
    if not labels:
        return ""
    inner = ",".join(f'{name}="{_escape_value(value)}"' for name, value in labels)
    return "{" + inner + "}"


def _escape_value(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")
