"""Shaping counters: increases across restarts, window samples, trend buckets, trend keys."""

from __future__ import annotations

from app.metrics.definitions import BY_KEY
from app.metrics.store import Node, node_of, trend_counters
from app.metrics.views import (
    bucket_starts,
    candidate_slots,
    increase,
    node_view,
    trends,
)
from core.metrics import (
    COLLECTION,
    COLLECTION_DOCUMENTS,
    DOCUMENT_WRITES,
    HTTP_RESPONSES,
    PROCESS_CPU,
    PROCESS_START,
    QUEUE_DEPTH,
    SEARCH_SECONDS,
    Recorder,
)
from core.metrics_publish import NodeState

NOW = 1_800_000_000.0  # a multiple of 300
T0 = int(NOW) - 300


def test_a_counter_that_went_down_was_reset_and_counts_from_zero() -> None:
    assert increase(15, 10) == 5
    assert increase(3, 10) == 3
    assert increase(7, None) == 7


def test_trend_keys_sum_over_labels_a_metric_does_not_keep() -> None:
    recorder = Recorder()
    recorder.inc(DOCUMENT_WRITES, 2, collection="a", op="upsert", outcome="applied")
    recorder.inc(DOCUMENT_WRITES, 3, collection="b", op="delete", outcome="applied")
    recorder.inc(HTTP_RESPONSES, status="503")
    recorder.set(QUEUE_DEPTH, 7, queue="q")
    recorder.observe(SEARCH_SECONDS, 0.004, collection="a")
    recorder.observe(SEARCH_SECONDS, 0.25, collection="b")
    counters = trend_counters(recorder.state())
    assert counters['braid_document_writes_total{outcome="applied"}'] == 5
    assert counters['braid_http_responses_total{status="503"}'] == 1
    assert counters['braid_queue_depth{queue="q"}'] == 7
    assert counters["braid_search_duration_seconds_count"] == 2
    assert abs(counters["braid_search_duration_seconds_sum"] - 0.254) < 1e-12
    # the search histogram keeps its (cumulative) buckets, for percentiles over time
    assert counters['braid_search_duration_seconds_bucket{le="0.004"}'] == 1
    assert counters['braid_search_duration_seconds_bucket{le="0.2"}'] == 1
    assert counters['braid_search_duration_seconds_bucket{le="+Inf"}'] == 2


def test_window_sample_is_the_increase_since_the_base_with_n_for_averages() -> None:
    count, total = "braid_rpc_duration_seconds_count", "braid_rpc_duration_seconds_sum"
    node = Node("encoder:model_holder", NOW, {}, {count: 10, total: 0.05})
    base = {"encoder-1": {count: 6, total: 0.03}}
    view = node_view("encoder-1", node, base, 60, None)
    samples = {s.key: s.windows["60"] for s in view.metrics}
    assert abs(samples[total].value - 0.02) < 1e-12 and samples[total].n == 4
    assert samples[count].value == 4 and samples[count].n is None
    assert [s.key for s in node_view("encoder-1", node, base, 60, {count}).metrics] == [count]
    assert all(s.windows == {} for s in node_view("encoder-1", node, None, 60, None).metrics)


def test_trend_buckets_are_increases_between_snapshots_summed_over_nodes() -> None:
    snaps = {
        T0: {"a": {"served": 1}, "b": {"served": 10}},
        T0 + 60: {"a": {"served": 4}, "b": {"served": 12}},
        T0 + 120: {"a": {"served": 4}, "b": {"served": 1}},  # b restarted
        # T0 + 180 missing: the buckets on both sides of it are unknown
        T0 + 240: {"a": {"served": 9}, "b": {"served": 1}},
    }
    live = {"a": {"served": 10}, "b": {"served": 3}}
    starts = bucket_starts(T0, NOW + 3600, 60, NOW)
    assert starts == [T0, T0 + 60, T0 + 120, T0 + 180, T0 + 240, T0 + 300]
    (trend,) = trends(starts, 60, lambda s: snaps.get(s), live, NOW, None)
    assert trend.key == "served" and trend.bucket_seconds == 60
    got = [(b.bucket_start, b.value) for b in trend.buckets]
    # T0+240's bucket ends now: at the live counters. The one starting now has no length yet.
    assert got == [(T0, 5), (T0 + 60, 1), (T0 + 240, 3)]


def test_the_bucket_in_progress_ends_at_the_live_counters() -> None:
    snaps = {int(NOW) - 60: {"a": {"served": 2}}}
    (trend,) = trends(
        [int(NOW) - 60], 60, lambda s: snaps.get(s), {"a": {"served": 7}}, NOW - 1, ["served"]
    )
    assert [(b.bucket_start, b.value) for b in trend.buckets] == [(int(NOW) - 60, 5)]


def test_a_recent_bucket_may_begin_at_its_first_snapshot() -> None:
    assert candidate_slots(int(NOW) - 60, 60, NOW) == [int(NOW) - 60 + i for i in range(0, 60, 10)]
    assert candidate_slots(int(NOW) - 7200, 60, NOW) == [int(NOW) - 7200]


def test_a_gauge_s_bucket_is_its_level_at_the_end_not_an_increase() -> None:
    depth = 'braid_queue_depth{queue="braid.documents"}'
    snaps = {T0: {"cluster": {depth: 40}}, T0 + 60: {"cluster": {depth: 25}}}
    (trend,) = trends([T0], 60, lambda s: snaps.get(s), {"cluster": {depth: 3}}, NOW, [depth])
    assert [(b.bucket_start, b.value) for b in trend.buckets] == [(T0, 25)]


def test_a_dropped_collection_leaves_the_trend_keys_as_they_were_but_its_level() -> None:
    """Its writes and searches still count in the sums over collections (a drop is no dip, and
    no fall read as a restart); the documents it held are no longer stored."""
    recorder = Recorder()
    for collection in ("kept", "dropped"):
        recorder.inc(DOCUMENT_WRITES, 3, collection=collection, op="upsert", outcome="applied")
        recorder.observe(SEARCH_SECONDS, 0.004, collection=collection)
        recorder.set(COLLECTION_DOCUMENTS, 3, collection=collection)

    def counters() -> dict[str, float]:
        return node_of(
            NodeState("worker", "worker", NOW, recorder.state(), {}, recorder.retired())
        ).counters

    before = counters()
    recorder.forget(COLLECTION, {"dropped"})
    after = counters()
    assert after.pop(COLLECTION_DOCUMENTS.name) == 3 and before.pop(COLLECTION_DOCUMENTS.name) == 6
    assert after == before
    assert after['braid_document_writes_total{outcome="applied"}'] == 6


def test_a_process_s_cpu_is_a_trend_and_its_start_time_is_not() -> None:
    recorder = Recorder()
    recorder.set_total(PROCESS_CPU, 2.5)
    recorder.set(PROCESS_START, 1.7e9)
    assert trend_counters(recorder.state()) == {PROCESS_CPU.name: 2.5}
    assert PROCESS_CPU.name in BY_KEY and PROCESS_START.name not in BY_KEY
