"""The Store protocols, in store-neutral types: what readers need, what the writer needs, both."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

from core.enums import DenseDistance
from core.errors import CollectionNotFound
from core.filters import Expr
from core.vectors import SparseVector

VectorValue = list[float] | SparseVector


@dataclass(frozen=True)
class DenseSlot:
    """A dense named vector of the collection."""

    name: str
    dimensions: int
    distance: DenseDistance = DenseDistance.COSINE


@dataclass(frozen=True)
class SparseSlot:
    """A sparse named vector; `idf` makes the store apply IDF at query time."""

    name: str
    idf: bool = True


@dataclass(frozen=True)
class CollectionSchema:
    dense: list[DenseSlot] = field(default_factory=list)
    sparse: list[SparseSlot] = field(default_factory=list)
    # metadata key -> index type (string, integer, float, boolean, datetime): payload indexes
    metadata_indexes: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> CollectionSchema:
        """The schema from `dataclasses.asdict` of one (a shard's schema file, a replicated
        create); schemas written before metadata indexes existed have none."""
        return cls(
            dense=[
                DenseSlot(s["name"], s["dimensions"], DenseDistance(s["distance"]))
                for s in raw.get("dense", [])
            ],
            sparse=[SparseSlot(s["name"], s["idf"]) for s in raw.get("sparse", [])],
            metadata_indexes=dict(raw.get("metadata_indexes") or {}),
        )


@dataclass(frozen=True)
class PointFilter:
    """Which documents an arm or a scroll may return; every part given must hold."""

    metadata: Expr | None = None  # over the document's metadata (typed by core.filters)
    tags: tuple[str, ...] = ()  # any of them, or all with tags_match_all
    tags_match_all: bool = False
    doc_ids: tuple[str, ...] | None = None  # only these documents


@dataclass
class ScrollPage:
    points: list[StoredPoint]
    after: str | None  # cursor for the next page; None on the last one


@dataclass
class PointWrite:
    """One document as the store keeps it: payload plus one vector per slot."""

    doc_id: str
    payload: dict[str, Any]
    vectors: dict[str, VectorValue]


@dataclass
class StoredPoint:
    doc_id: str
    payload: dict[str, Any]
    vectors: dict[str, VectorValue] | None = None


@dataclass(frozen=True)
class ArmQuery:
    """One retrieval arm: nearest neighbours of `vector` in slot `slot`."""

    slot: str
    vector: VectorValue
    limit: int
    filter: PointFilter | None = None


class ArmHit(NamedTuple):  # a tuple: a search makes hundreds
    doc_id: str
    score: float


@dataclass
class SummedRanking:
    """What `Store.query_summed` answers: every candidate's summed score, best first, and the
    stored points of the first `top` (None where one was deleted meanwhile)."""

    scores: list[float]
    best: list[StoredPoint | None]


def summed_ranking(
    arm_hits: list[list[ArmHit]], weights: tuple[float, ...]
) -> list[tuple[str, float]]:
    """(document, score) best first over the arms' candidates: one arm's hits as ranked, or the
    weighted sum of the arms' scores (a candidate missing from an arm's hits adds 0 there), ties
    by document id."""
    if len(arm_hits) == 1:  # a weight alone changes no rank and no min-max
        return [(hit.doc_id, hit.score) for hit in arm_hits[0]]
    summed: dict[str, float] = {}
    for hits, weight in zip(arm_hits, weights, strict=True):
        for hit in hits:
            summed[hit.doc_id] = summed.get(hit.doc_id, 0.0) + weight * hit.score
    return sorted(summed.items(), key=lambda item: (-item[1], item[0]))


@dataclass(frozen=True)
class StoreInfo:
    kind: str  # "qdrant" (server) or "qdrant-edge" (embedded)
    version: str


class StoreError(Exception):
    """A store operation failed (the backend's own error is chained)."""


class CollectionMissing(StoreError, CollectionNotFound):
    """The collection is not in the store (dropped meanwhile): a 404 to the client."""

    def __init__(self, name: str) -> None:
        CollectionNotFound.__init__(self)
        self.collection = name


class CollectionExists(StoreError):
    pass


class StoreLocked(StoreError):
    """The embedded store's folder is owned by another worker process."""


class StoreReader(Protocol):
    """What searches, browsing and fetches ask of a vector store: queries, and a close for
    whoever opened it (an api's search node holds only this: store/replication/replica.py)."""

    async def collection_exists(self, name: str) -> bool: ...

    async def list_collections(self) -> list[str]: ...

    async def describe(self) -> StoreInfo:
        """Which engine this is and its version (GET /v1/system/info)."""

    async def retrieve(
        self, name: str, doc_ids: list[str], with_vectors: bool = False
    ) -> dict[str, StoredPoint]:
        """The stored points among `doc_ids`, keyed by document id (absent ids left out)."""

    async def count(self, name: str) -> int: ...

    async def scroll(
        self,
        name: str,
        filter: PointFilter | None,
        after: str | None,
        limit: int,
        with_vectors: bool = False,
    ) -> ScrollPage:
        """Up to `limit` matching points in a stable order, starting at cursor `after`."""

    async def query_arms(self, name: str, arms: list[ArmQuery]) -> list[list[ArmHit]]:
        """Run every arm as one batch; hits per arm, best first."""

    async def query_summed(
        self, name: str, arms: list[ArmQuery], weights: tuple[float, ...], top: int
    ) -> SummedRanking:
        """The arms' candidates ranked as `summed_ranking` ranks their hits, with the stored
        points of the first `top`: one retriever's search in one query where the engine sums."""

    async def close(self) -> None: ...


class StoreWriter(Protocol):
    """What the worker's writes ask of a vector store (and what a replica applies of the
    stream). Every write is durable when it returns."""

    async def create_collection(self, name: str, schema: CollectionSchema) -> None:
        """Create an empty collection; CollectionExists if it is there already."""

    async def delete_collection(self, name: str) -> None:
        """Drop the collection and its data; no error if it is absent."""

    async def upsert(self, name: str, points: list[PointWrite]) -> None:
        """Insert or replace whole points (payload and every vector)."""

    async def overwrite_payloads(self, name: str, payloads: dict[str, dict[str, Any]]) -> None:
        """Replace stored points' payloads (by document id), keeping their vectors untouched;
        StoreError if one is absent (those before it in `payloads` may be replaced already)."""

    async def delete(self, name: str, doc_ids: list[str]) -> None:
        """Delete points by document id; absent ids are ignored."""

    async def empty(self, name: str) -> None:
        """Remove every point, keep the collection and its schema."""

    async def maintain(self, name: str) -> None:
        """Housekeeping after writes (the embedded engine optimizes here); cheap when idle."""


class Store(StoreReader, StoreWriter, Protocol):
    """The whole store, as the worker that owns it uses it: both backends are one."""
