"""The query pipeline (search/querying.py) end to end, as a search answer shows it: fusion over
the candidate pool, the scores each arm reports, limits and thresholds, filters, groups, facets
and joins.

The store is the real embedded engine in a temporary folder; collections are made from their
config as the worker makes them, and documents are indexed with the worker's own lexical and
custom vectors and payloads (worker/indexing.py), so no encoder and no Redis take part. The
catalog the joins read is a table of the configs made here. Searches only read, so the module
builds its collections once (each write is flushed to disk, the slow part on a loaded machine).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, cast

import pytest
import pytest_asyncio
from redis.asyncio import Redis

from core.bus import Bus
from core.catalog import Catalog
from core.enums import OpType
from core.errors import InvalidInput
from core.lexical import document_vector
from core.schemas.collection import CollectionConfig
from core.schemas.document import Document
from core.schemas.search import SearchQuery, SearchResponse, SearchResult
from search import joining
from search.planning import POOL_WINDOW
from search.querying import QueryPipeline
from store.edge.store import EdgeStore
from store.payload import to_payload
from store.protocol import PointWrite
from store.slots import slots, store_schema
from store.vectorizer import Vectorizer
from worker.indexing import Write, local_vectors, with_batch_averages

pytestmark = pytest.mark.asyncio(loop_scope="module")  # the loop of the module's store

T0 = datetime(2026, 1, 1, tzinfo=UTC)

# One full_text vector over two fields: words only (no trigrams), so which document matches a
# query, and how well, reads off its text. Naming both fields in vector_options makes each field
# a retriever of its own (search/planning.py); without options the vector is one retriever.
TITLED = [{"name": "ft", "type": "full_text", "index_fields": ["name", "content"]}]
BY_FIELD = [{"vector_name": "ft", "field": "name"}, {"vector_name": "ft", "field": "content"}]
# Two vectors, one field each: two retrievers whatever the fusion.
PAIRED = [
    {"name": "title", "type": "full_text", "index_fields": ["name"]},
    {"name": "body", "type": "full_text", "index_fields": ["content"]},
]
CONTENT = [{"name": "ft", "type": "full_text", "index_fields": ["content"]}]
MODES = [None, "rrf", "linear"]  # Braid's default fusion, then Amgix's two


def doc(doc_id: str, content: str | None = None, **fields: Any) -> dict[str, Any]:
    """A document body; `fields` are its other Document fields (name, tags, metadata...)."""
    return {"id": doc_id, "content": content, **fields}


def repeated(word: str, times: int) -> str:
    """A text whose BM25 score for `word` grows with `times`: it ranks documents."""
    return " ".join([word] * times)


def ids(answer: SearchResponse) -> list[str]:
    return [result.id for result in answer.results]


def scores(answer: SearchResponse) -> dict[str, float]:
    return {result.id: result.score for result in answer.results}


def result(answer: SearchResponse, doc_id: str) -> SearchResult:
    return next(r for r in answer.results if r.id == doc_id)


def spy(store: EdgeStore, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the store's queries from now on, each still answered by the engine."""
    asked: list[str] = []

    def counting(name: str) -> Callable[..., Awaitable[Any]]:
        query = getattr(store, name)

        async def counted(*args: Any) -> Any:
            asked.append(name)
            return await query(*args)

        return counted

    for name in ("query_arms", "query_summed"):
        monkeypatch.setattr(store, name, counting(name))
    return asked


class Configs:
    """The catalog as the Joiner reads it: the config of each collection made here."""

    def __init__(self) -> None:
        self.configs: dict[str, CollectionConfig] = {}

    async def get(self, name: str) -> CollectionConfig | None:
        return self.configs.get(name)


