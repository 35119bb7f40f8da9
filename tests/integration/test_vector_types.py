"""Every vector type end to end: custom, precomputed, sparse_model, the lexical types, languages."""

from __future__ import annotations

import asyncio
import math
import uuid
from pathlib import Path
from typing import Any

import amgix_client
import httpx
import pytest

from core.enums import VectorType
from core.lexical import LexicalParams, document_vector
from harness.stack import StackFactory
from tests.fixtures.tiny_mlm import build
from tests.integration.helpers import MODEL, create, doc, search_ids, texts_embedded

TINY_SPLADE = "test-org/tiny-splade"


def fresh(client: httpx.Client, config: dict[str, Any]) -> str:
    name = f"v{uuid.uuid4().hex[:10]}"
    create(client, name, config)
    return name


def upsert(client: httpx.Client, name: str, document: dict[str, Any]) -> httpx.Response:
    return client.post(f"/v1/collections/{name}/documents/sync", json=document)


def upsert_ok(client: httpx.Client, name: str, *documents: dict[str, Any]) -> None:
    for document in documents:
        response = upsert(client, name, document)
        assert response.status_code == 200, response.text


def stored_vectors(client: httpx.Client, name: str, doc_id: str) -> dict[str, dict[str, Any]]:
    """The document's vectors from GET ?with_vectors=true, by "<vector>.<field>"."""
    response = client.get(f"/v1/collections/{name}/documents/{doc_id}?with_vectors=true")
    assert response.status_code == 200, response.text
    return {f"{v['vector_name']}.{v['field']}": v for v in response.json()["vectors"]}


def lexical(kind: str, **vector: Any) -> dict[str, Any]:
    return {"vectors": [{"name": "lx", "type": kind, **vector}]}


# --- dense_custom and sparse_custom ---------------------------------------------------------


def custom_config() -> dict[str, Any]:
    return {
        "vectors": [
            {"name": "emb", "type": "dense_custom", "dimensions": 3},
            {"name": "sp", "type": "sparse_custom", "top_k": 2, "index_fields": ["name"]},
        ]
    }


def test_custom_vectors_are_stored_normalised_and_searchable(
    client: httpx.Client,
) -> None:
    name = fresh(client, custom_config())
    upsert_ok(
        client,
        name,
        doc(
            "a",
            "first",
            custom_vectors=[
                {"vector_name": "emb", "field": "content", "vector": [3, 0, 4]},
                {"vector_name": "sp", "field": "name", "vector": [[5, 0.4], [3, 0.9]]},
            ],
        ),
        doc(
            "b",
            "second",
            custom_vectors=[{"vector_name": "emb", "field": "content", "vector": [0, 1, 0]}],
        ),
    )
    vectors = stored_vectors(client, name, "a")
    assert vectors["emb.content"]["vector_type"] == "dense_custom"
    assert vectors["emb.content"]["dense_vector"] == pytest.approx([0.6, 0.0, 0.8], abs=1e-6)
    assert vectors["sp.name"]["vector_type"] == "sparse_custom"
    assert vectors["sp.name"]["sparse_indices"] == [3, 5]  # sorted by index
    found = client.post(
        f"/v1/collections/{name}/search",
        json={
            "query": "anything",
            "custom_vectors": [{"vector_name": "emb", "vector": [0, 2, 0.1]}],
        },
    )
    assert found.status_code == 200, found.text
    assert [hit["id"] for hit in found.json()["results"]][:1] == ["b"]


@pytest.mark.parametrize(
    ("custom", "message"),
    [
        ({"vector_name": "emb", "field": "content", "vector": [1, 2]}, "3 dimensions"),
        ({"vector_name": "emb", "field": "content", "vector": [[1, 0.5]]}, "not [index, value]"),
        ({"vector_name": "sp", "field": "name", "vector": [[1, 1], [1, 2]]}, "more than once"),
        ({"vector_name": "sp", "field": "content", "vector": [[1, 1]]}, "does not index field"),
        ({"vector_name": "nope", "field": "content", "vector": [1, 2, 3]}, "no vector 'nope'"),
    ],
)
def test_a_wrong_custom_vector_is_rejected_with_400(
    client: httpx.Client, custom: dict[str, Any], message: str
) -> None:
    name = fresh(client, custom_config())
    for path in ("documents/sync", "documents"):
        response = client.post(
            f"/v1/collections/{name}/{path}", json=doc("x", "text", custom_vectors=[custom])
        )
        assert response.status_code == 400, response.text
        assert message in response.json()["detail"]


