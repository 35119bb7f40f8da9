"""The one vocabulary of Braid's metrics, and the recorder every process fills.

Every metric is declared here once, Prometheus-style: counters end in `_total`, times are
histograms in seconds, labels are fixed per metric. A process records into its own `Recorder`
(plain numbers in memory, absolute since the process started); a `MetricsPublisher` writes the
recorder's state to one Redis hash under the process's node id about once a second, and the api
renders every node's state as Prometheus text (`app/metrics/prometheus.py`), adding `node` and
`role`.
Values stay exact: counts are integers, sums are floats printed in full.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Collection
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

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

    def __post_init__(self) -> None:
        if not self.name.startswith("braid_"):
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


def _gauge(name: str, help_: str, *labels: str, trend_labels: tuple[str, ...] = ()) -> Metric:
    return Metric(name, MetricKind.GAUGE, help_, labels, trend_labels=trend_labels)


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


class Recorder:
    """One process's metrics since it started. Thread-safe: the encoder's lanes record from
    their own threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: dict[tuple[str, LabelValues], float] = {}
        self._histograms: dict[tuple[str, LabelValues], Histogram] = {}

    def inc(self, metric: Metric, amount: float = 1, **labels: str) -> None:
        key = (metric.name, _label_values(metric, MetricKind.COUNTER, labels))
        if amount < 0:
            raise ValueError(f"{metric.name}: a counter only goes up")
        with self._lock:
            self._values[key] = self._values.get(key, 0) + amount

    def set(self, metric: Metric, value: float, **labels: str) -> None:
        key = (metric.name, _label_values(metric, MetricKind.GAUGE, labels))
        with self._lock:
            self._values[key] = value

    def keep_only(self, metric: Metric, label: str, values: Collection[str]) -> None:
        """Drop a gauge's series whose `label` is not among `values` (a dropped collection)."""
        position = metric.labels.index(label)
        with self._lock:
            for key in [k for k in self._values if k[0] == metric.name]:
                if key[1][position] not in values:
                    del self._values[key]

    def observe(self, metric: Metric, seconds: float, **labels: str) -> None:
        key = (metric.name, _label_values(metric, MetricKind.HISTOGRAM, labels))
        with self._lock:
            histogram = self._histograms.get(key)
            if histogram is None:
                histogram = self._histograms[key] = Histogram([0] * (len(metric.buckets) + 1))
            histogram.observe(metric.buckets, seconds)

    def state(self) -> list[list[Any]]:
        """Every series as JSON-ready `[name, label values, value]`; a histogram's value is
        `[per-bucket counts, sum, count]`."""
        with self._lock:
            values = [[name, list(lv), v] for (name, lv), v in self._values.items()]
            histograms = [
                [name, list(lv), [list(h.counts), h.sum, h.count]]
                for (name, lv), h in self._histograms.items()
            ]
        return values + histograms


def _label_values(metric: Metric, kind: MetricKind, labels: dict[str, str]) -> LabelValues:
    if metric.kind is not kind:
        raise ValueError(f"{metric.name} is a {metric.kind}, not a {kind}")
    if set(labels) != set(metric.labels):
        raise ValueError(f"{metric.name} takes labels {metric.labels}, got {tuple(labels)}")
    return tuple(str(labels[name]) for name in metric.labels)
