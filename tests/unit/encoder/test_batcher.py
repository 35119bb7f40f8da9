"""Micro-batching: size/time flush, length sorting, the query lane, failure isolation.

Every ordering here is pinned by an event, never by a sleep: the fake model holds its calls at a
gate the test opens, the test awaits the number of calls that have started, and a wait window
that must not close is an hour long. A timeout appears only as a guard against a hang.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import time
from collections.abc import Coroutine
from typing import Any

import pytest

from core.enums import EmbedKind, EmbedOutput
from core.vectors import SparseVector
from encoder.batcher import Batcher, BatchKey, Embedded, length_groups, length_order

KEY = BatchKey("fake/model")
QUERY, DOCUMENT = EmbedKind.QUERY, EmbedKind.DOCUMENT
GUARD_S = 30.0  # only stops a hung test; no test measures time
FOREVER_MS = 3_600_000  # a wait window no test outlives: whatever flushes, it was not the window


class FakeEmbedder:
    """The vector of a text is [len(text)]; every model call is recorded and can be held."""

    def __init__(self, fail_on: str | None = None) -> None:
        self.batches: list[list[str]] = []
        self.fail_on = fail_on
        self.entered = 0  # model calls started, held at the gate or not
        self._gate = threading.Event()
        self._gate.set()
        self._started = threading.Condition()

    def hold(self) -> None:
        """Model calls from now on block until `release`."""
        self._gate.clear()

    def release(self) -> None:
        self._gate.set()

    def __call__(self, texts: list[str]) -> list[list[float]]:
        with self._started:
            self.entered += 1
            self._started.notify_all()
        if not self._gate.wait(GUARD_S):
            raise TimeoutError("the test never released the fake model")
        self.batches.append(list(texts))
        if self.fail_on is not None and self.fail_on in texts:
            raise RuntimeError("model exploded")
        return [[float(len(text))] for text in texts]

    async def calls_started(self, count: int) -> None:
        """Return once `count` model calls are inside the model (held at the gate or running)."""

        def wait() -> bool:
            with self._started:
                return self._started.wait_for(lambda: self.entered >= count, GUARD_S)

        assert await asyncio.to_thread(wait), f"{count} model calls never started"

    def saw(self, text: str) -> bool:
        return any(text in batch for batch in self.batches)


async def embed(
    batcher: Batcher, fake: FakeEmbedder, texts: list[str], kind: EmbedKind = DOCUMENT
) -> Embedded:
    return await batcher.embed(KEY, kind, texts, fake)


async def queued(*calls: Coroutine[Any, Any, Embedded]) -> list[asyncio.Task[Embedded]]:
    """Start each call as a task and give the loop one pass. Tasks run in creation order before
    this coroutine resumes, and `Batcher.embed` queues its texts before it first awaits, so on
    return every call's texts are queued, in call order. An ordering, not a wait."""
    tasks = [asyncio.create_task(call) for call in calls]
    await asyncio.sleep(0)
    return tasks


async def let_the_loop_run(passes: int = 5) -> None:
    """Give the lanes a few loop passes to act on what was just queued. Nothing waits on this:
    a correct batcher gives the same answer with none; a wrong one gets its chance to show."""
    for _ in range(passes):
        await asyncio.sleep(0)


def test_length_order_puts_longest_first() -> None:
    assert length_order(["a", "ccc", "bb"]) == [1, 2, 0]


@pytest.mark.parametrize(
    ("lengths", "calls"),
    [
        ([900, 850, 800], [[900, 850, 800]]),  # similar lengths: one call
        ([2000, 1900, 600, 500, 40], [[2000, 1900], [600, 500], [40]]),
        ([300, 20, 10], [[300, 20, 10]]),  # all short: padding is cheaper than another call
        ([], [[]]),
    ],
)
def test_length_groups_split_a_sorted_batch_where_padding_would_cost(lengths, calls) -> None:
    assert [lengths[group] for group in length_groups(lengths)] == calls


