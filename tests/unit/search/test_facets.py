"""Facet counts and group caps, by table."""

from __future__ import annotations

from typing import Any

from search.facets import cap_groups, facet_counts, group_value


def test_facet_counts_count_each_document_once_per_value_and_keep_the_commonest() -> None:
    pool: list[dict[str, Any] | None] = [
        {"genre": "novel", "year": 2020, "tags": ["a", "b", "a"], "on": True},
        {"genre": "novel", "year": 2021, "tags": ["a"], "on": False},
        {"genre": "poetry", "year": 2020, "on": True},
        {"genre": None},
        None,
    ]
    counts = facet_counts(pool, ["genre", "year", "tags", "on", "missing"], max_values=10)
    assert counts == {
        "genre": {"novel": 2, "poetry": 1},
        "year": {"2020": 2, "2021": 1},
        "tags": {"a": 2, "b": 1},
        "on": {"true": 2, "false": 1},
        "missing": {},
    }
    assert facet_counts(pool, ["genre"], max_values=1) == {"genre": {"novel": 2}}


def test_facet_ties_are_ordered_by_value() -> None:
    pool = [{"k": "b"}, {"k": "a"}, {"k": "c"}]
    assert list(facet_counts(pool, ["k"], max_values=2)["k"]) == ["a", "b"]


def test_cap_groups_keeps_best_per_group_and_caps_the_null_bucket_too() -> None:
    ranked = ["x1", "x2", "y1", "x3", "n1", "n2", "y2", "z1"]
    groups = {d: (None if d.startswith("n") else d[0]) for d in ranked}
    assert cap_groups(ranked, groups, group_max=1, limit=10) == ["x1", "y1", "n1", "z1"]
    assert cap_groups(ranked, groups, group_max=2, limit=5) == ["x1", "x2", "y1", "n1", "n2"]


def test_group_value_of_scalars_lists_and_missing() -> None:
    assert group_value({"k": True}, "k") == "true"
    assert group_value({"k": 3}, "k") == "3"
    assert group_value({"k": ["b", "a"]}, "k") == group_value({"k": ["a", "b"]}, "k")
    assert group_value({}, "k") is None
    assert group_value(None, "k") is None
