"""Document (API.md §4), its status entries and queue counts."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    Field,
    ModelWrapValidatorHandler,
    PrivateAttr,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    field_validator,
    model_validator,
)

from core.enums import DocumentStatus, IndexField, OpType
from core.filters import MetadataFilterInput
from core.schemas.common import DocumentId, Name, WireModel, check_name

MAX_TAGS = 50
MAX_TAG_CHARS = 100
METADATA_TYPES = ("string", "integer", "float", "boolean", "datetime")


def require_utc(value: datetime) -> datetime:
    """Timestamps must carry a timezone, and it must be UTC (API.md §4)."""
    offset = value.utcoffset()
    if offset is None:
        raise ValueError("timestamp must include a timezone (UTC, e.g. 2024-01-01T00:00:00Z)")
    if offset != timedelta(0):
        raise ValueError("timestamp must be in UTC (offset +00:00 or Z)")
    return value


class VectorData(WireModel):
    """A precomputed vector for one (vector, field) slot."""

    vector_name: StrictStr
    field: IndexField
    vector_type: StrictStr | None = None
    dense_vector: list[StrictFloat | StrictInt] | None = None
    sparse_indices: list[StrictInt] | None = None
    sparse_values: list[StrictFloat | StrictInt] | None = None


class CustomDocumentVector(WireModel):
    vector_name: Name
    field: IndexField
    vector: list[StrictFloat | StrictInt] | list[list[StrictFloat | StrictInt]]


class Document(WireModel):
    id: DocumentId
    timestamp: datetime
    tags: list[StrictStr] | None = None
    name: Annotated[StrictStr, Field(max_length=1500)] | None = None
    description: Annotated[StrictStr, Field(max_length=3000)] | None = None
    content: Annotated[StrictStr, Field(max_length=1_000_000)] | None = None
    content_hash: StrictStr | None = None
    metadata: dict[str, Any] | None = None
    custom_vectors: list[CustomDocumentVector] | None = None
    vectors: list[VectorData] | None = None
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
                key for key, item in raw.items() if _is_wrapped(item) and item["type"] == "datetime"
            )
        return document

    @property
    def datetime_keys(self) -> frozenset[str]:
        return self._datetime_keys

    @field_validator("timestamp")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        return require_utc(value)

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
    """Accept the typed `{value, type}` wrapper; store the value flat."""
    if _is_wrapped(item):
        kind, value = item["type"], item["value"]
        if kind not in METADATA_TYPES:
            raise ValueError(f"metadata '{key}': type must be one of {', '.join(METADATA_TYPES)}")
        if kind == "datetime" and value is not None:
            if not isinstance(value, str):
                raise ValueError(f"metadata '{key}': datetime value must be an ISO 8601 string")
            try:
                parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
            except ValueError as exc:
                raise ValueError(f"metadata '{key}': invalid datetime {value!r}") from exc
            return parsed.isoformat()
        return value
    return item


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

    page_size: Annotated[StrictInt, Field(ge=1, le=1000)] = 100
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