async def test_a_batch_of_mixed_lengths_runs_as_calls_of_similar_lengths() -> None:
    fake = FakeEmbedder()
    batcher = Batcher(max_texts=4, wait_ms=FOREVER_MS)  # the four texts fill one batch
    long, short = "x" * 1000, "short"
    first, second = await asyncio.wait_for(
        asyncio.gather(
            embed(batcher, fake, [short, long]), embed(batcher, fake, [long + "y", "tiny"])
        ),
        GUARD_S,
    )
    assert fake.batches == [[long + "y", long], [short, "tiny"]]
    assert first.vectors == [[5.0], [1000.0]] and second.vectors == [[1001.0], [4.0]]
    await batcher.close()


async def test_a_sort_window_hands_the_runner_batches_sorted_together() -> None:
    fake = FakeEmbedder()
    batcher = Batcher(max_texts=2, wait_ms=FOREVER_MS, sort_window=2)  # four texts fill it
    first, second = await asyncio.wait_for(
        asyncio.gather(embed(batcher, fake, ["aa", "dddd"]), embed(batcher, fake, ["ccc", "b"])),
        GUARD_S,
    )
    assert fake.batches == [["dddd", "ccc", "aa", "b"]]  # the runner cuts its own calls
    assert first.vectors == [[2.0], [4.0]] and second.vectors == [[3.0], [1.0]]
    await batcher.close()


async def test_flushes_when_batch_size_texts_are_waiting_without_waiting_the_window() -> None:
    fake = FakeEmbedder()
    batcher = Batcher(max_texts=4, wait_ms=FOREVER_MS)
    results = await asyncio.wait_for(
        asyncio.gather(*(embed(batcher, fake, [f"t{i}"]) for i in range(4))), GUARD_S
    )
    assert len(fake.batches) == 1 and sorted(fake.batches[0]) == ["t0", "t1", "t2", "t3"]
    assert [r.vectors for r in results] == [[[2.0]]] * 4
    await batcher.close()


async def test_a_batch_that_is_not_full_waits_for_its_window_while_full_ones_run() -> None:
    fake = FakeEmbedder()
    batcher = Batcher(max_texts=2, wait_ms=FOREVER_MS)
    (waiting,) = await queued(batcher.embed(BatchKey("fake/other"), DOCUMENT, ["waits"], fake))
    full = await asyncio.wait_for(embed(batcher, fake, ["a", "b"]), GUARD_S)
    # The lane picked the full batch with "waits" already queued beside it, and left it there.
    assert full.vectors == [[1.0], [1.0]]
    assert fake.batches == [["a", "b"]] and not waiting.done()
    await batcher.close()  # close flushes it
    assert (await waiting).vectors == [[5.0]]


async def test_flushes_a_batch_that_is_not_full_once_its_window_closes() -> None:
    fake = FakeEmbedder()
    batcher = Batcher(max_texts=100, wait_ms=50)
    # Nothing fills the batch and nothing closes the batcher: only the window can flush it.
    results = await asyncio.wait_for(
        asyncio.gather(*(embed(batcher, fake, ["x" * i]) for i in range(1, 4))), GUARD_S
    )
    assert fake.batches == [["xxx", "xx", "x"]]
    assert [r.vectors for r in results] == [[[1.0]], [[2.0]], [[3.0]]]
    await batcher.close()


async def test_sorts_texts_by_length_in_a_batch_but_answers_in_request_order() -> None:
    fake = FakeEmbedder()
    batcher = Batcher(max_texts=5, wait_ms=FOREVER_MS)  # the five texts fill one batch
    first, second = await asyncio.wait_for(
        asyncio.gather(
            embed(batcher, fake, ["a", "cccc", "bb"]), embed(batcher, fake, ["ddd", "e"])
        ),
        GUARD_S,
    )
    assert fake.batches == [["cccc", "ddd", "bb", "a", "e"]]
    assert first.vectors == [[1.0], [4.0], [2.0]]
    assert second.vectors == [[3.0], [1.0]]
    await batcher.close()


