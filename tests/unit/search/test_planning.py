"""How a search is planned (search/planning.py): its arms, the retrievers fusion ranks, how many
candidates each arm fetches, and when the store ranks a search alone."""

from __future__ import annotations

import pytest

from core.enums import IndexField
from core.errors import InvalidInput
from core.schemas.collection import CollectionConfig
from core.schemas.search import SearchQuery
from search.fusion import Retriever
from search.planning import (
    DEFAULT_WINDOW,
    FIELD_WEIGHTS,
    POOL_WINDOW,
    Arm,
    candidate_window,
    plan_arms,
    plan_retrievers,
    store_ranks,
)

CONFIG = CollectionConfig.model_validate(
    {
        "vectors": [
            {"name": "kw", "type": "keyword", "index_fields": ["name", "description", "content"]},
            {"name": "titles", "type": "keyword", "index_fields": ["name"]},
        ]
    }
)


def _trigram_weights(body: dict[str, object]) -> list[tuple[str, float]]:
    arms = plan_arms(CONFIG, SearchQuery.model_validate(body))
    return [(arm.slot.name, arm.trigram_weight) for arm in arms]


def test_a_default_search_asks_each_vector_for_trigrams_on_its_main_field_only() -> None:
    assert _trigram_weights({"query": "kubernets"}) == [
        ("kw.name", 0.0),
        ("kw.description", 0.0),
        ("kw.content", 1.0),
        # A vector of one field: that field is its main one, so it still matches typos.
        ("titles.name", 1.0),
    ]


@pytest.mark.parametrize(
    ("fusion", "unset"),
    [
        # By default an option that sets no trigram weight follows the main-field rule...
        ({}, [0.0, 0.0, 1.0]),
        # ...and with a fusion_mode (Amgix's semantics) takes its default, 1.0, everywhere.
        ({"fusion_mode": "rrf"}, [1.0, 1.0, 1.0]),
    ],
)
def test_vector_options_keep_the_trigram_weight_they_ask_for(
    fusion: dict[str, object], unset: list[float]
) -> None:
    body: dict[str, object] = {
        "query": "kubernets",
        "vector_options": [
            {"vector_name": "kw", "field": "name", "wmtr_trigram_weight": 0.5},
            {"vector_name": "kw"},
        ],
        **fusion,
    }
    fields = ["kw.name", "kw.description", "kw.content"]
    assert _trigram_weights(body) == [("kw.name", 0.5), *zip(fields, unset, strict=True)]


def test_codes_keep_their_trigrams_in_the_fields_the_main_field_rule_leaves_to_words() -> None:
    arms = plan_arms(CONFIG, SearchQuery.model_validate({"query": "12lpy03"}))
    assert [(arm.slot.name, arm.code_trigrams) for arm in arms] == [
        ("kw.name", True),
        ("kw.description", True),
        ("kw.content", False),  # the main field has every trigram already
        ("titles.name", False),
    ]


# --- arms, retrievers, windows ---

MIXED = CollectionConfig.model_validate(
    {
        "vectors": [
            {"name": "kw", "type": "keyword", "index_fields": ["name", "content"]},
            {"name": "emb", "type": "dense_custom", "dimensions": 2},
            {"name": "none", "type": "noop"},
        ]
    }
)
QUERY_VECTOR = [{"vector_name": "emb", "vector": [1.0, 0.0]}]


def _plan(body: dict[str, object]) -> tuple[list[Arm], list[Retriever]]:
    arms = plan_arms(MIXED, SearchQuery.model_validate({"query": "dune", **body}))
    return arms, plan_retrievers(arms)


def test_a_default_search_has_an_arm_per_vector_and_field_and_a_retriever_per_vector() -> None:
    arms, retrievers = _plan({"custom_vectors": QUERY_VECTOR})
    assert [(arm.slot.name, arm.weight) for arm in arms] == [
        ("kw.name", 1.0),
        ("kw.content", 1.0),
        ("emb.content", 1.0),
    ]
    assert arms[2].custom == [1.0, 0.0]
    # One voice per vector: its fields summed with FIELD_WEIGHTS, a title less than the body.
    assert retrievers == [
        Retriever((0, 1), 1.0, (FIELD_WEIGHTS[IndexField.NAME], FIELD_WEIGHTS[IndexField.CONTENT])),
        Retriever((2,), 1.0, (FIELD_WEIGHTS[IndexField.CONTENT],)),
    ]


def test_a_default_search_leaves_out_a_custom_vector_without_a_query_vector() -> None:
    arms, retrievers = _plan({})
    assert [arm.slot.name for arm in arms] == ["kw.name", "kw.content"]
    assert len(retrievers) == 1


def test_by_default_every_option_of_a_vector_is_an_arm_of_its_one_retriever() -> None:
    """Field weights times each arm's share of the largest weight: equal weights give
    FIELD_WEIGHTS, as the vector asked whole."""
    arms, retrievers = _plan(
        {
            "vector_options": [
                {"vector_name": "kw", "field": "content", "weight": 2},
                {"vector_name": "emb", "field": "content"},
                {"vector_name": "kw", "field": "name", "weight": 0.5},
            ],
            "custom_vectors": QUERY_VECTOR,
        }
    )
    assert [arm.slot.name for arm in arms] == ["kw.content", "emb.content", "kw.name"]
    assert retrievers == [
        Retriever((0, 2), 2.0, (1.0, FIELD_WEIGHTS[IndexField.NAME] * 0.25)),
        Retriever((1,), 1.0, (FIELD_WEIGHTS[IndexField.CONTENT],)),
    ]
    equal = _plan(
        {"vector_options": [{"vector_name": "kw", "field": f} for f in ("name", "content")]}
    )
    assert equal[1] == _plan({})[1]


