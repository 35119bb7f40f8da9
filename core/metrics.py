"""The one vocabulary of Braid's metrics, and the recorder every process fills.

Every metric is declared here once, Prometheus-style: counters end in `_total`, times are
histograms in seconds, labels are fixed per metric. A process records into its own `Recorder`
(plain numbers in memory, absolute since the process started); a `MetricsPublisher` writes the
recorder's state to one Redis hash under the process's node id about once a second, and the api
renders every node's state as Prometheus text (`app/metrics/prometheus.py`), adding `node` and
`role`.
Values stay exact: counts are integers, sums are floats printed in full.

A series labelled `collection` lives as long as the collection: once the catalog no longer holds
it (or holds one made again under its name), every process forgets the series
(`Recorder.forget`, run by the publisher), so the exposition names only collections that exist.
What a forgotten counter or histogram had counted stays in the process's retired totals, which
feed the trends (their keys never name a collection), so no trend dips or jumps at a drop.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Collection
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

COLLECTION = "collection"  # the label whose series end with their collection (see above)

# Prometheus's standard process series, named as every client library's process collector names
# them, because dashboards and alerts look for exactly these: the one exemption from `braid_`.
STANDARD_NAMES = frozenset(
    {
        "process_cpu_seconds_total",
        "process_resident_memory_bytes",
        "process_open_fds",
        "process_start_time_seconds",
    }
)

# Upper bounds in seconds: about 15 % apart from 1 ms to 1 s, so a percentile read from the
# buckets (linear inside one) is within a few percent of the exact one.
LATENCY_BUCKETS: tuple[float, ...] = (
    0.0005, 0.001, 0.0015, 0.002, 0.003, 0.004, 0.005, 0.006, 0.007, 0.008, 0.009, 0.01,
    0.012, 0.014, 0.016, 0.018, 0.02, 0.023, 0.026, 0.03, 0.035, 0.04, 0.045, 0.05, 0.06,
    0.07, 0.08, 0.09, 0.1, 0.115, 0.13, 0.15, 0.175, 0.2, 0.23, 0.26, 0.3, 0.35, 0.4, 0.45,
    0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.25, 1.5, 2.0, 3.0, 5.0, 7.5, 10.0, 30.0, 60.0,
)  # fmt: skip


class MetricKind(StrEnum):
    COUNTER = "counter"
    GAUGE = "gauge"
    HISTOGRAM = "histogram"


@dataclass(frozen=True)
class Metric:
    name: str
    kind: MetricKind
    help: str
    labels: tuple[str, ...] = ()
    buckets: tuple[float, ...] = ()
    # What /v1/metrics/current and /trends keep (their keys sum over the other labels): these
    # labels, and for a histogram its buckets too when `trend_buckets` (percentiles over time).
    # A gauge's trend is its level at the end of each bucket; everything else's is an increase.
    trend_labels: tuple[str, ...] = ()
    trend_buckets: bool = False
    # False: left out of /current and /trends, whose keys sum over nodes (a sum of start times
    # means nothing); the exposition has it all the same.
    trended: bool = True

    def __post_init__(self) -> None:
        if not self.name.startswith("braid_") and self.name not in STANDARD_NAMES:
            raise ValueError(f"{self.name}: Braid's metrics start with braid_")
        if (self.kind is MetricKind.COUNTER) != self.name.endswith("_total"):
            raise ValueError(f"{self.name}: counters, and only counters, end in _total")
        if (self.kind is MetricKind.HISTOGRAM) != bool(self.buckets):
            raise ValueError(f"{self.name}: histograms, and only histograms, have buckets")
        if list(self.buckets) != sorted(set(self.buckets)):
            raise ValueError(f"{self.name}: bucket bounds must increase")
        if {"node", "role", "le"} & set(self.labels):
            raise ValueError(f"{self.name}: node, role and le are added by the exposition")
        if not set(self.trend_labels) <= set(self.labels):
            raise ValueError(f"{self.name}: trend labels must be labels of the metric")
        if COLLECTION in self.trend_labels:  # a dropped collection's counts are kept unnamed
            raise ValueError(f"{self.name}: a trend key never names a collection")


def _histogram(
    name: str,
    help_: str,
    *labels: str,
    trend_labels: tuple[str, ...] = (),
    trend_buckets: bool = False,
) -> Metric:
    return Metric(
        name, MetricKind.HISTOGRAM, help_, labels, LATENCY_BUCKETS, trend_labels, trend_buckets
    )


def _counter(name: str, help_: str, *labels: str, trend_labels: tuple[str, ...] = ()) -> Metric:
    return Metric(name, MetricKind.COUNTER, help_, labels, trend_labels=trend_labels)


def _gauge(
    name: str, help_: str, *labels: str, trend_labels: tuple[str, ...] = (), trended: bool = True
) -> Metric:
    return Metric(name, MetricKind.GAUGE, help_, labels, trend_labels=trend_labels, trended=trended)


# --- the vocabulary -------------------------------------------------------------------------

HTTP_REQUEST_SECONDS = _histogram(
    "braid_http_request_duration_seconds",
    "Time the api took to answer an HTTP request, by route template and status class",
    "route",
    "method",
    "status_class",
    trend_labels=("status_class",),
)
HTTP_RESPONSES = _counter(
    "braid_http_responses_total",
    "HTTP responses the api sent, by status code (503: overloaded, retry after)",
    "status",
    trend_labels=("status",),
)
UNAVAILABLE = _counter(
    "braid_unavailable_total",
    "503 answers the api sent to clients, by reason (core.enums.UnavailableReason; readiness "
    "probes are not counted)",
    "reason",
    trend_labels=("reason",),
)
SEARCH_SECONDS = _histogram(
    "braid_search_duration_seconds",
    "Time the api took to answer a search that succeeded, end to end, by collection",
    "collection",
    trend_buckets=True,
)
SEARCH_STAGE_SECONDS = _histogram(
    "braid_search_stage_duration_seconds",
    "Time a search spent in one stage of a search: query_embedding, engine or fusion",
    "stage",
    trend_labels=("stage",),
)
RPC_SECONDS = _histogram(
    "braid_rpc_duration_seconds",
    "Round trip of an RPC over the broker as its caller saw it, by the queue called",
    "call",
    trend_labels=("call",),
)
EMBED_SECONDS = _histogram(
    "braid_embed_batch_duration_seconds",
    "Model time of one batch on a model holder, by model and lane (document or query)",
    "model",
    "lane",
    trend_labels=("lane",),
)
ROUTED_SECONDS = _histogram(
    "braid_embed_routed_duration_seconds",
    "End-to-end time of an embed request an encoder forwarded to a model holder, hop included",
    "model",
)
EMBEDDED_TEXTS = _counter(
    "braid_embedded_texts_total",
    "Texts turned into vectors on a model holder, by model and lane",
    "model",
    "lane",
    trend_labels=("lane",),
)
EMBED_ERRORS = _counter(
    "braid_embed_errors_total", "Embed requests an encoder answered with an error", "model"
)
DOCUMENT_TEXTS_EMBEDDED = _counter(
    "braid_document_texts_embedded_total",
    "Document texts the worker had embedded, by collection (a text unchanged since the stored "
    "version keeps its vector)",
    "collection",
)
DOCUMENT_WRITES = _counter(
    "braid_document_writes_total",
    "Document writes the worker finished, by collection, operation (upsert, delete) and outcome "
    "(applied; stale: a newer version was stored; failed; gone: the collection was dropped)",
    "collection",
    "op",
    "outcome",
    trend_labels=("outcome",),
)
COLLECTION_DOCUMENTS = _gauge(
    "braid_collection_documents",
    "Documents stored in a collection, as the worker last counted them",
    "collection",
)
QUEUE_DEPTH = _gauge(
    "braid_queue_depth", "Messages waiting in a broker queue", "queue", trend_labels=("queue",)
)
COLLECTION_QUEUE = _gauge(
    "braid_collection_queue_documents",
    "Writes of a collection waiting or failed, by state (queued, requeued, failed)",
    "collection",
    "state",
    trend_labels=("state",),
)
CONSUMER_STALLED = _gauge(
    "braid_consumer_stalled",
    "1 while a process's consumer of a queue (or of an exchange's stream) has messages waiting "
    "and has taken none for BRAID_STALL_S; the process restarts itself after a grace period",
    "source",
    trend_labels=("source",),  # the dashboard's cluster map says what a node is stalled on
)
LAST_SEEN = _gauge(
    "braid_process_last_seen_timestamp_seconds", "Unix time a Braid process last published"
)
PROCESS_UP = _gauge(
    "braid_process_up", "1 while a Braid process publishes its metrics, 0 once silent for 15 s"
)
# Each process's own, read from /proc/self when it publishes (core/process_stats.py); the help
# texts are the standard ones.
PROCESS_CPU = _counter(
    "process_cpu_seconds_total", "Total user and system CPU time spent in seconds."
)
PROCESS_MEMORY = _gauge("process_resident_memory_bytes", "Resident memory size in bytes.")
PROCESS_FDS = _gauge("process_open_fds", "Number of open file descriptors.")
PROCESS_START = _gauge(
    "process_start_time_seconds",
    "Start time of the process since unix epoch in seconds.",
    trended=False,
)

VOCABULARY: tuple[Metric, ...] = (
    HTTP_REQUEST_SECONDS,
    HTTP_RESPONSES,
    UNAVAILABLE,
    SEARCH_SECONDS,
    SEARCH_STAGE_SECONDS,
    RPC_SECONDS,
    EMBED_SECONDS,
    ROUTED_SECONDS,
    EMBEDDED_TEXTS,
    EMBED_ERRORS,
    DOCUMENT_TEXTS_EMBEDDED,
    DOCUMENT_WRITES,
    COLLECTION_DOCUMENTS,
    QUEUE_DEPTH,
    COLLECTION_QUEUE,
    CONSUMER_STALLED,
    LAST_SEEN,
    PROCESS_UP,
    PROCESS_CPU,
    PROCESS_MEMORY,
    PROCESS_FDS,
    PROCESS_START,
)
BY_NAME = {metric.name: metric for metric in VOCABULARY}


# --- recording ------------------------------------------------------------------------------

LabelValues = tuple[str, ...]


@dataclass
class Histogram:
    """Per-bucket counts (not cumulative; the last one is +Inf), their sum and count."""

    counts: list[int]
    sum: float = 0.0
    count: int = 0

    def observe(self, bounds: tuple[float, ...], value: float) -> None:
        self.counts[bisect.bisect_left(bounds, value)] += 1  # the first bound >= value (le)
        self.sum += value
        self.count += 1

    def merge(self, other: Histogram) -> None:
        self.counts = [a + b for a, b in zip(self.counts, other.counts, strict=True)]
        self.sum += other.sum
        self.count += other.count


class Recorder:
    """One process's metrics since it started. Thread-safe: the encoder's lanes record from
    their own threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: dict[tuple[str, LabelValues], float] = {}
        self._histograms: dict[tuple[str, LabelValues], Histogram] = {}
        # What forgotten counters and histograms had counted, by series with the forgotten
        # label blank: the trends' sums over that label stay whole (see the module docstring).
        self._retired_values: dict[tuple[str, LabelValues], float] = {}
        self._retired_histograms: dict[tuple[str, LabelValues], Histogram] = {}

    def inc(self, metric: Metric, amount: float = 1, **labels: str) -> None:
        key = (metric.name, _label_values(metric, MetricKind.COUNTER, labels))
        if amount < 0:
            raise ValueError(f"{metric.name}: a counter only goes up")
        with self._lock:
            self._values[key] = self._values.get(key, 0) + amount

    def set_total(self, metric: Metric, total: float, **labels: str) -> None:
        """A counter kept elsewhere (the kernel's CPU time), set to its total as read; a lower
        reading leaves it as it was, so it still only goes up."""
        key = (metric.name, _label_values(metric, MetricKind.COUNTER, labels))
        with self._lock:
            self._values[key] = max(self._values.get(key, 0), total)

    def set(self, metric: Metric, value: float, **labels: str) -> None:
        key = (metric.name, _label_values(metric, MetricKind.GAUGE, labels))
        with self._lock:
            self._values[key] = value

    def observe(self, metric: Metric, seconds: float, **labels: str) -> None:
        key = (metric.name, _label_values(metric, MetricKind.HISTOGRAM, labels))
        with self._lock:
            histogram = self._histograms.get(key)
            if histogram is None:
                histogram = self._histograms[key] = Histogram([0] * (len(metric.buckets) + 1))
            histogram.observe(metric.buckets, seconds)

    def label_values(self, label: str) -> frozenset[str]:
        """Every value `label` has in a series now (the collections this process counts)."""
        with self._lock:
            keys = [*self._values, *self._histograms]
        return frozenset(
            values[i] for name, values in keys if (i := _position(name, label)) is not None
        )

    def forget(self, label: str, values: Collection[str]) -> None:
        """Drop every series whose `label` is among `values` (a dropped collection's). A gauge's
        level goes with it; a counter's or histogram's count moves to the retired totals."""
        with self._lock:
            for key in [k for k in self._values if _labelled(k, label, values)]:
                value = self._values.pop(key)
                if _kind(key[0]) is MetricKind.COUNTER:
                    blank = _blanked(key, label)
                    self._retired_values[blank] = self._retired_values.get(blank, 0) + value
            for key in [k for k in self._histograms if _labelled(k, label, values)]:
                histogram = self._histograms.pop(key)
                retired = self._retired_histograms.setdefault(
                    _blanked(key, label), Histogram([0] * len(histogram.counts))
                )
                retired.merge(histogram)

    def state(self) -> list[list[Any]]:
        """Every series as JSON-ready `[name, label values, value]`; a histogram's value is
        `[per-bucket counts, sum, count]`."""
        with self._lock:
            return _as_state(self._values, self._histograms)

    def retired(self) -> list[list[Any]]:
        """The retired totals, shaped as `state()`: for the trends, never for the exposition."""
        with self._lock:
            return _as_state(self._retired_values, self._retired_histograms)