async def test_a_query_is_embedded_while_a_document_batch_is_still_running() -> None:
    documents, queries = FakeEmbedder(), FakeEmbedder()
    batcher = Batcher(max_texts=2, wait_ms=0)
    documents.hold()  # the document lane will be stuck in a model call
    busy = asyncio.create_task(embed(batcher, documents, ["d0", "d1"]))
    await documents.calls_started(1)
    query = await asyncio.wait_for(embed(batcher, queries, ["q1"], kind=QUERY), GUARD_S)
    assert query.vectors == [[2.0]] and not busy.done() and documents.batches == []
    documents.release()
    await asyncio.wait_for(busy, GUARD_S)
    assert queries.batches == [["q1"]] and documents.batches == [["d0", "d1"]]
    await batcher.close()


async def test_queries_that_arrive_while_the_query_lane_is_busy_share_the_next_batch() -> None:
    fake = FakeEmbedder()
    batcher = Batcher(max_texts=100, wait_ms=0, query_max_texts=3)
    fake.hold()
    first = asyncio.create_task(embed(batcher, fake, ["q0"], kind=QUERY))
    await fake.calls_started(1)  # q0 is in the model; the lane's one thread is busy
    waiting = []
    for i in (1, 2, 3, 4):  # one at a time, the lane free to pick each alone; it must not
        waiting += await queued(embed(batcher, fake, [f"q{i}"], kind=QUERY))
        await let_the_loop_run()
    fake.release()
    await asyncio.wait_for(asyncio.gather(first, *waiting), GUARD_S)
    # Continuous batching on the query lane, capped at query_max_texts, oldest first.
    assert fake.batches == [["q0"], ["q1", "q2", "q3"], ["q4"]]
    await batcher.close()


async def test_the_query_lane_has_its_own_wait_window() -> None:
    fake = FakeEmbedder()
    batcher = Batcher(max_texts=100, wait_ms=FOREVER_MS, query_wait_ms=0)
    (pending,) = await queued(embed(batcher, fake, ["document"]))
    # The document lane was due to run before the query lane: it has had its turn by the answer.
    result = await asyncio.wait_for(embed(batcher, fake, ["q"], kind=QUERY), GUARD_S)
    assert result.vectors == [[1.0]]
    assert not fake.saw("document") and not pending.done()  # documents wait for their window
    await batcher.close()  # close flushes it
    assert (await pending).vectors == [[8.0]]


async def test_the_document_lane_runs_as_many_batches_side_by_side_as_it_has_workers() -> None:
    fake = FakeEmbedder()
    batcher = Batcher(max_texts=2, wait_ms=0, document_workers=2)
    fake.hold()
    tasks = [asyncio.create_task(embed(batcher, fake, [f"d{i}", f"e{i}"])) for i in range(2)]
    await fake.calls_started(2)  # both held in the model at once: they run side by side
    for text in ("x", "y"):  # one at a time, the lane free to pick each alone; it must not
        tasks += await queued(embed(batcher, fake, [text]))
        await let_the_loop_run()
    assert fake.entered == 2 and fake.batches == []  # the third batch waits for a worker
    fake.release()
    await asyncio.wait_for(asyncio.gather(*tasks), GUARD_S)
    assert sorted(map(sorted, fake.batches)) == [["d0", "e0"], ["d1", "e1"], ["x", "y"]]
    await batcher.close()


@pytest.mark.skipif(sys.platform != "linux", reason="per-thread nice values are Linux's")
async def test_document_model_threads_run_at_a_lower_priority_than_query_threads() -> None:
    seen: dict[str, int] = {}

    def record(texts: list[str]) -> list[list[float]]:
        seen[texts[0]] = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        return [[0.0] for _ in texts]

    base = os.getpriority(os.PRIO_PROCESS, 0)
    batcher = Batcher(max_texts=4, wait_ms=0, document_workers=2, document_nice=5)
    await batcher.embed(KEY, DOCUMENT, ["document"], record)
    await batcher.embed(KEY, QUERY, ["query"], record)
    assert seen == {"document": min(19, base + 5), "query": base}
    await batcher.close()


