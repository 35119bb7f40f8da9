"""Micro-batching: size/time flush, length sorting, the query lane, failure isolation."""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import time

import pytest

from core.enums import EmbedKind, EmbedOutput
from core.vectors import SparseVector
from encoder.batcher import Batcher, BatchKey, length_groups, length_order

KEY = BatchKey("fake/model")
QUERY, DOCUMENT = EmbedKind.QUERY, EmbedKind.DOCUMENT


class FakeEmbedder:
    """Deterministic: the vector of a text is [len(text)]; every batch is recorded."""

    def __init__(self, fail_on: str | None = None) -> None:
        self.batches: list[list[str]] = []
        self.fail_on = fail_on
        self.gate = threading.Event()
        self.gate.set()
        self.lock = threading.Lock()
        self.entered = 0  # model calls started

    def __call__(self, texts: list[str]) -> list[list[float]]:
        with self.lock:
            self.entered += 1
        self.gate.wait(5)
        self.batches.append(list(texts))
        if self.fail_on is not None and self.fail_on in texts:
            raise RuntimeError("model exploded")
        return [[float(len(text))] for text in texts]


async def embed(batcher: Batcher, fake: FakeEmbedder, texts: list[str], kind=DOCUMENT):
    return await batcher.embed(KEY, kind, texts, fake)


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
    batcher = Batcher(max_texts=10, wait_ms=5)
    long, short = "x" * 1000, "short"
    first, second = await asyncio.gather(
        embed(batcher, fake, [short, long]), embed(batcher, fake, [long + "y", "tiny"])
    )
    assert fake.batches == [[long + "y", long], [short, "tiny"]]
    assert first.vectors == [[5.0], [1000.0]] and second.vectors == [[1001.0], [4.0]]
    await batcher.close()


async def test_flushes_when_batch_size_texts_are_waiting() -> None:
    fake = FakeEmbedder()
    batcher = Batcher(max_texts=4, wait_ms=10_000)
    started = time.monotonic()
    results = await asyncio.gather(*(embed(batcher, fake, [f"t{i}"]) for i in range(4)))
    assert time.monotonic() - started < 2  # did not wait the 10 s window
    assert len(fake.batches) == 1 and sorted(fake.batches[0]) == ["t0", "t1", "t2", "t3"]
    assert [r.vectors for r in results] == [[[2.0]]] * 4
    await batcher.close()


async def test_flushes_after_the_wait_window_when_the_batch_is_not_full() -> None:
    fake = FakeEmbedder()
    batcher = Batcher(max_texts=100, wait_ms=50)
    started = time.monotonic()
    await asyncio.gather(*(embed(batcher, fake, ["x" * i]) for i in range(1, 4)))
    assert time.monotonic() - started >= 0.045
    assert len(fake.batches) == 1 and len(fake.batches[0]) == 3
    await batcher.close()


async def test_sorts_texts_by_length_in_a_batch_but_answers_in_request_order() -> None:
    fake = FakeEmbedder()
    batcher = Batcher(max_texts=10, wait_ms=5)
    first, second = await asyncio.gather(
        embed(batcher, fake, ["a", "cccc", "bb"]), embed(batcher, fake, ["ddd", "e"])
    )
    assert fake.batches == [["cccc", "ddd", "bb", "a", "e"]]
    assert first.vectors == [[1.0], [4.0], [2.0]]
    assert second.vectors == [[3.0], [1.0]]
    await batcher.close()


async def test_a_query_is_embedded_while_a_document_batch_is_still_running() -> None:
    documents, queries = FakeEmbedder(), FakeEmbedder()
    batcher = Batcher(max_texts=2, wait_ms=0)
    documents.gate.clear()  # the document lane is stuck in a model call
    busy = asyncio.create_task(embed(batcher, documents, ["d0", "d1"]))
    await asyncio.sleep(0.05)
    query = await asyncio.wait_for(embed(batcher, queries, ["q1"], kind=QUERY), 2)
    assert query.vectors == [[2.0]] and not busy.done()
    documents.gate.set()
    await busy
    assert queries.batches == [["q1"]] and documents.batches == [["d0", "d1"]]
    await batcher.close()


