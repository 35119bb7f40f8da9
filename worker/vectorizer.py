"""Turns slot texts into vectors: lexical ones locally, model ones through the encoders."""

from __future__ import annotations

import asyncio
from collections import OrderedDict

from redis.asyncio import Redis

from core.bus import Bus
from core.enums import EmbedKind
from core.lexical import document_vector, query_vector
from core.messages import EmbedReply, EmbedRequest
from core.names import RedisKeys, embed_queue
from core.schemas.collection import VectorConfig
from core.vectors import SparseVector
from worker.slots import Slot
from worker.store.protocol import VectorValue

CHUNK = 8  # texts per embed request: small enough that encoders can interleave and batch
QUERY_CACHE = 2048


class Vectorizer:
    def __init__(self, bus: Bus, redis: Redis, timeout_s: float) -> None:
        self._bus = bus
        self._redis = redis
        self._timeout_s = timeout_s
        self._query_cache: OrderedDict[tuple[str, str | None, bool, bool, str], list[float]] = (
            OrderedDict()
        )

    async def embed(
        self, vector: VectorConfig, kind: EmbedKind, texts: list[str]
    ) -> list[list[float]]:
        """Model vectors for `texts`, sent to the encoders in chunks that run concurrently."""
        model, revision = vector.model or "", vector.revision
        if kind is EmbedKind.QUERY:
            model, revision = vector.query_model or model, vector.query_revision or revision
        chunks = [texts[i : i + CHUNK] for i in range(0, len(texts), CHUNK)]
        replies = await asyncio.gather(
            *(self._embed_chunk(model, revision, vector, kind, chunk) for chunk in chunks)
        )
        if kind is EmbedKind.DOCUMENT and texts:
            await self._redis.hincrby(RedisKeys.worker_stats(), "texts_embedded", len(texts))
        return [v for reply in replies for v in reply.vectors]

    async def _embed_chunk(
        self,
        model: str,
        revision: str | None,
        vector: VectorConfig,
        kind: EmbedKind,
        texts: list[str],
    ) -> EmbedReply:
        request = EmbedRequest(
            model=model,
            revision=revision,
            kind=kind,
            texts=texts,
            normalize=bool(vector.normalization),
            keep_case=vector.keep_case,
        )
        return await self._bus.call(embed_queue(kind), request, EmbedReply, self._timeout_s)

    async def query(self, slot: Slot, text: str, trigram_weight: float) -> VectorValue:
        if slot.kind.is_lexical:
            return query_vector(text, slot.lexical_params(), trigram_weight)
        vector = slot.vector
        key = (
            vector.query_model or vector.model or "",
            vector.revision,
            bool(vector.normalization),
            vector.keep_case,
            text,
        )
        cached = self._query_cache.get(key)
        if cached is None:
            cached = (await self.embed(vector, EmbedKind.QUERY, [text]))[0]
            self._query_cache[key] = cached
            if len(self._query_cache) > QUERY_CACHE:
                self._query_cache.popitem(last=False)
        else:
            self._query_cache.move_to_end(key)
        return cached


def lexical_document(slot: Slot, text: str, avg_length: float) -> tuple[SparseVector, int]:
    terms = document_vector(text, slot.lexical_params(), avg_length)
    return terms.vector, terms.length
