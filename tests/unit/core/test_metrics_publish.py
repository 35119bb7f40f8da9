"""What a process publishes: its series less those of collections gone from the catalog (or made
again under their name), the retired totals beside them, and its own process series."""

from __future__ import annotations

from typing import cast

import orjson
from redis.asyncio import Redis

from core.catalog import Catalog
from core.metrics import COLLECTION, DOCUMENT_WRITES, PROCESS_FDS, SEARCH_SECONDS, Recorder
from core.metrics_publish import CollectionSeries, MetricsPublisher, NodeState
from core.process_stats import ProcessReader, ProcessStats


class FakeCatalog:
    """The catalog's collections and their tokens, as a test sets them."""

    def __init__(self, **tokens: str | None) -> None:
        self.tokens = tokens

    async def incarnations(self) -> dict[str, str | None]:
        return dict(self.tokens)


class FakeRedis:
    def __init__(self) -> None:
        self.fields: dict[str, bytes] = {}

    async def hset(self, key: str, field: str, value: bytes) -> None:
        self.fields[field] = value


class FixedProcess(ProcessReader):
    def read(self) -> ProcessStats | None:
        return ProcessStats(cpu_seconds=2.5, resident_bytes=50_000_000, open_fds=9, start_time=1e9)


def _searched(recorder: Recorder, *collections: str) -> None:
    for collection in collections:
        recorder.observe(SEARCH_SECONDS, 0.01, collection=collection)


def _series(catalog: FakeCatalog, recorder: Recorder) -> CollectionSeries:
    return CollectionSeries(cast(Catalog, catalog), recorder)


async def test_a_collection_the_catalog_no_longer_holds_is_forgotten() -> None:
    recorder, catalog = Recorder(), FakeCatalog(a="t1", b="t2")
    _searched(recorder, "a", "b")
    series = _series(catalog, recorder)
    await series.prune()
    assert recorder.label_values(COLLECTION) == {"a", "b"}
    del catalog.tokens["b"]
    await series.prune()
    assert recorder.label_values(COLLECTION) == {"a"}


async def test_a_collection_made_again_under_its_name_starts_from_zero() -> None:
    """Dropped and made again between two looks: another token, so the old counts go."""
    recorder, catalog = Recorder(), FakeCatalog(a="t1")
    _searched(recorder, "a", "a")
    series = _series(catalog, recorder)
    await series.prune()
    catalog.tokens["a"] = "t2"
    await series.prune()
    assert recorder.state() == []
    _searched(recorder, "a")
    await series.prune()
    ((_, _, (_, _, count)),) = recorder.state()
    assert count == 1


async def test_a_token_not_yet_written_is_no_new_collection() -> None:
    """put writes the config, then the token: a look in between reads no token, and neither
    that look nor the next (with the token it had) forgets anything."""
    recorder, catalog = Recorder(), FakeCatalog(a="t1", legacy=None)
    _searched(recorder, "a", "legacy")
    series = _series(catalog, recorder)
    await series.prune()
    catalog.tokens["a"] = None
    await series.prune()
    catalog.tokens["a"] = "t1"
    await series.prune()
    assert recorder.label_values(COLLECTION) == {"a", "legacy"}


async def test_a_write_recorded_after_the_drop_goes_at_the_next_publish() -> None:
    recorder, catalog = Recorder(), FakeCatalog()
    recorder.inc(DOCUMENT_WRITES, collection="gone", op="upsert", outcome="gone")
    await _series(catalog, recorder).prune()
    assert recorder.state() == []
    assert recorder.retired() == [[DOCUMENT_WRITES.name, ["", "upsert", "gone"], 1]]


async def test_a_publish_carries_the_process_series_and_the_retired_totals() -> None:
    recorder, redis = Recorder(), FakeRedis()
    _searched(recorder, "a", "b")
    publisher = MetricsPublisher(
        cast(Redis, redis),
        recorder,
        "api-1",
        "api",
        catalog=cast(Catalog, FakeCatalog(a="t1")),
        process=FixedProcess(),
    )
    await publisher.publish()
    state = NodeState.decode("api-1", redis.fields["api-1"])
    series = {(name, tuple(labels)): value for name, labels, value in state.series}
    assert (SEARCH_SECONDS.name, ("a",)) in series
    assert (SEARCH_SECONDS.name, ("b",)) not in series
    assert series[("process_cpu_seconds_total", ())] == 2.5
    assert series[(PROCESS_FDS.name, ())] == 9
    assert [name for name, _, _ in state.retired] == [SEARCH_SECONDS.name]


def test_a_state_published_before_retired_totals_existed_reads_with_none() -> None:
    raw = orjson.dumps({"role": "worker", "last_seen": 1.0, "meta": {}, "series": []})
    assert NodeState.decode("worker", raw).retired == []
