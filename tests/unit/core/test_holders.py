"""Where model work goes, from a snapshot of the encoder registry; how long each try waits."""

from __future__ import annotations

import pytest

from core.enums import EmbedKind, EncoderRole
from core.heartbeats import EncoderRecord
from core.holders import (
    Route,
    attempt_timeouts,
    choose_route,
    is_alive,
    live_holders,
)
from core.names import embed_queue, holder_queue

NOW = 1_000_000.0
HOLDER, ROUTER = EncoderRole.MODEL_HOLDER, EncoderRole.ROUTER


def record(index: int, role: EncoderRole = HOLDER, age_s: float = 0.5) -> EncoderRecord:
    return EncoderRecord(index=index, role=role, last_seen=NOW - age_s)


@pytest.mark.parametrize(
    ("age_s", "alive"),
    [(0.0, True), (2.9, True), (3.0, True), (3.01, False), (600.0, False), (-1.0, True)],
)
def test_a_record_expires_after_the_ttl_and_clock_skew_ahead_counts_as_fresh(
    age_s: float, alive: bool
) -> None:
    assert is_alive(record(1, age_s=age_s), NOW, ttl_s=3.0) is alive


def test_live_holders_drop_routers_and_expired_records_and_sort_by_index() -> None:
    records = [record(3), record(1, age_s=10), record(2, ROUTER), record(4, age_s=0.1)]
    assert [r.index for r in live_holders(records, NOW)] == [3, 4]


@pytest.mark.parametrize("kind", list(EmbedKind))
def test_work_goes_straight_to_the_holders_queue_when_a_holder_is_alive(kind: EmbedKind) -> None:
    route = choose_route(kind, [record(1), record(2, ROUTER), record(3)], NOW)
    assert route == Route(holder_queue(kind), (1, 3))
    assert route.direct


@pytest.mark.parametrize(
    "records",
    [
        [],
        [record(2, ROUTER)],
        [record(1, age_s=4), record(2, ROUTER)],
    ],
    ids=["empty registry", "only routers", "holder heartbeat expired"],
)
def test_without_a_live_holder_work_goes_through_any_encoder(
    records: list[EncoderRecord],
) -> None:
    route = choose_route(EmbedKind.DOCUMENT, records, NOW)
    assert route == Route(embed_queue(EmbedKind.DOCUMENT))
    assert not route.direct


def test_a_dead_holder_stops_being_chosen_once_its_heartbeat_expires() -> None:
    records = [record(1, age_s=0), record(2, age_s=0)]
    assert choose_route(EmbedKind.QUERY, records, NOW).holders == (1, 2)
    later = NOW + 3.5  # holder 2 died at NOW; holder 1 kept beating
    records[0] = EncoderRecord(index=1, role=HOLDER, last_seen=later - 1)
    assert choose_route(EmbedKind.QUERY, records, later).holders == (1,)


@pytest.mark.parametrize(
    ("kind", "timeout_s", "expected"),
    [
        (EmbedKind.QUERY, 60.0, (5.0, 55.0)),
        (EmbedKind.QUERY, 10.0, (10.0,)),  # too short to split: one try
        (EmbedKind.QUERY, 11.0, (5.0, 6.0)),
        (EmbedKind.DOCUMENT, 60.0, (60.0,)),
    ],
)
def test_a_query_retries_once_after_a_short_try_and_document_work_never(
    kind: EmbedKind, timeout_s: float, expected: tuple[float, ...]
) -> None:
    tries = attempt_timeouts(kind, timeout_s, query_try_s=5.0)
    assert tries == expected
    assert sum(tries) == pytest.approx(timeout_s)
