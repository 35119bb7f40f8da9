"""Join specs (API.md §5): what reads, and the 400 for what does not."""

from __future__ import annotations

import pytest

from core.errors import InvalidInput
from search.joining import JoinSpec, join_specs, parse_join


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("kids", JoinSpec("kids", None, None, None)),
        ("kids[$id=$$.meta.parent_ref]", JoinSpec("kids", None, "parent_ref", None)),
        ("kids[$.meta.family=$$.meta.family]", JoinSpec("kids", "family", "family", None)),
        ("kids[ $id = $$id ]", JoinSpec("kids", None, None, None)),
        ("kids(age > 2)", JoinSpec("kids", None, None, "age > 2")),
        (
            "kids[$id=$$.meta.p](age > 2 AND (x = 'a)' OR y IS NULL))",
            JoinSpec("kids", None, "p", "age > 2 AND (x = 'a)' OR y IS NULL)"),
        ),
    ],
)
def test_join_specs_that_read(spec: str, expected: JoinSpec) -> None:
    assert parse_join(spec) == expected


@pytest.mark.parametrize(
    "spec",
    [
        "",
        "kids[",
        "kids[$id=$$.meta.p",
        "kids[id=parent]",
        "kids[$id=$id]",
        "kids[$$id=$$id]",
        "kids[$$.meta.parent_ref=$id]",  # the child side first (Amgix refuses it too)
        "kids[$$id=$id]",
        "kids[$id=$$.meta.]",
        "kids[$id=$$.metadata.p]",
        "ki ds",
        "kids!",
        "kids(age > 2",
    ],
)
def test_join_specs_that_do_not_read_are_400(spec: str) -> None:
    with pytest.raises(InvalidInput, match="Invalid join expression"):
        parse_join(spec)


def test_a_child_may_be_joined_once_and_joins_are_bounded() -> None:
    assert [s.child for s in join_specs(["a", "b"])] == ["a", "b"]
    assert join_specs(None) == []
    with pytest.raises(InvalidInput, match="once"):
        join_specs(["a", "a(x = 1)"])
    with pytest.raises(InvalidInput, match="at most"):
        join_specs([f"c{i}" for i in range(9)])
