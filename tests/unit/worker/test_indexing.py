"""Which write of a document wins inside one batch."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from core.enums import OpType
from core.lexical import document_vector
from core.schemas.collection import CollectionConfig
from core.schemas.document import Document
from core.vectors import SparseVector
from store.slots import slots
from worker.indexing import (
    LocalVectors,
    Write,
    local_vectors,
    newest_per_document,
    with_batch_averages,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def write(op: OpType, doc_id: str, seconds: int) -> Write:
    return Write(op, doc_id, T0 + timedelta(seconds=seconds))


def test_newest_write_of_each_document_wins_whatever_the_order() -> None:
    older, newer = write(OpType.UPSERT, "a", 1), write(OpType.UPSERT, "a", 2)
    assert newest_per_document([older, newer])["a"] is newer
    assert newest_per_document([newer, older])["a"] is newer


def test_delete_wins_a_tie_with_an_upsert() -> None:
    upsert, delete = write(OpType.UPSERT, "a", 5), write(OpType.DELETE, "a", 5)
    assert newest_per_document([delete, upsert])["a"] is delete
    assert newest_per_document([upsert, delete])["a"] is delete


def test_documents_are_independent() -> None:
    winners = newest_per_document([write(OpType.UPSERT, "a", 1), write(OpType.DELETE, "b", 1)])
    assert set(winners) == {"a", "b"}


# --- which vectors a document gets without a model call, and when a slot counts as changed ---

CONFIG = CollectionConfig.model_validate(
    {
        "vectors": [
            {"name": "emb", "type": "dense_custom", "dimensions": 2, "normalization": False},
            {"name": "sp", "type": "sparse_custom", "index_fields": ["name", "content"]},
            {"name": "kw", "type": "full_text"},
            {"name": "dense", "type": "dense_model", "model": "m", "dimensions": 2},
        ]
    }
)
SLOTS = {slot.name: slot for slot in slots(CONFIG)}


def document(**fields: Any) -> Document:
    return Document.model_validate(
        {"id": "d1", "timestamp": "2026-01-01T00:00:00Z", "content": "running shoes", **fields}
    )


def local(
    doc: Document, reusable: dict[str, Any] | None = None, averages: dict[str, float] | None = None
) -> LocalVectors:
    """The document's vectors, its lexical ones worked out as the worker's child does."""
    found = local_vectors(CONFIG, list(SLOTS.values()), doc, reusable or {})
    for slot, text in found.lexical:
        params = slot.lexical_params()
        found.settle(slot, document_vector(text, params, (averages or {}).get(slot.name, 0.0)))
    return found


def test_custom_vectors_go_into_their_slots_and_the_text_into_the_others() -> None:
    doc = document(
        custom_vectors=[
            {"vector_name": "emb", "field": "content", "vector": [3, 4]},
            {"vector_name": "sp", "field": "name", "vector": [[5, 0.5]]},
        ]
    )
    result = local(doc)
    assert result.vectors["emb.content"] == [3.0, 4.0]
    assert result.vectors["sp.name"] == SparseVector(indices=[5], values=[0.5])
    assert "sp.content" not in result.vectors  # a custom slot without a vector stays empty
    assert "kw.content" in result.vectors and result.lengths == {"kw.content": 2}
    assert [(slot.name, text) for slot, text in result.to_embed] == [
        ("dense.content", "running shoes")
    ]


def test_precomputed_vectors_replace_lexical_encoding_and_embedding() -> None:
    doc = document(
        vectors=[
            {"vector_name": "kw", "field": "content", "sparse_indices": [1], "sparse_values": [2]},
            {"vector_name": "dense", "field": "content", "dense_vector": [0, 3]},
        ]
    )
    result = local(doc)
    assert result.vectors["kw.content"] == SparseVector(indices=[1], values=[2.0])
    assert result.vectors["dense.content"] == [0.0, 1.0]
    assert result.to_embed == [] and result.lengths == {}


EMPTY_KW = {"vector_name": "kw", "field": "content", "sparse_indices": [], "sparse_values": []}


def test_an_empty_precomputed_sparse_vector_is_stored_empty_not_computed_from_the_text() -> None:
    dense = {"vector_name": "dense", "field": "content", "dense_vector": [0, 3]}
    result = local(document(vectors=[EMPTY_KW, dense]))
    assert result.vectors["kw.content"] == SparseVector(indices=[], values=[])
    assert result.lengths == {}


def test_an_empty_precomputed_vector_sent_again_keeps_its_hash() -> None:
    slot = SLOTS["kw.content"]
    given = document(vectors=[EMPTY_KW])
    assert slot.text_hash(given) == slot.text_hash(document(vectors=[EMPTY_KW], name="new"))
    assert slot.text_hash(given) != slot.text_hash(document())


def test_a_stored_model_vector_is_reused_instead_of_embedded() -> None:
    result = local(document(), reusable={"dense.content": [1.0, 0.0]})
    assert result.vectors["dense.content"] == [1.0, 0.0] and result.to_embed == []


def test_a_custom_slot_hash_follows_its_vector_not_the_text() -> None:
    slot = SLOTS["emb.content"]
    first = document(custom_vectors=[{"vector_name": "emb", "field": "content", "vector": [1, 2]}])
    new_text = first.model_copy(update={"content": "other words"})
    new_vector = document(
        custom_vectors=[{"vector_name": "emb", "field": "content", "vector": [2, 1]}]
    )
    assert slot.text_hash(first) == slot.text_hash(new_text)
    assert slot.text_hash(first) != slot.text_hash(new_vector)


def test_an_unchanged_precomputed_vector_keeps_its_hash_and_differs_from_the_text_hash() -> None:
    slot = SLOTS["dense.content"]
    entry = {"vector_name": "dense", "field": "content", "dense_vector": [0.5, 0.5]}
    given = document(vectors=[entry])
    again = document(vectors=[{**entry, "vector_type": "dense_model"}], name="new name")
    assert slot.text_hash(given) == slot.text_hash(again)
    assert slot.text_hash(given) != slot.text_hash(document())


# --- BM25 length normalisation before the collection has counted any length ---


def test_a_collection_s_first_batch_is_normalised_by_its_own_mean_length() -> None:
    short = Document.model_validate(
        {"id": "s", "timestamp": "2026-01-01T00:00:00Z", "content": "alpha"}
    )
    long = Document.model_validate(
        {"id": "l", "timestamp": "2026-01-01T00:00:00Z", "content": "alpha " + "beta " * 8}
    )
    writes = [Write(OpType.UPSERT, d.id, T0, d) for d in (short, long)]
    kw = SLOTS["kw.content"]
    filled = with_batch_averages(list(SLOTS.values()), writes, {})
    assert filled[kw.name] == 5.0  # (1 + 9) / 2 words
    vectors = {d.id: local(d, averages=filled).vectors[kw.name] for d in (short, long)}
    # "alpha" once in a short text weighs more than once in a long one
    assert max(vectors["s"].values) > min(vectors["l"].values)
    assert "dense.content" not in filled  # only lexical slots have lengths


def test_counted_averages_are_kept() -> None:
    doc = document()
    kw = SLOTS["kw.content"]
    writes = [Write(OpType.UPSERT, doc.id, T0, doc)]
    assert with_batch_averages(list(SLOTS.values()), writes, {kw.name: 40.0})[kw.name] == 40.0