class Braid:
    """Collections in a real store, and the QueryPipeline that answers searches over them."""

    def __init__(self, store: EdgeStore) -> None:
        self.store = store
        self.catalog = Configs()
        # Lexical and custom query vectors are made here; the bus and Redis carry model work
        # only, which none of these collections has.
        vectorizer = Vectorizer(cast(Bus, None), cast(Redis, None), timeout_s=1.0)
        self.searcher = QueryPipeline(store, vectorizer, cast(Catalog, self.catalog))

    async def create(
        self,
        name: str,
        vectors: list[dict[str, Any]] | None = None,
        indexes: dict[str, str] | None = None,
    ) -> None:
        """A collection as worker/admin.py creates one (no model to probe here)."""
        config = CollectionConfig.model_validate(
            {
                "vectors": vectors,
                "metadata_indexes": [{"key": k, "type": t} for k, t in (indexes or {}).items()],
            }
        )
        await self.store.create_collection(name, store_schema(config))
        self.catalog.configs[name] = config

    async def write(self, name: str, *bodies: dict[str, Any]) -> None:
        """Index documents as one batch of the worker's Indexer: its vectors over the batch's
        average lengths, and its payloads."""
        config = self.catalog.configs[name]
        documents = [Document.model_validate({"timestamp": T0, **body}) for body in bodies]
        writes = [Write(OpType.UPSERT, d.id, d.timestamp, d) for d in documents]
        all_slots = slots(config)
        averages = with_batch_averages(all_slots, writes, {})
        points = []
        for document in documents:
            local = local_vectors(config, all_slots, document, {})
            for slot, text in local.lexical:
                params = slot.lexical_params()
                local.settle(slot, document_vector(text, params, averages.get(slot.name, 0.0)))
            assert not local.to_embed, "a model vector would need an encoder"
            hashes = {slot.name: slot.text_hash(document) for slot in all_slots}
            payload = to_payload(document, config.store_content, hashes, local.lengths)
            points.append(PointWrite(document.id, payload, local.vectors))
        await self.store.upsert(name, points)

    async def search(self, name: str, query: str, **body: Any) -> SearchResponse:
        request = SearchQuery.model_validate({"query": query, **body})
        return await self.searcher.search(name, request, self.catalog.configs[name])


# --- the collections the tests search ---


SKY = [
    doc("name_top", "rocks", name="comet"),
    doc("both", "comet tail", name="comet tail"),
    doc("content_top", "comet", name="rocks"),
    doc("unrelated", "dust", name="rocks"),
]


async def sky(braid: Braid) -> None:
    """`sky`: `both` is second for `comet` by name and second by content; `name_top` and
    `content_top` lead one each; `unrelated` matches neither."""
    await braid.create("sky", TITLED)
    await braid.write("sky", *SKY)


async def pair(braid: Braid) -> None:
    """`pair`: `sky`'s documents under PAIRED, a title vector and a body vector."""
    await braid.create("pair", PAIRED)
    await braid.write("pair", *SKY)


async def crowd(braid: Braid) -> None:
    """`crowd`: 24 documents, 22 of them matching `comet` in name, content or both, to many
    degrees: more than the smallest window an arm fetches."""
    await braid.create("crowd", TITLED)
    await braid.write(
        "crowd",
        *(
            doc(
                f"d{i:02}",
                repeated("comet", i % 5) + " " + repeated("dust", i % 7 + 1),
                name=repeated("comet", i % 4) + " " + repeated("rocks", i % 3 + 1),
            )
            for i in range(24)
        ),
    )


async def wide(braid: Braid) -> None:
    """`wide`: `target` alone matches `comet` by name; by content it is the weakest of
    POOL_WINDOW + 6 matches."""
    await braid.create("wide", PAIRED)
    crowd = [doc(f"c{i:02}", "comet comet", name="rocks") for i in range(POOL_WINDOW + 5)]
    wordy = "comet " + " ".join(f"word{i}" for i in range(30))
    await braid.write("wide", *crowd, doc("target", wordy, name="comet"))


