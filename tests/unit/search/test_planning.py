"""How a search is planned into arms (search.planning.plan_arms)."""

from __future__ import annotations

from core.schemas.collection import CollectionConfig
from core.schemas.search import SearchQuery
from search.planning import plan_arms

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


def test_vector_options_keep_the_trigram_weight_they_ask_for() -> None:
    body = {
        "query": "kubernets",
        "vector_options": [
            {"vector_name": "kw", "field": "name", "wmtr_trigram_weight": 0.5},
            {"vector_name": "kw"},
        ],
    }
    assert _trigram_weights(body) == [
        ("kw.name", 0.5),
        ("kw.name", 1.0),
        ("kw.description", 1.0),
        ("kw.content", 1.0),
    ]
