"""Vectors a client sends (custom and precomputed): checked against the collection, converted.

The API calls `document_vectors` to answer 400 before anything is queued; the worker calls the
same function to get the vectors it writes, and the query pipeline `custom_vector` for a query's
custom vectors, so a vector is read one way everywhere.

Conversion rules:
- dense: exactly `dimensions` finite numbers; L2-normalised when the vector's `normalization` is
  true (a zero vector then cannot be used); the store applies `dense_distance`.
- sparse: unique integer indices 0..2^32-1 with finite values, sorted by index. A document's
  vector with more than `top_k` entries is refused, never cut (silently dropping a caller's
  entries is worse), where Amgix refuses it: a precomputed one (`vectors`) at the door (400), a
  custom one when its write is processed (`check_top_k`, in the worker: the write is `failed`
  with the reason). A query's keeps its `top_k` largest by absolute value (ties: lower index).
- empty: a document's custom vector must hold an entry (400, as in Amgix); a precomputed sparse
  vector may be empty and is stored empty, as given.
- complete: a document that brings `vectors` brings one for every slot of every vector that is
  neither custom nor noop (400 naming the missing slots, as in Amgix): half a set would mix the
  caller's vectors with Braid's own in one document. A slot whose field is blank in the document
  may be left out: it gets no vector either way, so an export sends back as it came.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from core.enums import IndexField, VectorType
from core.errors import InvalidInput
from core.schemas.collection import CollectionConfig, VectorConfig
from core.schemas.common import MAX_SPARSE_INDEX
from core.schemas.document import Document, VectorData
from core.vectors import DenseVector, SparseVector

TYPE_ALIASES = {"keyword": VectorType.WMTR.value}

Number = float | int
RawVector = Sequence[Number] | Sequence[Sequence[Number]]
GivenVectors = dict[tuple[str, IndexField], DenseVector | SparseVector]


def dense_vector(vector: VectorConfig, values: Sequence[Number], where: str) -> DenseVector:
    """A dense vector of the right size, normalised when the vector config says so."""
    if vector.dimensions is not None and len(values) != vector.dimensions:
        raise InvalidInput(
            f"{where}: has {len(values)} numbers but vector '{vector.name}' has "
            f"{vector.dimensions} dimensions"
        )
    floats = [float(v) for v in values]
    if not all(math.isfinite(v) for v in floats):
        raise InvalidInput(f"{where}: values must be finite numbers (no NaN or Infinity)")
    if not vector.normalization:
        return floats
    norm = math.sqrt(math.fsum(v * v for v in floats))
    if norm == 0:
        raise InvalidInput(
            f"{where}: an all-zero vector cannot be normalised (vector '{vector.name}' has "
            "normalization true)"
        )
    return [v / norm for v in floats]


def sparse_vector(
    vector: VectorConfig, indices: Sequence[object], values: Sequence[object], where: str
) -> SparseVector:
    """A sparse vector with unique in-range indices, its top_k largest entries, index order."""
    if len(indices) != len(values):
        raise InvalidInput(
            f"{where}: {len(indices)} indices but {len(values)} values; give one value per index"
        )
    pairs: dict[int, float] = {}
    for index, value in zip(indices, values, strict=True):
        if isinstance(index, bool) or not isinstance(index, int) or index < 0:
            raise InvalidInput(f"{where}: index {index!r} must be an integer >= 0")
        if index > MAX_SPARSE_INDEX:
            raise InvalidInput(f"{where}: index {index} is above the maximum {MAX_SPARSE_INDEX}")
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise InvalidInput(f"{where}: value {value!r} of index {index} must be a number")
        if not math.isfinite(value):
            raise InvalidInput(f"{where}: value of index {index} must be finite")
        if index in pairs:
            raise InvalidInput(f"{where}: index {index} appears more than once")
        pairs[index] = float(value)
    kept = sorted(pairs.items())
    return SparseVector(indices=[i for i, _ in kept], values=[v for _, v in kept])


def top_entries(vector: VectorConfig, sparse: SparseVector) -> SparseVector:
    """A query's sparse vector cut to the vector's `top_k` largest entries, in index order."""
    pairs = zip(sparse.indices, sparse.values, strict=True)
    kept = sorted(sorted(pairs, key=lambda p: (-abs(p[1]), p[0]))[: vector.top_k])
    return SparseVector(indices=[i for i, _ in kept], values=[v for _, v in kept])


def check_top_k(config: CollectionConfig, given: GivenVectors, document_id: str) -> None:
    """A document's sparse vector holds at most its vector's `top_k` entries (InvalidInput)."""
    for (name, field), value in given.items():
        vector = config.vector(name)
        if isinstance(value, SparseVector) and vector is not None and len(value) > vector.top_k:
            raise InvalidInput(
                f"Document '{document_id}': vector '{name}' ({field.value}) has {len(value)}"
                f" entries; the max allowed is its top_k of {vector.top_k}"
            )


def custom_vector(vector: VectorConfig, raw: RawVector, where: str) -> DenseVector | SparseVector:
    """A client's custom vector for a dense_custom ([numbers]) or sparse_custom ([[i, v], ...])."""
    if not vector.type.is_custom:
        raise InvalidInput(
            f"{where}: vector '{vector.name}' is {vector.type.value}; custom vectors are only for "
            "dense_custom and sparse_custom vectors"
        )
    nested = any(isinstance(item, list | tuple) for item in raw)
    if vector.type is VectorType.DENSE_CUSTOM:
        if nested:
            raise InvalidInput(
                f"{where}: vector '{vector.name}' is dense_custom: give a list of "
                f"{vector.dimensions} numbers, not [index, value] pairs"
            )
        return dense_vector(vector, raw, where)  # type: ignore[arg-type]
    if raw and not nested:
        raise InvalidInput(
            f"{where}: vector '{vector.name}' is sparse_custom: give [[index, value], ...] pairs, "
            "not a list of numbers"
        )
    for pair in raw:
        if not isinstance(pair, list | tuple) or len(pair) != 2:
            raise InvalidInput(f"{where}: each sparse entry must be an [index, value] pair")
    pairs: list[Sequence[Number]] = list(raw)  # type: ignore[arg-type]
    return sparse_vector(vector, [p[0] for p in pairs], [p[1] for p in pairs], where)


