"""Query vectors that need no encoder: custom query vectors and lexical ones."""

from __future__ import annotations

import pytest

from core.errors import InvalidInput
from core.schemas.collection import CollectionConfig
from core.vectors import SparseVector
from store.slots import slots
from store.vectorizer import custom_query_vector

CONFIG = CollectionConfig.model_validate(
    {
        "vectors": [
            {"name": "emb", "type": "dense_custom", "dimensions": 2},
            {"name": "sp", "type": "sparse_custom", "top_k": 2},
        ]
    }
)
DENSE, SPARSE = slots(CONFIG)


def test_a_dense_query_vector_is_normalised_like_the_documents() -> None:
    assert custom_query_vector(DENSE, [0, 2]) == [0.0, 1.0]


def test_a_sparse_query_vector_keeps_its_top_k_largest_entries_by_index() -> None:
    vector = custom_query_vector(SPARSE, [[3, 0.1], [1, 0.9], [2, 0.5]])
    assert vector == SparseVector(indices=[1, 2], values=[0.9, 0.5])


@pytest.mark.parametrize(
    ("slot", "raw", "match"),
    [
        (DENSE, [1, 2, 3], "has 3 numbers but vector 'emb' has 2 dimensions"),
        (DENSE, [[1, 0.5]], "give a list of 2 numbers"),
        (SPARSE, [0.5, 0.5], "give \\[\\[index, value\\], ...\\]"),
        (SPARSE, [[1, 0.5], [1, 0.5]], "appears more than once"),
        (DENSE, None, "needs a query vector"),
    ],
)
def test_a_wrong_query_vector_is_a_400(slot, raw, match: str) -> None:
    with pytest.raises(InvalidInput, match=f"custom_vectors: .*{match}|{match}"):
        custom_query_vector(slot, raw)