# --- precomputed vectors ------------------------------------------------------------------------


def test_precomputed_vectors_are_used_instead_of_embedding(client: httpx.Client) -> None:
    name = fresh(
        client,
        {
            "vectors": [
                {"name": "kw", "type": "full_text"},
                {"name": "dense", "type": "dense_model", "model": MODEL},
            ]
        },
    )
    dense = [0.0] * 384
    dense[5] = 2.0
    given = [
        {
            "vector_name": "dense",
            "field": "content",
            "vector_type": "dense_model",
            "dense_vector": dense,
        },
        {
            "vector_name": "kw",
            "field": "content",
            "sparse_indices": [42, 7],
            "sparse_values": [1.0, 0.5],
        },
    ]
    upsert_ok(client, name, doc("p", "some text that is not embedded", 1, vectors=given))
    vectors = stored_vectors(client, name, "p")
    assert vectors["dense.content"]["dense_vector"][5] == pytest.approx(1.0)  # normalised
    assert vectors["kw.content"]["sparse_indices"] == [7, 42]
    assert vectors["kw.content"]["vector_type"] == "full_text"
    # the same precomputed vectors again: nothing to re-vectorize; plain text: embedded once
    upsert_ok(client, name, doc("p", "some text that is not embedded", 2, vectors=given))
    assert texts_embedded(client, name) == 0
    upsert_ok(client, name, doc("p", "now the text is embedded", 3))
    assert texts_embedded(client, name) == 1
    assert stored_vectors(client, name, "p")["kw.content"]["sparse_indices"] != [7, 42]


def test_a_precomputed_vector_of_the_wrong_shape_is_rejected_with_400(
    client: httpx.Client,
) -> None:
    name = fresh(client, {"vectors": [{"name": "kw", "type": "full_text"}]})
    wrong = {"vector_name": "kw", "field": "content", "dense_vector": [1.0, 2.0]}
    response = upsert(client, name, doc("x", "text", vectors=[wrong]))
    assert response.status_code == 400 and "is sparse" in response.json()["detail"]


def test_amgix_client_reads_documents_with_vectors(client: httpx.Client) -> None:
    name = fresh(
        client, {"vectors": [{"name": "kw", "type": "keyword"}, *custom_config()["vectors"]]}
    )
    upsert_ok(
        client,
        name,
        doc(
            "c",
            "red bicycle",
            custom_vectors=[{"vector_name": "emb", "field": "content", "vector": [1, 1, 1]}],
        ),
    )

    async def read() -> Any:
        configuration = amgix_client.Configuration(host=str(client.base_url).rstrip("/"))
        async with amgix_client.ApiClient(configuration) as api_client:
            return await amgix_client.AmgixApi(api_client).get_document(
                name, "c", with_vectors=True
            )

    got = asyncio.run(read())
    assert {(v.vector_name, v.vector_type) for v in got.vectors} == {
        ("kw", "wmtr"),
        ("emb", "dense_custom"),
    }


# --- lexical types --------------------------------------------------------------------------


def test_full_text_matches_an_inflection(client: httpx.Client) -> None:
    name = fresh(client, lexical("full_text"))
    upsert_ok(client, name, doc("r", "She runs every morning"), doc("o", "Oranges are sweet"))
    assert search_ids(client, name, "running") == ["r"]


def test_trigrams_match_a_typo(client: httpx.Client) -> None:
    name = fresh(client, lexical("trigrams"))
    upsert_ok(client, name, doc("t", "Kubernetes deployment guide"), doc("o", "Baking bread"))
    assert search_ids(client, name, "kubernets")[:1] == ["t"]


