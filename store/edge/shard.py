"""One open collection of the embedded store: its engine shard, and when it is due an optimize.

An optimize rewrites the whole shard in a child process (store.edge.optimize): it builds the
dense vectors' HNSW graph, merges segments and vacuums overwritten and deleted versions. What a
shard needs of it depends on its vectors (`Upkeep.due`):

- With dense vectors, the points written since the last optimize have no graph: a dense arm
  scans them. So it is due after `min_changes` writes, and then after `growth` of the shard.
- Without, the engine indexes each sparse vector as it is written: an optimize only compacts
  (a keyword arm over 80,000 seed documents took 2.09–2.14 ms optimized, 2.20–2.25 not) and
  vacuums. So it is due when the shard has doubled, from SPARSE_MERGE_FROM × `min_changes`
  points; or when its dead versions reach `growth` of its live points, the most a large shard's
  IDF may count that no search finds (convert.INDEX_IDF_FROM). At 20 % growth a keyword bulk
  load rewrote its shard ~5 times over, a sixth of the load's CPU (docs/benchmarks.md, issue 32).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import qdrant_edge as qe

from store.edge.gate import Gate
from store.protocol import CollectionSchema

SPARSE_MERGE_FROM = 4


class Shard:
    """An open collection: its engine shard, schema, and what changed since its last optimize."""

    def __init__(self, engine: qe.EdgeShard, schema: CollectionSchema, points: int) -> None:
        self.engine = engine
        self.schema = schema
        self.gate = Gate()
        self.closed = False
        self.optimizing = False
        self.checked = True  # False for a loaded shard: an optimize may be left over
        self.writes = asyncio.Lock()  # one write at a time, and none while a copy is taken
        self.journal: list[qe.UpdateOperation] | None = None  # writes since the copy was taken
        self.generation = 0  # bumped by `empty`: an optimized copy of before is stale
        self.restart(points)

    def restart(self, points: int) -> None:
        """Count from `points` live ones, none dead: just loaded, optimized or emptied."""
        self.base = points  # live points at the last optimize (or load)
        self.live = points  # live points now, as the engine counted them after the last write
        self.changed = 0  # points written or deleted since the last optimize
        self.versions = 0  # point versions written since: upserts and payload overwrites

    def optimized(self, points: int, seen: tuple[int, int]) -> None:
        """Count from an optimized copy of `points` live ones. The writes made after its copy
        was taken, when `changed` and `versions` stood at `seen`, were replayed onto it: they
        count as written since."""
        changed, versions = self.changed - seen[0], self.versions - seen[1]
        self.restart(points)
        self.wrote(changed, versions, points)
        self.checked = True

    def wrote(self, changed: int, versions: int, live: int) -> None:
        self.changed += changed
        self.versions += versions
        self.live = live

    @property
    def dead(self) -> int:
        """Versions the shard holds that no search finds, at most: overwritten or deleted since
        the last optimize (a payload overwrite counts, as it may move a point's version)."""
        return max(self.base + self.versions - self.live, 0)


@dataclass(frozen=True)
class Upkeep:
    """When a shard is due an optimize (see the module's docstring)."""

    min_changes: int = 5000
    growth: float = 0.2

    def due(self, shard: Shard) -> bool:
        if not shard.checked:
            return True
        if shard.schema.dense:
            return shard.changed >= max(self.min_changes, self.growth * shard.base)
        vacuum = shard.dead >= max(self.min_changes, self.growth * shard.live)
        doubled = shard.live - shard.base >= max(SPARSE_MERGE_FROM * self.min_changes, shard.base)
        return vacuum or doubled
