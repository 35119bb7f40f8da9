"""The server store: a Qdrant server through qdrant-client (async); any number of workers."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from qdrant_client import AsyncQdrantClient, models

from core.enums import DenseDistance
from core.vectors import SparseVector
from store.conditions import build_filter, index_fields
from store.ids import DOC_ID_KEY, point_id, stored_payload, stored_point
from store.protocol import (
    ArmHit,
    ArmQuery,
    CollectionExists,
    CollectionMissing,
    CollectionSchema,
    PointFilter,
    PointWrite,
    ScrollPage,
    StoredPoint,
    StoreError,
    StoreInfo,
    SummedRanking,
    VectorValue,
    summed_ranking,
)

_DISTANCES = {
    DenseDistance.COSINE: models.Distance.COSINE,
    DenseDistance.DOT: models.Distance.DOT,
    DenseDistance.EUCLID: models.Distance.EUCLID,
}
_ALL_POINTS = models.FilterSelector(filter=models.Filter())
_INDEX_TYPES = {
    "keyword": models.PayloadSchemaType.KEYWORD,
    "integer": models.PayloadSchemaType.INTEGER,
    "float": models.PayloadSchemaType.FLOAT,
    "bool": models.PayloadSchemaType.BOOL,
    "datetime": models.PayloadSchemaType.DATETIME,
}


class ServerStore:
    """The Store on a Qdrant server; collections carry the Braid collection name unchanged."""

    def __init__(self, client: AsyncQdrantClient) -> None:
        self._client = client
        self._idf_slots: dict[str, set[str]] = {}  # per collection, read from the server once

    @classmethod
    def connect(cls, url: str, *, timeout: int = 30) -> ServerStore:
        return cls(AsyncQdrantClient(url=url, timeout=timeout))

    async def create_collection(self, name: str, schema: CollectionSchema) -> None:
        dense = {
            s.name: models.VectorParams(size=s.dimensions, distance=_DISTANCES[s.distance])
            for s in schema.dense
        }
        sparse = {
            s.name: models.SparseVectorParams(modifier=models.Modifier.IDF if s.idf else None)
            for s in schema.sparse
        }
        self._idf_slots.pop(name, None)
        with _mapped(name):
            await self._client.create_collection(
                name, vectors_config=dense, sparse_vectors_config=sparse or None
            )
            for field_name, kind in index_fields(schema):
                await self._client.create_payload_index(
                    name, field_name, field_schema=_INDEX_TYPES[kind], wait=True
                )

    async def delete_collection(self, name: str) -> None:
        self._idf_slots.pop(name, None)
        with _mapped(name):
            await self._client.delete_collection(name)

    async def collection_exists(self, name: str) -> bool:
        with _mapped(name):
            return await self._client.collection_exists(name)

    async def list_collections(self) -> list[str]:
        with _mapped(""):
            response = await self._client.get_collections()
        return sorted(c.name for c in response.collections)

    async def describe(self) -> StoreInfo:
        try:
            version = (await self._client.info()).version
        except Exception:  # local mode or an old server: the version is only informative
            version = "unknown"
        return StoreInfo("qdrant", version or "unknown")

    async def upsert(self, name: str, points: list[PointWrite]) -> None:
        if not points:
            return await self._require(name)
        structs = [_to_struct(p) for p in points]
        with _mapped(name):
            await self._client.upsert(name, points=structs, wait=True)

    async def overwrite_payloads(self, name: str, payloads: dict[str, dict[str, Any]]) -> None:
        # Qdrant replaces the whole payload, so the private document id goes back in. One
        # request: an operation a point, as each has its own payload.
        if not payloads:
            return await self._require(name)
        operations: list[models.UpdateOperation] = [
            models.OverwritePayloadOperation(
                overwrite_payload=models.SetPayload(
                    payload=stored_payload(doc_id, payload), points=[point_id(doc_id)]
                )
            )
            for doc_id, payload in payloads.items()
        ]
        with _mapped(name):
            await self._client.batch_update_points(name, operations, wait=True)

    async def delete(self, name: str, doc_ids: list[str]) -> None:
        if not doc_ids:  # Qdrant refuses an empty update
            return await self._require(name)
        selector = models.PointIdsList(points=[point_id(d) for d in doc_ids])
        with _mapped(name):
            await self._client.delete(name, points_selector=selector, wait=True)

    async def retrieve(
        self, name: str, doc_ids: list[str], with_vectors: bool = False
    ) -> dict[str, StoredPoint]:
        ids: list[models.ExtendedPointId] = [point_id(d) for d in doc_ids]
        with _mapped(name):
            records = await self._client.retrieve(
                name, ids=ids, with_payload=True, with_vectors=with_vectors
            )
        points = (_to_stored(r, with_vectors) for r in records)
        return {p.doc_id: p for p in points}

    async def count(self, name: str) -> int:
        with _mapped(name):
            return (await self._client.count(name, exact=True)).count

    async def scroll(
        self,
        name: str,
        filter: PointFilter | None,
        after: str | None,
        limit: int,
        with_vectors: bool = False,
    ) -> ScrollPage:
        """Points in point id order; the cursor is the id of the next page's first point."""
        with _mapped(name):
            records, next_id = await self._client.scroll(
                name,
                scroll_filter=_to_filter(filter),
                limit=limit,
                offset=after,
                with_payload=True,
                with_vectors=with_vectors,
            )
        points = [_to_stored(r, with_vectors) for r in records]
        return ScrollPage(points, None if next_id is None else str(next_id))

    async def query_arms(self, name: str, arms: list[ArmQuery]) -> list[list[ArmHit]]:
        if not arms:  # the client answers an empty batch without asking the server
            await self._require(name)
            return []
        idf_slots = await self._idf_slots_of(name)
        requests = [_to_request(arm, arm.slot in idf_slots) for arm in arms]
        try:
            with _mapped(name):
                responses = await self._client.query_batch_points(name, requests=requests)
        except StoreError:
            self._idf_slots.pop(name, None)  # another worker may have remade the collection
            raise
        return [[_to_hit(p) for p in r.points] for r in responses]

    async def query_summed(
        self, name: str, arms: list[ArmQuery], weights: tuple[float, ...], top: int
    ) -> SummedRanking:
        """The arms' hits summed here: two calls, where the embedded engine's formula makes one."""
        ranking = summed_ranking(await self.query_arms(name, arms), weights)
        best = [doc_id for doc_id, _ in ranking[:top]]
        stored = await self.retrieve(name, best)
        return SummedRanking([score for _, score in ranking], [stored.get(d) for d in best])

    async def empty(self, name: str) -> None:
        """Delete every point; the collection, its config and its indexes stay as they are."""
        with _mapped(name):
            await self._client.delete(name, points_selector=_ALL_POINTS, wait=True)

    async def maintain(self, name: str) -> None:
        """Nothing to do: the server runs its own optimizers."""

    async def close(self) -> None:
        await self._client.close()

    async def _idf_slots_of(self, name: str) -> set[str]:
        """The sparse slots with the IDF modifier: only those accept an IDF corpus."""
        if name not in self._idf_slots:
            with _mapped(name):
                info = await self._client.get_collection(name)
            sparse = info.config.params.sparse_vectors or {}
            idf = models.Modifier.IDF
            self._idf_slots[name] = {slot for slot, p in sparse.items() if p.modifier == idf}
        return self._idf_slots[name]

    async def _require(self, name: str) -> None:
        if not await self.collection_exists(name):
            raise CollectionMissing(name)


