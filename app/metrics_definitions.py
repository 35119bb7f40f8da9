"""What each counter means: unit, description, and the count that turns a sum into an average."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MetricDefinition:
    key: str
    unit: str
    description: str
    # For a `*_ms_sum`: the counter it is averaged over (sent as the sample's `n`).
    count_key: str | None = None


DEFINITIONS: tuple[MetricDefinition, ...] = (
    # api (one node for all api processes)
    MetricDefinition("http_requests", "req", "HTTP requests answered by the api"),
    MetricDefinition("http_errors", "req", "HTTP requests answered with a 5xx"),
    MetricDefinition(
        "http_request_ms_sum", "ms", "Time spent answering HTTP requests", "http_requests"
    ),
    MetricDefinition("searches", "req", "Search requests answered"),
    MetricDefinition("search_ms_sum", "ms", "Time spent answering searches", "searches"),
    # encoders
    MetricDefinition("served", "req", "Embed requests answered by this encoder"),
    MetricDefinition("forwarded", "req", "Model requests forwarded to a model holder"),
    MetricDefinition("errors", "req", "Embed requests that failed"),
    MetricDefinition("texts_embedded", "text", "Texts turned into vectors"),
    MetricDefinition("inference_count", "req", "Embed requests run on a model here"),
    MetricDefinition(
        "inference_ms_sum", "ms", "Model time of embed requests (on the holder)", "inference_count"
    ),
    MetricDefinition("routed_count", "req", "Forwarded requests answered"),
    MetricDefinition(
        "routed_ms_sum",
        "ms",
        "End-to-end time of forwarded requests (with the hop)",
        "routed_count",
    ),
    MetricDefinition("batches", "batch", "Model calls (micro-batches)"),
    MetricDefinition("batch_ms_sum", "ms", "Model time per micro-batch", "batches"),
)
BY_KEY = {d.key: d for d in DEFINITIONS}
# Numeric fields of a stats hash that describe the process rather than count anything.
IDENTITY_FIELDS = frozenset({"index", "last_seen", "pid"})


def definition(key: str) -> MetricDefinition:
    """Known keys from the table; a counter some process added later still gets a definition."""
    return BY_KEY.get(key) or MetricDefinition(key, "count", f"Counter '{key}'")
