"""Turns slot texts into vectors: lexical queries here, model ones through the encoders.

Model work goes straight to the holders' shared queue while a live holder is registered; with
none alive it fails at once as Unavailable (503 with Retry-After) instead of waiting out the RPC
timeout behind a router that has nobody to forward to; see core.holders.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from typing import Any

from redis.asyncio import Redis

from core.bus import Bus
from core.enums import EmbedKind, EmbedOutput, UnavailableReason, VectorType
from core.errors import InvalidInput, Unavailable
from core.holders import HolderDirectory, attempt_timeouts
from core.lexical import query_vector
from core.messages import EmbedReply, EmbedRequest
from core.rpc import call_with_retry
from core.schemas.collection import VectorConfig
from core.vector_input import custom_vector, top_entries
from core.vectors import SparseVector
from store.protocol import VectorValue
from store.slots import Slot

CHUNK = 8  # texts per embed request: small enough that encoders can interleave and batch
QUERY_CACHE = 2048

QueryKey = tuple[str, str, str | None, bool, bool, int, str]


def _model_of(vector: VectorConfig, kind: EmbedKind) -> tuple[str, str | None]:
    """The (model, revision) that encodes `kind` texts: queries may use their own."""
    model, revision = vector.model or "", vector.revision
    if kind is EmbedKind.QUERY:
        return vector.query_model or model, vector.query_revision or revision
    return model, revision


class Vectorizer:
    def __init__(self, bus: Bus, redis: Redis, timeout_s: float) -> None:
        self._bus = bus
        self._redis = redis
        self._timeout_s = timeout_s
        self._holders = HolderDirectory(redis)
        self._query_cache: OrderedDict[QueryKey, VectorValue] = OrderedDict()

    async def embed(
        self, vector: VectorConfig, kind: EmbedKind, texts: list[str]
    ) -> list[list[float]]:
        """Dense model vectors for `texts`."""
        replies = await self._call(vector, kind, EmbedOutput.DENSE, texts)
        return [v for reply in replies for v in reply.vectors]

    async def sparse(
        self, vector: VectorConfig, kind: EmbedKind, texts: list[str]
    ) -> list[SparseVector]:
        """SPLADE sparse vectors (at most top_k entries each, vocabulary ids) for `texts`."""
        replies = await self._call(vector, kind, EmbedOutput.SPARSE, texts)
        return [v for reply in replies for v in reply.sparse_vectors]

    async def encode(
        self, vector: VectorConfig, kind: EmbedKind, texts: list[str]
    ) -> list[VectorValue]:
        """Model vectors of a model-type vector (dense_model or sparse_model), one per text."""
        if vector.type is VectorType.SPARSE_MODEL:
            return list(await self.sparse(vector, kind, texts))
        return list(await self.embed(vector, kind, texts))

    async def _call(
        self, vector: VectorConfig, kind: EmbedKind, output: EmbedOutput, texts: list[str]
    ) -> list[EmbedReply]:
        """Send `texts` to the encoders in chunks that run concurrently."""
        model, revision = _model_of(vector, kind)
        requests = [
            EmbedRequest(
                model=model,
                revision=revision,
                kind=kind,
                texts=texts[i : i + CHUNK],
                normalize=bool(vector.normalization),
                keep_case=vector.keep_case,
                output=output,
                top_k=vector.top_k,
            )
            for i in range(0, len(texts), CHUNK)
        ]
        route = await self._holders.route(kind)
        if not route.direct:
            # No holder has beaten within its TTL: a router would forward to nobody and the
            # caller would wait out the whole RPC timeout. Say so at once; it is back in seconds.
            raise Unavailable(
                "no encoder holding a model is alive (restarting?); retry shortly",
                reason=UnavailableReason.NO_MODEL_HOLDER,
            )
        tries = attempt_timeouts(kind, self._timeout_s)
        replies = await asyncio.gather(
            *(call_with_retry(self._bus, route.queue, r, EmbedReply, tries) for r in requests)
        )
        return list(replies)

    async def query(
        self, slot: Slot, text: str, trigram_weight: float, code_trigrams: bool = False
    ) -> VectorValue:
        """The query vector of any non-custom slot; model vectors come from an LRU cache.
        `code_trigrams`: a lexical vector's codes keep their trigrams (core.lexical)."""
        if slot.kind.is_lexical:
            return query_vector(text, slot.lexical_params(), trigram_weight, code_trigrams)
        if not slot.kind.uses_model:
            raise ValueError(f"{slot.kind.value} slots take no query text; see custom_query_vector")
        vector = slot.vector
        model, revision = _model_of(vector, EmbedKind.QUERY)
        key: QueryKey = (
            vector.type.value,
            model,
            revision,
            bool(vector.normalization),
            vector.keep_case,
            vector.top_k if vector.type is VectorType.SPARSE_MODEL else 0,
            text,
        )
        cached = self._query_cache.get(key)
        if cached is None:
            cached = (await self.encode(vector, EmbedKind.QUERY, [text]))[0]
            self._query_cache[key] = cached
            if len(self._query_cache) > QUERY_CACHE:
                self._query_cache.popitem(last=False)
        else:
            self._query_cache.move_to_end(key)
        return cached


def custom_query_vector(slot: Slot, raw: Any) -> VectorValue:
    """A query's custom vector for a dense_custom/sparse_custom slot, checked and converted.

    Dense: `dimensions` numbers, L2-normalised when the vector's normalization is true (as the
    documents' are). Sparse: [[index, value], ...], top_k largest kept. Wrong shape: InvalidInput.
    """
    if raw is None:
        raise InvalidInput(
            f"custom_vectors: vector '{slot.vector.name}' needs a query vector in custom_vectors"
        )
    value = custom_vector(slot.vector, raw, f"custom_vectors: vector '{slot.vector.name}'")
    return top_entries(slot.vector, value) if isinstance(value, SparseVector) else value
