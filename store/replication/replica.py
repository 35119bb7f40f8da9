"""A search node's replica of the worker's embedded store (replicator.py has the protocol).

It starts from a copy of the worker's shards, taken at a known position, then applies the
broadcast writes that follow it, in order. Whenever it cannot be sure to hold every write up to
the newest position it has heard of (it reconnected to the broker and got a new, empty queue; a
sequence number was skipped; the worker restarted), it takes a new copy, serving searches from
the old one meanwhile. It never optimizes: when the worker has optimized a shard, the replica
copies the result (a file copy, where an optimize is an HNSW build on a core the model needs).
That copy is taken in the background: the old copy misses nothing, so it goes on applying the
stream meanwhile, and the writes it applied that the new copy lacks are applied to the new one
before it takes over. So a search never waits for an optimized copy: one that needed a write
made after the optimize would wait for the whole copy, and after a bulk load a copy can outlast
BRAID_REPLICA_WAIT_S (a 503).
A search waits until the replica holds the newest write a client was told succeeded
(`caught_up`), so a search node never answers from an older state than a client saw.
The replica is also the search node's StoreReader: each read goes to the copy in use.

A replica no search has used for `idle_s`, or none since it started, is idle: it drops the stream
unread, since applying it is work nobody asks for (under a keyword bulk load with no searches, two
replicas applying it were a quarter of the stack's CPU, and a bulk load right after a start paid
that for `idle_s`); when every replica is, the worker stops broadcasting writes (replicator.py).
The next search wakes it and waits for a fresh copy, which holds every write the idle time
dropped; it asks with the position it holds, so where no write came there is nothing to copy.
Elasticsearch's search-idle shards stop refreshing the same way.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from aio_pika.abc import AbstractIncomingMessage

from core.bus import Bus
from core.delivery import settle
from core.messages import CopyStore, StoreCopied, WorkerCall
from core.names import REPLICATION_EXCHANGE, WORKER_RPC_QUEUE
from core.retry import reconnect_delay_s
from store.edge.store import EdgeStore
from store.read_through import ReadThrough
from store.replication.replicator import Position
from store.replication.wire import UnreadableWrite, Written

log = logging.getLogger(__name__)

IN_FLIGHT = 256  # broadcast writes held unapplied (the broker keeps the rest)
COPY_TIMEOUT_S = 600.0  # a copy of a large store is a few seconds of disk; be patient
# The writes kept for an optimized copy taken in the background, as they came (~20 KB a hybrid
# document). Past this the copy is used only if it already holds them all, else taken again.
KEPT_MAX_BYTES = 64 * 1024 * 1024
MARKER_MAX_BYTES = 1024  # a tick, start or optimized message is ~100 bytes: read while idle


@dataclass
class _Refresh:
    """An optimized copy being taken while the old copy serves and applies the stream."""

    task: asyncio.Task[tuple[EdgeStore, Position]]
    kept: list[bytes] = field(default_factory=list)  # writes the old copy applied meanwhile
    kept_bytes: int = 0
    overflowed: bool = False  # some were not kept (KEPT_MAX_BYTES)
    again: bool = False  # another optimize finished meanwhile: the copy may predate it


class Replica(ReadThrough):
    """A replica, and the StoreReader of a search node: its reads go to the copy held now."""

    def __init__(self, root: Path, bus: Bus, idle_s: float, apply_delay_s: float = 0.0) -> None:
        self._root = root
        self._bus = bus
        self._idle_s = idle_s
        self._delay_s = apply_delay_s  # fault injection: a replica that lags
        self._searched_at: float | None = None  # the last search; None before the first
        self._idle = False  # dropping the stream: no search for `idle_s`, or none yet
        self._unoptimized = False  # the worker optimized a shard since the copy in use was taken
        self._waking = False  # a search woke it: the copy in use may lack dropped writes
        self._store: EdgeStore | None = None
        self._position: Position | None = None  # what the store holds; None before the first copy
        self._inbox: asyncio.Queue[AbstractIncomingMessage | None] = asyncio.Queue()
        self._stale = True  # a new copy is needed before the next write is applied
        self._applied = asyncio.Condition()
        self._copies = itertools.count(1)
        self._task: asyncio.Task[None] | None = None
        self._refresh: _Refresh | None = None
        self.copies_taken = 0

    @property
    def store(self) -> EdgeStore:
        if self._store is None:
            raise RuntimeError("the replica has no copy yet")
        return self._store

    @property
    def position(self) -> Position | None:
        return self._position

    @property
    def idle(self) -> bool:
        """Whether it drops the stream (no search for `idle_s`) until the next search."""
        return self._idle

    def _reader(self) -> EdgeStore:
        return self.store

    async def start(self) -> None:
        """Listen to the stream, then copy the store; returns once the first copy is loaded."""
        shutil.rmtree(self._root, ignore_errors=True)
        self._root.mkdir(parents=True)
        await self._bus.listen(REPLICATION_EXCHANGE, self._inbox.put, IN_FLIGHT, self._missed)
        await self._copy()
        self._task = asyncio.create_task(self._run(), name="replica")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        if self._refresh is not None:
            await self._discard(self._refresh)
        if self._store is not None:
            await self._store.close()

    async def caught_up(self, visible: Position | None, timeout_s: float) -> bool:
        """Wait (at most `timeout_s`) until the replica holds the write at `visible`, and,
        if it was idle, a fresh copy."""
        self._searched_at = time.monotonic()
        if self._idle:
            self._wake()
        if self._current(visible):  # nearly always: no lock, and no task for wait_for
            return True
        try:
            async with self._applied:
                await asyncio.wait_for(
                    self._applied.wait_for(lambda: self._current(visible)), timeout_s
                )
        except TimeoutError:
            return False
        return True

    def _current(self, visible: Position | None) -> bool:
        return not self._waking and self._holds(visible)

    def _holds(self, visible: Position | None) -> bool:
        if self._position is None:
            return False
        if visible is None or visible.epoch < self._position.epoch:
            return True  # the copy was taken after every write of older epochs
        return visible.epoch == self._position.epoch and visible.seq <= self._position.seq

    def _missed(self) -> None:
        """A new (empty) queue: what was broadcast before it is not in it."""
        self._stale = True
        self._inbox.put_nowait(None)  # wake the loop

    def _wake(self) -> None:
        """A search came: ask the worker for what the idle time dropped (`_copy`), and for the
        stream again."""
        log.info("a search came: the replica asks for what it missed while idle")
        self._idle = False
        self._waking = True
        self._stale = True
        self._inbox.put_nowait(None)  # wake the loop

    def _drop(self, body: bytes) -> None:
        """While idle: note an optimize, whose copy the wake must take even where no write came.
        A message too long to be a marker is a write, and is not read."""
        if self._unoptimized or len(body) > MARKER_MAX_BYTES:
            return
        try:
            written = Written.from_wire(body)
        except UnreadableWrite:
            return
        self._unoptimized = written.op == "optimized"

    def _idle_now(self) -> bool:
        """Whether to stop applying the stream: no search for `idle_s` (or none since the start),
        no copy being taken."""
        searched = self._searched_at
        if self._refresh is not None or (
            searched is not None and time.monotonic() - searched < self._idle_s
        ):
            return False
        log.info(
            "no search %s: the replica drops the stream until the next",
            "since it started" if searched is None else f"for {self._idle_s:g}s",
        )
        self._idle = True
        return True

    async def _run(self) -> None:
        while True:
            message = await self._inbox.get()
            if not self._idle:
                refresh = self._refresh
                if refresh is not None and (refresh.task.done() or self._stale):
                    await self._take_over(refresh)
                if self._stale:
                    await self._copy()
            if message is None:
                continue
            if self._idle or self._idle_now():  # a search's wake copies whatever it dropped
                self._drop(message.body)
                await settle(message)
                continue
            try:
                written = Written.from_wire(message.body)
            except UnreadableWrite:
                log.exception("dropping an unreadable replication message")
                await settle(message)
                continue
            try:
                if await self._apply(written):
                    self._keep(message.body)
            except Exception:  # a write the copy disagrees with: start again from a copy
                log.exception("applying %s %d:%d failed", written.op, written.epoch, written.seq)
                self._stale = True
            await settle(message)

    async def _apply(self, written: Written) -> bool:
        """Apply one message of the stream to the copy in use; whether it wrote to it."""
        assert self._position is not None
        epoch, seq = self._position
        if written.epoch != epoch:
            if written.epoch > epoch:  # the worker restarted: copy what it has now
                self._stale = True
            return False
        if written.op == "optimized":  # the worker's optimized shard: copy it
            self._start_refresh()
            return False
        if written.seq <= seq:  # in the copy already, or a tick of where we stand
            return False
        if written.op == "tick" or written.seq != seq + 1:  # something between was missed
            log.warning(
                "replica at %d:%d missed writes up to %d:%d", epoch, seq, epoch, written.seq
            )
            self._stale = True
            return False
        if self._delay_s:
            await asyncio.sleep(self._delay_s)
        await self._write(self.store, written)
        async with self._applied:
            self._position = Position(epoch, written.seq)
            self._applied.notify_all()
        return True

    async def _write(self, store: EdgeStore, written: Written) -> None:
        name = written.collection
        if written.op == "create":
            await store.create_collection(name, written.store_schema())
        elif written.op == "drop":
            await store.delete_collection(name)
        elif written.op == "empty":
            await store.empty(name)
        elif written.op == "upsert":
            await store.upsert_points(name, written.edge_points)
        elif written.op == "overwrite":
            await store.overwrite_payloads(name, written.payloads)
        elif written.op == "delete":
            await store.delete(name, written.doc_ids)

    async def _copy(self) -> None:
        """Load a fresh copy of the worker's store, retrying until the worker answers (none if
        the copy in use holds its newest write); the old copy serves searches (without applying
        the stream: it missed something) meanwhile."""
        held = None if self._unoptimized else self._position
        self._unoptimized = False
        store, position = await self._ask_copy(clears_stale=True, held=held)
        if store is not None:
            await self._install(store, position)
        async with self._applied:  # asked after any wake: it holds what the idle time dropped
            self._waking = False
            self._applied.notify_all()

    async def _take_copy(self, clears_stale: bool) -> tuple[EdgeStore, Position]:
        """A copy of the worker's store and the position it holds, retrying until the worker
        answers. `clears_stale`: the copy covers whatever was missed before it was asked for."""
        store, position = await self._ask_copy(clears_stale, held=None)
        assert store is not None  # the worker copies for an asker that holds nothing
        return store, position

    async def _ask_copy(
        self, clears_stale: bool, held: Position | None
    ) -> tuple[EdgeStore | None, Position]:
        """`_take_copy`, where a replica that `held` the worker's newest write gets no copy:
        (None, that position)."""
        for attempt in itertools.count():
            if clears_stale:
                self._stale = False
            target = self._root / str(next(self._copies))
            started = time.perf_counter()
            try:
                copied = await self._bus.call(
                    WORKER_RPC_QUEUE,
                    WorkerCall(request=CopyStore(target=str(target), held=held)),
                    StoreCopied,
                    COPY_TIMEOUT_S,
                )
                if not copied.copied:
                    log.info("replica at %d:%d holds the newest write", copied.epoch, copied.seq)
                    return None, Position(copied.epoch, copied.seq)
                store = await EdgeStore.open(target, replica=True)
            except Exception as exc:  # the worker or the broker is not there yet
                shutil.rmtree(target, ignore_errors=True)
                log.info("could not copy the store yet (%s); retrying", exc)
                await asyncio.sleep(reconnect_delay_s(attempt))
                continue
            log.info(
                "replica copied at %d:%d in %.2fs",
                copied.epoch,
                copied.seq,
                time.perf_counter() - started,
            )
            return store, Position(copied.epoch, copied.seq)
        raise AssertionError("unreachable: itertools.count() never ends")

    async def _install(self, store: EdgeStore, position: Position) -> None:
        """Serve from `store` from now on; close and delete the copy it replaces."""
        old, self._store = self._store, store
        async with self._applied:
            self._position = position
            self._applied.notify_all()
        self.copies_taken += 1
        if old is not None:
            await old.close()
            shutil.rmtree(old.root, ignore_errors=True)

    # --- an optimized copy, taken while the old copy goes on ---

    def _start_refresh(self) -> None:
        if self._refresh is not None:
            self._refresh.again = True
            return
        task = asyncio.create_task(self._take_copy(clears_stale=False), name="replica-refresh")
        task.add_done_callback(lambda _: self._inbox.put_nowait(None))  # take over at once
        self._refresh = _Refresh(task)

    def _keep(self, body: bytes) -> None:
        """Keep a write the old copy applied, for the copy being taken."""
        refresh = self._refresh
        if refresh is None or refresh.overflowed:
            return
        refresh.kept_bytes += len(body)
        if refresh.kept_bytes > KEPT_MAX_BYTES:
            refresh.overflowed = True
            refresh.kept.clear()
        else:
            refresh.kept.append(body)

    async def _take_over(self, refresh: _Refresh) -> None:
        """Put the optimized copy in place of the old one, once it holds every write the old
        one holds (a copy that cannot is dropped, and a full copy follows)."""
        self._refresh = None
        store, copied = await refresh.task
        assert self._position is not None
        held = self._position
        if refresh.overflowed and copied < held:
            log.info("too many writes after the optimized copy at %s to keep", copied.text())
            await self._close_copy(store)
            self._stale = self._unoptimized = True
            return
        kept = [Written.from_wire(body) for body in refresh.kept]
        later = [w for w in kept if Position(w.epoch, w.seq) > copied]
        try:
            for written in later:  # applied to the old copy after this one was taken
                await self._write(store, written)
        except Exception:  # the copy disagrees with a write: start again from a full copy
            log.exception("the optimized copy at %s refused a later write", copied.text())
            await self._close_copy(store)
            self._stale = self._unoptimized = True
            return
        await self._install(store, max(copied, held))
        log.info("the optimized copy at %s took over (+%d writes)", copied.text(), len(later))
        if refresh.again:
            self._start_refresh()

    async def _discard(self, refresh: _Refresh) -> None:
        self._refresh = None
        refresh.task.cancel()
        await asyncio.gather(refresh.task, return_exceptions=True)
        if not refresh.task.cancelled() and refresh.task.exception() is None:
            await self._close_copy(refresh.task.result()[0])

    @staticmethod
    async def _close_copy(store: EdgeStore) -> None:
        await store.close()
        shutil.rmtree(store.root, ignore_errors=True)
