"""Malformed requests to every write and search route get a 4xx naming the field, never a 5xx."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.integration.helpers import create, doc, keyword_collection, ts

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
        assert "invalid join" in response.text
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
