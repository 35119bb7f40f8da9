"""Documents-queue messages: a request's writes in messages of up to WRITES_PER_MESSAGE, and a
message of the shape queued before messages held several read as one write."""

from __future__ import annotations

from datetime import UTC, datetime

from core.enums import OpType
from core.messages import WRITES_PER_MESSAGE, DocumentMessage, DocumentWrite

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _writes(count: int) -> list[DocumentWrite]:
    return [
        DocumentWrite(queue_id=f"q{i}", op=OpType.DELETE, doc_id=f"d{i}", timestamp=T0)
        for i in range(count)
    ]


def test_writes_go_in_order_in_messages_of_at_most_writes_per_message() -> None:
    writes = _writes(2 * WRITES_PER_MESSAGE + 1)
    messages = DocumentMessage.carrying("c", writes)
    assert [len(m.writes) for m in messages] == [WRITES_PER_MESSAGE, WRITES_PER_MESSAGE, 1]
    assert [w for m in messages for w in m.writes] == writes
    assert {m.collection for m in messages} == {"c"}


def test_a_message_of_one_write_in_the_older_shape_reads_as_that_write() -> None:
    [write] = _writes(1)
    older = {"collection": "c", **write.model_dump(mode="json")}
    assert DocumentMessage.model_validate(older) == DocumentMessage(collection="c", writes=[write])
