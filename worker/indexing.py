"""The index pipeline: newest-timestamp-wins writes of a batch of documents to the store."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from core.catalog import Catalog
from core.enums import EmbedKind, OpType
from core.ledger import Ledger, delete_covers, to_micros
from core.lexical import DocumentTerms, document_length
from core.metrics import DOCUMENT_TEXTS_EMBEDDED, DOCUMENT_WRITES, Recorder
from core.schemas.collection import CollectionConfig
from core.schemas.document import Document
from core.vector_input import check_top_k, document_vectors
from store.payload import stored_hashes, stored_lengths, stored_micros, to_payload
from store.protocol import PointWrite, Store, StoredPoint, VectorValue
from store.slots import Slot, slots
from store.vectorizer import Vectorizer
from worker.lexical import LexicalTexts, Lexicon
from worker.lexstats import LexicalStats
from worker.locks import DocumentLocks


class Outcome(StrEnum):
    APPLIED = "applied"
    STALE = "stale"
    GONE = "gone"  # the collection no longer exists


@dataclass(frozen=True)
class Write:
    op: OpType
    doc_id: str
    timestamp: datetime
    document: Document | None = None

    @property
    def micros(self) -> int:
        return to_micros(self.timestamp)


@dataclass
class _Plan:
    points: list[PointWrite] = field(default_factory=list)
    payload_only: dict[str, dict[str, Any]] = field(default_factory=dict)
    deletes: list[str] = field(default_factory=list)
    stat_deltas: dict[str, tuple[int, int]] = field(default_factory=dict)
    indexed: dict[str, datetime] = field(default_factory=dict)

    def count(self, lengths: dict[str, int], sign: int) -> None:
        for slot, length in lengths.items():
            total, docs = self.stat_deltas.get(slot, (0, 0))
            self.stat_deltas[slot] = (total + sign * length, docs + sign)


def newest_per_document(writes: list[Write]) -> dict[str, Write]:
    """Only the newest write of a document matters; a delete wins a tie."""
    winners: dict[str, Write] = {}
    for write in writes:
        best = winners.get(write.doc_id)
        if best is None or (write.micros, write.op is OpType.DELETE) > (
            best.micros,
            best.op is OpType.DELETE,
        ):
            winners[write.doc_id] = write
    return winners


@dataclass
class LocalVectors:
    """A document's vectors that need no model call; the (slot, text) pairs whose lexical terms
    are still to be worked out (`settle`), and those a model embeds."""

    vectors: dict[str, VectorValue] = field(default_factory=dict)
    lengths: dict[str, int] = field(default_factory=dict)
    lexical: list[tuple[Slot, str]] = field(default_factory=list)
    to_embed: list[tuple[Slot, str]] = field(default_factory=list)

    def settle(self, slot: Slot, terms: DocumentTerms) -> None:
        """A lexical slot's terms and length. A text that leaves no term (stop words only) is
        an empty vector, stored and returned as one, as Amgix does: sent back with the document
        it is a complete set's entry for the slot."""
        self.vectors[slot.name] = terms.vector
        self.lengths[slot.name] = terms.length


def with_batch_averages(
    all_slots: list[Slot], writes: list[Write], averages: dict[str, float]
) -> dict[str, float]:
    """Averages with the batch's own mean length for a lexical slot the collection has none for.

    The first batches of a collection come before any length is counted; without this they
    would get no BM25 length normalisation at all (every document scored as average length).
    """
    filled = dict(averages)
    for slot in all_slots:
        if not slot.kind.is_lexical or filled.get(slot.name, 0.0) > 0:
            continue
        params = slot.lexical_params()
        lengths = [
            document_length(text, params)
            for w in writes
            if w.document is not None and (text := w.document.field_text(slot.field)).strip()
        ]
        if lengths and sum(lengths) > 0:
            filled[slot.name] = sum(lengths) / len(lengths)
    return filled


def local_vectors(
    config: CollectionConfig,
    all_slots: list[Slot],
    document: Document,
    reusable: dict[str, VectorValue],
) -> LocalVectors:
    """Vectors the document brings (custom, precomputed) and reusable model ones; the lexical
    and model texts still to be turned into vectors.

    A slot the document brings a vector for is never computed, and gets it as given (an empty
    precomputed sparse vector is stored empty, as Amgix does); a custom slot without one and a
    slot with blank text get no vector.
    """
    local = LocalVectors()
    given = document_vectors(config, document)
    check_top_k(config, given, document.id)
    for slot in all_slots:
        brought = given.get((slot.vector.name, slot.field))
        if brought is not None or slot.kind.is_custom:
            if brought is not None:
                local.vectors[slot.name] = brought
            continue
        text = document.field_text(slot.field)
        if not text.strip():
            continue
        if slot.kind.is_lexical:
            local.lexical.append((slot, text))
        elif slot.name in reusable:
            local.vectors[slot.name] = reusable[slot.name]
        elif slot.kind.uses_model:
            local.to_embed.append((slot, text))
    return local