def precomputed_vector(
    vector: VectorConfig, data: VectorData, where: str
) -> DenseVector | SparseVector:
    """A precomputed vector (`Document.vectors` entry) in the shape of its vector's type."""
    if data.vector_type is not None:
        given = data.vector_type.lower()
        if TYPE_ALIASES.get(given, given) != vector.type.value:
            raise InvalidInput(
                f"{where}: vector_type '{data.vector_type}' does not match vector "
                f"'{vector.name}', which is {vector.type.value}"
            )
    has_sparse = data.sparse_indices is not None or data.sparse_values is not None
    if vector.type.is_dense:
        if data.dense_vector is None or has_sparse:
            raise InvalidInput(
                f"{where}: vector '{vector.name}' is dense: give dense_vector only "
                "(no sparse_indices/sparse_values)"
            )
        return dense_vector(vector, data.dense_vector, where)
    if data.dense_vector is not None or data.sparse_indices is None or data.sparse_values is None:
        raise InvalidInput(
            f"{where}: vector '{vector.name}' is sparse: give sparse_indices and sparse_values "
            "(no dense_vector)"
        )
    return sparse_vector(vector, data.sparse_indices, data.sparse_values, where)


def document_vectors(config: CollectionConfig, document: Document) -> GivenVectors:
    """Every vector the document brings, by (vector name, field); InvalidInput says what to fix.

    `custom_vectors` serve dense_custom/sparse_custom vectors. `vectors` are precomputed vectors
    for any other slot (used instead of embedding or lexical encoding); an entry for a custom
    vector is taken like a custom vector, so an exported document can be sent back as it is.
    """
    given: GivenVectors = {}
    for custom in document.custom_vectors or []:
        where = (
            f"Document '{document.id}': custom vector '{custom.vector_name}' ({custom.field.value})"
        )
        vector = _slot_vector(config, given, custom.vector_name, custom.field, where)
        # Refused as Amgix does; for a vector of another type custom_vector says what is wrong.
        if not custom.vector and vector.type.is_custom:
            raise InvalidInput(
                f"{where} is empty: give at least one entry, or leave the vector out"
            )
        given[(vector.name, custom.field)] = custom_vector(vector, custom.vector, where)
    customs = set(given)
    for data in document.vectors or []:
        where = f"Document '{document.id}': vector '{data.vector_name}' ({data.field.value})"
        vector = _slot_vector(config, given, data.vector_name, data.field, where)
        if vector.type is VectorType.NOOP:
            raise InvalidInput(f"{where}: noop vectors hold no vectors")
        given[(vector.name, data.field)] = precomputed_vector(vector, data, where)
    check_top_k(config, {k: v for k, v in given.items() if k not in customs}, document.id)
    if document.vectors is not None:
        _require_complete(config, document, given)
    return given


def _require_complete(config: CollectionConfig, document: Document, given: GivenVectors) -> None:
    """Every computed slot (not custom, not noop) of a field with text has a vector in `given`
    (InvalidInput)."""
    missing = [
        f"{vector.name} ({field.value})"
        for vector in config.vectors or []
        if not vector.type.is_custom and vector.type is not VectorType.NOOP
        for field in vector.index_fields
        if (vector.name, field) not in given and document.field_text(field).strip()
    ]
    if missing:
        raise InvalidInput(
            f"Document '{document.id}': vectors must be a complete non-custom vector set, one "
            f"entry for each of the collection's slots; missing: {', '.join(missing)} (or leave "
            "vectors out to have Braid compute them)"
        )


def _slot_vector(
    config: CollectionConfig, given: GivenVectors, name: str, field: IndexField, where: str
) -> VectorConfig:
    vector = config.vector(name)
    if vector is None:
        known = ", ".join(v.name for v in config.vectors or [])
        raise InvalidInput(
            f"{where}: unexpected vector: the collection has no vector '{name}' (it has: {known})"
        )
    if field not in vector.index_fields:
        fields = ", ".join(f.value for f in vector.index_fields)
        raise InvalidInput(
            f"{where}: vector '{name}' does not index field '{field.value}' (index_fields: "
            f"{fields})"
        )
    if (name, field) in given:
        raise InvalidInput(f"{where}: more than one vector for field '{field.value}'")
    return vector


def raw_input(document: Document, vector_name: str, field: IndexField) -> str | None:
    """The JSON of the vector the document brings for a slot (for change detection), or None."""
    for custom in document.custom_vectors or []:
        if custom.vector_name == vector_name and custom.field is field:
            return "custom:" + custom.model_dump_json()
    for data in document.vectors or []:
        if data.vector_name == vector_name and data.field is field:
            return "given:" + data.model_dump_json(exclude={"vector_type"})
    return None
