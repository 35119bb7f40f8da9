"""The metric vocabulary's rules, and what a process's recorder keeps."""

from __future__ import annotations

import pytest

from core.enums import UnavailableReason
from core.metrics import (
    COLLECTION_DOCUMENTS,
    EMBEDDED_TEXTS,
    LATENCY_BUCKETS,
    SEARCH_SECONDS,
    UNAVAILABLE,
    VOCABULARY,
    Metric,
    MetricKind,
    Recorder,
)


def test_the_vocabulary_follows_prometheus_naming() -> None:
    assert len({m.name for m in VOCABULARY}) == len(VOCABULARY)
    for metric in VOCABULARY:
        assert metric.name.startswith("braid_")
        assert metric.name.endswith("_total") == (metric.kind is MetricKind.COUNTER)
        if metric.kind is MetricKind.HISTOGRAM:
            assert metric.name.endswith("_seconds")


@pytest.mark.parametrize(
    ("kind", "name", "buckets", "labels", "problem"),
    [
        (MetricKind.COUNTER, "braid_x", (), (), "end in _total"),
        (MetricKind.GAUGE, "braid_x_total", (), (), "end in _total"),
        (MetricKind.HISTOGRAM, "braid_x_seconds", (), (), "have buckets"),
        (MetricKind.HISTOGRAM, "braid_x_seconds", (2.0, 1.0), (), "must increase"),
        (MetricKind.GAUGE, "braid_x", (), ("node",), "added by the exposition"),
        (MetricKind.GAUGE, "x", (), (), "start with braid_"),
    ],
)
def test_a_metric_that_breaks_the_rules_is_refused(
    kind: MetricKind,
    name: str,
    buckets: tuple[float, ...],
    labels: tuple[str, ...],
    problem: str,
) -> None:
    with pytest.raises(ValueError, match=problem):
        Metric(name, kind, "help", labels, buckets)


def test_latency_buckets_are_close_enough_for_a_percentile() -> None:
    """Linear interpolation inside a bucket is off by at most its width: keep the buckets
    between 5 ms and 1 s within 25 % of their upper bound."""
    pairs = zip(LATENCY_BUCKETS, LATENCY_BUCKETS[1:], strict=False)
    assert all((hi - lo) / hi <= 0.25 for lo, hi in pairs if 0.005 <= lo < 1.0)


def test_a_histogram_counts_each_value_in_the_first_bucket_that_holds_it() -> None:
    recorder = Recorder()
    for seconds in (0.0005, 0.0006, 0.1, 99.0):
        recorder.observe(SEARCH_SECONDS, seconds, collection="c")
    ((name, labels, (counts, total, count)),) = recorder.state()
    assert (name, labels, count) == (SEARCH_SECONDS.name, ["c"], 4)
    assert total == pytest.approx(99.1011)
    assert len(counts) == len(LATENCY_BUCKETS) + 1  # the last one is +Inf
    assert counts[LATENCY_BUCKETS.index(0.0005)] == 1  # a bound is inclusive (le)
    assert counts[LATENCY_BUCKETS.index(0.001)] == 1
    assert counts[LATENCY_BUCKETS.index(0.1)] == 1
    assert counts[-1] == 1


def test_counters_stay_exact_past_a_million() -> None:
    recorder = Recorder()
    recorder.inc(EMBEDDED_TEXTS, 1_234_567, model="m", lane="document")
    recorder.inc(EMBEDDED_TEXTS, model="m", lane="document")
    assert recorder.state() == [[EMBEDDED_TEXTS.name, ["m", "document"], 1_234_568]]


def test_labels_and_kinds_are_checked_when_recorded() -> None:
    recorder = Recorder()
    with pytest.raises(ValueError, match="takes labels"):
        recorder.inc(EMBEDDED_TEXTS, model="m")
    with pytest.raises(ValueError, match="not a histogram"):
        recorder.observe(EMBEDDED_TEXTS, 1.0, model="m", lane="query")
    with pytest.raises(ValueError, match="only goes up"):
        recorder.inc(EMBEDDED_TEXTS, -1, model="m", lane="query")


def test_keep_only_drops_the_gauges_of_what_is_gone() -> None:
    recorder = Recorder()
    recorder.set(COLLECTION_DOCUMENTS, 3, collection="kept")
    recorder.set(COLLECTION_DOCUMENTS, 5, collection="dropped")
    recorder.keep_only(COLLECTION_DOCUMENTS, "collection", {"kept"})
    assert recorder.state() == [[COLLECTION_DOCUMENTS.name, ["kept"], 3]]


def test_unavailable_answers_are_counted_by_a_closed_reason() -> None:
    assert UNAVAILABLE in VOCABULARY
    assert UNAVAILABLE.labels == UNAVAILABLE.trend_labels == ("reason",)
    recorder = Recorder()
    recorder.inc(UNAVAILABLE, reason=UnavailableReason.QUEUE_FULL)
    recorder.inc(UNAVAILABLE, reason=UnavailableReason.QUEUE_FULL)
    assert recorder.state() == [[UNAVAILABLE.name, ["queue_full"], 2]]