async def photos(braid: Braid) -> None:
    """`photos`: tags and a year to filter on."""
    await braid.create("photos", TITLED, indexes={"year": "integer"})
    await braid.write(
        "photos",
        doc("old", "comet", name="Halley", tags=["photo"], metadata={"year": 1990}),
        doc("new", "comet tail", name="rocks", tags=["photo"], metadata={"year": 2020}),
        doc("untagged", "comet", name="comet", metadata={"year": 2021}),
    )


def emb(vector: list[float]) -> list[dict[str, Any]]:
    return [{"vector_name": "emb", "field": "content", "vector": vector}]


async def mixed(braid: Braid) -> None:
    """`mixed`: a lexical vector and a dense_custom one; `near` is near [0, 1] and has no
    word of `comet`."""
    await braid.create(
        "mixed", [*CONTENT, {"name": "emb", "type": "dense_custom", "dimensions": 2}]
    )
    await braid.write(
        "mixed",
        doc("word", "comet", custom_vectors=emb([1.0, 0.0])),
        doc("near", "dust", custom_vectors=emb([0.0, 1.0])),
    )


async def notes(braid: Braid) -> None:
    """`notes`: no vectors (the noop one); a document is stored, never found."""
    await braid.create("notes", None, indexes={"year": "integer"})
    await braid.write("notes", doc("a", "comet", metadata={"year": 1}))


async def papers(braid: Braid) -> None:
    """`papers`, ranked for `comet` in the order written: three by ann, one by bob, three with
    no author."""
    await braid.create("papers", CONTENT, indexes={"author": "string"})
    order = [("a1", "ann"), ("a2", "ann"), ("n1", None), ("a3", "ann"), ("b1", "bob")]
    order += [("n2", None), ("n3", None)]
    await braid.write(
        "papers",
        *(
            doc(d, repeated("comet", 10 - i), metadata={"author": a} if a else {})
            for i, (d, a) in enumerate(order)
        ),
    )


async def anns(braid: Braid) -> None:
    """`anns`: for `comet` ann's seven papers lead, bob's comes last."""
    await braid.create("anns", CONTENT, indexes={"author": "string"})
    await braid.write(
        "anns",
        *(doc(f"a{i}", repeated("comet", 12 - i), metadata={"author": "ann"}) for i in range(7)),
        doc("b0", "comet", metadata={"author": "bob"}),
    )


async def tallies(braid: Braid) -> None:
    """`tallies`: three documents match `comet`, one does not."""
    await braid.create("tallies", CONTENT, indexes={"author": "string", "year": "integer"})
    await braid.write(
        "tallies",
        doc("a", "comet", metadata={"author": "ann", "year": 2020}),
        doc("b", "comet tail", metadata={"author": "ann", "year": 2021}),
        doc("c", "comet dust", metadata={"author": "bob"}),
        doc("d", "dust", metadata={"author": "cyd", "year": 2020}),
    )


async def seventy(braid: Braid) -> None:
    """`seventy`: 70 documents by ann that match `comet` alike."""
    await braid.create("seventy", CONTENT, indexes={"author": "string"})
    await braid.write(
        "seventy", *(doc(f"d{i:02}", "comet", metadata={"author": "ann"}) for i in range(70))
    )


async def library(braid: Braid) -> None:
    """`books` and the collections joined to them: `covers` by document id, `reviews` by
    their `book` key, `shelves` by the `series` key of both (or the books' `cabinet`, which
    they do not index)."""
    await braid.create("books", CONTENT, indexes={"series": "string"})
    await braid.write(
        "books",
        doc("b1", "comet comet", metadata={"series": "space"}),
        doc("b2", "comet", metadata={"series": "sea"}),
        doc("b3", "comet dust dust", metadata={"cabinet": "space"}),  # a key not indexed
    )
    await braid.create("covers")
    await braid.write("covers", doc("b1", "blue cover"), doc("x9", "no such book"))
    await braid.create("reviews", indexes={"book": "string", "stars": "integer"})
    await braid.write(
        "reviews",
        doc("r2", "meh", metadata={"book": "b1", "stars": 2}),
        doc("r1", "great", metadata={"book": "b1", "stars": 5}),
        doc("r3", "fine", metadata={"book": "b2", "stars": 4}),
    )
    await braid.create("shelves", indexes={"series": "string"})
    await braid.write(
        "shelves",
        doc("s1", "top shelf", metadata={"series": "space"}),
        doc("s2", "low shelf", metadata={"series": "space"}),
    )


