"""Slots: one store vector per (collection vector, indexed field), with its text and hash."""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass

from core.enums import DenseDistance, IndexField, VectorType
from core.lexical import LexicalParams
from core.schemas.collection import CollectionConfig, VectorConfig
from core.schemas.document import Document
from core.vector_input import raw_input
from store.protocol import CollectionSchema, DenseSlot, SparseSlot

NOOP_SLOT = "_noop"


@dataclass(frozen=True)
class Slot:
    vector: VectorConfig
    field: IndexField

    @property
    def name(self) -> str:
        """The store's vector name for this slot."""
        return f"{self.vector.name}.{self.field.value}"

    @property
    def kind(self) -> VectorType:
        return self.vector.type

    def lexical_params(self) -> LexicalParams:
        return LexicalParams(
            kind=self.kind,
            top_k=self.vector.top_k,
            word_ratio=self.vector.wmtr_word_ratio,
            language=self.vector.language_default_code or "en",
            detect_language=self.vector.language_detect,
            language_confidence=float(self.vector.language_confidence),
        )

    @functools.cached_property
    def _config_json(self) -> bytes:
        """The vector config as `text_hash` reads it: written once a slot, not once a document
        (a batch makes its slots)."""
        return self.vector.model_dump_json().encode()

    def text_hash(self, document: Document) -> str:
        """Changes exactly when this slot's vector would change (its input or vector config).

        The input is the vector the document brings for the slot (custom or precomputed) when it
        brings one, else the field's text; a custom slot never reads the text.
        """
        digest = hashlib.sha256()
        digest.update(self._config_json)
        given = raw_input(document, self.vector.name, self.field)
        if given is not None:
            digest.update(b"\1")
            digest.update(given.encode())
        elif not self.kind.is_custom:
            digest.update(b"\0")
            digest.update(document.field_text(self.field).encode())
        return digest.hexdigest()[:32]


def slots(config: CollectionConfig) -> list[Slot]:
    return [
        Slot(vector, field)
        for vector in config.vectors or []
        if vector.type is not VectorType.NOOP
        for field in vector.index_fields
    ]


def store_schema(config: CollectionConfig) -> CollectionSchema:
    dense, sparse = [], []
    for slot in slots(config):
        if slot.kind.is_dense:
            assert slot.vector.dimensions, "dimensions are known once the collection exists"
            dense.append(
                DenseSlot(
                    slot.name,
                    slot.vector.dimensions,
                    slot.vector.dense_distance or DenseDistance.COSINE,
                )
            )
        else:
            sparse.append(SparseSlot(slot.name, idf=slot.kind.is_lexical))
    if not dense and not sparse:  # noop collections: the store wants at least one vector
        sparse.append(SparseSlot(NOOP_SLOT, idf=False))
    indexes: dict[str, str] = {index.key: index.type for index in config.metadata_indexes or []}
    return CollectionSchema(dense=dense, sparse=sparse, metadata_indexes=indexes)
