"""The embedded store's folder: the owner lock, schema files, crash-safe shard create/drop/rebuild.

Layout: `<root>/.lock`, and one engine shard per collection in `<root>/<collection>/` with the
Braid schema beside the engine's files in `braid_schema.json` (the payload indexes it asks for live
in the shard itself). Shards are built under `.fresh-<name>` and renamed into place, and removed by
renaming them to `.trash-<name>` first, so a crash never leaves a half-made collection; `recover`
finishes what a crash interrupted.
All functions block; the store calls them from a thread.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import shutil
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import IO

import qdrant_edge as qe

from core.enums import DenseDistance
from store.conditions import index_fields
from store.protocol import CollectionSchema, StoreError, StoreLocked

LOCK_FILE = ".lock"
CLEAN_FILE = ".closed-cleanly"  # written by a clean close, taken away at open
SCHEMA_FILE = "braid_schema.json"
_FRESH = ".fresh-"
_TRASH = ".trash-"
_OPTIMIZING = ".optimizing-"  # store.edge.optimize's copies
_DISTANCES = {
    DenseDistance.COSINE: qe.Distance.Cosine,
    DenseDistance.DOT: qe.Distance.Dot,
    DenseDistance.EUCLID: qe.Distance.Euclid,
}
_INDEX_TYPES = {
    "keyword": qe.PayloadSchemaType.Keyword,
    "integer": qe.PayloadSchemaType.Integer,
    "float": qe.PayloadSchemaType.Float,
    "bool": qe.PayloadSchemaType.Bool,
    "datetime": qe.PayloadSchemaType.Datetime,
}


def take_lock(root: Path) -> IO[str]:
    """Own `root` until the returned file is closed; StoreLocked if another process owns it."""
    handle = (root / LOCK_FILE).open("a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError as exc:
        handle.close()
        raise StoreLocked(
            f"another worker owns {root}; the embedded store allows exactly one worker"
            " — set BRAID_QDRANT_URL to use a Qdrant server for several workers"
        ) from exc
    handle.truncate(0)
    handle.write(f"{os.getpid()}\n")  # for whoever wonders who holds it
    handle.flush()
    return handle


def mark_closed_cleanly(root: Path) -> None:
    """Every shard is flushed and closed: the next open has no write-ahead log to replay."""
    (root / CLEAN_FILE).touch()
    _sync_dir(root)


def take_clean_mark(root: Path) -> bool:
    """Whether the last owner closed the folder cleanly (a new folder counts as clean); the
    mark is removed, so a crash from now on is seen at the next open."""
    mark = root / CLEAN_FILE
    if mark.exists():
        mark.unlink()
        return True
    return not collection_dirs(root)


def recover(root: Path) -> None:
    """Promote complete fresh shards whose collection is missing; remove every other leftover."""
    for path in root.iterdir():
        if path.name.startswith(_FRESH):
            target = root / path.name.removeprefix(_FRESH)
            if (path / SCHEMA_FILE).exists() and not target.exists():
                path.rename(target)
            else:
                shutil.rmtree(path)
        elif path.name.startswith((_TRASH, _OPTIMIZING)):
            shutil.rmtree(path)  # an optimize cut short is simply done again
    _sync_dir(root)


def copy_shard(engine: qe.EdgeShard, source: Path, target: Path) -> None:
    """A loadable copy of an open shard (no write may run meanwhile): flushed, then copied, the
    holes of its files left holes. Half of a shard's length is holes (the engine sizes its
    storage pages ahead), and a whole copy wrote them out as zeros, with the worker's writes
    waiting on it."""
    engine.flush()
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source, target, copy_function=copy_sparse)


def copy_sparse(source: str, target: str) -> str:
    """shutil.copy2 that copies only a file's data, leaving its holes holes (SEEK_DATA)."""
    with open(source, "rb") as src, open(target, "wb") as dst:
        size = os.fstat(src.fileno()).st_size
        try:
            for start, end in _data_ranges(src.fileno(), size):
                _copy_range(src.fileno(), dst.fileno(), start, end)
        except OSError as exc:  # no SEEK_DATA or copy_file_range here: copy it all
            if exc.errno not in (errno.EINVAL, errno.ENOSYS, errno.EXDEV, errno.EOPNOTSUPP):
                raise
            dst.seek(0)
            dst.truncate()
            src.seek(0)
            shutil.copyfileobj(src, dst, 1 << 20)
        dst.truncate(size)
    shutil.copystat(source, target)
    return target


def _data_ranges(fd: int, size: int) -> Iterator[tuple[int, int]]:
    position = 0
    while position < size:
        try:
            start = os.lseek(fd, position, os.SEEK_DATA)
        except OSError as exc:
            if exc.errno == errno.ENXIO:  # only a hole is left
                return
            raise
        position = os.lseek(fd, start, os.SEEK_HOLE)
        yield start, position


def _copy_range(src: int, dst: int, start: int, end: int) -> None:
    while start < end:
        copied = os.copy_file_range(src, dst, end - start, start, start)
        if copied == 0:  # the file shrank under us: the caller's lock says it cannot
            raise StoreError(f"a shard file ended at {start} while it was copied")
        start += copied


