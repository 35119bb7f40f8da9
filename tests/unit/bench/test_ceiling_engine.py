"""The ceiling's engine side on a real shard: the searches compiled from a shard another process
wrote fuse to the same top as the store answers, the timed loops run them, and overwriting
points with themselves leaves the answers as they were; a search planned without trigrams keeps
its words."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.ceiling import engine
from bench.load import workload
from core.enums import FusionMode
from core.schemas.collection import CollectionConfig
from core.vectors import SparseVector
from search.fusion import Retriever
from store.edge import convert as edge_convert
from store.edge.store import EdgeStore
from store.ids import DocIds
from store.protocol import ArmQuery
from tests.contract.conftest import COLLECTION, SCHEMA, point


async def test_compiled_searches_name_the_documents_the_store_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = await EdgeStore.open(tmp_path)
    await store.create_collection(COLLECTION, SCHEMA)
    dense = {"near": [1.0, 0, 0, 0], "close": [1.0, 1.0, 0, 0], "far": [-1.0, 0, 0, 0]}
    await store.upsert(COLLECTION, [point(d, v) for d, v in dense.items()])
    await store.close()
    monkeypatch.setattr(edge_convert, "_IDS", DocIds())  # as if the worker wrote them
    search = engine.Planned(
        [ArmQuery("dense", [2.0, 0, 0, 0], 3)], [Retriever((0,), 1.0)], FusionMode.LINEAR, 2
    )
    with engine.open_shard(tmp_path, COLLECTION) as (shard, schema):
        [compiled] = engine.compile_all(shard, schema, [search])
        assert compiled.top_docs == ["near", "close"]
        assert compiled.fused_docs == ["near", "close"]
        for work in (engine.summed_and_retrieve, engine.batch_only):
            timing = engine.timed(work(shard, [compiled]), 1, threads=1, seconds=0.2)
            assert timing.searches > 0
        # Overwritten with themselves: a new version each, the same answers.
        assert engine.churned(shard, 0.7) == 2
        assert shard.info().points_count == 3
        [again] = engine.compile_all(shard, schema, [search])
        assert again.top_docs == ["near", "close"]


def test_a_search_planned_without_trigrams_keeps_only_its_word_terms() -> None:
    config = CollectionConfig.model_validate(workload.collection_body("keyword"))
    body: dict[str, object] = {"query": "Protein binding misfolds", "limit": 10}
    full = engine.plan(config, body)
    wordy = engine.plan(config, body, trigrams=False)
    assert [arm.slot for arm in wordy.arms] == [arm.slot for arm in full.arms]
    terms = {}
    for with_all, words in zip(full.arms, wordy.arms, strict=True):
        assert isinstance(with_all.vector, SparseVector) and isinstance(words.vector, SparseVector)
        assert words.vector.indices  # the words themselves stay
        terms[with_all.slot] = set(with_all.vector.indices), set(words.vector.indices)
    # Only the main field's arm asks for trigrams (search.planning.plan_arms): the name arm's
    # terms are its words either way.
    assert terms["keyword.content"][1] < terms["keyword.content"][0]
    assert terms["keyword.name"][1] == terms["keyword.name"][0]