async def volumes(braid: Braid) -> None:
    """`volumes`, whose integer `number` names a document of `chapters` by its id."""
    await braid.create("volumes", CONTENT, indexes={"number": "integer"})
    await braid.write(
        "volumes",
        doc("v1", "comet comet", metadata={"number": 7}),
        doc("v2", "comet", metadata={"number": 8}),
    )
    await braid.create("chapters")
    await braid.write("chapters", doc("7", "the seventh"), doc("9", "the ninth"))


CORPORA: list[Callable[[Braid], Awaitable[None]]] = [
    sky,
    pair,
    crowd,
    wide,
    photos,
    mixed,
    notes,
    papers,
    anns,
    tallies,
    seventy,
    library,
    volumes,
]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def braid(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Braid]:
    store = await EdgeStore.open(tmp_path_factory.mktemp("querying") / "store")
    try:
        built = Braid(store)
        await asyncio.gather(*(corpus(built) for corpus in CORPORA))  # their flushes overlap
        yield built
    finally:
        await store.close()


# --- fusion of the retrievers over the candidate pool ---


async def test_with_rrf_a_document_two_retrievers_find_outranks_the_best_of_one(
    braid: Braid,
) -> None:
    """RRF, Σ weight / (2 + rank): second in both lists (1/4 + 1/4) beats first in one (1/3);
    a document no arm found is no candidate."""
    answer = await braid.search("sky", "comet", vector_options=BY_FIELD, fusion_mode="rrf")
    assert ids(answer)[0] == "both"
    assert scores(answer) == pytest.approx({"both": 1 / 2, "name_top": 1 / 3, "content_top": 1 / 3})


async def test_explicit_linear_scores_the_last_of_each_list_zero(braid: Braid) -> None:
    """Amgix's linear min-max spans each list's own scores: the second of two scores 0 there,
    so a document second in both lists comes last whatever it matched."""
    answer = await braid.search("sky", "comet", vector_options=BY_FIELD, fusion_mode="linear")
    assert ids(answer)[-1] == "both"
    assert scores(answer) == pytest.approx({"both": 0.0, "name_top": 1.0, "content_top": 1.0})


@pytest.mark.parametrize(
    "options",
    [BY_FIELD, [*BY_FIELD, {"vector_name": "ft", "field": "name", "weight": 0}]],
    ids=["fields listed", "and one weighted 0"],
)
async def test_by_default_a_vectors_fields_listed_one_by_one_rank_as_the_vector_asked_whole(
    braid: Braid, options: list[dict[str, Any]]
) -> None:
    """Amgix clients name a field in every option: those arms are still one retriever summing
    its fields, not rivals fused by rank (there `both`, second in each list, would come last)."""
    whole = await braid.search("sky", "comet", raw_scores=True)
    listed = await braid.search("sky", "comet", vector_options=options, raw_scores=True)
    assert ids(listed) == ids(whole) == ["both", "content_top", "name_top"]
    assert scores(listed) == pytest.approx(scores(whole))


async def test_by_default_a_fields_weight_tilts_its_vectors_one_retriever(braid: Braid) -> None:
    """Weights of a vector's listed fields scale their share of its sum: a heavy title wins."""
    options = [{**BY_FIELD[0], "weight": 5.0}, BY_FIELD[1]]
    answer = await braid.search("sky", "comet", vector_options=options)
    assert ids(answer)[:2] == ["both", "name_top"]


