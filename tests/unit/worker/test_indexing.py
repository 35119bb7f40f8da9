"""Which write of a document wins inside one batch."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from core.enums import OpType
from worker.indexing import Write, newest_per_document

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def write(op: OpType, doc_id: str, seconds: int) -> Write:
    return Write(op, doc_id, T0 + timedelta(seconds=seconds))


def test_newest_write_of_each_document_wins_whatever_the_order() -> None:
    older, newer = write(OpType.UPSERT, "a", 1), write(OpType.UPSERT, "a", 2)
    assert newest_per_document([older, newer])["a"] is newer
    assert newest_per_document([newer, older])["a"] is newer


def test_delete_wins_a_tie_with_an_upsert() -> None:
    upsert, delete = write(OpType.UPSERT, "a", 5), write(OpType.DELETE, "a", 5)
    assert newest_per_document([delete, upsert])["a"] is delete
    assert newest_per_document([upsert, delete])["a"] is delete


def test_documents_are_independent() -> None:
    winners = newest_per_document([write(OpType.UPSERT, "a", 1), write(OpType.DELETE, "b", 1)])
    assert set(winners) == {"a", "b"}
