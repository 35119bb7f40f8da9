"""Shaping counters: increases across restarts, window samples, trend buckets, Prometheus text."""

from __future__ import annotations

from app.metrics_store import Node, counters_of
from app.metrics_views import (
    bucket_starts,
    candidate_slots,
    increase,
    node_view,
    prometheus,
    trends,
)

NOW = 1_800_000_000.0  # a multiple of 300
T0 = int(NOW) - 300


def test_a_counter_that_went_down_was_reset_and_counts_from_zero() -> None:
    assert increase(15, 10) == 5
    assert increase(3, 10) == 3
    assert increase(7, None) == 7


def test_identity_fields_and_text_are_not_counters() -> None:
    stats = {"role": "router", "index": "2", "last_seen": "1.5", "served": "4", "x_ms_sum": "2.5"}
    assert counters_of(stats) == {"served": 4.0, "x_ms_sum": 2.5}


def test_window_sample_is_the_increase_since_the_base_with_n_for_averages() -> None:
    node = Node("encoder:model_holder", NOW, {}, {"inference_count": 10, "inference_ms_sum": 50})
    base = {"encoder-1": {"inference_count": 6, "inference_ms_sum": 30}}
    view = node_view("encoder-1", node, base, 60, None)
    samples = {s.key: s.windows["60"] for s in view.metrics}
    assert samples["inference_ms_sum"].value == 20 and samples["inference_ms_sum"].n == 4
    assert samples["inference_count"].value == 4 and samples["inference_count"].n is None
    assert [s.key for s in node_view("encoder-1", node, base, 60, {"inference_count"}).metrics] == [
        "inference_count"
    ]
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


def test_prometheus_text_has_help_type_and_labelled_samples() -> None:
    nodes = {
        "worker": Node("worker", NOW, {}, {"texts_embedded": 3}),
        "encoder-1": Node('enc"1', NOW, {}, {"served": 2.5}),
    }
    text = prometheus(nodes)
    assert "# TYPE braid_served counter\n" in text
    assert "# HELP braid_texts_embedded " in text
    assert 'braid_served{node="encoder-1",role="enc\\"1"} 2.5\n' in text
    assert 'braid_texts_embedded{node="worker",role="worker"} 3\n' in text
    assert text.endswith("\n")