async def test_the_default_fusion_scores_each_list_against_the_whole_pool(braid: Braid) -> None:
    """Braid's default: a retriever's min-max reaches down to the pool documents it did not
    match (0 there), so the second of a list keeps most of its score, and the document both
    retrievers found well leads."""
    answer = await braid.search("pair", "comet")
    assert ids(answer)[0] == "both"
    fused = scores(answer)
    assert set(fused) == {"both", "name_top", "content_top"}
    assert (fused["name_top"], fused["content_top"]) == pytest.approx((1.0, 1.0))
    assert 1.0 < fused["both"] < 2.0


@pytest.mark.parametrize(
    ("weights", "first"),
    [((1.0, 1.0), "both"), ((4.0, 1.0), "name_top"), ((1.0, 4.0), "content_top")],
)
async def test_a_retrievers_weight_decides_between_its_best_and_a_shared_document(
    braid: Braid, weights: tuple[float, float], first: str
) -> None:
    """Weighted RRF: 4/3 for the first of a list weighted 4 beats 4/4 + 1/4 for its second."""
    options = [{**option, "weight": w} for option, w in zip(BY_FIELD, weights, strict=True)]
    answer = await braid.search("sky", "comet", vector_options=options, fusion_mode="rrf")
    assert ids(answer)[0] == first


async def test_a_zero_weight_leaves_its_arm_out_of_the_search(braid: Braid) -> None:
    options = [{**BY_FIELD[0], "weight": 0}, BY_FIELD[1]]
    answer = await braid.search("sky", "comet", vector_options=options, raw_scores=True)
    assert set(ids(answer)) == {"content_top", "both"}  # name_top matches by its name only
    assert {s.field for r in answer.results for s in r.vector_scores} == {"content"}


@pytest.mark.parametrize("mode", MODES)
async def test_raw_scores_report_each_arms_raw_score_and_rank(
    braid: Braid, mode: str | None
) -> None:
    answer = await braid.search(
        "sky", "comet", vector_options=BY_FIELD, fusion_mode=mode, raw_scores=True
    )
    both, name_top = result(answer, "both"), result(answer, "name_top")
    assert [(s.field, s.vector, s.rank) for s in both.vector_scores] == [
        ("name", "ft", 2),
        ("content", "ft", 2),
    ]
    assert [(s.field, s.vector, s.rank) for s in name_top.vector_scores] == [("name", "ft", 1)]
    assert 0 < both.vector_scores[0].score < name_top.vector_scores[0].score  # raw, not fused
    plain = await braid.search("sky", "comet", vector_options=BY_FIELD, fusion_mode=mode)
    assert all(r.vector_scores == [] for r in plain.results)
    assert ids(plain) == ids(answer)


async def test_the_default_fusion_scores_a_pool_document_past_an_arms_window(
    braid: Braid,
) -> None:
    """A document one retriever found is scored by the other too, even where that one ranks it
    beyond the candidates it fetched (POOL_WINDOW): its raw score there comes back."""
    answer = await braid.search("wide", "comet", raw_scores=True)
    by_field = {s.field: s for s in result(answer, "target").vector_scores}
    assert by_field["name"].rank == 1
    assert by_field["content"].score > 0
    assert by_field["content"].rank > POOL_WINDOW  # after the window's, where it was asked


@pytest.mark.parametrize("mode", MODES)
async def test_a_one_retriever_search_ranks_the_same_with_or_without_raw_scores(
    braid: Braid, monkeypatch: pytest.MonkeyPatch, mode: str | None
) -> None:
    """Without raw scores one retriever's search is ranked by the store's summed query; with
    them, by fusing its arms' hits: the answer is the same."""
    asked = spy(braid.store, monkeypatch)
    by_store = await braid.search("sky", "comet", limit=2, fusion_mode=mode)
    # The candidates' summed scores all differ: no tie for fusion to break, so the store's
    # ranking is the answer.
    assert asked == ["query_summed"]
    asked.clear()
    by_fusion = await braid.search("sky", "comet", limit=2, fusion_mode=mode, raw_scores=True)
    assert asked == ["query_arms"]
    assert ids(by_store) == ids(by_fusion) == ["both", "content_top"]
    assert [r.score for r in by_store.results] == pytest.approx(
        [r.score for r in by_fusion.results]
    )


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("options", [None, BY_FIELD], ids=["one retriever", "two retrievers"])
async def test_a_smaller_limit_answers_the_head_of_a_larger_ones_ranking(
    braid: Braid, mode: str | None, options: list[dict[str, Any]] | None
) -> None:
    body = {"vector_options": options, "fusion_mode": mode}
    whole = await braid.search("crowd", "comet", limit=20, **body)
    assert len(whole.results) == 20
    for limit in (1, 3, 8):
        head = await braid.search("crowd", "comet", limit=limit, **body)
        assert ids(head) == ids(whole)[:limit]