async def test_queries_that_arrive_while_the_query_lane_is_busy_share_the_next_batch() -> None:
    fake = FakeEmbedder()
    batcher = Batcher(max_texts=100, wait_ms=0, query_max_texts=3)
    fake.gate.clear()
    first = asyncio.create_task(embed(batcher, fake, ["q0"], kind=QUERY))
    await asyncio.sleep(0.05)
    waiting = [
        asyncio.create_task(embed(batcher, fake, [f"q{i}"], kind=QUERY)) for i in (1, 2, 3, 4)
    ]
    await asyncio.sleep(0.01)
    fake.gate.set()
    await asyncio.gather(first, *waiting)
    # Continuous batching on the query lane, capped at query_max_texts, oldest first.
    assert fake.batches == [["q0"], ["q1", "q2", "q3"], ["q4"]]
    await batcher.close()


async def test_the_query_lane_has_its_own_wait_window() -> None:
    fake = FakeEmbedder()
    batcher = Batcher(max_texts=100, wait_ms=10_000, query_wait_ms=0)
    started = time.monotonic()
    result = await asyncio.wait_for(embed(batcher, fake, ["q"], kind=QUERY), 2)
    assert result.vectors == [[1.0]] and time.monotonic() - started < 1
    pending = asyncio.create_task(embed(batcher, fake, ["document"]))
    await asyncio.sleep(0.05)
    assert not pending.done()  # documents still wait for their window (or a full batch)
    await batcher.close()  # close flushes it
    assert (await pending).vectors == [[8.0]]


async def test_the_document_lane_runs_as_many_batches_side_by_side_as_it_has_workers() -> None:
    fake = FakeEmbedder()
    batcher = Batcher(max_texts=2, wait_ms=0, document_workers=2)
    fake.gate.clear()
    tasks = [asyncio.create_task(embed(batcher, fake, [f"d{i}", f"e{i}"])) for i in range(3)]
    await asyncio.sleep(0.1)
    assert fake.entered == 2  # two model calls in flight, the third batch waits for a worker
    fake.gate.set()
    await asyncio.gather(*tasks)
    assert sorted(map(sorted, fake.batches)) == [["d0", "e0"], ["d1", "e1"], ["d2", "e2"]]
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
    fake.gate.clear()
    busy = asyncio.create_task(embed(batcher, fake, ["d0"]))
    await asyncio.sleep(0.05)
    older = asyncio.create_task(batcher.embed(other, DOCUMENT, ["o1"], fake))
    await asyncio.sleep(0.01)
    newer = asyncio.create_task(embed(batcher, fake, ["d1"]))
    await asyncio.sleep(0.01)
    fake.gate.set()
    await asyncio.gather(busy, older, newer)
    assert fake.batches == [["d0"], ["o1"], ["d1"]]
    await batcher.close()


async def test_a_failing_batch_fails_only_its_own_requests() -> None:
    fake = FakeEmbedder(fail_on="boom")
    batcher = Batcher(max_texts=2, wait_ms=50)
    results = await asyncio.gather(
        *(embed(batcher, fake, [text]) for text in ("boom", "ok1", "ok22", "ok333")),
        return_exceptions=True,
    )
    assert [sorted(batch) for batch in fake.batches] == [["boom", "ok1"], ["ok22", "ok333"]]
    assert all(isinstance(r, RuntimeError) for r in results[:2])
    answered = [r for r in results[2:] if not isinstance(r, BaseException)]
    assert [r.vectors for r in answered] == [[[4.0]], [[5.0]]]
    assert (await embed(batcher, fake, ["after"])).vectors == [[5.0]]  # the lane survives
    await batcher.close()


async def test_a_large_request_is_split_into_capped_batches_and_reassembled() -> None:
    fake = FakeEmbedder()
    batcher = Batcher(max_texts=3, wait_ms=0)
    texts = ["x" * i for i in range(1, 8)]
    result = await embed(batcher, fake, texts)
    assert [len(batch) for batch in fake.batches] == [3, 3, 1]
    assert result.vectors == [[float(i)] for i in range(1, 8)]
    await batcher.close()