def _as_state(
    values: dict[tuple[str, LabelValues], float],
    histograms: dict[tuple[str, LabelValues], Histogram],
) -> list[list[Any]]:
    return [[name, list(lv), v] for (name, lv), v in values.items()] + [
        [name, list(lv), [list(h.counts), h.sum, h.count]] for (name, lv), h in histograms.items()
    ]


def _kind(name: str) -> MetricKind | None:
    metric = BY_NAME.get(name)
    return None if metric is None else metric.kind


def _position(name: str, label: str) -> int | None:
    metric = BY_NAME.get(name)
    return metric.labels.index(label) if metric and label in metric.labels else None


def _labelled(key: tuple[str, LabelValues], label: str, values: Collection[str]) -> bool:
    position = _position(key[0], label)
    return position is not None and key[1][position] in values


def _blanked(key: tuple[str, LabelValues], label: str) -> tuple[str, LabelValues]:
    name, values = key
    position = _position(name, label) or 0  # only keys `_labelled` found come here
    return name, (*values[:position], "", *values[position + 1 :])


def _label_values(metric: Metric, kind: MetricKind, labels: dict[str, str]) -> LabelValues:
    if metric.kind is not kind:
        raise ValueError(f"{metric.name} is a {metric.kind}, not a {kind}")
    if set(labels) != set(metric.labels):
        raise ValueError(f"{metric.name} takes labels {metric.labels}, got {tuple(labels)}")
    return tuple(str(labels[name]) for name in metric.labels)