@pytest.mark.parametrize("raw_scores", [False, True], ids=["store ranks", "fusion ranks"])
async def test_score_threshold_cuts_on_the_fused_score(braid: Braid, raw_scores: bool) -> None:
    ranked = await braid.search("sky", "comet", raw_scores=raw_scores)
    assert len(ranked.results) == 3
    middle = ranked.results[1].score
    cut = await braid.search("sky", "comet", raw_scores=raw_scores, score_threshold=middle)
    assert ids(cut) == ids(ranked)[:2]


async def test_an_rrf_threshold_keeps_only_what_both_retrievers_found(braid: Braid) -> None:
    body = {"vector_options": BY_FIELD, "fusion_mode": "rrf", "score_threshold": 0.4}
    assert ids(await braid.search("sky", "comet", **body)) == ["both"]


# --- filters, excluded fields, custom vectors ---


@pytest.mark.parametrize("mode", MODES)
async def test_tag_and_metadata_filters_hold_in_every_arm(braid: Braid, mode: str | None) -> None:
    body = {"vector_options": BY_FIELD, "fusion_mode": mode, "document_tags": ["photo"]}
    assert set(ids(await braid.search("photos", "comet", **body))) == {"old", "new"}
    dated = await braid.search("photos", "comet", metadata_filter="year >= 2000", **body)
    assert ids(dated) == ["new"]


async def test_excluded_fields_come_back_null_and_the_others_whole(braid: Braid) -> None:
    answer = await braid.search("photos", "Halley", exclude=["content", "metadata"])
    [old] = answer.results
    assert (old.content, old.metadata) == (None, None)
    assert (old.id, old.name, old.tags, old.timestamp) == ("old", "Halley", ["photo"], T0)
    [whole] = (await braid.search("photos", "Halley")).results
    assert (whole.content, whole.metadata) == ("comet", {"year": 1990})


async def test_a_custom_vector_takes_part_only_with_a_query_vector(braid: Braid) -> None:
    assert ids(await braid.search("mixed", "comet")) == ["word"]
    query_vector = [{"vector_name": "emb", "vector": [0.1, 1.0]}]
    fused = await braid.search("mixed", "comet", custom_vectors=query_vector)
    assert set(ids(fused)) == {"word", "near"}
    alone = await braid.search(
        "mixed", "comet", vector_options=[{"vector_name": "emb"}], custom_vectors=query_vector
    )
    assert ids(alone) == ["near", "word"]


async def test_a_collection_without_searchable_vectors_answers_nothing(braid: Braid) -> None:
    answer = await braid.search("notes", "comet", facets=True)
    assert answer.results == [] and answer.facet_counts == {}


# --- groups ---


async def test_a_search_ranks_the_papers_in_the_order_written(braid: Braid) -> None:
    """The premise of the group tests."""
    answer = await braid.search("papers", "comet")
    assert ids(answer) == ["a1", "a2", "n1", "a3", "b1", "n2", "n3"]


