"""When the reaper may forget a queued entry: only after two quiet sightings of the documents
queue on one connection, for entries older than the publish deadline, sparing what the consumer
touched at either."""

from __future__ import annotations

from worker.reaper import CLOCK_MARGIN_S, Reap, Sighting, reap_after

DEADLINE_S = 20.0


def _seen(at: float, *touched: str, reconnects: int = 0) -> Sighting:
    return Sighting(at, frozenset(touched), reconnects)


def test_one_quiet_sighting_forgets_nothing() -> None:
    assert reap_after(None, _seen(100.0), DEADLINE_S) is None


def test_a_busy_look_between_two_quiet_ones_forgets_nothing() -> None:
    assert reap_after(_seen(100.0), None, DEADLINE_S) is None


def test_a_reconnect_between_two_sightings_forgets_nothing() -> None:
    assert reap_after(_seen(100.0), _seen(105.0, reconnects=1), DEADLINE_S) is None


def test_two_quiet_sightings_forget_entries_older_than_the_deadline_before_the_first() -> None:
    allowed = reap_after(_seen(100.0, "a", "b"), _seen(105.0, "c"), DEADLINE_S)
    assert allowed == Reap(100.0 - DEADLINE_S - CLOCK_MARGIN_S, frozenset({"a", "b", "c"}))