@contextmanager
def _mapped(name: str) -> Iterator[None]:
    """Translate client errors into the store's: the server answers with HTTP errors, local mode
    with ValueError/KeyError, so the message is what tells them apart."""
    try:
        yield
    except StoreError:
        raise
    except Exception as exc:  # the client's error types differ between server and local mode
        raise _translate(exc, name) from exc


def _translate(exc: Exception, name: str) -> StoreError:
    text = str(exc).lower()
    if "already exists" in text:
        return CollectionExists(name)
    if "collection" in text and ("not found" in text or "exist" in text):
        return CollectionMissing(name)
    return StoreError(f"{name}: {exc}")


def _to_struct(point: PointWrite) -> models.PointStruct:
    vectors = {slot: _to_client_vector(v) for slot, v in point.vectors.items()}
    payload = stored_payload(point.doc_id, point.payload)
    return models.PointStruct(id=point_id(point.doc_id), vector=vectors, payload=payload)


def _to_client_vector(value: VectorValue) -> Any:
    if isinstance(value, SparseVector):
        return models.SparseVector(indices=value.indices, values=value.values)
    return value


def _from_client_vector(value: Any) -> VectorValue:
    if isinstance(value, models.SparseVector):
        return SparseVector(indices=list(value.indices), values=list(value.values))
    return list(value)


def _to_stored(record: models.Record, with_vectors: bool) -> StoredPoint:
    return stored_point(record.payload, record.vector, with_vectors, _from_client_vector)


def _to_request(arm: ArmQuery, idf: bool) -> models.QueryRequest:
    params = None
    if idf:
        # IDF over the live points that have this vector: the server's global statistics read the
        # sparse index, which goes on counting deleted points until a vacuum.
        live = models.Filter(must=[models.HasVectorCondition(has_vector=arm.slot)])
        params = models.SearchParams(idf=models.IdfCorpusParams(corpus=live))
    return models.QueryRequest(
        query=_to_client_vector(arm.vector),
        using=arm.slot,
        limit=arm.limit,
        filter=_to_filter(arm.filter),
        params=params,
        with_payload=[DOC_ID_KEY],
    )


def _to_hit(point: models.ScoredPoint) -> ArmHit:
    return ArmHit(doc_id=str((point.payload or {})[DOC_ID_KEY]), score=point.score)


class _ClientParts:
    """qdrant-client's filter models, for store.conditions.build_filter."""

    def combine(self, must: list[Any], should: list[Any], must_not: list[Any]) -> models.Filter:
        return models.Filter(must=must or None, should=should or None, must_not=must_not or None)

    def match(self, key: str, value: str | int | bool) -> models.FieldCondition:
        return models.FieldCondition(key=key, match=models.MatchValue(value=value))

    def match_any(self, key: str, values: list[str] | list[int]) -> models.FieldCondition:
        return models.FieldCondition(key=key, match=models.MatchAny(any=values))

    def number_range(self, key: str, bounds: dict[str, float]) -> models.FieldCondition:
        return models.FieldCondition(key=key, range=models.Range(**bounds))

    def datetime_range(self, key: str, bounds: dict[str, str]) -> models.FieldCondition:
        return models.FieldCondition(key=key, range=models.DatetimeRange(**bounds))

    def is_empty(self, key: str) -> models.IsEmptyCondition:
        return models.IsEmptyCondition(is_empty=models.PayloadField(key=key))

    def has_documents(self, doc_ids: list[str]) -> models.HasIdCondition:
        return models.HasIdCondition(has_id=[point_id(d) for d in doc_ids])


_PARTS = _ClientParts()


def _to_filter(point_filter: PointFilter | None) -> models.Filter | None:
    filter_: models.Filter | None = build_filter(point_filter, _PARTS)
    return filter_
