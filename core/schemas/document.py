"""Document (API.md §4), its status entries and queue counts."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    Field,
    ModelWrapValidatorHandler,
    PrivateAttr,
    StrictBool,
    StrictInt,
    StrictStr,
    field_validator,
    model_validator,
)

from core.enums import DocumentStatus, IndexField, MetadataType, OpType
from core.filters import MetadataFilterInput
from core.metadata import OBJECT, RFC_3339, WRAPPER_TYPES, parse_datetime
from core.schemas.common import (
    INTEGRAL,
    MAX_ARMS,
    MAX_SPARSE_INDEX,
    MAX_VECTOR_ENTRIES,
    NAME_SCHEMA,
    DocumentId,
    MultiVectorValues,
    Name,
    UtcTimestamp,
    VectorValues,
    WireModel,
    check_name,
)

MAX_TAGS = 50
MAX_TAG_CHARS = 100
# The tag and metadata rules the validators below enforce, as /openapi.json tells them.
Tag = Annotated[
    StrictStr,
    Field(json_schema_extra={"pattern": r"^\s*[^\s|]([^|]{0,98}[^\s|])?\s*$"}),
]
TAGS_SCHEMA = {"maxItems": MAX_TAGS, "uniqueItems": True}
METADATA_SCHEMA = {"propertyNames": NAME_SCHEMA}


SparseIndex = Annotated[StrictInt, Field(ge=0, le=MAX_SPARSE_INDEX), INTEGRAL]


class VectorData(WireModel):
    """A precomputed vector for one (vector, field) slot."""

    vector_name: StrictStr
    field: IndexField
    vector_type: StrictStr | None = None
    dense_vector: VectorValues | None = None
    sparse_indices: Annotated[list[SparseIndex], Field(max_length=MAX_VECTOR_ENTRIES)] | None = None
    sparse_values: VectorValues | None = None


class CustomDocumentVector(WireModel):
    vector_name: Name
    field: IndexField
    vector: VectorValues | MultiVectorValues


class Document(WireModel):
    id: DocumentId
    timestamp: UtcTimestamp
    tags: Annotated[list[Tag], Field(json_schema_extra=TAGS_SCHEMA)] | None = None
    name: Annotated[StrictStr, Field(max_length=1500)] | None = None
    description: Annotated[StrictStr, Field(max_length=3000)] | None = None
    content: Annotated[StrictStr, Field(max_length=1_000_000)] | None = None
    content_hash: StrictStr | None = None
    metadata: Annotated[dict[str, Any], Field(json_schema_extra=METADATA_SCHEMA)] | None = None
    custom_vectors: Annotated[list[CustomDocumentVector], Field(max_length=MAX_ARMS)] | None = None
    vectors: Annotated[list[VectorData], Field(max_length=MAX_ARMS)] | None = None
    # Metadata keys given as {"value", "type": "datetime"}: only those may fill a datetime index.
    _datetime_keys: frozenset[str] = PrivateAttr(default=frozenset())

    @model_validator(mode="wrap")
    @classmethod
    def _remember_datetimes(
        cls, data: Any, handler: ModelWrapValidatorHandler[Document]
    ) -> Document:
        document = handler(data)
        raw = data.get("metadata") if isinstance(data, dict) else None
        if isinstance(raw, dict):
            document._datetime_keys = frozenset(
                key
                for key, item in raw.items()
                if _is_wrapped(item) and item["type"] == MetadataType.DATETIME
            )
        return document

    @property
    def datetime_keys(self) -> frozenset[str]:
        return self._datetime_keys

    @field_validator("tags")
    @classmethod
    def _tags(cls, value: list[str] | None) -> list[str] | None:
        if value is None:
            return None
        if len(value) > MAX_TAGS:
            raise ValueError(f"at most {MAX_TAGS} tags are allowed")
        tags = [t.strip() for t in value]
        for tag in tags:
            if not tag:
                raise ValueError("tags must not be empty")
            if len(tag) > MAX_TAG_CHARS:
                raise ValueError(f"each tag is at most {MAX_TAG_CHARS} characters")
            if "|" in tag:
                raise ValueError("tags must not contain '|'")
        if len(set(tags)) != len(tags):
            raise ValueError("tags must not repeat")
        return tags

    @field_validator("metadata")
    @classmethod
    def _metadata(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is None:
            return None
        flat: dict[str, Any] = {}
        for key, item in value.items():
            check_name(key)
            flat[key] = _unwrap(key, item)
        return flat

    def field_text(self, field: IndexField) -> str:
        return getattr(self, field.value) or ""


def _is_wrapped(item: Any) -> bool:
    return isinstance(item, dict) and set(item) == {"value", "type"}


def _unwrap(key: str, item: Any) -> Any:
    """Accept the typed `{value, type}` wrapper; store the value flat. A datetime is kept as
    written (`…Z` comes back as `…Z`) where the store's index reads that form, else in ISO form."""
    if not _is_wrapped(item):
        return item
    kind, value = item["type"], item["value"]
    if kind not in WRAPPER_TYPES:
        raise ValueError(f"metadata '{key}': type must be one of {', '.join(WRAPPER_TYPES)}")
    if kind == OBJECT and value is not None and not isinstance(value, dict):
        raise ValueError(f"metadata '{key}': an object value must be a JSON object")
    if kind != MetadataType.DATETIME or value is None:
        return value
    if not isinstance(value, str) or parse_datetime(value) is None:
        raise ValueError(f"metadata '{key}': datetime value must be an ISO 8601 string"[:300])
    return value if RFC_3339.match(value) else datetime.fromisoformat(value).isoformat()


class StatusEntry(BaseModel):
    status: DocumentStatus
    op_type: OpType | None = None
    info: str | None = None
    timestamp: datetime
    queue_id: str | None = None
    try_count: int | None = None


class DocumentStatusResponse(BaseModel):
    statuses: list[StatusEntry]


class QueueInfo(BaseModel):
    queued_upsert: int = 0
    queued_delete: int = 0
    requeued_upsert: int = 0
    requeued_delete: int = 0
    failed_upsert: int = 0
    failed_delete: int = 0
    total: int = 0


class DocumentFetchRequest(WireModel):
    """POST …/documents/fetch (API.md §4). `metadata_filter` is checked by core.filters."""

    page_size: Annotated[StrictInt, Field(ge=1, le=1000), INTEGRAL] = 100
    after: StrictStr | None = None
    metadata_filter: MetadataFilterInput | None = None
    document_tags: Annotated[list[StrictStr], Field(max_length=50)] | None = None
    document_tags_match_all: StrictBool = False
    join: StrictStr | list[StrictStr] | None = None
    with_vectors: StrictBool = False


class DocumentFetchResponse(BaseModel):
    documents: list[dict[str, Any]]
    after: str | None = None


class BulkUpload(WireModel):
    documents: Annotated[list[Document], Field(min_length=1, max_length=100)]
