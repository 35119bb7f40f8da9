"""SearchQuery and SearchResponse (API.md §5)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    field_validator,
)

from core.enums import FusionMode, IndexField
from core.filters import MetadataFilterInput
from core.schemas.common import (
    INTEGRAL,
    MAX_ARMS,
    MAX_GROUP,
    MAX_GROUP_FETCHES,
    MultiVectorValues,
    Name,
    Number,
    VectorValues,
    WireModel,
)
from core.schemas.document import CustomDocumentVector, VectorData

ExcludableField = Literal["name", "description", "content", "tags", "metadata"]


class VectorSearchOption(WireModel):
    vector_name: Name
    field: IndexField | None = None
    weight: Number = 1.0
    wmtr_trigram_weight: Number = 1.0


class CustomVector(WireModel):
    vector_name: StrictStr
    vector: VectorValues | MultiVectorValues


class FacetOptions(WireModel):
    prefetch_multiplier: Annotated[StrictInt, Field(ge=1, le=10), INTEGRAL] = 2
    max_values: Annotated[StrictInt, Field(ge=1, le=100), INTEGRAL] = 10


class SearchQuery(WireModel):
    query: Annotated[StrictStr, Field(min_length=1, max_length=10_000)]
    vector_options: Annotated[list[VectorSearchOption], Field(max_length=MAX_ARMS)] | None = None
    custom_vectors: Annotated[list[CustomVector], Field(max_length=MAX_ARMS)] | None = None
    limit: Annotated[StrictInt, Field(ge=1, le=100), INTEGRAL] = 10
    score_threshold: Number | None = None
    document_tags: Annotated[list[StrictStr], Field(max_length=50)] | None = None
    document_tags_match_all: StrictBool = False
    metadata_filter: MetadataFilterInput | None = None
    join: StrictStr | list[StrictStr] | None = None
    exclude: list[ExcludableField] | None = None
    group_field: StrictStr | None = None
    group_max: Annotated[StrictInt, Field(ge=1, le=MAX_GROUP), INTEGRAL] = 3
    group_max_fetches: Annotated[StrictInt, Field(ge=1, le=MAX_GROUP_FETCHES), INTEGRAL] = 2
    facets: StrictBool = False
    facet_options: FacetOptions | None = None
    raw_scores: StrictBool = False
    # None is Braid's default: linear (min-max) fusion over the whole candidate pool, each
    # retriever scoring every candidate, which ranks better than RRF's ranks or Amgix's linear
    # over each retriever's own list (docs/relevance.md). An explicit `rrf` or `linear` is
    # Amgix's.
    fusion_mode: FusionMode | None = None

    @field_validator("query")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("query must not be empty")
        return value


class VectorScore(BaseModel):
    field: str
    vector: str
    score: float
    rank: int


class SearchResult(BaseModel):
    id: str
    timestamp: datetime
    tags: list[str] | None = None
    name: str | None = None
    description: str | None = None
    content: str | None = None
    content_hash: str | None = None
    metadata: dict[str, Any] | None = None
    custom_vectors: list[CustomDocumentVector] | None = None
    vectors: list[VectorData] | None = None
    # Left out unless a join asked for it: Amgix clients read it as a mapping when present.
    joined: dict[str, list[dict[str, Any]]] | None = Field(None, exclude_if=lambda v: v is None)
    score: float
    vector_scores: list[VectorScore] = Field(default_factory=list)


class SearchResponse(BaseModel):
    results: list[SearchResult]
    facet_counts: dict[str, dict[str, int]] | None = None
    query_time_ms: float