def collection_dirs(root: Path) -> list[Path]:
    return sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))


def load(path: Path) -> tuple[qe.EdgeShard, CollectionSchema]:
    if not (path / SCHEMA_FILE).exists():
        raise StoreError(f"{path} holds no {SCHEMA_FILE}; it is not a Braid collection")
    schema = _read_schema(path / SCHEMA_FILE)
    # With the config, a shard made before the optimizer settings below gets them on disk.
    engine = qe.EdgeShard.load(str(path), edge_config(schema))
    add_indexes(engine, schema)  # shards made before payload indexes existed get them here
    return engine, schema


def create(root: Path, name: str, schema: CollectionSchema) -> qe.EdgeShard:
    _build(root, name, schema).rename(root / name)
    _sync_dir(root)
    return qe.EdgeShard.load(str(root / name))


def drop(root: Path, name: str, engine: qe.EdgeShard) -> None:
    engine.close()
    trash = root / f"{_TRASH}{name}"
    (root / name).rename(trash)
    _sync_dir(root)
    shutil.rmtree(trash)


def rebuild(root: Path, name: str, engine: qe.EdgeShard, schema: CollectionSchema) -> qe.EdgeShard:
    """Swap in a fresh empty shard; the old one stays usable if building the new one fails."""
    return _swap_in(root, name, engine, _build(root, name, schema))


def install(root: Path, name: str, engine: qe.EdgeShard, complete: Path) -> qe.EdgeShard:
    """Swap in `complete` (a whole shard folder, e.g. an optimized copy) for the open shard."""
    fresh = root / f"{_FRESH}{name}"
    shutil.rmtree(fresh, ignore_errors=True)
    complete.rename(fresh)  # from here on, a crash promotes it (recover)
    return _swap_in(root, name, engine, fresh)


def _swap_in(root: Path, name: str, engine: qe.EdgeShard, fresh: Path) -> qe.EdgeShard:
    engine.close()
    trash = root / f"{_TRASH}{name}"
    (root / name).rename(trash)
    fresh.rename(root / name)
    _sync_dir(root)
    shutil.rmtree(trash)
    return qe.EdgeShard.load(str(root / name))


def _build(root: Path, name: str, schema: CollectionSchema) -> Path:
    """A complete new empty shard under .fresh-<name>; the schema file is written last."""
    fresh = root / f"{_FRESH}{name}"
    shutil.rmtree(fresh, ignore_errors=True)
    engine = qe.EdgeShard.create(str(fresh), edge_config(schema))
    try:
        add_indexes(engine, schema)
    finally:
        engine.close()
    _write_schema(fresh / SCHEMA_FILE, schema)
    return fresh


def add_indexes(engine: qe.EdgeShard, schema: CollectionSchema) -> None:
    """Create the payload indexes of `schema` that the shard lacks (they persist in the shard)."""
    present = engine.info().payload_schema
    missing = [(f, kind) for f, kind in index_fields(schema) if f not in present]
    for field_name, kind in missing:
        engine.update(qe.UpdateOperation.create_field_index(field_name, _INDEX_TYPES[kind]))
    if missing:
        engine.flush()


# Every optimize vacuums each segment holding a deleted or overwritten version (the engine's
# default waits for 20 % of a segment of 1,000 vectors): the index statistics that large shards
# take IDF from count only live points after it (convert.INDEX_IDF_FROM).
VACUUM = qe.EdgeOptimizersConfig(deleted_threshold=0.0, vacuum_min_vector_number=0)
# One thread runs a search's reads, segment after segment. The engine's default, a thread per
# CPU reading segments in parallel, made a keyword search 1.37 CPU-ms instead of 1.10 for 0.1 ms
# less wall time (docs/benchmarks.md, engine ceiling): searches run in parallel across the api
# processes already, and each process answers one search at a time (the call holds the GIL).
SEARCH_THREADS = 1


def edge_config(schema: CollectionSchema) -> qe.EdgeConfig:
    dense = {
        s.name: qe.EdgeVectorParams(s.dimensions, _DISTANCES[s.distance]) for s in schema.dense
    }
    sparse = {
        s.name: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf if s.idf else None)
        for s in schema.sparse
    }
    return qe.EdgeConfig(
        vectors=dense or None,
        sparse_vectors=sparse or None,
        optimizers=VACUUM,
        max_search_threads=SEARCH_THREADS,
    )


def _write_schema(path: Path, schema: CollectionSchema) -> None:
    temp = path.with_suffix(".tmp")
    with temp.open("w") as out:
        json.dump(asdict(schema), out)
        out.flush()
        os.fsync(out.fileno())
    temp.rename(path)
    _sync_dir(path.parent)


def _read_schema(path: Path) -> CollectionSchema:
    return CollectionSchema.from_dict(json.loads(path.read_text()))


def _sync_dir(path: Path) -> None:
    """fsync a directory so that renames in it survive a power cut."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
