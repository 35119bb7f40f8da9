"""The replication stream's messages and their bytes on the wire.

A message is a JSON head (orjson) and, for an upsert, one block of numbers after it: every
sparse vector's values (float64) and indices (uint32), then every dense vector's values
(float64), in the order of the points and of each point's vectors. The head says, for each
point's vector, its kind and length. A search node parses a sparse vector's hundreds of numbers
with two `frombuffer` calls a message, where reading them out of JSON cost it more than applying
the write to its replica (docs/benchmarks.md, issue 32). float64 carries the worker's numbers as
they are, so a replica applies exactly what the worker did.

An upsert's payloads travel as the engine keeps them (store.edge.convert.stored_form, worked
out once by the worker), and a replica reads an upsert straight into the engine's points
(`edge_points`): every replica of every api process applies every write, so what a replica does
a point is paid once per api process (docs/benchmarks.md, issue 50).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

import numpy as np
import orjson
import qdrant_edge as qe

from core.vectors import SparseVector
from store.edge.convert import edge_point
from store.protocol import CollectionSchema, PointWrite

Op = Literal[
    "start", "tick", "optimized", "create", "drop", "empty", "upsert", "overwrite", "delete"
]

_HEAD_LENGTH = struct.Struct("<I")
_SPARSE, _DENSE = "s", "d"


class UnreadableWrite(ValueError):
    """Bytes that are not a message of the stream (a message from another version)."""


@dataclass
class Written:
    """One message of the stream: a write (with its sequence number) or a marker. Its points'
    vectors are the worker's, already checked: a replica applies them as they come.

    An upsert is sent as `points` in their stored form (payloads as the engine keeps them) and
    read as `edge_points`, the engine's own points of the same."""

    epoch: int
    seq: int
    op: Op
    collection: str = ""
    points: list[PointWrite] = field(default_factory=list)
    edge_points: list[qe.Point] = field(default_factory=list)
    doc_ids: list[str] = field(default_factory=list)
    payloads: dict[str, dict[str, Any]] = field(default_factory=dict)
    collection_schema: dict[str, Any] | None = None

    def store_schema(self) -> CollectionSchema:
        return CollectionSchema.from_dict(self.collection_schema or {})

    def to_wire(self) -> bytes:
        shapes: list[dict[str, list[Any]]] = []
        indices: list[int] = []
        values: list[float] = []
        dense: list[float] = []
        for point in self.points:
            shape: dict[str, list[Any]] = {}
            for slot, vector in point.vectors.items():
                if isinstance(vector, SparseVector):
                    shape[slot] = [_SPARSE, len(vector.indices)]
                    indices += vector.indices
                    values += vector.values
                else:
                    shape[slot] = [_DENSE, len(vector)]
                    dense += vector
            shapes.append(shape)
        head = orjson.dumps(
            {
                "epoch": self.epoch,
                "seq": self.seq,
                "op": self.op,
                "collection": self.collection,
                "points": [
                    [p.doc_id, p.payload, shape]
                    for p, shape in zip(self.points, shapes, strict=True)
                ],
                "doc_ids": self.doc_ids,
                "payloads": self.payloads,
                "collection_schema": self.collection_schema,
            }
        )
        numbers = (
            np.array(values, dtype=np.float64).tobytes()
            + np.array(indices, dtype=np.uint32).tobytes()
            + np.array(dense, dtype=np.float64).tobytes()
        )
        return _HEAD_LENGTH.pack(len(head)) + head + numbers

    @classmethod
    def from_wire(cls, body: bytes) -> Written:
        try:
            return cls._read(body)
        except (ValueError, KeyError, TypeError, IndexError, struct.error) as exc:
            raise UnreadableWrite(f"not a replication message: {exc}") from exc

    @classmethod
    def _read(cls, body: bytes) -> Written:
        (length,) = _HEAD_LENGTH.unpack_from(body)
        start = _HEAD_LENGTH.size + length
        head = orjson.loads(body[_HEAD_LENGTH.size : start])
        if head["op"] not in get_args(Op):
            raise ValueError(f"unknown op {head['op']!r}")
        shapes = [shape for _, _, shape in head["points"]]
        if any(kind not in (_SPARSE, _DENSE) for s in shapes for kind, _ in s.values()):
            raise ValueError("a vector of an unknown kind")
        n_sparse = sum(n for s in shapes for kind, n in s.values() if kind == _SPARSE)
        n_dense = sum(n for s in shapes for kind, n in s.values() if kind == _DENSE)
        if len(body) != start + 12 * n_sparse + 8 * n_dense:
            raise ValueError(f"{len(body) - start} bytes of numbers for what the head says")
        values = np.frombuffer(body, np.float64, n_sparse, start).tolist()
        start += 8 * n_sparse
        indices = np.frombuffer(body, np.uint32, n_sparse, start).tolist()
        dense = np.frombuffer(body, np.float64, n_dense, start + 4 * n_sparse).tolist()
        points, at_sparse, at_dense = [], 0, 0
        for doc_id, payload, shape in head["points"]:
            vectors: dict[str, qe.SparseVector | list[float]] = {}
            for slot, (kind, n) in shape.items():
                if kind == _SPARSE:
                    end = at_sparse + n
                    vectors[slot] = qe.SparseVector(indices[at_sparse:end], values[at_sparse:end])
                    at_sparse = end
                else:
                    vectors[slot], at_dense = dense[at_dense : at_dense + n], at_dense + n
            points.append(edge_point(doc_id, vectors, payload))
        return cls(
            epoch=int(head["epoch"]),
            seq=int(head["seq"]),
            op=head["op"],
            collection=head["collection"],
            edge_points=points,
            doc_ids=head["doc_ids"],
            payloads=head["payloads"],
            collection_schema=head["collection_schema"],
        )
