"""What a delete leaves in the ledger, sync or async alike: a tombstone at its timestamp, then the
queued upserts it covers cancelled (at or before it, a tie going to the delete)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from core.enums import OpType
from core.ledger import Ledger, delete_covers, to_micros

T = datetime(2026, 3, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("op", "write_us", "covered"),
    [
        (OpType.UPSERT, 99, True),  # older upsert
        (OpType.UPSERT, 100, True),  # a tie goes to the delete
        (OpType.UPSERT, 101, False),  # a newer upsert outlives it
        (OpType.DELETE, 99, False),  # a delete never cancels another delete
        (OpType.DELETE, 100, False),
    ],
)
def test_a_delete_covers_upserts_at_or_before_it_only(
    op: OpType, write_us: int, covered: bool
) -> None:
    assert delete_covers(100, op, write_us) is covered


class Redis:
    """Answers the few calls a delete makes, from queued items given up front, and records the
    writes in order: ("tombstone", doc_id, micros) and ("finish", queue_id)."""

    def __init__(self, items: dict[str, dict[str, Any]]) -> None:
        self.items = items
        self.writes: list[tuple[object, ...]] = []
        self._scripts = 0

    def register_script(self, _: str) -> Any:
        self._scripts += 1
        if self._scripts == 1:  # the restate script, which a delete never runs
            return None

        async def tombstone(keys: list[str], args: list[Any]) -> None:
            self.writes.append(("tombstone", *args))

        return tombstone

    async def smembers(self, _: str) -> set[str]:
        return set(self.items)

    async def hmget(self, _: str, queue_ids: list[str]) -> list[str | None]:
        return [json.dumps(self.items[q]) if q in self.items else None for q in queue_ids]

    def pipeline(self, transaction: bool) -> Redis:
        return self

    def eval(self, _: str, key_count: int, *keys_and_args: str) -> None:
        self.writes += [("finish", queue_id) for queue_id in keys_and_args[key_count + 1 :]]

    async def execute(self) -> list[int]:
        return [1 for write in self.writes if write[0] == "finish"]


def _item(op: OpType, ts: datetime) -> dict[str, Any]:
    return {"op_type": op.value, "ts_us": to_micros(ts)}


async def test_a_delete_sets_its_tombstone_then_cancels_the_upserts_it_covers() -> None:
    redis = Redis(
        {
            "older": _item(OpType.UPSERT, T - timedelta(seconds=1)),
            "tie": _item(OpType.UPSERT, T),
            "newer": _item(OpType.UPSERT, T + timedelta(seconds=1)),
            "delete": _item(OpType.DELETE, T - timedelta(seconds=1)),
        }
    )
    await Ledger(redis).record_delete("c", "d1", T)  # type: ignore[arg-type]
    assert redis.writes[0] == ("tombstone", "d1", to_micros(T))
    assert sorted(redis.writes[1:]) == [("finish", "older"), ("finish", "tie")]