class Indexer:
    def __init__(
        self,
        store: Store,
        vectorizer: Vectorizer,
        catalog: Catalog,
        ledger: Ledger,
        stats: LexicalStats,
        locks: DocumentLocks,
        lexicon: Lexicon,
        recorder: Recorder | None = None,
    ) -> None:
        self._store = store
        self._vectorizer = vectorizer
        self._lexicon = lexicon
        self._catalog = catalog
        self._ledger = ledger
        self._stats = stats
        self._locks = locks
        self.recorder = recorder or Recorder()  # DOCUMENT_WRITES, DOCUMENT_TEXTS_EMBEDDED

    async def apply(self, collection: str, writes: list[Write]) -> dict[str, Outcome]:
        """Apply writes; the outcome of each document's winning write, by document id."""
        config = await self._catalog.get(collection)
        if config is None:
            return {w.doc_id: Outcome.GONE for w in writes}
        winners = newest_per_document(writes)
        async with self._locks.hold(collection, list(winners)):
            stored = await self._store.retrieve(collection, list(winners))
            tombs = await self._ledger.tombstones(collection, list(winners))
            outcomes, plan = await self._plan(collection, config, winners, stored, tombs)
            await self._execute(collection, plan)
        result = {
            w.doc_id: outcomes[w.doc_id] if winners[w.doc_id] is w else Outcome.STALE
            for w in writes
        }
        for write in writes:
            self.count(collection, write.op, result[write.doc_id])
        return result

    def count(self, collection: str, op: OpType, outcome: str) -> None:
        """One finished write in DOCUMENT_WRITES (the consumer counts the failed ones)."""
        self.recorder.inc(DOCUMENT_WRITES, collection=collection, op=op.value, outcome=outcome)

    async def _plan(
        self,
        collection: str,
        config: CollectionConfig,
        winners: dict[str, Write],
        stored: dict[str, StoredPoint],
        tombs: dict[str, int],
    ) -> tuple[dict[str, Outcome], _Plan]:
        plan, outcomes, upserts = _Plan(), {}, []
        for doc_id, write in winners.items():
            old = stored.get(doc_id)
            old_micros = stored_micros(old.payload) if old else -1
            if write.micros <= old_micros or delete_covers(
                tombs.get(doc_id, -1), write.op, write.micros
            ):
                outcomes[doc_id] = Outcome.STALE
                continue
            outcomes[doc_id] = Outcome.APPLIED
            if write.op is OpType.DELETE:
                if old is not None:
                    plan.deletes.append(doc_id)
                    plan.count(stored_lengths(old.payload), -1)
            else:
                upserts.append(write)
        if upserts:
            await self._plan_upserts(collection, config, upserts, stored, plan)
        return outcomes, plan

    async def _plan_upserts(
        self,
        collection: str,
        config: CollectionConfig,
        upserts: list[Write],
        stored: dict[str, StoredPoint],
        plan: _Plan,
    ) -> None:
        all_slots = slots(config)
        changed: list[Write] = []
        hashes: dict[str, dict[str, str]] = {}
        for write in upserts:
            assert write.document is not None
            old = stored.get(write.doc_id)
            hashes[write.doc_id] = {s.name: s.text_hash(write.document) for s in all_slots}
            if old is not None and stored_hashes(old.payload) == hashes[write.doc_id]:
                lengths = stored_lengths(old.payload)
                payload = to_payload(
                    write.document, config.store_content, hashes[write.doc_id], lengths
                )
                plan.payload_only[write.doc_id] = payload
                plan.indexed[write.doc_id] = write.timestamp
            else:
                changed.append(write)
        if not changed:
            return
        reusable = await self._reusable_vectors(collection, all_slots, changed, stored, hashes)
        averages = await self._stats.averages(collection)
        averages = with_batch_averages(all_slots, changed, averages)
        vectors = await self._vectors(collection, config, all_slots, changed, reusable, averages)
        for write in changed:
            assert write.document is not None
            doc_vectors, lengths = vectors[write.doc_id]
            payload = to_payload(
                write.document, config.store_content, hashes[write.doc_id], lengths
            )
            plan.points.append(PointWrite(write.doc_id, payload, doc_vectors))
            plan.indexed[write.doc_id] = write.timestamp
            old = stored.get(write.doc_id)
            if old is not None:
                plan.count(stored_lengths(old.payload), -1)
            plan.count(lengths, +1)

    async def _reusable_vectors(
        self,
        collection: str,
        all_slots: list[Slot],
        changed: list[Write],
        stored: dict[str, StoredPoint],
        hashes: dict[str, dict[str, str]],
    ) -> dict[str, dict[str, VectorValue]]:
        """Stored model vectors whose slot text is unchanged: never embed the same text twice."""
        unchanged: dict[str, set[str]] = {}
        for write in changed:
            old = stored.get(write.doc_id)
            if old is None:
                continue
            old_hashes, new_hashes = stored_hashes(old.payload), hashes[write.doc_id]
            same = {
                s.name
                for s in all_slots
                if s.kind.uses_model and old_hashes.get(s.name) == new_hashes[s.name]
            }
            if same:
                unchanged[write.doc_id] = same
        if not unchanged:
            return {}
        points = await self._store.retrieve(collection, list(unchanged), with_vectors=True)
        return {
            doc_id: {k: v for k, v in (point.vectors or {}).items() if k in unchanged[doc_id]}
            for doc_id, point in points.items()
        }

    async def _vectors(
        self,
        collection: str,
        config: CollectionConfig,
        all_slots: list[Slot],
        changed: list[Write],
        reusable: dict[str, dict[str, VectorValue]],
        averages: dict[str, float],
    ) -> dict[str, tuple[dict[str, VectorValue], dict[str, int]]]:
        result: dict[str, tuple[dict[str, VectorValue], dict[str, int]]] = {}
        to_embed: dict[str, list[tuple[str, Slot, str]]] = {}
        found: list[LocalVectors] = []
        for write in changed:
            assert write.document is not None
            local = local_vectors(config, all_slots, write.document, reusable.get(write.doc_id, {}))
            found.append(local)
            result[write.doc_id] = (local.vectors, local.lengths)
            for slot, text in local.to_embed:
                to_embed.setdefault(slot.vector.name, []).append((write.doc_id, slot, text))
        await self._lexical(found, averages)
        for jobs in to_embed.values():
            self.recorder.inc(DOCUMENT_TEXTS_EMBEDDED, len(jobs), collection=collection)
            embedded = await self._vectorizer.encode(
                jobs[0][1].vector, EmbedKind.DOCUMENT, [text for _, _, text in jobs]
            )
            for (doc_id, slot, _), embedding in zip(jobs, embedded, strict=True):
                if len(embedding):  # a sparse model may find nothing worth keeping
                    result[doc_id][0][slot.name] = embedding
        return result

    async def _lexical(self, found: list[LocalVectors], averages: dict[str, float]) -> None:
        """Every lexical slot's terms, the batch's texts of a slot sent together."""
        by_slot: dict[str, tuple[Slot, list[LocalVectors], list[str]]] = {}
        for local in found:
            for slot, text in local.lexical:
                _, owners, texts = by_slot.setdefault(slot.name, (slot, [], []))
                owners.append(local)
                texts.append(text)
        if not by_slot:
            return
        groups = [
            LexicalTexts(slot.lexical_params(), averages.get(slot.name, 0.0), texts)
            for slot, _, texts in by_slot.values()
        ]
        answers = await self._lexicon.documents(groups)
        for (slot, owners, _), terms in zip(by_slot.values(), answers, strict=True):
            for local, term in zip(owners, terms, strict=True):
                local.settle(slot, term)

    async def _execute(self, collection: str, plan: _Plan) -> None:
        if plan.points:
            await self._store.upsert(collection, plan.points)
        if plan.payload_only:
            await self._store.overwrite_payloads(collection, plan.payload_only)
        if plan.deletes:
            await self._store.delete(collection, plan.deletes)
        records = self._ledger.pipeline()  # the stats and the ledger in one round trip
        self._stats.add(records, collection, plan.stat_deltas)
        self._ledger.record_indexed(records, collection, plan.indexed, plan.deletes)
        await records.execute()
        if plan.points or plan.deletes:
            await self._store.maintain(collection)