@pytest.mark.parametrize(
    ("group_max", "limit", "expected"),
    [
        (1, 10, ["a1", "n1", "b1"]),
        (2, 10, ["a1", "a2", "n1", "b1", "n2"]),
        (2, 4, ["a1", "a2", "n1", "b1"]),
    ],
)
async def test_groups_keep_the_best_group_max_of_each_value_in_rank_order(
    braid: Braid, group_max: int, limit: int, expected: list[str]
) -> None:
    """Documents without the key are one more group, capped like the others."""
    answer = await braid.search(
        "papers", "comet", group_field="author", group_max=group_max, limit=limit
    )
    assert ids(answer) == expected


@pytest.mark.parametrize(("fetches", "expected"), [(1, ["a0"]), (2, ["a0", "b0"])])
async def test_groups_refetch_a_wider_window_while_too_few_groups_came_back(
    braid: Braid, fetches: int, expected: list[str]
) -> None:
    """limit 2 fetches 5 candidates, all ann's; a second round fetches 10 and finds bob's."""
    answer = await braid.search(
        "anns", "comet", group_field="author", group_max=1, limit=2, group_max_fetches=fetches
    )
    assert ids(answer) == expected


async def test_grouping_by_a_key_that_is_not_indexed_is_400(braid: Braid) -> None:
    with pytest.raises(InvalidInput, match="group_field"):
        await braid.search("papers", "comet", group_field="year")


# --- facets ---


async def test_facets_count_every_indexed_key_over_the_candidates_not_the_answer(
    braid: Braid,
) -> None:
    answer = await braid.search("tallies", "comet", limit=1, facets=True)
    assert len(answer.results) == 1
    assert answer.facet_counts == {"author": {"ann": 2, "bob": 1}, "year": {"2020": 1, "2021": 1}}
    assert (await braid.search("tallies", "comet")).facet_counts is None


async def test_facets_count_only_filtered_candidates_and_their_commonest_values(
    braid: Braid,
) -> None:
    answer = await braid.search(
        "tallies", "comet", facets=True, facet_options={"max_values": 1}, metadata_filter="year > 0"
    )
    assert answer.facet_counts == {"author": {"ann": 2}, "year": {"2020": 1}}


@pytest.mark.parametrize(("multiplier", "counted"), [(1, 50), (2, 60), (3, 70)])
async def test_facets_count_max_of_50_and_limit_times_prefetch_multiplier_candidates(
    braid: Braid, multiplier: int, counted: int
) -> None:
    """With limit 30 (45 candidates without facets) among 70 matches: 50, 60, then all 70."""
    options = {"prefetch_multiplier": multiplier}
    answer = await braid.search("seventy", "comet", limit=30, facets=True, facet_options=options)
    assert answer.facet_counts == {"author": {"ann": counted}}


async def test_facets_of_a_collection_without_metadata_indexes_are_empty(braid: Braid) -> None:
    assert (await braid.search("sky", "comet", facets=True)).facet_counts == {}


# --- joins ---


def joined(answer: SearchResponse, child: str) -> dict[str, list[str]]:
    """Each result's joined documents of `child`, by id."""
    return {r.id: [d["id"] for d in (r.joined or {})[child]] for r in answer.results}


async def test_a_join_by_id_attaches_the_child_of_the_same_id(braid: Braid) -> None:
    answer = await braid.search("books", "comet", join="covers")
    assert joined(answer, "covers") == {"b1": ["b1"], "b2": [], "b3": []}
    [cover] = (result(answer, "b1").joined or {})["covers"]
    assert cover["content"] == "blue cover" and cover["timestamp"] == "2026-01-01T00:00:00Z"


async def test_a_join_by_a_child_key_attaches_every_child_naming_the_parent_in_id_order(
    braid: Braid,
) -> None:
    answer = await braid.search("books", "comet", join="reviews[$id=$$.meta.book]")
    assert joined(answer, "reviews") == {"b1": ["r1", "r2"], "b2": ["r3"], "b3": []}


async def test_a_join_by_keys_on_both_sides_matches_their_values(braid: Braid) -> None:
    answer = await braid.search("books", "comet", join="shelves[$.meta.series=$$.meta.series]")
    assert joined(answer, "shelves") == {"b1": ["s1", "s2"], "b2": [], "b3": []}


