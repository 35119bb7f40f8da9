"""Nothing lost: what the collection must hold, given the pre-population and the writes the load
generator saw acknowledged, checked against what the collection holds.

Braid applies a write only if its timestamp is newer than the document's (a delete leaves a
tombstone, so an older upsert never resurrects it). So for each id the write with the newest
timestamp wins, whatever order the writes arrived in: an acknowledged upsert means the document is
there with that name, an acknowledged delete means it is gone. A write that got no 200 (a 503, an
error, a request cut off) may or may not have been applied: when it is newer than the winning
acknowledged write, either outcome is accepted (and the id is counted as undecided).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Write:
    op: str  # "upsert" | "delete"
    doc: str
    timestamp: str  # as sent: ISO 8601 UTC with microseconds, "Z"; compares as text
    name: str
    status: int  # 0 when no answer came


def read_oplog(path: Path) -> list[Write]:
    """The writes of a BRAID_LOAD_OPLOG file (bench/load/locustfile.py's format)."""
    begun: dict[str, tuple[str, str, str, str]] = {}
    ended: dict[str, int] = {}
    if not path.exists():
        return []
    for line in path.read_text().splitlines():
        if line.startswith("B "):
            parts = line.split(" ", 5)
            begun[parts[1]] = (parts[2], parts[3], parts[4], parts[5] if len(parts) > 5 else "")
        elif line.startswith("E "):
            _, seq, status = line.split(" ")
            ended[seq] = int(status)
    return [
        Write(op, doc, timestamp, name, ended.get(seq, 0))
        for seq, (op, doc, timestamp, name) in begun.items()
    ]


@dataclass
class Verdict:
    checked: int = 0  # ids compared
    undecided: int = 0  # of them, ids an unacknowledged newer write leaves two outcomes
    acknowledged: int = 0  # writes answered 200
    unacknowledged: int = 0
    missing: list[str] = field(default_factory=list)  # should be there, is not
    unexpected: list[str] = field(default_factory=list)  # should be gone, is there
    stale: list[str] = field(default_factory=list)  # there, with another write's name

    @property
    def ok(self) -> bool:
        return not (self.missing or self.unexpected or self.stale)

    def summary(self) -> str:
        head = (
            f"{self.checked:,} ids checked against {self.acknowledged:,} acknowledged writes "
            f"({self.unacknowledged:,} unacknowledged, leaving {self.undecided:,} ids two outcomes)"
        )
        if self.ok:
            return f"{head}: all match"
        problems = [
            f"{len(ids):,} {what} (e.g. {', '.join(sorted(ids)[:5])})"
            for what, ids in (
                ("missing", self.missing),
                ("present after their delete", self.unexpected),
                ("with an older write's name", self.stale),
            )
            if ids
        ]
        return f"{head}: MISMATCH: " + "; ".join(problems)


def verify(
    prepopulated: Mapping[str, str],
    prepopulated_at: str,
    writes: Iterable[Write],
    actual: Mapping[str, str],
) -> Verdict:
    """`prepopulated` and `actual` map id -> name; `prepopulated_at` is older than every write."""
    verdict = Verdict()
    winner: dict[str, Write] = {
        doc: Write("upsert", doc, prepopulated_at, name, 200) for doc, name in prepopulated.items()
    }
    uncertain: dict[str, list[Write]] = {}
    for write in writes:
        if write.status == 200:
            verdict.acknowledged += 1
            best = winner.get(write.doc)
            if best is None or write.timestamp > best.timestamp:
                winner[write.doc] = write
        else:
            verdict.unacknowledged += 1
            uncertain.setdefault(write.doc, []).append(write)
    for doc in set(winner) | set(uncertain) | set(actual):
        best = winner.get(doc)
        # None: absent. An unacknowledged write newer than the winner may have been applied.
        allowed = {_outcome(best)} | {
            _outcome(write)
            for write in uncertain.get(doc, [])
            if best is None or write.timestamp >= best.timestamp
        }
        verdict.checked += 1
        verdict.undecided += len(allowed) > 1
        found = actual.get(doc)
        if found in allowed:
            continue
        if found is None:
            verdict.missing.append(doc)
        elif allowed == {None}:
            verdict.unexpected.append(doc)
        else:
            verdict.stale.append(doc)
    return verdict


def _outcome(write: Write | None) -> str | None:
    """The name the document has after `write`, None when it is gone."""
    return write.name if write is not None and write.op == "upsert" else None
