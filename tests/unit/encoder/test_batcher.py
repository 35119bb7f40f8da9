"""Micro-batching: size/time flush, length sorting, query priority, failure isolation."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from core.enums import EmbedKind, EmbedOutput
from core.vectors import SparseVector
from encoder.batcher import Batcher, BatchKey, length_order

KEY = BatchKey("fake/model")
QUERY, DOCUMENT = EmbedKind.QUERY, EmbedKind.DOCUMENT


class FakeEmbedder:
    """Deterministic: the vector of a text is [len(text)]; every batch is recorded."""

    def __init__(self, fail_on: str | None = None) -> None:
        self.batches: list[list[str]] = []
        self.fail_on = fail_on
        self.gate = threading.Event()
        self.gate.set()

    def __call__(self, texts: list[str]) -> list[list[float]]:
        self.gate.wait(5)
        self.batches.append(list(texts))
        if self.fail_on is not None and self.fail_on in texts:
            raise RuntimeError("model exploded")
        return [[float(len(text))] for text in texts]


async def embed(batcher: Batcher, fake: FakeEmbedder, texts: list[str], kind=DOCUMENT):
    return await batcher.embed(KEY, kind, texts, fake)


def test_length_order_puts_longest_first() -> None:
    assert length_order(["a", "ccc", "bb"]) == [1, 2, 0]


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


async def test_pending_queries_go_before_pending_documents() -> None:
    fake = FakeEmbedder()
    batcher = Batcher(max_texts=2, wait_ms=0)
    fake.gate.clear()  # hold the lane busy on the first document batch
    busy = asyncio.create_task(embed(batcher, fake, ["d0"]))
    await asyncio.sleep(0.05)
    documents = [asyncio.create_task(embed(batcher, fake, [f"d{i}"])) for i in (1, 2, 3)]
    query = asyncio.create_task(embed(batcher, fake, ["q1"], kind=QUERY))
    await asyncio.sleep(0.01)
    fake.gate.set()
    await asyncio.gather(busy, query, *documents)
    # Documents are capped at max_texts per batch, so the query never waits behind them all.
    assert fake.batches == [["d0"], ["q1"], ["d1", "d2"], ["d3"]]
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

    seen: list[tuple[int, float]] = []
    batcher = Batcher(max_texts=10, wait_ms=0, on_batch=lambda n, ms: seen.append((n, ms)))
    result = await batcher.embed(KEY, QUERY, ["a", "b"], slow)
    assert result.inference_ms >= 19
    assert seen == [(2, result.inference_ms)]
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
