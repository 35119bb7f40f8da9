"""The metric vocabulary's rules, and what a process's recorder keeps and forgets."""

from __future__ import annotations

import pytest

from core.enums import UnavailableReason
from core.metrics import (
    COLLECTION,
    COLLECTION_DOCUMENTS,
    DOCUMENT_WRITES,
    EMBEDDED_TEXTS,
    LATENCY_BUCKETS,
    PROCESS_CPU,
    SEARCH_SECONDS,
    STANDARD_NAMES,
    UNAVAILABLE,
    VOCABULARY,
    Metric,
    MetricKind,
    Recorder,
)


def test_the_vocabulary_follows_prometheus_naming() -> None:
    assert len({m.name for m in VOCABULARY}) == len(VOCABULARY)
    for metric in VOCABULARY:
        assert metric.name.startswith("braid_") or metric.name in STANDARD_NAMES
        assert metric.name.endswith("_total") == (metric.kind is MetricKind.COUNTER)
        if metric.kind is MetricKind.HISTOGRAM:
            assert metric.name.endswith("_seconds")


def test_only_the_standard_process_series_go_without_the_braid_prefix() -> None:
    """The exemption is exactly the four names Prometheus's process collectors use, each
    declared, and each the process's own (no labels but the node and role added later)."""
    unprefixed = {m for m in VOCABULARY if not m.name.startswith("braid_")}
    assert {m.name for m in unprefixed} == STANDARD_NAMES
    assert STANDARD_NAMES == {
        "process_cpu_seconds_total",
        "process_resident_memory_bytes",
        "process_open_fds",
        "process_start_time_seconds",
    }
    assert all(m.name.startswith("process_") and m.labels == () for m in unprefixed)


@pytest.mark.parametrize(
    ("kind", "name", "buckets", "labels", "problem"),
    [
        (MetricKind.COUNTER, "braid_x", (), (), "end in _total"),
        (MetricKind.GAUGE, "braid_x_total", (), (), "end in _total"),
        (MetricKind.HISTOGRAM, "braid_x_seconds", (), (), "have buckets"),
        (MetricKind.HISTOGRAM, "braid_x_seconds", (2.0, 1.0), (), "must increase"),
        (MetricKind.GAUGE, "braid_x", (), ("node",), "added by the exposition"),
        (MetricKind.GAUGE, "x", (), (), "start with braid_"),
        (MetricKind.GAUGE, "process_threads", (), (), "start with braid_"),
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


def test_a_trend_key_never_names_a_collection() -> None:
    with pytest.raises(ValueError, match="never names a collection"):
        Metric("braid_x_total", MetricKind.COUNTER, "help", ("collection",), (), ("collection",))
    assert all(COLLECTION not in m.trend_labels for m in VOCABULARY)


def _recorded() -> Recorder:
    recorder = Recorder()
    recorder.set(COLLECTION_DOCUMENTS, 3, collection="kept")
    recorder.set(COLLECTION_DOCUMENTS, 5, collection="dropped")
    for collection in ("kept", "dropped", "also"):
        recorder.inc(DOCUMENT_WRITES, 2, collection=collection, op="upsert", outcome="applied")
        recorder.observe(SEARCH_SECONDS, 0.004, collection=collection)
    recorder.inc(EMBEDDED_TEXTS, model="m", lane="query")
    return recorder


def test_the_recorder_tells_which_collections_it_counts() -> None:
    assert _recorded().label_values(COLLECTION) == {"kept", "dropped", "also"}
    assert _recorded().label_values("lane") == {"query"}


def test_forgetting_a_collection_drops_every_series_that_names_it() -> None:
    recorder = _recorded()
    recorder.forget(COLLECTION, {"dropped", "also"})
    names = {(name, tuple(labels)) for name, labels, _ in recorder.state()}
    assert names == {
        (COLLECTION_DOCUMENTS.name, ("kept",)),
        (DOCUMENT_WRITES.name, ("kept", "upsert", "applied")),
        (SEARCH_SECONDS.name, ("kept",)),
        (EMBEDDED_TEXTS.name, ("m", "query")),
    }
    assert recorder.label_values(COLLECTION) == {"kept"}


def test_what_a_forgotten_collection_counted_is_retired_unnamed_and_levels_go() -> None:
    """Counters and histograms add up in the retired totals, with the collection blank: the
    trends' sums over collections keep them; a gauge's level is simply gone."""
    recorder = _recorded()
    recorder.forget(COLLECTION, {"dropped", "also"})
    retired = {(name, tuple(labels)): value for name, labels, value in recorder.retired()}
    assert set(retired) == {
        (DOCUMENT_WRITES.name, ("", "upsert", "applied")),
        (SEARCH_SECONDS.name, ("",)),
    }
    assert retired[(DOCUMENT_WRITES.name, ("", "upsert", "applied"))] == 4
    counts, total, count = retired[(SEARCH_SECONDS.name, ("",))]
    assert count == 2 and sum(counts) == 2 and total == pytest.approx(0.008)


def test_a_collection_counted_again_after_it_was_forgotten_starts_from_zero() -> None:
    recorder = _recorded()
    recorder.forget(COLLECTION, {"dropped"})
    recorder.inc(DOCUMENT_WRITES, collection="dropped", op="upsert", outcome="applied")
    by_series = {(name, tuple(labels)): value for name, labels, value in recorder.state()}
    assert by_series[(DOCUMENT_WRITES.name, ("dropped", "upsert", "applied"))] == 1


def test_a_counter_kept_elsewhere_is_set_to_its_total_and_never_goes_down() -> None:
    recorder = Recorder()
    recorder.set_total(PROCESS_CPU, 1.5)
    recorder.set_total(PROCESS_CPU, 1.25)
    assert recorder.state() == [[PROCESS_CPU.name, [], 1.5]]
    with pytest.raises(ValueError, match="not a counter"):
        recorder.set_total(COLLECTION_DOCUMENTS, 1.0, collection="c")


def test_unavailable_answers_are_counted_by_a_closed_reason() -> None:
    assert UNAVAILABLE in VOCABULARY
    assert UNAVAILABLE.labels == UNAVAILABLE.trend_labels == ("reason",)
    recorder = Recorder()
    recorder.inc(UNAVAILABLE, reason=UnavailableReason.QUEUE_FULL)
    recorder.inc(UNAVAILABLE, reason=UnavailableReason.QUEUE_FULL)
    assert recorder.state() == [[UNAVAILABLE.name, ["queue_full"], 2]]