async def test_different_options_never_share_a_batch() -> None:
    fake = FakeEmbedder()
    batcher = Batcher(max_texts=10, wait_ms=5)
    other = BatchKey("fake/model", keep_case=True)
    await asyncio.gather(embed(batcher, fake, ["a"]), batcher.embed(other, DOCUMENT, ["B"], fake))
    assert sorted(fake.batches) == [["B"], ["a"]]
    await batcher.close()


async def test_reports_the_model_time_of_its_batches() -> None:
    def slow(texts: list[str]) -> list[list[float]]:
        time.sleep(0.02)
        return [[0.0] for _ in texts]

    seen: list[tuple[EmbedKind, int, float]] = []
    batcher = Batcher(max_texts=10, wait_ms=0, on_batch=lambda *batch: seen.append(batch))
    result = await batcher.embed(KEY, QUERY, ["a", "b"], slow)
    assert result.inference_ms >= 19
    assert seen == [(QUERY, 2, result.inference_ms)]
    await batcher.close()


async def test_close_flushes_pending_work_and_refuses_new_work() -> None:
    fake = FakeEmbedder()
    batcher = Batcher(max_texts=100, wait_ms=60_000)
    pending = asyncio.create_task(embed(batcher, fake, ["late"]))
    await asyncio.sleep(0.01)
    await batcher.close()
    assert (await pending).vectors == [[4.0]]
    with pytest.raises(Exception, match="shutting down"):
        await embed(batcher, fake, ["too late"])


async def test_a_cancelled_caller_costs_no_model_time() -> None:
    fake = FakeEmbedder()
    batcher = Batcher(max_texts=100, wait_ms=30)
    gone = asyncio.create_task(embed(batcher, fake, ["gone"]))
    kept = asyncio.create_task(embed(batcher, fake, ["kept"]))
    await asyncio.sleep(0.005)
    gone.cancel()
    assert (await kept).vectors == [[4.0]]
    assert fake.batches == [["kept"]]
    await batcher.close()


async def test_close_gives_up_on_a_stuck_batch_within_its_bound() -> None:
    fake = FakeEmbedder()
    fake.gate.clear()  # the model never returns (within the test)
    batcher = Batcher(max_texts=10, wait_ms=0, drain_s=0.05)
    stuck = asyncio.create_task(embed(batcher, fake, ["stuck"]))
    await asyncio.sleep(0.01)
    started = time.monotonic()
    await batcher.close()
    assert time.monotonic() - started < 1
    with pytest.raises(Exception, match="shutting down"):
        await stuck
    fake.gate.set()


async def test_sparse_vectors_batch_together_and_come_back_in_request_order() -> None:
    batches: list[list[str]] = []

    def sparse_fn(texts: list[str]) -> list[SparseVector]:
        batches.append(list(texts))
        return [SparseVector(indices=[len(t)], values=[1.0]) for t in texts]

    key = BatchKey("fake/splade", output=EmbedOutput.SPARSE, top_k=8)
    batcher = Batcher(max_texts=8, wait_ms=20)
    first, second = await asyncio.gather(
        batcher.embed(key, DOCUMENT, ["a", "ccc"], sparse_fn),
        batcher.embed(key, DOCUMENT, ["bb"], sparse_fn),
    )
    assert len(batches) == 1 and sorted(batches[0]) == ["a", "bb", "ccc"]
    assert [v.indices for v in first.vectors] == [[1], [3]]
    assert [v.indices for v in second.vectors] == [[2]]
    await batcher.close()


async def test_sparse_and_dense_work_of_one_model_never_share_a_batch() -> None:
    fake = FakeEmbedder()
    batcher = Batcher(max_texts=8, wait_ms=20)
    sparse_key = BatchKey("fake/model", output=EmbedOutput.SPARSE, top_k=8)
    await asyncio.gather(
        batcher.embed(KEY, DOCUMENT, ["dense"], fake),
        batcher.embed(sparse_key, DOCUMENT, ["sparse"], fake),
    )
    assert sorted(fake.batches) == [["dense"], ["sparse"]]
    await batcher.close()
