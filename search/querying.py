"""The query pipeline: query vectors, one batched store query with an arm per slot, fusion,
then grouping, facets and joins on the ranked documents."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, replace
from itertools import pairwise
from typing import Any

from core.catalog import Catalog
from core.enums import FusionMode
from core.lexical import is_lookup
from core.metrics import SEARCH_STAGE_SECONDS, Recorder
from core.schemas.collection import CollectionConfig
from core.schemas.search import SearchQuery, SearchResponse, SearchResult, VectorScore
from search.facets import cap_groups, facet_counts, group_value
from search.filtering import metadata_indexes, point_filter, require_indexed
from search.fusion import Fused, Retriever, fuse, retriever_scores
from search.joining import Joiner, join_specs
from search.planning import (
    MAX_WINDOW,
    Arm,
    candidate_window,
    plan_arms,
    plan_retrievers,
    store_ranks,
)
from store.payload import public_document
from store.protocol import ArmHit, ArmQuery, PointFilter, StoredPoint, StoreReader
from store.vectorizer import Vectorizer, custom_query_vector


@dataclass
class _Round:
    """What one round of arm queries found: the fused ranking and the whole candidate pool."""

    ranked: list[Fused]
    exhausted: bool  # no arm filled its window: a wider one finds nothing more
    engine_s: float  # time in the engine's query
    fusion_s: float  # time fusing the arms' hits


class QueryPipeline:
    def __init__(
        self,
        store: StoreReader,
        vectorizer: Vectorizer,
        catalog: Catalog,
        recorder: Recorder | None = None,
    ) -> None:
        self._store = store
        self._vectorizer = vectorizer
        self._joiner = Joiner(store, catalog)
        self._recorder = recorder or Recorder()  # per-stage time (SEARCH_STAGE_SECONDS)

    async def search(
        self, collection: str, query: SearchQuery, config: CollectionConfig
    ) -> SearchResponse:
        """`config`: the collection's, as search/searching.py looked it up."""
        started = time.perf_counter()
        arms = plan_arms(config, query)
        where = point_filter(
            config, query.metadata_filter, query.document_tags, query.document_tags_match_all
        )
        if query.group_field:
            require_indexed(config, query.group_field, "group_field")
        joins = join_specs(query.join)  # here, not after: a bad spec is a 400 even when
        # nothing matches; parsed once, and `attach` takes the specs
        results, facets = await self._ranked(collection, config, arms, where, query)
        await self._joiner.attach(results, joins, query.exclude or [])
        # After the join: a join keyed on `$.meta.<key>` reads metadata the answer may leave out.
        for result in results:
            for excluded in query.exclude or []:
                result[excluded] = None
        elapsed_ms = (time.perf_counter() - started) * 1000
        return SearchResponse(
            results=[SearchResult(**r) for r in results],
            facet_counts=facets,
            query_time_ms=round(elapsed_ms, 3),
        )

    async def _ranked(
        self,
        collection: str,
        config: CollectionConfig,
        arms: list[Arm],
        where: PointFilter | None,
        query: SearchQuery,
    ) -> tuple[list[dict[str, Any]], dict[str, dict[str, int]] | None]:
        facets: dict[str, dict[str, int]] | None = {} if query.facets else None
        if not arms:
            return [], facets
        started = time.perf_counter()
        vectors = await self._query_vectors(arms, query.query)
        embedded = time.perf_counter()
        self._stage("query_embedding", embedded - started)
        retrievers = plan_retrievers(arms, is_lookup(query.query))
        pooled = query.fusion_mode is None and len(retrievers) > 1  # Braid's default fusion
        window = candidate_window(query, len(arms), pooled)
        if store_ranks(query, retrievers):
            requests = [
                ArmQuery(a.slot.name, v, window, where) for a, v in zip(arms, vectors, strict=True)
            ]
            results = await self._summed(collection, requests, retrievers[0], query)
            if results is not None:
                return results, facets
        rounds = query.group_max_fetches if query.group_field else 1
        payloads: dict[str, StoredPoint] = {}
        engine_s = fusion_s = 0.0
        for fetch in range(rounds):
            requests = [
                ArmQuery(a.slot.name, v, window, where) for a, v in zip(arms, vectors, strict=True)
            ]
            found = await self._round(collection, requests, retrievers, pooled, query)
            engine_s, fusion_s = engine_s + found.engine_s, fusion_s + found.fusion_s
            need = [f.doc_id for f in found.ranked if f.doc_id not in payloads]
            if query.group_field or query.facets:
                payloads.update(await self._store.retrieve(collection, need))
            chosen = self._choose(found.ranked, payloads, query)
            if len(chosen) >= query.limit or found.exhausted or fetch == rounds - 1:
                break
            window = min(MAX_WINDOW, window * 2)
        if query.facets:
            keys = list(metadata_indexes(config))
            max_values = query.facet_options.max_values if query.facet_options else 10
            pool = (
                payloads[f.doc_id].payload.get("metadata")
                for f in found.ranked
                if f.doc_id in payloads
            )
            facets = facet_counts(pool, keys, max_values)
        missing = [f.doc_id for f in chosen if f.doc_id not in payloads]
        payloads.update(await self._store.retrieve(collection, missing))
        self._stage("engine", engine_s)
        self._stage("fusion", fusion_s)
        return [
            self._result(f, payloads, arms, query) for f in chosen if f.doc_id in payloads
        ], facets

    async def _round(
        self,
        collection: str,
        requests: list[ArmQuery],
        retrievers: list[Retriever],
        pooled: bool,
        query: SearchQuery,
    ) -> _Round:
        started = time.perf_counter()
        hits = await self._store.query_arms(collection, requests)
        exhausted = all(len(h) < r.limit for h, r in zip(hits, requests, strict=True))
        pool = None
        if pooled:
            hits, pool = await self._over_pool(collection, requests, hits)
        queried = time.perf_counter()
        ranked = fuse(hits, retrievers, query.fusion_mode or FusionMode.LINEAR, pool)
        if query.score_threshold is not None:
            ranked = [f for f in ranked if f.score >= query.score_threshold]
        return _Round(ranked, exhausted, queried - started, time.perf_counter() - queried)

    async def _over_pool(
        self, collection: str, requests: list[ArmQuery], hits: list[list[ArmHit]]
    ) -> tuple[list[list[ArmHit]], int]:
        """Every arm's hits among the pool (the documents any arm found) and the pool's size: a
        second batch asks each arm for the pool documents its own window missed, so a candidate
        is scored by every retriever, not counted absent (docs/relevance.md, fusion over the
        pool). The engine's cost grows with the ids asked for, so each arm asks only its own."""
        pool = tuple(dict.fromkeys(hit.doc_id for arm_hits in hits for hit in arm_hits))
        where = requests[0].filter or PointFilter()  # every arm has the search's filter
        asks, asked = [], []
        for index, (request, arm_hits) in enumerate(zip(requests, hits, strict=True)):
            found = {hit.doc_id for hit in arm_hits}
            missing = tuple(doc for doc in pool if doc not in found)
            if missing:
                scoped = replace(where, doc_ids=missing)
                asks.append(replace(request, limit=len(missing), filter=scoped))
                asked.append(index)
        completed = list(hits)
        if asks:
            answers = await self._store.query_arms(collection, asks)
            for index, more in zip(asked, answers, strict=True):
                completed[index] = sorted([*hits[index], *more], key=lambda hit: -hit.score)
        return completed, len(pool)

    async def _summed(
        self, collection: str, requests: list[ArmQuery], retriever: Retriever, query: SearchQuery
    ) -> list[dict[str, Any]] | None:
        """The answer of a search with one retriever, ranked by the store in one query: no hit
        lists to fuse, and ids read for the best only. None where two of the best scores tie,
        which fusion breaks by the arms' raw scores (the caller fuses then)."""
        started = time.perf_counter()
        ranking = await self._store.query_summed(
            collection, requests, retriever.field_weights, query.limit
        )
        ranked = time.perf_counter()
        head = ranking.scores[: query.limit + 1]
        if any(score == after for score, after in pairwise(head)):
            return None
        mode = query.fusion_mode or FusionMode.LINEAR
        scores = retriever_scores(ranking.scores, retriever.weight, mode, query.limit)
        threshold = query.score_threshold
        results = [
            {**public_document(point.payload), "score": score, "vector_scores": []}
            for point, score in zip(ranking.best, scores, strict=True)
            if point is not None and (threshold is None or score >= threshold)
        ]
        self._stage("engine", ranked - started)
        self._stage("fusion", time.perf_counter() - ranked)
        return results

    def _stage(self, stage: str, seconds: float) -> None:
        self._recorder.observe(SEARCH_STAGE_SECONDS, seconds, stage=stage)

    def _choose(
        self, ranked: list[Fused], payloads: dict[str, StoredPoint], query: SearchQuery
    ) -> list[Fused]:
        if not query.group_field:
            return ranked[: query.limit]
        key = query.group_field
        groups = {
            f.doc_id: group_value(payloads[f.doc_id].payload.get("metadata"), key)
            for f in ranked
            if f.doc_id in payloads
        }
        present = [f.doc_id for f in ranked if f.doc_id in payloads]
        kept = set(cap_groups(present, groups, query.group_max, query.limit))
        return [f for f in ranked if f.doc_id in kept]

    async def _query_vectors(self, arms: list[Arm], text: str) -> list[Any]:
        """Each arm's query vector. The arms of one vector (its fields) share theirs: it depends
        on the vector, the text and the trigram weights, never on the field."""
        keys = [(arm.slot.vector.name, arm.trigram_weight, arm.code_trigrams) for arm in arms]
        one_per_key = dict(zip(keys, arms, strict=True))
        made = await asyncio.gather(*(self._query_vector(a, text) for a in one_per_key.values()))
        by_key = dict(zip(one_per_key, made, strict=True))
        return [by_key[key] for key in keys]

    async def _query_vector(self, arm: Arm, text: str) -> Any:
        if arm.slot.kind.is_custom:
            return custom_query_vector(arm.slot, arm.custom)
        return await self._vectorizer.query(arm.slot, text, arm.trigram_weight, arm.code_trigrams)

    def _result(
        self,
        fused: Fused,
        payloads: dict[str, StoredPoint],
        arms: list[Arm],
        query: SearchQuery,
    ) -> dict[str, Any]:
        document = public_document(payloads[fused.doc_id].payload)
        scores = (
            [
                VectorScore(
                    field=arms[i].slot.field.value,
                    vector=arms[i].slot.vector.name,
                    score=raw,
                    rank=rank,
                )
                for i, (raw, rank) in sorted(fused.arm_scores.items())
            ]
            if query.raw_scores
            else []
        )
        return {**document, "score": fused.score, "vector_scores": scores}
