"""A consumer is stalled when messages wait for it at two looks in a row and it has taken none
for `stall_s`; every process's record is read back only while it is fresh."""

from __future__ import annotations

import pytest

from core.delivery import QueueState
from core.watchdog import (
    RECORD_TTL_S,
    ProgressRecord,
    Stall,
    Watched,
    find_stalls,
    hopeless,
    parse_records,
)

NOW = 5_000.0
STALL_S = 30.0


def _look(
    delivered_ago_s: float, ready: int | None, backlogged: bool
) -> tuple[list[Stall], set[str]]:
    watched = [Watched("braid.documents", "braid.documents", NOW - delivered_ago_s)]
    state = None if ready is None else QueueState(ready, 1)
    previous = {"braid.documents"} if backlogged else set()
    return find_stalls(watched, {"braid.documents": state}, previous, NOW, STALL_S)


@pytest.mark.parametrize(
    ("delivered_ago_s", "ready", "backlogged", "stalled"),
    [
        (31.0, 500, True, True),  # messages wait, none taken for 31 s: stalled
        (31.0, 500, False, False),  # messages seen waiting once only: they may be arriving now
        (5.0, 500, True, False),  # it takes messages: a backlog is load, not a stall
        (31.0, 0, True, False),  # nothing waits: idle, not stalled
        (31.0, None, True, False),  # the broker did not answer: no judgement
        (30.0, 1, True, True),  # exactly stall_s counts
    ],
)
def test_a_stall_is_a_waiting_backlog_with_no_delivery(
    delivered_ago_s: float, ready: int | None, backlogged: bool, stalled: bool
) -> None:
    stalls, _ = _look(delivered_ago_s, ready, backlogged)
    assert bool(stalls) is stalled
    if stalled:
        assert stalls[0].source == "braid.documents"
        assert stalls[0].ready == ready and stalls[0].idle_s == delivered_ago_s


@pytest.mark.parametrize(("ready", "carried"), [(500, True), (0, False), (None, False)])
def test_the_next_look_remembers_only_queues_seen_with_messages_waiting(
    ready: int | None, carried: bool
) -> None:
    _, backlogged = _look(1.0, ready, backlogged=False)
    assert ("braid.documents" in backlogged) is carried


def test_a_listener_is_judged_by_its_own_queue_and_named_by_its_exchange() -> None:
    watched = [Watched("braid.replication", "amq.gen-abc", NOW - 60)]
    stalls, _ = find_stalls(
        watched, {"amq.gen-abc": QueueState(12, 1)}, {"braid.replication"}, NOW, STALL_S
    )
    assert [s.source for s in stalls] == ["braid.replication"]


def test_records_count_only_while_fresh_and_well_formed() -> None:
    stalled = ProgressRecord(ts=NOW - 1, stalled=[Stall(source="q", ready=3, idle_s=40.0)])
    gone = ProgressRecord(ts=NOW - RECORD_TTL_S - 1, stalled=stalled.stalled)
    raw: dict[bytes | str, bytes | str] = {
        b"worker": stalled.model_dump_json().encode(),
        "api-1": gone.model_dump_json(),
        "api-2": "not json",
    }
    assert parse_records(raw, NOW) == {"worker": stalled}


@pytest.mark.parametrize(("idle_s", "gives_up"), [(89.9, False), (90.0, True), (400.0, True)])
def test_a_process_gives_up_once_a_stall_outlasts_its_grace(idle_s: float, gives_up: bool) -> None:
    stalls = [Stall(source="a", ready=5, idle_s=31.0), Stall(source="b", ready=5, idle_s=idle_s)]
    over = hopeless(stalls, stall_s=30.0, grace_s=60.0)
    assert [s.source for s in over] == (["b"] if gives_up else [])
