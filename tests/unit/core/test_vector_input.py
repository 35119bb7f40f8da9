"""Custom and precomputed vectors: the 400s that say what to fix, and the conversion rules."""

from __future__ import annotations

import math
from typing import Any

import pytest

from core.enums import IndexField
from core.errors import InvalidInput
from core.schemas.collection import CollectionConfig
from core.schemas.document import Document
from core.vector_input import check_top_k, custom_vector, document_vectors, top_entries
from core.vectors import SparseVector

CONFIG = CollectionConfig.model_validate(
    {
        "vectors": [
            {"name": "emb", "type": "dense_custom", "dimensions": 3, "index_fields": ["content"]},
            {
                "name": "raw",
                "type": "dense_custom",
                "dimensions": 2,
                "normalization": False,
                "dense_distance": "dot",
            },
            {"name": "sp", "type": "sparse_custom", "top_k": 3, "index_fields": ["name"]},
            {"name": "kw", "type": "full_text", "top_k": 4},
            {
                "name": "dense",
                "type": "dense_model",
                "model": "m",
                "dimensions": 2,
                "index_fields": ["content"],
            },
        ]
    }
)


def document(**fields: Any) -> Document:
    return Document.model_validate(
        {"id": "d1", "timestamp": "2026-01-01T00:00:00Z", "content": "text", **fields}
    )


def custom(name: str, field: str, vector: Any) -> dict[str, Any]:
    return {"vector_name": name, "field": field, "vector": vector}


def given(**fields: Any) -> dict[tuple[str, IndexField], Any]:
    return document_vectors(CONFIG, document(**fields))


def rejects(match: str, **fields: Any) -> None:
    with pytest.raises(InvalidInput, match=match):
        given(**fields)


# A precomputed vector for each computed slot of CONFIG (kw and dense, content): `vectors` must
# hold them all.
KW = {"vector_name": "kw", "field": "content", "sparse_indices": [7], "sparse_values": [1]}
DENSE = {"vector_name": "dense", "field": "content", "dense_vector": [0, 2]}


def test_a_dense_custom_vector_is_normalised_when_normalization_is_true() -> None:
    vectors = given(custom_vectors=[custom("emb", "content", [3, 0, 4])])
    assert vectors[("emb", IndexField.CONTENT)] == pytest.approx([0.6, 0.0, 0.8])


def test_a_dense_custom_vector_is_kept_as_given_without_normalization() -> None:
    vectors = given(custom_vectors=[custom("raw", "content", [3, 4])])
    assert vectors[("raw", IndexField.CONTENT)] == [3.0, 4.0]


def test_a_sparse_custom_vector_comes_out_sorted_by_index() -> None:
    vectors = given(custom_vectors=[custom("sp", "name", [[9, 0.5], [2, 1.5]])])
    assert vectors[("sp", IndexField.NAME)] == SparseVector(indices=[2, 9], values=[1.5, 0.5])


def test_a_document_sparse_vector_over_top_k_fails_naming_the_max_allowed_top_k() -> None:
    pairs = [[1, 0.1], [2, -0.9], [3, 0.5], [4, 0.7], [5, 0.2]]
    vectors = given(custom_vectors=[custom("sp", "name", pairs)])  # the door takes it as given
    assert len(vectors[("sp", IndexField.NAME)]) == 5
    with pytest.raises(
        InvalidInput, match=r"'sp' \(name\) has 5 entries; the max allowed is its top_k of 3"
    ):
        check_top_k(CONFIG, vectors, "d1")
    check_top_k(CONFIG, given(custom_vectors=[custom("sp", "name", pairs[:3])]), "d1")


def test_a_query_sparse_vector_over_top_k_keeps_its_largest_entries() -> None:
    pairs = [[1, 0.1], [2, -0.9], [3, 0.5], [4, 0.7], [5, 0.2]]
    sparse = custom_vector(CONFIG.vector("sp"), pairs, "query")  # type: ignore[arg-type]
    assert top_entries(CONFIG.vector("sp"), sparse) == SparseVector(  # type: ignore[arg-type]
        indices=[2, 3, 4], values=[-0.9, 0.5, 0.7]
    )


@pytest.mark.parametrize(
    ("entry", "match"),
    [
        (
            custom("nope", "content", [1, 2, 3]),
            "unexpected vector: the collection has no vector 'nope'",
        ),
        (custom("kw", "content", [1, 2, 3]), "full_text; custom vectors are only for"),
        (custom("emb", "name", [1, 2, 3]), "does not index field 'name'"),
        (custom("emb", "content", [1, 2]), "has 2 numbers but vector 'emb' has 3 dimensions"),
        (custom("emb", "content", [[1, 0.5]]), "dense_custom: give a list of 3 numbers"),
        (custom("emb", "content", [0, 0, 0]), "all-zero vector cannot be normalised"),
        (custom("sp", "name", [1.0, 2.0]), "sparse_custom: give \\[\\[index, value\\], ...\\]"),
        (custom("sp", "name", [[1, 0.5], [1, 0.2]]), "index 1 appears more than once"),
        (custom("sp", "name", [[-1, 0.5]]), "index -1 must be an integer >= 0"),
        (custom("sp", "name", [[1.5, 0.5]]), "index 1.5 must be an integer >= 0"),
        (custom("sp", "name", [[1, 2, 3]]), "must be an \\[index, value\\] pair"),
        (custom("sp", "name", [[2**32, 1.0]]), "above the maximum"),
    ],
)
def test_a_bad_custom_vector_is_a_400_that_says_what_to_fix(
    entry: dict[str, Any], match: str
) -> None:
    rejects(match, custom_vectors=[entry])