async def test_a_join_from_an_integer_key_to_a_child_id_matches_its_digits(braid: Braid) -> None:
    """A document id is text: the integer 7 names the child "7"."""
    answer = await braid.search("volumes", "comet", join="chapters[$.meta.number=$$id]")
    assert joined(answer, "chapters") == {"v1": ["7"], "v2": []}


async def test_a_join_filter_keeps_only_the_children_it_matches(braid: Braid) -> None:
    answer = await braid.search("books", "comet", join="reviews[$id=$$.meta.book](stars >= 4)")
    assert joined(answer, "reviews") == {"b1": ["r1"], "b2": ["r3"], "b3": []}


async def test_several_joins_each_fill_their_own_list_and_no_join_adds_none(
    braid: Braid,
) -> None:
    answer = await braid.search("books", "comet", join=["covers", "reviews[$id=$$.meta.book]"])
    assert all(set(r.joined or {}) == {"covers", "reviews"} for r in answer.results)
    assert joined(answer, "covers")["b1"] == ["b1"]
    assert joined(answer, "reviews")["b1"] == ["r1", "r2"]
    plain = await braid.search("books", "comet")
    assert all(r.joined is None for r in plain.results)
    assert "joined" not in plain.model_dump()["results"][0]  # absent on the wire, not null


async def test_a_join_keyed_on_metadata_still_joins_when_the_answer_excludes_metadata(
    braid: Braid,
) -> None:
    answer = await braid.search(
        "books", "comet", join="shelves[$.meta.series=$$.meta.series]", exclude=["metadata"]
    )
    assert joined(answer, "shelves")["b1"] == ["s1", "s2"]
    b1 = result(answer, "b1")
    assert b1.metadata is None
    assert [shelf["metadata"] for shelf in (b1.joined or {})["shelves"]] == [None, None]


async def test_a_join_of_a_missing_collection_is_400_not_found(braid: Braid) -> None:
    with pytest.raises(InvalidInput, match="'gone' not found"):
        await braid.search("books", "comet", join="gone")


@pytest.mark.parametrize(
    "spec", ["reviews[$id=$$.meta.stars_text]", "shelves[$.meta.series=$$.meta.colour]"]
)
async def test_a_join_on_a_child_key_that_is_not_indexed_is_400(braid: Braid, spec: str) -> None:
    with pytest.raises(InvalidInput, match="join reviews|join shelves") as raised:
        await braid.search("books", "comet", join=spec)
    assert "metadata_indexes" in str(raised.value)


async def test_a_join_on_a_parent_key_that_is_not_indexed_reads_the_stored_metadata(
    braid: Braid,
) -> None:
    spec = "shelves[$.meta.cabinet=$$.meta.series]"
    for exclude in ([], ["metadata", "content"]):
        answer = await braid.search("books", "comet", join=spec, exclude=exclude)
        assert joined(answer, "shelves") == {"b1": [], "b2": [], "b3": ["s1", "s2"]}
        b3 = result(answer, "b3")
        assert (b3.metadata is None) == bool(exclude) and (b3.content is None) == bool(exclude)


async def test_a_join_of_a_missing_collection_is_400_even_when_nothing_matches(
    braid: Braid,
) -> None:
    with pytest.raises(InvalidInput, match="'gone' not found"):
        await braid.search("books", "no-such-word-anywhere", join="gone")


async def test_a_join_reads_its_children_page_by_page_up_to_its_bound(
    braid: Braid, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = "reviews[$id=$$.meta.book]"
    monkeypatch.setattr(joining, "PAGE", 1)
    paged = await braid.search("books", "comet", join=spec)
    assert joined(paged, "reviews") == {"b1": ["r1", "r2"], "b2": ["r3"], "b3": []}
    monkeypatch.setattr(joining, "MAX_CHILDREN", 2)
    bounded = await braid.search("books", "comet", join=spec)
    assert sum(len(children) for children in joined(bounded, "reviews").values()) == 2
