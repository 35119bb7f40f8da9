"""bench.brokerkill finds the stretches in which writes were queued and the queue never shrank."""

from __future__ import annotations

import pytest

from bench.brokerkill import STILL_S, Timeline, standstills


@pytest.mark.parametrize(
    ("queued", "found"),
    [
        ([(0.0, 5), (10.0, 4), (20.0, 3), (40.0, 0)], []),  # shrinking every 20 s
        ([(0.0, 0), (10.0, 0), (100.0, 0)], []),  # nothing queued is not standing still
        ([(0.0, 50), (10.0, 80), (40.0, 90), (41.0, 10)], [(0.0, 41.0)]),  # grew, then moved
        ([(0.0, 50), (10.0, 80), (20.0, 70), (45.0, 75)], []),  # above its start, but moving
        ([(0.0, 50), (10.0, 50), (20.0, 50)], []),  # still, but not for STILL_S
        ([(0.0, 9), (5.0, 50), (5.0 + STILL_S, 70)], [(0.0, 5.0 + STILL_S)]),  # to the end
    ],
)
def test_a_standstill_is_a_queue_that_does_not_shrink_for_still_s(
    queued: list[tuple[float, int]], found: list[tuple[float, float]]
) -> None:
    assert standstills(Timeline(queued=queued)) == found
