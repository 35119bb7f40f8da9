"""The retry policy as a table."""

from __future__ import annotations

import pytest

from core.retry import backoff_s, should_give_up


@pytest.mark.parametrize(("tries", "delay"), [(0, 0.0), (1, 0.5), (2, 1.0), (3, 2.0), (10, 30.0)])
def test_backoff_doubles_and_caps(tries: int, delay: float) -> None:
    assert backoff_s(tries) == delay


@pytest.mark.parametrize(("tries", "give_up"), [(1, False), (4, False), (5, True), (6, True)])
def test_give_up_after_max_tries(tries: int, give_up: bool) -> None:
    assert should_give_up(tries, 5) is give_up