async def test_document_groups_run_oldest_first() -> None:
    fake = FakeEmbedder()
    batcher = Batcher(max_texts=2, wait_ms=0)
    other = BatchKey("fake/other")
    fake.hold()
    busy = asyncio.create_task(embed(batcher, fake, ["d0"]))
    await fake.calls_started(1)  # the lane is busy, so the next two groups queue up behind it
    (older,) = await queued(batcher.embed(other, DOCUMENT, ["o1"], fake))
    (newer,) = await queued(embed(batcher, fake, ["d1"]))
    fake.release()
    await asyncio.wait_for(asyncio.gather(busy, older, newer), GUARD_S)
    assert fake.batches == [["d0"], ["o1"], ["d1"]]
    await batcher.close()


async def test_a_failing_batch_fails_only_its_own_requests() -> None:
    fake = FakeEmbedder(fail_on="boom")
    batcher = Batcher(max_texts=2, wait_ms=FOREVER_MS)  # batches flush by size alone
    results = await asyncio.wait_for(
        asyncio.gather(
            *(embed(batcher, fake, [text]) for text in ("boom", "ok1", "ok22", "ok333")),
            return_exceptions=True,
        ),
        GUARD_S,
    )
    assert fake.batches == [["boom", "ok1"], ["ok333", "ok22"]]
    assert all(isinstance(r, RuntimeError) for r in results[:2])
    assert [r.vectors for r in results[2:]] == [[[4.0]], [[5.0]]]
    # The lane survives and serves the next batch.
    after = await asyncio.wait_for(embed(batcher, fake, ["after", "again"]), GUARD_S)
    assert after.vectors == [[5.0], [5.0]]
    await batcher.close()


async def test_a_large_request_is_split_into_capped_batches_and_reassembled() -> None:
    fake = FakeEmbedder()
    batcher = Batcher(max_texts=3, wait_ms=0)
    texts = ["x" * i for i in range(1, 8)]
    result = await asyncio.wait_for(embed(batcher, fake, texts), GUARD_S)
    assert [len(batch) for batch in fake.batches] == [3, 3, 1]
    assert result.vectors == [[float(i)] for i in range(1, 8)]
    await batcher.close()


async def test_different_options_never_share_a_batch() -> None:
    fake = FakeEmbedder()
    batcher = Batcher(max_texts=10, wait_ms=0)
    other = BatchKey("fake/model", keep_case=True)
    # Both requests are queued before the lane first picks, so one batch could have held both.
    await asyncio.wait_for(
        asyncio.gather(embed(batcher, fake, ["a"]), batcher.embed(other, DOCUMENT, ["B"], fake)),
        GUARD_S,
    )
    assert sorted(fake.batches) == [["B"], ["a"]]
    await batcher.close()


class ModelClock:
    """Stands in for the batcher's `time` module: `perf_counter` moves only when the fake model
    says it ran, so the reported model time is exact; `monotonic` (the wait windows) is real."""

    monotonic = staticmethod(time.monotonic)

    def __init__(self) -> None:
        self.now = 0.0

    def perf_counter(self) -> float:
        return self.now


async def test_reports_the_model_time_of_its_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = ModelClock()
    monkeypatch.setattr("encoder.batcher.time", clock)

    def model(texts: list[str]) -> list[list[float]]:
        clock.now += 0.25  # the model call "takes" 250 ms
        return [[0.0] for _ in texts]

    seen: list[tuple[str, EmbedKind, int, float]] = []
    batcher = Batcher(max_texts=10, wait_ms=0, on_batch=lambda *batch: seen.append(batch))
    result = await asyncio.wait_for(batcher.embed(KEY, QUERY, ["a", "b"], model), GUARD_S)
    assert result.inference_ms == pytest.approx(250.0)
    assert seen == [(KEY.model, QUERY, 2, result.inference_ms)]
    await batcher.close()