@pytest.mark.parametrize(("name", "field"), [("emb", "content"), ("sp", "name")])
def test_an_empty_custom_vector_is_a_400_whatever_its_type(name: str, field: str) -> None:
    rejects(
        rf"custom vector '{name}' \({field}\) is empty: give at least one entry, or leave",
        custom_vectors=[custom(name, field, [])],
    )


def test_an_empty_custom_vector_for_a_computed_type_says_custom_is_not_for_it() -> None:
    rejects("full_text; custom vectors are only for", custom_vectors=[custom("kw", "content", [])])


def test_a_nan_value_is_rejected() -> None:
    rejects("finite", custom_vectors=[custom("raw", "content", [math.nan, 1.0])])


def test_two_vectors_for_one_slot_are_rejected() -> None:
    twice = [custom("emb", "content", [1, 2, 3]), custom("emb", "content", [3, 2, 1])]
    rejects("more than one vector for field 'content'", custom_vectors=twice)


def test_precomputed_vectors_are_checked_by_the_vectors_type() -> None:
    vectors = given(vectors=[KW, DENSE])
    assert vectors[("kw", IndexField.CONTENT)] == SparseVector(indices=[7], values=[1.0])
    assert vectors[("dense", IndexField.CONTENT)] == [0.0, 1.0]  # normalization true


def test_an_empty_precomputed_sparse_vector_is_taken_as_given() -> None:
    empty = {"vector_name": "kw", "field": "content", "sparse_indices": [], "sparse_values": []}
    vectors = given(vectors=[empty, DENSE])
    assert vectors[("kw", IndexField.CONTENT)] == SparseVector(indices=[], values=[])
    check_top_k(CONFIG, vectors, "d1")


@pytest.mark.parametrize(
    ("entry", "match"),
    [
        ({"vector_name": "kw", "field": "content", "dense_vector": [1.0]}, "is sparse: give"),
        ({"vector_name": "dense", "field": "content", "dense_vector": []}, "has 0 numbers"),
        ({"vector_name": "dense", "field": "content", "sparse_indices": [1]}, "is dense: give"),
        ({"vector_name": "dense", "field": "content", "dense_vector": [1.0]}, "2 dimensions"),
        (
            {"vector_name": "kw", "field": "content", "sparse_indices": [1], "sparse_values": []},
            "1 indices but 0 values",
        ),
        (
            {
                "vector_name": "kw",
                "field": "content",
                "vector_type": "wmtr",
                "sparse_indices": [1],
                "sparse_values": [1.0],
            },
            "vector_type 'wmtr' does not match",
        ),
        ({"vector_name": "dense", "field": "name", "dense_vector": [1, 1]}, "does not index"),
    ],
)
def test_a_bad_precomputed_vector_is_a_400_that_says_what_to_fix(
    entry: dict[str, Any], match: str
) -> None:
    rejects(match, vectors=[entry])


def test_an_exported_custom_vector_can_come_back_in_vectors() -> None:
    entry = {
        "vector_name": "sp",
        "field": "name",
        "vector_type": "sparse_custom",
        "sparse_indices": [4],
        "sparse_values": [0.5],
    }
    assert given(vectors=[entry, KW, DENSE])[("sp", IndexField.NAME)] == SparseVector(
        indices=[4], values=[0.5]
    )


@pytest.mark.parametrize(
    ("vectors", "match"),
    [
        ([], r"complete non-custom vector set.*missing: kw \(content\), dense \(content\)"),
        ([KW], r"complete non-custom vector set.*missing: dense \(content\) \(or"),
        (
            [DENSE, {**KW, "vector_name": "other"}],
            "unexpected vector: the collection has no vector 'other'",
        ),
        ([KW, DENSE, KW], "more than one vector for field 'content'"),
    ],
)
def test_precomputed_vectors_must_be_the_complete_computed_set(
    vectors: list[dict[str, Any]], match: str
) -> None:
    rejects(match, vectors=vectors)


def test_a_slot_whose_field_is_blank_may_be_left_out_of_the_set() -> None:
    assert given(vectors=[], content=None) == {}
    assert given(vectors=[KW], content=" ") == {
        ("kw", IndexField.CONTENT): SparseVector(indices=[7], values=[1.0])
    }


def test_custom_vectors_alone_need_no_precomputed_set() -> None:
    assert given(custom_vectors=[custom("sp", "name", [[1, 0.5]])])
    with pytest.raises(InvalidInput, match="missing: kw"):
        given(custom_vectors=[custom("sp", "name", [[1, 0.5]])], vectors=[DENSE])


def test_the_keyword_alias_matches_a_wmtr_vector_type() -> None:
    config = CollectionConfig.model_validate({"vectors": [{"name": "k", "type": "keyword"}]})
    entry = {
        "vector_name": "k",
        "field": "content",
        "vector_type": "keyword",
        "sparse_indices": [1],
        "sparse_values": [1.0],
    }
    assert document_vectors(config, document(vectors=[entry]))


def test_a_query_custom_vector_follows_the_same_rules() -> None:
    vector = CONFIG.vector("emb")
    assert vector is not None
    assert custom_vector(vector, [0, 5, 0], "query") == [0.0, 1.0, 0.0]
    with pytest.raises(InvalidInput, match="query: has 1 numbers"):
        custom_vector(vector, [1.0], "query")
