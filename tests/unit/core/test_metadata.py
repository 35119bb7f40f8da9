"""One rule for whether a metadata value fits an index type (writes and filters share it)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from core.metadata import typed_value


@pytest.mark.parametrize(
    ("kind", "value", "typed"),
    [
        ("integer", 7, 7),
        ("integer", 2**63 - 1, 2**63 - 1),
        ("integer", -(2**63), -(2**63)),
        ("integer", 2**63, None),
        ("integer", True, None),
        ("integer", 7.0, None),
        ("float", 7, 7.0),
        ("float", float("inf"), None),
        ("float", float("nan"), None),
        ("float", False, None),
        ("boolean", True, True),
        ("boolean", 1, None),
        ("string", "x", "x"),
        ("string", 5, None),
        ("datetime", "2024-05-01T10:00:00Z", datetime(2024, 5, 1, 10, tzinfo=UTC)),
        ("datetime", "2024-05-01T10:00:00", datetime(2024, 5, 1, 10, tzinfo=UTC)),
        ("datetime", "yesterday", None),
        ("datetime", 1714557600, None),
    ],
)
def test_a_value_fits_its_type_or_not(kind: str, value: Any, typed: Any) -> None:
    assert typed_value(kind, value) == typed
    if typed is not None:
        assert type(typed_value(kind, value)) is type(typed)
