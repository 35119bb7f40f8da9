"""The heartbeat records in their Redis form: what a writer puts is what every reader gets back."""

from __future__ import annotations

import json

import pytest

from core.enums import EncoderRole
from core.heartbeats import (
    BeatRecord,
    EncoderRecord,
    SearchNodeBeat,
    WorkerBeat,
    parse_registry,
    parse_search_nodes,
)

NOW = 1_000_000.0
ENCODER = EncoderRecord(index=2, role=EncoderRole.MODEL_HOLDER, models=["m"], pid=41, last_seen=NOW)
WORKER = WorkerBeat(ts=NOW, store=True, broker=False)
SEARCH_NODE = SearchNodeBeat(ts=NOW, pid=42, searches=7, position="3:120", copies=1)


@pytest.mark.parametrize(
    "record", [ENCODER, WORKER, SEARCH_NODE], ids=["encoder", "worker", "search node"]
)
def test_a_record_comes_back_from_redis_as_it_was_written(record: BeatRecord) -> None:
    written = record.to_redis()
    assert type(record).from_redis(written) == record
    assert type(record).from_redis(written.encode()) == record  # redis-py answers bytes


@pytest.mark.parametrize(
    ("record", "fields"),
    [
        (ENCODER, {"index", "role", "models", "pid", "last_seen"}),
        (WORKER, {"ts", "store", "broker"}),
        (SEARCH_NODE, {"ts", "pid", "searches", "position", "copies", "idle"}),
    ],
    ids=["encoder", "worker", "search node"],
)
def test_the_wire_form_is_a_json_object_with_the_fields_readers_knew(
    record: BeatRecord, fields: set[str]
) -> None:
    assert set(json.loads(record.to_redis())) == fields


def test_the_encoder_role_goes_out_as_its_value() -> None:
    assert json.loads(ENCODER.to_redis())["role"] == EncoderRole.MODEL_HOLDER.value


def test_a_search_node_beat_written_before_idle_was_known_reads_as_applying() -> None:
    older = {"ts": NOW, "pid": 1, "searches": 0, "position": "1:1", "copies": 1}
    beat = SearchNodeBeat.from_redis(json.dumps(older))
    assert beat is not None and not beat.idle  # the worker keeps broadcasting to it


def test_a_search_node_without_a_copy_writes_a_null_position() -> None:
    beat = SearchNodeBeat(ts=NOW, pid=1, searches=0, position=None, copies=0)
    assert json.loads(beat.to_redis())["position"] is None
    assert SearchNodeBeat.from_redis(beat.to_redis()) == beat


@pytest.mark.parametrize("raw", [None, b"", b"{not json", b'{"index": 3}', b"[]"])
def test_a_missing_or_malformed_record_reads_as_none(raw: bytes | None) -> None:
    assert EncoderRecord.from_redis(raw) is None
    assert SearchNodeBeat.from_redis(raw) is None


def test_a_worker_beat_missing_fields_reads_as_down_and_stale() -> None:
    beat = WorkerBeat.from_redis(b"{}")
    assert beat == WorkerBeat(ts=0.0, store=False, broker=False)
    assert beat is not None and not beat.fresh(NOW)


@pytest.mark.parametrize(
    ("age_s", "fresh"), [(0.0, True), (10.0, True), (10.01, False), (-1.0, True)]
)
def test_a_worker_beat_is_fresh_until_its_expiry(age_s: float, fresh: bool) -> None:
    assert WorkerBeat(ts=NOW - age_s, store=True).fresh(NOW) is fresh


def test_a_malformed_registry_entry_is_skipped() -> None:
    good = EncoderRecord(index=2, role=EncoderRole.ROUTER, last_seen=NOW).to_redis().encode()
    parsed = parse_registry({b"1": b"{not json", b"2": good, b"3": b'{"index": 3}'})
    assert [r.index for r in parsed] == [2]


def test_search_nodes_are_read_by_api_index_and_a_malformed_one_is_skipped() -> None:
    raw: dict[bytes | str, bytes | str] = {
        b"1": SEARCH_NODE.to_redis().encode(),
        b"2": b"{not json",
        "3": SEARCH_NODE.to_redis(),  # a client decoding responses answers str
    }
    assert parse_search_nodes(raw) == {"1": SEARCH_NODE, "3": SEARCH_NODE}