def test_whitespace_matches_exact_tokens_and_drops_stop_words(client: httpx.Client) -> None:
    name = fresh(client, lexical("whitespace"))
    upsert_ok(client, name, doc("e", "The runner wins"), doc("s", "the of and"))
    assert search_ids(client, name, "runner") == ["e"]
    assert search_ids(client, name, "running") == []  # no stemming
    assert search_ids(client, name, "the") == []  # stop words are not indexed
    (empty,) = stored_vectors(client, name, "s").values()  # stored empty, as Amgix does
    assert (empty["sparse_indices"], empty["sparse_values"]) == ([], [])


@pytest.mark.parametrize("kind", ["full_text", "trigrams", "whitespace", "wmtr"])
def test_lexical_vectors_keep_at_most_top_k_entries(client: httpx.Client, kind: str) -> None:
    name = fresh(client, lexical(kind, top_k=5))
    text = "alpha bravo charlie delta echo foxtrot golf hotel india juliett kilo lima"
    upsert_ok(client, name, doc("k", text))
    assert len(stored_vectors(client, name, "k")["lx.content"]["sparse_indices"]) == 5


def test_wmtr_word_ratio_decides_the_split_between_words_and_trigrams(
    client: httpx.Client,
) -> None:
    text = "alpha bravo charlie delta echo"
    indices = {}
    for ratio in (20, 80):
        name = fresh(client, lexical("wmtr", top_k=10, wmtr_word_ratio=ratio))
        upsert_ok(client, name, doc("w", text))
        indices[ratio] = stored_vectors(client, name, "w")["lx.content"]["sparse_indices"]
        params = LexicalParams(VectorType.WMTR, top_k=10, word_ratio=ratio)
        assert indices[ratio] == document_vector(text, params, 0).vector.indices
    assert indices[20] != indices[80]


# --- languages ------------------------------------------------------------------------------


def test_language_default_code_de_finds_haeuser_with_haus(client: httpx.Client) -> None:
    german = fresh(client, lexical("full_text", language_default_code="de"))
    english = fresh(client, lexical("full_text"))
    for name in (german, english):
        upsert_ok(client, name, doc("h", "Alte Häuser am Fluss"), doc("b", "Ein Baum im Garten"))
    assert search_ids(client, german, "Haus") == ["h"]
    assert search_ids(client, english, "Haus") == []


def test_language_detect_stems_a_german_document_in_an_english_collection(
    client: httpx.Client,
) -> None:
    text = "Die alten Häuser stehen am Fluss und die Kinder spielen im Garten"
    detecting = fresh(client, lexical("full_text", language_detect=True, language_confidence=0.8))
    plain = fresh(client, lexical("full_text"))
    for name in (detecting, plain):
        upsert_ok(client, name, doc("g", text), doc("e", "Houses by the river"))
    assert search_ids(client, detecting, "Haus") == ["g"]
    assert search_ids(client, plain, "Haus") == []


# --- sparse_model ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("models")
    build(root / TINY_SPLADE)
    return root


def test_sparse_model_collection_indexes_and_searches_with_a_local_masked_lm(
    make_stack: StackFactory, model_dir: Path
) -> None:
    stack = make_stack({"BRAID_MODEL_DIR": str(model_dir)})
    with httpx.Client(base_url=stack.base_url, timeout=60.0) as http:
        for bad_model in ("nobody/missing-splade", MODEL):  # MiniLM has no MLM head
            config = {"vectors": [{"name": "sp", "type": "sparse_model", "model": bad_model}]}
            response = http.post("/v1/collections/bad", json=config)
            assert response.status_code == 400, response.text
            assert response.json()["detail"].startswith("Model validation failed")
        name = fresh(
            http,
            {
                "vectors": [
                    {"name": "sp", "type": "sparse_model", "model": TINY_SPLADE, "top_k": 24}
                ]
            },
        )
        upsert_ok(
            http,
            name,
            doc("cat", "the cat sat on the mat"),
            doc("physics", "quantum physics lecture notes"),
            doc("apple", "a red apple on a green tree"),
        )
        vector = stored_vectors(http, name, "cat")["sp.content"]
        assert vector["vector_type"] == "sparse_model"
        assert 0 < len(vector["sparse_indices"]) <= 24
        assert all(v > 0 and math.isfinite(v) for v in vector["sparse_values"])
        assert search_ids(http, name, "physics notes")[0] == "physics"
        assert search_ids(http, name, "cat on a mat")[0] == "cat"
