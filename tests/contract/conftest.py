"""Fixtures of the Store contract suite: every backend, plus the documents the tests use."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from qdrant_client import AsyncQdrantClient

from core.vectors import SparseVector
from store.edge.store import EdgeStore
from store.protocol import CollectionSchema, DenseSlot, PointWrite, SparseSlot, Store
from store.server import ServerStore

COLLECTION = "docs"
# "lex" gets IDF at query time, "raw" does not: the pair lets a test show IDF decides an order.
SCHEMA = CollectionSchema(
    dense=[DenseSlot("dense", 4)],
    sparse=[SparseSlot("lex", idf=True), SparseSlot("raw", idf=False)],
)


def point(
    doc_id: str,
    dense: list[float] | None = None,
    sparse: dict[int, float] | None = None,
    **payload: object,
) -> PointWrite:
    """A document with the same sparse vector in both sparse slots."""
    terms = sparse or {0: 1.0}
    vector = SparseVector(indices=list(terms), values=list(terms.values()))
    return PointWrite(
        doc_id=doc_id,
        payload=dict(payload),
        vectors={"dense": dense or [1.0, 0.0, 0.0, 0.0], "lex": vector, "raw": vector},
    )


def sparse(terms: dict[int, float]) -> SparseVector:
    return SparseVector(indices=list(terms), values=list(terms.values()))


def ids(hits: list[Any]) -> list[str]:
    return [h.doc_id for h in hits]


@pytest.fixture
def store_root(tmp_path: Path) -> Path:
    return tmp_path / "store"


@pytest_asyncio.fixture(params=["edge", "server"])
async def store(request: pytest.FixtureRequest, store_root: Path) -> AsyncIterator[Store]:
    backend: Store
    if request.param == "edge":
        backend = await EdgeStore.open(store_root)
    else:  # qdrant-client's local mode speaks the server API in-process
        backend = ServerStore(AsyncQdrantClient(location=":memory:"))
    yield backend
    await backend.close()


@pytest_asyncio.fixture
async def docs(store: Store) -> Store:
    """The store with the empty collection COLLECTION made."""
    await store.create_collection(COLLECTION, SCHEMA)
    return store