def test_with_a_fusion_mode_an_option_naming_a_field_is_a_retriever_alone() -> None:
    """Amgix's semantics where a request names its fusion: each option is one voice, and one
    without a field sums its fields."""
    arms, retrievers = _plan(
        {
            "fusion_mode": "rrf",
            "vector_options": [
                {"vector_name": "kw", "field": "content", "weight": 2},
                {"vector_name": "kw", "weight": 0.5},
            ],
        }
    )
    assert [arm.slot.name for arm in arms] == ["kw.content", "kw.name", "kw.content"]
    assert [(r.arms, r.weight) for r in retrievers] == [((0,), 2.0), ((1, 2), 0.5)]
    assert retrievers[1].field_weights == (
        FIELD_WEIGHTS[IndexField.NAME],
        FIELD_WEIGHTS[IndexField.CONTENT],
    )


def test_a_zero_weight_option_has_no_arm_and_a_noop_vector_none() -> None:
    arms, retrievers = _plan(
        {
            "vector_options": [
                {"vector_name": "kw", "field": "name", "weight": 0},
                {"vector_name": "kw", "field": "content"},
                {"vector_name": "none"},
            ]
        }
    )
    assert [arm.slot.name for arm in arms] == ["kw.content"]
    assert [r.arms for r in retrievers] == [(0,)]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"vector_options": [{"vector_name": "nope"}]}, "unknown vector_name 'nope'"),
        (
            {"vector_options": [{"vector_name": "kw", "field": "description"}]},
            "does not index field 'description'",
        ),
        ({"vector_options": [{"vector_name": "emb"}]}, "needs a query vector"),
        ({"custom_vectors": [{"vector_name": "kw", "vector": [1.0]}]}, "not a dense_custom"),
    ],
)
def test_options_the_collection_cannot_answer_are_400(
    body: dict[str, object], message: str
) -> None:
    with pytest.raises(InvalidInput, match=message):
        _plan(body)


@pytest.mark.parametrize(
    ("body", "arms", "pooled", "window"),
    [
        ({"limit": 10}, 1, False, 15),  # max(5, 1.5 × limit)
        ({"limit": 2}, 1, False, 5),
        ({"limit": 10}, 2, False, DEFAULT_WINDOW),  # fused arms see well past their top
        ({"limit": 10}, 2, True, POOL_WINDOW),  # the default fusion scores the whole pool
        ({"limit": 100}, 2, True, 150),
        ({"limit": 10, "facets": True}, 1, False, 50),  # facets count at least 50
        ({"limit": 40, "facets": True}, 1, False, 80),  # limit × prefetch_multiplier 2
        ({"limit": 20, "facets": True, "facet_options": {"prefetch_multiplier": 10}}, 2, True, 200),
    ],
)
def test_candidate_window_per_arm(
    body: dict[str, object], arms: int, pooled: bool, window: int
) -> None:
    query = SearchQuery.model_validate({"query": "dune", **body})
    assert candidate_window(query, arms, pooled) == window


@pytest.mark.parametrize(
    ("body", "retrievers", "alone"),
    [
        ({}, 1, True),
        ({"fusion_mode": "rrf", "score_threshold": 0.5, "join": "kids"}, 1, True),
        ({}, 2, False),  # the retrievers' lists are fused
        ({"group_field": "year"}, 1, False),  # groups and facets need each candidate's payload
        ({"facets": True}, 1, False),
        ({"raw_scores": True}, 1, False),  # raw scores need each arm's hits
    ],
)
def test_the_store_ranks_a_search_alone_only_with_one_retriever_and_nothing_per_arm(
    body: dict[str, object], retrievers: int, alone: bool
) -> None:
    query = SearchQuery.model_validate({"query": "dune", **body})
    assert store_ranks(query, [Retriever((i,), 1.0) for i in range(retrievers)]) is alone


HYBRID = CollectionConfig.model_validate(
    {
        "vectors": [
            {"name": "kw", "type": "keyword", "index_fields": ["name", "content"]},
            {
                "name": "dense",
                "type": "dense_model",
                "model": "sentence-transformers/all-MiniLM-L6-v2",
                "index_fields": ["content"],
            },
        ]
    }
)


@pytest.mark.parametrize(
    ("body", "vectors"),
    [
        ({"query": "12lp y03"}, {"kw"}),  # a lookup: the model reads codes as noise
        ({"query": "bearing 12lp"}, {"kw", "dense"}),  # a sentence around a code
        ({"query": "12lp y03", "fusion_mode": "linear"}, {"kw", "dense"}),  # Amgix's, as asked
    ],
)
def test_by_default_a_lookup_leaves_the_models_vectors_out(
    body: dict[str, object], vectors: set[str]
) -> None:
    arms = plan_arms(HYBRID, SearchQuery.model_validate(body))
    assert {arm.slot.vector.name for arm in arms} == vectors


def test_a_lookup_weighs_a_title_as_a_body() -> None:
    arms = plan_arms(HYBRID, SearchQuery.model_validate({"query": "12lpy03"}))
    [lookup] = plan_retrievers(arms, lookup=True)
    [sentence] = plan_retrievers(arms)
    assert lookup.field_weights == (1.0, 1.0)
    assert sentence.field_weights == (FIELD_WEIGHTS[IndexField.NAME], 1.0)
