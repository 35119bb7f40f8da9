"""The StoreReader answered by a store held inside another object, written once.

The worker's Replicator (replication/replicator.py) reads from the embedded store whose writes
it broadcasts, and an api's Replica (replication/replica.py) from whichever copy it holds now;
both add what is theirs (the writes, the copies) around these reads, and each says how it closes.
"""

from __future__ import annotations

from abc import abstractmethod

from store.protocol import (
    ArmHit,
    ArmQuery,
    PointFilter,
    ScrollPage,
    StoredPoint,
    StoreInfo,
    StoreReader,
    SummedRanking,
)


class ReadThrough(StoreReader):
    """Every query of the StoreReader, asked of `_reader()`; a subclass names that store (looked
    up at each call, since a replica's changes when it copies again) and defines `close`."""

    @abstractmethod
    def _reader(self) -> StoreReader: ...

    @abstractmethod
    async def close(self) -> None: ...

    async def collection_exists(self, name: str) -> bool:
        return await self._reader().collection_exists(name)

    async def list_collections(self) -> list[str]:
        return await self._reader().list_collections()

    async def describe(self) -> StoreInfo:
        return await self._reader().describe()

    async def retrieve(
        self, name: str, doc_ids: list[str], with_vectors: bool = False
    ) -> dict[str, StoredPoint]:
        return await self._reader().retrieve(name, doc_ids, with_vectors)

    async def count(self, name: str) -> int:
        return await self._reader().count(name)

    async def scroll(
        self,
        name: str,
        filter: PointFilter | None,
        after: str | None,
        limit: int,
        with_vectors: bool = False,
    ) -> ScrollPage:
        return await self._reader().scroll(name, filter, after, limit, with_vectors)

    async def query_arms(self, name: str, arms: list[ArmQuery]) -> list[list[ArmHit]]:
        return await self._reader().query_arms(name, arms)

    async def query_summed(
        self, name: str, arms: list[ArmQuery], weights: tuple[float, ...], top: int
    ) -> SummedRanking:
        return await self._reader().query_summed(name, arms, weights, top)
