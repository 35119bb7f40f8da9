"""Request bodies are strict JSON: what no store holds faithfully, or nests past the limit, is
refused with a reason."""

from __future__ import annotations

import json
import random

import pytest

from app.http.strict_json import OUT_OF_RANGE, TOO_DEEP, nested_past, strict_loads
from core.schemas.common import MAX_JSON_DEPTH


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
        (b"[" * MAX_JSON_DEPTH + b"]" * MAX_JSON_DEPTH, json.loads("[" * 72 + "]" * 72)),
    ],
)
def test_valid_json_reads_as_it_always_did(raw: bytes, value: object) -> None:
    assert strict_loads(raw) == value


def _nested(depth: int, tail: bytes = b"") -> bytes:
    """A body whose deepest point is `depth` objects and arrays, its brackets `tail` after."""
    inner = b'{"a": ' * (depth // 2 - 1) + b"[" * (depth - depth // 2 - 1) + b"[]"
    closing = b"]" * (depth - depth // 2 - 1) + b"}" * (depth // 2 - 1)
    return b'{"x": ' + inner + closing + tail + b"}"


# Many brackets in strings, and escapes, around the structure: only real nesting counts.
NOISE = b', "t": "[[{\\"[\\\\", "u": "' + b"[{" * 2000 + b'"'
WIDE = b', "w": [' + b"[[]]," * 600 + b"[]]"  # over the bracket count read as bytes


@pytest.mark.parametrize("tail", [b"", NOISE, WIDE, NOISE + WIDE])
def test_a_body_nested_past_the_limit_is_refused_naming_it(tail: bytes) -> None:
    assert strict_loads(_nested(MAX_JSON_DEPTH, tail))["x"] is not None
    # Past 1,024 orjson refuses by itself, at any depth, without recursing further.
    for depth in (MAX_JSON_DEPTH + 1, 1_000, 1_025, 1_000_000):
        with pytest.raises(json.JSONDecodeError) as refused:
            strict_loads(_nested(depth, tail))
        assert refused.value.msg == TOO_DEEP
        assert refused.value.doc == ""  # the input is never echoed back
    assert f"at most {MAX_JSON_DEPTH} levels" in TOO_DEEP


def _depth(value: object) -> int:
    if isinstance(value, dict | list):
        children = value.values() if isinstance(value, dict) else value
        return 1 + max(map(_depth, children), default=0)
    return 0


def _random_json(rng: random.Random, levels: int) -> str:
    if levels == 0 or rng.random() < 0.2:
        return rng.choice(['"a[b"', '"]]}"', '"\\\\"', '"x\\"[{"', '"\\\\\\"]"', "1", "null"])
    items = [_random_json(rng, levels - 1) for _ in range(rng.randint(0, 3))]
    if rng.random() < 0.5:
        return "[" + ",".join(items) + "]"
    return "{" + ",".join(f'"k{i}": {item}' for i, item in enumerate(items)) + "}"


def test_the_depth_measured_is_the_parsed_depth() -> None:
    rng = random.Random(7)
    for _ in range(3000):
        text = _random_json(rng, rng.randint(1, 10))
        depth = _depth(json.loads(text))
        for limit in (0, 1, 2, 4, 7):
            assert nested_past(json.loads(text), limit) is (depth > limit), (text, limit)
