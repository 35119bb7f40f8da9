"""The engine alone: the exact query a search node sends for a search, run directly against the
collection's shard with qdrant-edge in this process, in 1 and N threads.

The requests are built with Braid's own code (search.planning's arms and candidate window,
core.lexical's query vectors with each slot's parameters, edge_convert's summed query with IDF as
the store counts it), so the engine answers the same question Braid asks; the top 10 of each
answer is compared with Braid's over HTTP to prove it. The arms' batch a search node sent before
(each arm's hits, fused in Python) is timed beside it, and last Braid's query again after a fifth
of the points were overwritten (`churned`: a shard's state just before the worker optimizes it).
The shard is opened the way the worker opens it (edge_folder.load, one search thread), after the
worker stopped and closed it, holding the folder's lock.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from uuid import UUID

import qdrant_edge as qe

from core.enums import FusionMode
from core.lexical import is_lookup, query_vector
from core.schemas.collection import CollectionConfig
from core.schemas.search import SearchQuery
from search.filtering import point_filter
from search.fusion import Retriever, fuse
from search.planning import candidate_window, plan_arms, plan_retrievers
from store.edge import convert, folder
from store.ids import DOC_ID_KEY
from store.protocol import ArmQuery, CollectionSchema


@dataclass(frozen=True)
class Planned:
    """One search as the worker plans it: an ArmQuery per arm, with the retrievers fusion ranks."""

    arms: list[ArmQuery]
    retrievers: list[Retriever]
    fusion: FusionMode
    limit: int


def plan(config: CollectionConfig, body: dict[str, object], trigrams: bool = True) -> Planned:
    """The arm queries of a search body, as the query pipeline (search.querying) builds them
    (lexical arms); without `trigrams`, WMTR query vectors keep their words only (what those terms
    cost)."""
    query = SearchQuery.model_validate(body)
    arms = plan_arms(config, query)
    window = candidate_window(query, len(arms))
    where = point_filter(
        config, query.metadata_filter, query.document_tags, query.document_tags_match_all
    )
    requests = []
    for arm in arms:
        if not arm.slot.kind.is_lexical:
            raise ValueError(f"{arm.slot.name}: the ceiling measures lexical arms only")
        weight = arm.trigram_weight if trigrams else 0.0
        vector = query_vector(query.query, arm.slot.lexical_params(), weight, arm.code_trigrams)
        requests.append(ArmQuery(arm.slot.name, vector, window, where))
    retrievers = plan_retrievers(arms, is_lookup(query.query))
    if query.fusion_mode is None and len(retrievers) > 1:
        raise ValueError("the ceiling measures one retriever (the default's pool pass not built)")
    return Planned(requests, retrievers, query.fusion_mode or FusionMode.LINEAR, query.limit)


@dataclass(frozen=True)
class Compiled:
    """A search in the engine's terms: the one query a search node sends (the arms as prefetches,
    summed by a formula), the arms' batch it sent before (each arm's hits, fused in Python), and
    the point ids and document ids of the query's top."""

    summed: qe.QueryRequest
    batch: qe.QueryBatchRequest
    top_points: list[int | UUID | str]  # the engine's point ids, as retrieve takes them
    top_docs: list[str]
    fused_docs: list[str]  # the top of the arms' batch, fused as search.fusion does


def compile_all(
    engine: qe.EdgeShard, schema: CollectionSchema, searches: Sequence[Planned]
) -> list[Compiled]:
    """Engine requests for every search; runs each once (a warm-up) to find its top like a
    search node does, so the timed loops fetch the same payloads it would."""
    large = engine.count(qe.CountRequest(exact=True)) >= convert.INDEX_IDF_FROM
    out = []
    for search in searches:
        [retriever] = search.retrievers
        summed = convert.to_summed(search.arms, retriever.field_weights, schema, large)
        points = [point.id for point in engine.query(summed)[: search.limit]]
        records = {r.id: r for r in engine.retrieve(points, [DOC_ID_KEY], False)}
        top = [str((records[p].payload or {})[DOC_ID_KEY]) for p in points if p in records]
        batch = convert.to_batch(search.arms, schema, large)
        results = engine.query_batch(batch)
        _, unknown = convert.to_hits(results)
        convert.learn(engine.retrieve(unknown, [DOC_ID_KEY], False))
        hits, _ = convert.to_hits(results)
        fused = [f.doc_id for f in fuse(hits, search.retrievers, search.fusion)[: search.limit]]
        out.append(Compiled(summed, batch, list(points), top, fused))
    return out


@contextlib.contextmanager
def open_shard(root: Path, name: str) -> Iterator[tuple[qe.EdgeShard, CollectionSchema]]:
    """The collection's shard, owned as the worker owns it (StoreLocked while a worker holds it)."""
    lock = folder.take_lock(root)
    try:
        engine, schema = folder.load(root / name)
        try:
            yield engine, schema
        finally:
            engine.close()
    finally:
        lock.close()


@dataclass(frozen=True)
class Timing:
    searches: int
    seconds: float
    cpu_s: float  # the whole process, every thread


def summed_only(engine: qe.EdgeShard, compiled: Sequence[Compiled]) -> Callable[[int], None]:
    def work(index: int) -> None:
        engine.query(compiled[index].summed)

    return work


def summed_and_retrieve(
    engine: qe.EdgeShard, compiled: Sequence[Compiled]
) -> Callable[[int], None]:
    def work(index: int) -> None:
        search = compiled[index]
        engine.query(search.summed)
        engine.retrieve(search.top_points, True, False)  # payloads, no vectors: as a search node

    return work


def batch_only(engine: qe.EdgeShard, compiled: Sequence[Compiled]) -> Callable[[int], None]:
    def work(index: int) -> None:
        engine.query_batch(compiled[index].batch)

    return work


def churned(engine: qe.EdgeShard, fraction: float) -> int:
    """Overwrite the first `fraction` of the shard's points with themselves (same vectors and
    payloads), 64 to a write: what the worker's writes leave between two optimizes (each version
    overwritten stays in the indexed segment, deleted, and the new one goes to the appendable
    segment's index). How many were written."""
    count = int(engine.count(qe.CountRequest(exact=True)) * fraction)
    offset: Any = None
    written = 0
    while written < count:
        request = qe.ScrollRequest(
            offset=offset, limit=min(64, count - written), with_payload=True, with_vector=True
        )
        records, offset = engine.scroll(request)
        points = [qe.Point(r.id, r.vector or {}, r.payload) for r in records]
        engine.update(qe.UpdateOperation.upsert_points(points))
        written += len(points)
        if offset is None:
            break
    return written


def timed(work: Callable[[int], None], count: int, threads: int, seconds: float) -> Timing:
    """Run `work` over searches 0..count-1 (cycled) in `threads` threads for `seconds`."""
    done = [0] * threads
    start = threading.Barrier(threads + 1)

    def loop(slot: int) -> None:
        start.wait()
        deadline = time.perf_counter() + seconds
        index, n = slot, 0
        while time.perf_counter() < deadline:
            work(index % count)
            index, n = index + threads, n + 1
        done[slot] = n

    # Daemons: an interrupted run exits instead of waiting out the window.
    pool = [threading.Thread(target=loop, args=(slot,), daemon=True) for slot in range(threads)]
    for thread in pool:
        thread.start()
    cpu0, wall0 = time.process_time(), time.perf_counter()
    start.wait()
    for thread in pool:
        thread.join()
    return Timing(sum(done), time.perf_counter() - wall0, time.process_time() - cpu0)
