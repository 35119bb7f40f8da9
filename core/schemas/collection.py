"""CollectionConfig and VectorConfig (API.md §3) with their defaults and rules."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    field_validator,
    model_validator,
)

from core.enums import DenseDistance, IndexField, VectorType
from core.schemas.common import (
    INTEGRAL,
    MAX_METADATA_INDEXES,
    MAX_VECTORS,
    REAL,
    Name,
    WireModel,
)

# core.enums.MetadataType's values, spelled out: a Literal keeps the wire as Amgix has it (its 422
# says `literal_error`, its OpenAPI lists the values inline); a unit test holds the two equal.
MetadataIndexType = Literal["string", "integer", "float", "boolean", "datetime"]
LANGUAGE_TYPES = frozenset({VectorType.WMTR, VectorType.FULL_TEXT, VectorType.WHITESPACE})
ModelName = Annotated[StrictStr, Field(min_length=1, max_length=210)]


# Default top_k: word-based lexical types keep every word of a typical long field (an abstract
# has ~210 word entries, p99 430); 128 dropped half of them (docs/relevance.md).
WORD_TOP_K = 512
SPARSE_TOP_K = 128
TOP_K_DEFAULTS = (
    f"Most entries kept in a sparse vector; default {WORD_TOP_K} for wmtr, full_text and "
    f"whitespace, {SPARSE_TOP_K} for the other sparse types"
)

UNIQUE = {"uniqueItems": True}  # by name or key, in fact: the validators say so
INDEX_FIELDS_SCHEMA = {"minItems": 1, "uniqueItems": True}


class VectorConfig(WireModel):
    name: Name
    type: VectorType
    model: ModelName | None = None
    revision: ModelName | None = None
    query_model: ModelName | None = None
    query_revision: ModelName | None = None
    dimensions: Annotated[StrictInt, Field(ge=1, le=8192), INTEGRAL] | None = None
    top_k: Annotated[StrictInt, Field(ge=1, le=10_000, description=TOP_K_DEFAULTS), INTEGRAL] = (
        WORD_TOP_K
    )
    wmtr_word_ratio: Annotated[StrictInt, Field(ge=0, le=100), INTEGRAL] = 90
    index_fields: Annotated[list[IndexField], Field(json_schema_extra=INDEX_FIELDS_SCHEMA)] = Field(
        default_factory=lambda: [IndexField.CONTENT]
    )
    language_default_code: Annotated[StrictStr, Field(pattern=r"^[a-zA-Z]{2}$")] | None = "en"
    language_detect: StrictBool = False
    language_confidence: Annotated[StrictFloat, Field(ge=0, le=1), REAL] = 0.9
    normalization: StrictBool | None = None
    dense_distance: DenseDistance | None = DenseDistance.COSINE
    keep_case: StrictBool = False

    @model_validator(mode="before")
    @classmethod
    def _aliases(cls, data: Any) -> Any:
        if isinstance(data, dict):
            data = dict(data)
            if "wmtr_word_weight" in data and "wmtr_word_ratio" not in data:
                data["wmtr_word_ratio"] = data.pop("wmtr_word_weight")
            kind = data.get("type")
            if isinstance(kind, str):
                kind = kind.lower()
                data["type"] = "wmtr" if kind == "keyword" else kind
                if "top_k" not in data and kind not in ("keyword", *LANGUAGE_TYPES):
                    data["top_k"] = SPARSE_TOP_K
            for key in ("dense_distance",):
                if isinstance(data.get(key), str):
                    data[key] = data[key].lower()
        return data

    @field_validator("dimensions", mode="before")
    @classmethod
    def _dimensions_positive(cls, value: Any) -> Any:
        # The bound's own message would not name the field; Amgix's clients look for it.
        if isinstance(value, int | float) and not isinstance(value, bool) and value < 1:
            raise ValueError(f"dimensions must be between 1 and 8192, not {value}")
        return value

    @field_validator("index_fields")
    @classmethod
    def _fields_unique(cls, value: list[IndexField]) -> list[IndexField]:
        if not value:
            raise ValueError("index_fields must name at least one of name, description, content")
        if len(set(value)) != len(value):
            raise ValueError("index_fields must not repeat a field")
        return value

    @model_validator(mode="after")
    def _type_rules(self) -> VectorConfig:
        kind = self.type
        self._check_model_fields()
        if kind is VectorType.DENSE_CUSTOM and self.dimensions is None:
            raise ValueError("dimensions is required for dense_custom vectors")
        if kind in LANGUAGE_TYPES and not self.language_default_code:
            raise ValueError(f"language_default_code is required for {kind.value} vectors")
        if self.keep_case and not kind.uses_model:
            raise ValueError("keep_case applies to model types only")
        if not kind.is_dense:
            self._check_sparse_fields()
        if self.normalization is None:
            self.normalization = kind.is_dense
        if self.language_default_code:
            self.language_default_code = self.language_default_code.lower()
        return self

    def _check_model_fields(self) -> None:
        kind = self.type
        if kind.uses_model:
            if not self.model:
                raise ValueError(f"model is required for {kind.value} vectors")
        elif self.model or self.revision or self.query_model or self.query_revision:
            raise ValueError(f"model is not allowed for {kind.value} vectors")

    def _check_sparse_fields(self) -> None:
        kind = self.type
        if self.normalization and kind is not VectorType.NOOP:
            raise ValueError(f"normalization is not supported for {kind.value} vectors")
        # Clients send the default (cosine) for every vector; another metric is a mistake.
        if self.dense_distance not in (None, DenseDistance.COSINE):
            raise ValueError(f"dense_distance applies to dense vectors only, not {kind.value}")
        self.dense_distance = None


NOOP_VECTOR = {"name": "noop", "type": "noop", "index_fields": ["name"]}


class MetadataIndex(WireModel):
    key: Name
    type: MetadataIndexType


Vectors = Annotated[list[VectorConfig], Field(max_length=MAX_VECTORS, json_schema_extra=UNIQUE)]
MetadataIndexes = Annotated[
    list[MetadataIndex], Field(max_length=MAX_METADATA_INDEXES, json_schema_extra=UNIQUE)
]


class CollectionConfig(WireModel):
    vectors: Vectors | None = Field(None, validate_default=True)
    store_content: StrictBool = True
    metadata_indexes: MetadataIndexes | None = None

    @field_validator("vectors", mode="after")
    @classmethod
    def _default_and_unique(cls, value: list[VectorConfig] | None) -> list[VectorConfig]:
        if not value:
            return [VectorConfig.model_validate(NOOP_VECTOR)]
        names = [v.name for v in value]
        if len(set(names)) != len(names):
            raise ValueError("vector names must be unique")
        return value

    @field_validator("metadata_indexes")
    @classmethod
    def _keys_unique(cls, value: list[MetadataIndex] | None) -> list[MetadataIndex] | None:
        if value and len({m.key for m in value}) != len(value):
            raise ValueError("metadata_indexes keys must be unique")
        return value

    def vector(self, name: str) -> VectorConfig | None:
        return next((v for v in self.vectors or [] if v.name == name), None)
