"""Malformed requests to every write and search route get a 4xx naming the field, never a 5xx."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from core.schemas.common import MAX_JSON_DEPTH
from harness.stack import Stack
from tests.integration.helpers import create, doc, keyword_collection, ts, wait_until

NAME = f"bad{uuid.uuid4().hex[:8]}"
C = f"/v1/collections/{NAME}"
D = f"{C}/documents"
BODY_ROUTES = {
    "create": "/v1/collections/bad-new",
    "upsert": D,
    "sync": f"{D}/sync",
    "bulk": f"{D}/bulk",
    "fetch": f"{D}/fetch",
    "search": f"{C}/search",
}


@pytest.fixture(scope="module")
def http(client: httpx.Client) -> Iterator[httpx.Client]:
    create(
        client,
        NAME,
        {**keyword_collection(), "metadata_indexes": [{"key": "n", "type": "integer"}]},
    )
    yield client
    client.delete(f"/v1/collections/{NAME}")


def _doc(**changes: Any) -> dict[str, Any]:
    return {**doc("d1", "some text"), **changes}


# (route, JSON body, the field the answer must name)
FIELD_CASES: list[tuple[str, Any, str]] = [
    ("search", {"query": 5}, "query"),
    ("search", {}, "query"),
    ("search", {"query": "x" * 10_001}, "query"),
    ("search", {"query": "   "}, "query"),
    ("search", {"query": "x", "limit": 101}, "limit"),
    ("search", {"query": "x", "limit": "ten"}, "limit"),
    ("search", {"query": "x", "surprise": 1}, "surprise"),
    ("search", {"query": "x", "vector_options": "all"}, "vector_options"),
    ("search", {"query": "x", "fusion_mode": "best"}, "fusion_mode"),
    ("search", {"query": "x", "facet_options": {"max_values": 101}}, "max_values"),
    ("upsert", {"id": "d1"}, "timestamp"),
    ("upsert", _doc(id=5), "id"),
    ("upsert", _doc(id="bad id!"), "id"),
    ("upsert", _doc(timestamp="yesterday"), "timestamp"),
    ("upsert", _doc(timestamp="2026-01-01T00:00:00"), "timestamp"),
    ("upsert", _doc(tags=[f"t{i}" for i in range(51)]), "tags"),
    ("upsert", _doc(tags=["x" * 101]), "tags"),
    ("upsert", _doc(name="n" * 1501), "name"),
    ("upsert", _doc(content="c" * 1_000_001), "content"),
    ("upsert", _doc(metadata="flat"), "metadata"),
    ("upsert", _doc(metadata={"bad key": 1}), "metadata"),
    ("upsert", _doc(surprise=True), "surprise"),
    ("upsert", _doc(metadata={"n": "seven"}), "n"),  # 400: indexed key of the wrong type
    ("sync", _doc(tags="one"), "tags"),
    ("sync", _doc(description="d" * 3001), "description"),
    ("sync", _doc(metadata={"n": 1.5}), "n"),
    ("bulk", {"documents": [_doc(id=f"d{i}") for i in range(101)]}, "documents"),
    ("bulk", {"documents": []}, "documents"),
    ("bulk", {"documents": "all"}, "documents"),
    ("bulk", {}, "documents"),
    ("bulk", {"documents": [_doc(), {"id": "x"}]}, "timestamp"),
    ("bulk", {"documents": [_doc(metadata={"n": True})]}, "n"),
    ("create", {"vectors": "x"}, "vectors"),
    ("create", {"vectors": [{"name": "v"}]}, "type"),
    ("create", {"vectors": [{"name": "v", "type": "nope"}]}, "type"),
    ("create", {"vectors": [{"name": "v" * 101, "type": "keyword"}]}, "name"),
    ("create", {"metadata_indexes": [{"key": "k", "type": "money"}]}, "type"),
    ("create", {"surprise": 1}, "surprise"),
    ("fetch", {"page_size": 1001}, "page_size"),
    ("fetch", {"page_size": "many"}, "page_size"),
    ("fetch", {"surprise": 1}, "surprise"),
]


def _names(response: httpx.Response, field: str) -> bool:
    detail = response.json()["detail"]
    if isinstance(detail, str):
        return field in detail
    return any(field in [str(p) for p in e["loc"]] or field in e["msg"] for e in detail)


@pytest.mark.parametrize(("route", "body", "field"), FIELD_CASES)
def test_a_bad_field_is_refused_naming_it(
    http: httpx.Client, route: str, body: Any, field: str
) -> None:
    response = http.post(BODY_ROUTES[route], json=body)
    assert response.status_code in (400, 422), response.text[:500]
    assert _names(response, field), response.text[:500]


# (content-type, raw body): none of these is a JSON object.
MALFORMED: list[tuple[str, bytes]] = [
    ("application/json", b'{"query": "x", '),
    ("application/json", b'{"query": "caf\xe9"}'),
    ("application/json", b"\xff\xfe\x00"),
    ("application/json", b"[]"),
    ("application/json", b'[{"id": "d1"}]'),
    ("application/json", b"null"),
    ("application/json", b"42"),
    ("application/json", b'"text"'),
    ("application/json", b""),
    ("text/plain", b'{"query": "x"}'),
    ("text/plain", b"\xff\xfe"),
    ("application/x-www-form-urlencoded", b"query=x"),
]


@pytest.mark.parametrize("route", list(BODY_ROUTES))
@pytest.mark.parametrize(("content_type", "raw"), MALFORMED)
def test_a_body_that_is_not_a_json_object_is_422(
    http: httpx.Client, route: str, content_type: str, raw: bytes
) -> None:
    response = http.post(BODY_ROUTES[route], content=raw, headers={"content-type": content_type})
    assert response.status_code == 422, response.text[:500]
    assert isinstance(response.json()["detail"], list)


@pytest.mark.parametrize(
    ("method", "path", "field"),
    [
        ("DELETE", f"{D}/d1", "request_timestamp"),
        ("DELETE", f"{D}/d1?request_timestamp=soon", "request_timestamp"),
        ("DELETE", f"{D}/d1/sync?request_timestamp=2026-01-01T00:00:00", "timezone"),
        ("DELETE", f"{D}/d1?request_timestamp=2026-01-01T00:00:00%2B02:00", "UTC"),
        ("GET", f"{D}/d1?with_vectors=maybe", "with_vectors"),
        ("POST", f"/v1/collections/{'c' * 101}", "collection_name"),
        ("POST", "/v1/collections/bad!name", "collection_name"),
        ("GET", f"{D}/{'i' * 101}", "document_id"),
        ("GET", "/v1/metrics/trends?since=x&until=y", "since"),
    ],
)
def test_bad_path_and_query_parameters_are_422(
    http: httpx.Client, method: str, path: str, field: str
) -> None:
    response = http.request(method, path, json=keyword_collection() if method == "POST" else None)
    assert response.status_code == 422, response.text[:500]
    assert _names(response, field), response.text[:500]


def test_after_all_that_the_collection_still_works(http: httpx.Client) -> None:
    response = http.post(D, json=doc("fine", "still fine", metadata={"n": 3}))
    assert response.status_code == 200, response.text
    assert http.post(f"{C}/search", json={"query": "fine"}).status_code == 200
    assert http.get(f"{C}/documents/fine?request_timestamp={ts(1)}").status_code in (200, 404)


# Raw JSON a client can send that Python's json module takes but no store can hold faithfully:
# each is a 422 naming what to fix, never a 500 or a reset connection.
def _raw_doc(
    content: str = '"x"', name: str = '"a"', tags: str = "[]", metadata: str = "{}"
) -> str:
    return (
        f'{{"id": "d1", "timestamp": "2026-01-01T00:00:00Z", "name": {name}, '
        f'"content": {content}, "tags": {tags}, "metadata": {metadata}}}'
    )


SURROGATE = '"\\ud800"'
UNICODE = "valid Unicode"
FINITE = "finite"
INT64 = "integers must be between"
NASTY_JSON: list[tuple[str, str, str]] = [
    ("upsert", _raw_doc(content=SURROGATE), UNICODE),
    ("sync", _raw_doc(name=SURROGATE), UNICODE),
    ("bulk", f'{{"documents": [{_raw_doc(tags=f"[{SURROGATE}]")}]}}', UNICODE),
    ("search", f'{{"query": {SURROGATE}}}', UNICODE),
    ("search", '{"query": "x", "metadata_filter": "n = \\"\\ud800\\""}', UNICODE),
    ("upsert", _raw_doc(metadata='{"f": 1e999}'), FINITE),
    ("search", '{"query": "x", "limit": 1e999}', FINITE),
    (
        "search",
        '{"query": "x", "vector_options": [{"vector_name": "kw", "weight": Infinity}]}',
        "NaN",
    ),
    ("search", '{"query": "x", "vector_options": [{"vector_name": "kw", "weight": NaN}]}', "NaN"),
    ("upsert", _raw_doc(metadata='{"f": 1' + "0" * 400 + "}"), FINITE),
    ("upsert", _raw_doc(metadata='{"n": 9223372036854775808}'), INT64),
    ("sync", _raw_doc(metadata='{"g": 18446744073709551616}'), INT64),
    ("search", '{"query": "x", "limit": -9223372036854775809}', INT64),
]


@pytest.mark.parametrize(("route", "raw", "needle"), NASTY_JSON)
def test_json_no_store_can_hold_is_422_saying_why(
    http: httpx.Client, route: str, raw: str, needle: str
) -> None:
    response = http.post(
        BODY_ROUTES[route], content=raw.encode(), headers={"content-type": "application/json"}
    )
    assert response.status_code == 422, response.text[:500]
    assert needle in response.text


def _custom(vector: list[float]) -> dict[str, Any]:
    return {"vector_name": "v", "vector": vector}


# Work one request may ask for is bounded: arms per search, entries per vector.
BOUNDED: list[tuple[str, dict[str, Any], str]] = [
    ("search", {"query": "x", "vector_options": [{"vector_name": "kw"}] * 10_000}, "96"),
    ("search", {"query": "x", "custom_vectors": [_custom([0.5] * 10_001)]}, "10000"),
    ("upsert", _doc(custom_vectors=[{**_custom([0.5] * 1_000_000), "field": "content"}]), "10000"),
    ("search", {"query": "x", "group_field": "n", "group_max_fetches": 11}, "group_max_fetches"),
    ("create", {"vectors": [{"name": f"v{i}", "type": "wmtr"} for i in range(33)]}, "32"),
]


@pytest.mark.parametrize(("route", "body", "needle"), BOUNDED)
def test_work_past_the_documented_caps_is_422(
    http: httpx.Client, route: str, body: dict[str, Any], needle: str
) -> None:
    response = http.post(BODY_ROUTES[route], json=body)
    assert response.status_code == 422, response.text[:500]
    assert needle in response.text


def test_an_indexed_integer_outside_int64_is_refused(http: httpx.Client) -> None:
    # 2**63 - 1 is the largest a store index holds; the JSON layer passes it, the index takes it.
    fits = http.post(f"{D}/sync", json=doc("big", "x", metadata={"n": 2**63 - 1}))
    assert fits.status_code == 200, fits.text


def test_a_long_bad_join_is_a_prompt_400_and_never_stalls_other_searches(
    http: httpx.Client,
) -> None:
    # The join parser used to backtrack: "c" + spaces + "!" took seconds and held the worker.
    for spaces in (2_000, 10_000):
        response = http.post(f"{C}/search", json={"query": "x", "join": "c" + " " * spaces + "!"})
        assert response.status_code == 400, response.text[:300]
        assert "Invalid join expression" in response.text
    assert http.post(f"{C}/search", json={"query": "fine"}).status_code == 200


def test_a_10000_character_filter_is_answered(http: httpx.Client) -> None:
    expression = " OR ".join(["n = 123456789012345678"] * 400)[:10_000].rsplit(" OR", 1)[0]
    assert len(expression) > 9_900
    response = http.post(f"{C}/search", json={"query": "x", "metadata_filter": expression})
    assert response.status_code == 200, response.text[:300]


def test_405_lists_every_method_of_the_path(http: httpx.Client) -> None:
    response = http.request("PUT", C)
    assert response.status_code == 405
    assert response.headers["Allow"] == "DELETE, GET, POST"


def test_a_unix_time_is_not_a_request_timestamp(http: httpx.Client) -> None:
    response = http.delete(f"{D}/d1?request_timestamp=0.5")
    assert response.status_code == 422, response.text
    assert "ISO 8601" in response.text


# Nesting (README "API notes"): a body nests at most 72 levels of objects and arrays, a filter 32
# of and/or/not. Past either: a 422 naming the limit, echoing nothing, on a connection that lives.
BODY_LIMIT, FILTER_LIMIT = f"at most {MAX_JSON_DEPTH} levels", "at most 32 levels"
JSON_TYPE = {"content-type": "application/json"}


def _filter(operator: str, depth: int, value: int = 1) -> bytes:
    """`depth` nested and (an object and a list: two JSON levels each) or not, as raw JSON."""
    opening, closing = (b'{"and": [', b"]}") if operator == "and" else (b'{"not": ', b"}")
    condition = b'{"key": "n", "op": "eq", "value": %d}' % value
    return opening * depth + condition + closing * depth


def _expression(text: str) -> bytes:
    return json.dumps(text).encode()


def _nested(depth: int, opening: bytes = b"[", closing: bytes = b"]") -> bytes:
    """A body object whose field "x" makes it `depth` levels deep."""
    bottom = b"" if opening == b"[" else b"1"
    return b'{"x": ' + opening * (depth - 1) + bottom + closing * (depth - 1) + b"}"


FILTER_BODIES = {"search": b'{"query": "x", "metadata_filter": ', "fetch": b'{"metadata_filter": '}
DEEP_FILTERS: dict[str, tuple[bytes, str]] = {
    "and 33 deep": (_filter("and", 33), FILTER_LIMIT),  # 68 JSON levels: within the body's
    "and 1,000 deep": (_filter("and", 1_000), BODY_LIMIT),
    "and 5,000 deep": (_filter("and", 5_000), BODY_LIMIT),
    "not 33 deep": (_filter("not", 33), FILTER_LIMIT),
    "( 33 deep": (_expression("(" * 33 + "n = 1" + ")" * 33), FILTER_LIMIT),
    "( 5,000 deep": (_expression("(" * 5_000 + "n = 1" + ")" * 5_000), FILTER_LIMIT),
    "NOT 4,000 deep": (_expression("NOT " * 4_000 + "n = 1"), FILTER_LIMIT),
}
DEEP_BODIES: dict[str, bytes] = {
    "arrays 73 deep": _nested(MAX_JSON_DEPTH + 1),
    "objects 73 deep": _nested(MAX_JSON_DEPTH + 1, b'{"a": ', b"}"),
    "arrays 100,000 deep": _nested(100_000),  # 200 KB: within every route's size limit
}
# 500 KB: past the 256 KiB of create and fetch (a 413 there), within the others' limits.
OBJECTS_100K = _nested(100_000, b'{"a": ', b"}")


@pytest.fixture
def one_connection(stack: Stack) -> Iterator[httpx.Client]:
    """A client with one connection: had a request dropped it, the next shows a new local port."""
    with httpx.Client(
        base_url=stack.base_url, timeout=60.0, limits=httpx.Limits(max_connections=1)
    ) as http:
        yield http


def _local_port(response: httpx.Response) -> int:
    return int(response.extensions["network_stream"].get_extra_info("client_addr")[1])


def _refused_on_a_live_connection(http: httpx.Client, route: str, body: bytes, limit: str) -> None:
    response = http.post(BODY_ROUTES[route], content=body, headers=JSON_TYPE)
    port = _local_port(response)
    assert response.status_code == 422, response.text[:300]
    assert limit in response.text, response.text[:300]
    assert all(error["input"] == {} for error in response.json()["detail"])  # nothing echoed
    assert len(response.content) < 1_000
    plain = http.post(f"{C}/search", json={"query": "fine"})
    assert plain.status_code == 200, plain.text[:300]
    assert _local_port(plain) == port  # the same connection answered


@pytest.mark.parametrize("case", list(DEEP_FILTERS))
@pytest.mark.parametrize("route", list(FILTER_BODIES))
def test_a_filter_nested_past_a_limit_is_422_on_a_live_connection(
    http: httpx.Client, one_connection: httpx.Client, route: str, case: str
) -> None:
    metadata_filter, limit = DEEP_FILTERS[case]
    body = FILTER_BODIES[route] + metadata_filter + b"}"
    _refused_on_a_live_connection(one_connection, route, body, limit)


@pytest.mark.parametrize("case", list(DEEP_BODIES))
@pytest.mark.parametrize("route", list(BODY_ROUTES))
def test_a_body_nested_past_the_limit_is_422_on_a_live_connection(
    http: httpx.Client, one_connection: httpx.Client, route: str, case: str
) -> None:
    _refused_on_a_live_connection(one_connection, route, DEEP_BODIES[case], BODY_LIMIT)


@pytest.mark.parametrize("route", ["search", "upsert", "sync", "bulk"])
def test_objects_nested_100000_deep_are_422_on_a_live_connection(
    http: httpx.Client, one_connection: httpx.Client, route: str
) -> None:
    # orjson 3.8 alone overflows the C stack on these: the api process died, and the connection.
    _refused_on_a_live_connection(one_connection, route, OBJECTS_100K, BODY_LIMIT)


def test_a_deep_join_filter_is_400_naming_the_limit(http: httpx.Client) -> None:
    # A join is read once the search has hits to join to.
    stored = http.post(f"{D}/sync", json=doc("parent", "joinable"))
    assert stored.status_code == 200, stored.text[:300]
    join = f"{NAME}(" + "(" * 5_000 + "n = 1" + ")" * 5_000 + ")"

    def answer() -> httpx.Response | None:
        response = http.post(f"{C}/search", json={"query": "joinable", "join": join})
        assert response.status_code in (200, 400), response.text[:300]
        return response if response.status_code == 400 else None

    response = wait_until(answer)
    assert response is not None
    assert "Invalid join expression" in response.text and FILTER_LIMIT in response.text


def test_nesting_within_the_limits_is_served(http: httpx.Client) -> None:
    deep_value: Any = "bottom"
    for _ in range(MAX_JSON_DEPTH - 2):  # with the body's and the metadata's objects: 72
        deep_value = [deep_value]
    stored = http.post(f"{D}/sync", json=doc("deep", "nested", metadata={"n": 7, "d": deep_value}))
    assert stored.status_code == 200, stored.text[:300]
    fetched = wait_until(lambda: http.get(f"{D}/deep").json().get("metadata"))
    assert fetched["d"] == deep_value
    for metadata_filter in (
        _filter("and", 32, value=7),  # 66 JSON levels with the body and the condition
        _filter("not", 32, value=7),  # an even count: n = 7
        _expression("(" * 32 + "n = 7" + ")" * 32),
    ):
        body = b'{"query": "nested", "metadata_filter": ' + metadata_filter + b"}"
        wait_until(lambda body=body: _hits(http, body) == ["deep"])


def _hits(http: httpx.Client, body: bytes) -> list[str]:
    response = http.post(f"{C}/search", content=body, headers=JSON_TYPE)
    assert response.status_code == 200, response.text[:300]
    return [hit["id"] for hit in response.json()["results"]]
