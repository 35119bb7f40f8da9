"""Request bodies are strict JSON: what no store holds faithfully is refused with a reason."""

from __future__ import annotations

import json

import pytest

from app.strict_json import OUT_OF_RANGE, strict_loads


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b'{"q": "\\ud800"}', "valid Unicode"),
        (b'{"q": "\\udc00x"}', "valid Unicode"),
        (b'{"n": NaN}', "NaN and Infinity"),
        (b'{"n": -Infinity}', "NaN and Infinity"),
        (b'{"n": 1e999}', "finite"),
        (b'{"n": 1' + b"0" * 400 + b"}", "finite"),
        (b'{"n": 9223372036854775808}', OUT_OF_RANGE),
        (b'{"n": -9223372036854775809}', OUT_OF_RANGE),
        (b'{"deep": [[{"n": 18446744073709551616}]]}', OUT_OF_RANGE),
        (b'{"n": 123456789012345678901234567890}', OUT_OF_RANGE),
    ],
)
def test_what_no_store_can_hold_is_refused_with_its_reason(raw: bytes, reason: str) -> None:
    with pytest.raises(json.JSONDecodeError) as refused:
        strict_loads(raw)
    assert reason in refused.value.msg
    assert refused.value.doc == ""  # the input is never echoed back


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        (b'{"q": "caf\\u00e9 \\ud83d\\ude00"}', {"q": "café 😀"}),
        (b'{"n": 9223372036854775807, "m": -9223372036854775808}', {"n": 2**63 - 1, "m": -(2**63)}),
        (b'{"f": 1e20, "g": 1.5e308}', {"f": 1e20, "g": 1.5e308}),
        (b"[" * 500 + b"]" * 500, json.loads("[" * 500 + "]" * 500)),
    ],
)
def test_valid_json_reads_as_it_always_did(raw: bytes, value: object) -> None:
    assert strict_loads(raw) == value