async def test_close_flushes_pending_work_and_refuses_new_work() -> None:
    fake = FakeEmbedder()
    batcher = Batcher(max_texts=100, wait_ms=FOREVER_MS)
    (pending,) = await queued(embed(batcher, fake, ["late"]))
    assert fake.batches == []  # held by its window until close
    await asyncio.wait_for(batcher.close(), GUARD_S)
    assert (await pending).vectors == [[4.0]]
    with pytest.raises(Exception, match="shutting down"):
        await embed(batcher, fake, ["too late"])


async def test_a_cancelled_caller_costs_no_model_time() -> None:
    fake = FakeEmbedder()
    batcher = Batcher(max_texts=3, wait_ms=FOREVER_MS)
    gone, kept = await queued(embed(batcher, fake, ["gone"]), embed(batcher, fake, ["kept"]))
    gone.cancel()
    (filler,) = await queued(embed(batcher, fake, ["fill"]))  # the third text fills the batch
    assert (await asyncio.wait_for(kept, GUARD_S)).vectors == [[4.0]]
    assert (await asyncio.wait_for(filler, GUARD_S)).vectors == [[4.0]]
    assert fake.batches == [["kept", "fill"]]
    with pytest.raises(asyncio.CancelledError):
        await gone
    await batcher.close()


async def test_close_fails_a_stuck_batch_instead_of_waiting_for_it() -> None:
    fake = FakeEmbedder()
    batcher = Batcher(max_texts=10, wait_ms=0, drain_s=0.05)
    fake.hold()  # the model does not return until the test is done
    stuck = asyncio.create_task(embed(batcher, fake, ["stuck"]))
    await fake.calls_started(1)
    # Were close to wait for the model call, it would never return: the gate opens after it.
    await asyncio.wait_for(batcher.close(), GUARD_S)
    with pytest.raises(Exception, match="shutting down"):
        await stuck
    assert fake.batches == []  # still stuck in the model when close gave up
    fake.release()


async def test_sparse_vectors_batch_together_and_come_back_in_request_order() -> None:
    batches: list[list[str]] = []

    def sparse_fn(texts: list[str]) -> list[SparseVector]:
        batches.append(list(texts))
        return [SparseVector(indices=[len(t)], values=[1.0]) for t in texts]

    key = BatchKey("fake/splade", output=EmbedOutput.SPARSE, top_k=8)
    batcher = Batcher(max_texts=3, wait_ms=FOREVER_MS)  # the three texts fill one batch
    first, second = await asyncio.wait_for(
        asyncio.gather(
            batcher.embed(key, DOCUMENT, ["a", "ccc"], sparse_fn),
            batcher.embed(key, DOCUMENT, ["bb"], sparse_fn),
        ),
        GUARD_S,
    )
    assert batches == [["ccc", "bb", "a"]]
    assert [v.indices for v in first.vectors] == [[1], [3]]
    assert [v.indices for v in second.vectors] == [[2]]
    await batcher.close()


async def test_sparse_and_dense_work_of_one_model_never_share_a_batch() -> None:
    fake = FakeEmbedder()
    batcher = Batcher(max_texts=8, wait_ms=0)
    sparse_key = BatchKey("fake/model", output=EmbedOutput.SPARSE, top_k=8)
    # Both requests are queued before the lane first picks, so one batch could have held both.
    await asyncio.wait_for(
        asyncio.gather(
            batcher.embed(KEY, DOCUMENT, ["dense"], fake),
            batcher.embed(sparse_key, DOCUMENT, ["sparse"], fake),
        ),
        GUARD_S,
    )
    assert sorted(fake.batches) == [["dense"], ["sparse"]]
    await batcher.close()
