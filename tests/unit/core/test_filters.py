"""core.filters: both wire forms parse to one tree; typing checks keys, operators and values."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import ValidationError

from core.errors import InvalidInput
from core.filters import (
    MAX_CONDITIONS,
    AllOf,
    AnyOf,
    Condition,
    FilterOp,
    Negation,
    parse_filter,
    typed_filter,
)
from core.schemas.common import MAX_FILTER_DEPTH
from core.schemas.document import DocumentFetchRequest
from core.schemas.search import SearchQuery

EQ, NEQ, LT, GT, LTE, GTE, IS_NULL = (
    FilterOp.EQ,
    FilterOp.NEQ,
    FilterOp.LT,
    FilterOp.GT,
    FilterOp.LTE,
    FilterOp.GTE,
    FilterOp.IS_NULL,
)
YEAR_GT = Condition("year", GT, 2021)
ACTIVE = Condition("active", EQ, True)
NAME_NOT_X = Condition("name", NEQ, "x")

# (string form, object form, tree): both forms must give the tree
BOTH_FORMS: list[tuple[str, dict[str, Any], Any]] = [
    ("year > 2021", {"key": "year", "op": "gt", "value": 2021}, YEAR_GT),
    ('name != "x"', {"key": "name", "op": "neq", "value": "x"}, NAME_NOT_X),
    ("active = true", {"key": "active", "op": "eq", "value": True}, ACTIVE),
    ("score <= 2.5", {"key": "score", "op": "lte", "value": 2.5}, Condition("score", LTE, 2.5)),
    ("t >= -3", {"key": "t", "op": "gte", "value": -3}, Condition("t", GTE, -3)),
    ("t < -1.5e3", {"key": "t", "op": "lt", "value": -1500.0}, Condition("t", LT, -1500.0)),
    ("k IS NULL", {"key": "k", "op": "is_null", "value": True}, Condition("k", IS_NULL, True)),
    ("k IS NULL", {"key": "k", "op": "is_null"}, Condition("k", IS_NULL, True)),
    (
        "k IS NOT NULL",
        {"key": "k", "op": "is_null", "value": False},
        Condition("k", IS_NULL, False),
    ),
    (
        "NOT active = true",
        {"not": {"key": "active", "op": "eq", "value": True}},
        Negation(ACTIVE),
    ),
    (
        'year > 2021 AND (active = true OR name != "x")',
        {
            "and": [
                {"key": "year", "op": "gt", "value": 2021},
                {
                    "or": [
                        {"key": "active", "op": "eq", "value": True},
                        {"key": "name", "op": "neq", "value": "x"},
                    ]
                },
            ]
        },
        AllOf((YEAR_GT, AnyOf((ACTIVE, NAME_NOT_X)))),
    ),
]


@pytest.mark.parametrize(("text", "obj", "tree"), BOTH_FORMS)
def test_string_and_object_forms_parse_to_the_same_tree(text: str, obj: dict, tree: Any) -> None:
    assert parse_filter(text) == tree
    assert parse_filter(obj) == tree


STRING_ONLY: list[tuple[str, Any]] = [
    # AND binds tighter than OR
    (
        'year > 2021 AND active = true OR name != "x"',
        AnyOf((AllOf((YEAR_GT, ACTIVE)), NAME_NOT_X)),
    ),
    (
        'name != "x" OR year > 2021 AND active = true',
        AnyOf((NAME_NOT_X, AllOf((YEAR_GT, ACTIVE)))),
    ),
    ("(year > 2021)", YEAR_GT),
    (
        "a = 1 AND b = 2 AND c = 3",
        AllOf(tuple(Condition(k, EQ, i + 1) for i, k in enumerate("abc"))),
    ),
    # keywords in any case
    ("year > 2021 and active = TRUE", AllOf((YEAR_GT, ACTIVE))),
    ("k is not null", Condition("k", IS_NULL, False)),
    ("not (active = True)", Negation(ACTIVE)),
    ("NOT NOT active = true", Negation(Negation(ACTIVE))),
    ("flag = false", Condition("flag", EQ, False)),
    # quotes and escapes
    ("name = 'it\\'s'", Condition("name", EQ, "it's")),
    ('name = "say \\"hi\\""', Condition("name", EQ, 'say "hi"')),
    ('name = "a\\\\b\\nc"', Condition("name", EQ, "a\\b\nc")),
    ("name = \"AND OR ( ) 'x'\"", Condition("name", EQ, "AND OR ( ) 'x'")),
    # numbers: int stays int, anything with a fraction or exponent is a float
    ("n = 10", Condition("n", EQ, 10)),
    ("n = 10.0", Condition("n", EQ, 10.0)),
    ("n = -0.5", Condition("n", EQ, -0.5)),
    # keys with digits, '-' and '_', and keys named like keywords
    ("my-key_2 = 1", Condition("my-key_2", EQ, 1)),
    ("not = 1", Condition("not", EQ, 1)),
    ("notes = 'x'", Condition("notes", EQ, "x")),
    ("  year>2021  ", YEAR_GT),
]


@pytest.mark.parametrize(("text", "tree"), STRING_ONLY)
def test_string_form_precedence_case_quotes_and_numbers(text: str, tree: Any) -> None:
    assert parse_filter(text) == tree
    assert isinstance(parse_filter("n = 10").value, int)  # type: ignore[union-attr]


SYNTAX_ERRORS: list[tuple[str, str]] = [
    ("", "empty"),
    ("   ", "empty"),
    ("year >", "expected a value: .* at position 6, found the end"),
    ("year 2021", r"expected a comparison \(= != < <= > >=\) or IS \[NOT\] NULL .* position 5"),
    ("year > 2021 AND", "expected a metadata key, '\\(' or NOT at position 15"),
    ("(year > 2021", "expected '\\)' at position 12"),
    ("year > 2021)", "expected AND, OR or the end of the expression at position 11"),
    ("year > 2021 year < 3", "expected AND, OR or the end .* position 12"),
    ("name = 'open", "unterminated string starting at position 7"),
    ("name = bare", "expected a value: a quoted string, a number, true or false at position 7"),
    ("k = NULL", "IS NULL"),
    ("k IS", "expected NULL at position 4"),
    ("k IS NOT", "expected NULL at position 8"),
    ("year > 20x1", "expected a value"),
    ("d = 2024-01-01", "expected a value"),
    ("y.z = 1", "expected a comparison"),
    ("= 1", "expected a metadata key"),
    ("a == 1", "expected a value"),
    ("k" * 101 + " = 1", "longer than 100 characters"),
]


@pytest.mark.parametrize(("text", "message"), SYNTAX_ERRORS)
def test_string_syntax_errors_say_where_and_what_was_expected(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_filter(text)


OBJECT_ERRORS: list[tuple[Any, str]] = [
    ({"and": [{"key": "a", "op": "eq", "value": 1}], "key": "b"}, "exactly one of"),
    ({"and": [], "or": []}, "exactly one of"),
    ({"not": {"key": "a", "op": "eq", "value": 1}, "op": "eq"}, "exactly one of"),
    ({"key": "a", "op": "like", "value": 1}, "unknown filter op 'like'"),
    ({"key": "a", "op": "in", "value": [1]}, "unknown filter op 'in'"),
    ({"key": "a", "value": 1}, "unknown filter op None"),
    ({"op": "eq", "value": 1}, "needs 'key'"),
    ({"key": "a.b", "op": "eq", "value": 1}, "must be 1..100 characters"),
    ({"key": 5, "op": "eq", "value": 1}, "must be 1..100 characters"),
    ({"key": "a", "op": "eq", "value": 1, "extra": 2}, "unknown filter field"),
    ({"key": "a", "op": "eq"}, "needs a value"),
    ({"key": "a", "op": "eq", "value": [1, 2]}, "must be a string, number or boolean"),
    ({"key": "a", "op": "eq", "value": {"x": 1}}, "must be a string, number or boolean"),
    ({"key": "a", "op": "is_null", "value": "yes"}, "takes true or false"),
    ({"and": []}, "non-empty list"),
    ({"or": {"key": "a", "op": "eq", "value": 1}}, "non-empty list"),
    ({"and": ["a = 1"]}, "must be an object"),
    ({}, "needs 'key'"),
]


@pytest.mark.parametrize(("raw", "message"), OBJECT_ERRORS)
def test_object_structure_errors_raise_value_error(raw: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_filter(raw)


def test_object_ops_are_case_insensitive() -> None:
    assert parse_filter({"key": "year", "op": "GT", "value": 2021}) == YEAR_GT


def nested_object(depth: int) -> dict:
    node: dict = {"key": "a", "op": "eq", "value": 1}
    for _ in range(depth):
        node = {"not": node}
    return node


def test_depth_is_bounded_in_both_forms() -> None:
    assert isinstance(parse_filter(nested_object(MAX_FILTER_DEPTH)), Negation)
    deepest = "(" * MAX_FILTER_DEPTH + "a = 1" + ")" * MAX_FILTER_DEPTH
    assert isinstance(parse_filter(deepest), Condition)
    for raw in (
        nested_object(MAX_FILTER_DEPTH + 1),
        "(" * (MAX_FILTER_DEPTH + 1) + "a = 1" + ")" * (MAX_FILTER_DEPTH + 1),
        "NOT " * (MAX_FILTER_DEPTH + 1) + "a = 1",
    ):
        with pytest.raises(ValueError, match=f"at most {MAX_FILTER_DEPTH} levels"):
            parse_filter(raw)


def test_hostile_inputs_raise_value_error_not_recursion_error() -> None:
    for raw in ("(" * 100_000, "NOT " * 5000 + "a = 1", nested_object(5000)):
        with pytest.raises(ValueError):
            parse_filter(raw)  # type: ignore[arg-type]


def test_condition_count_is_bounded_in_both_forms() -> None:
    many = " OR ".join(f"k = {i}" for i in range(MAX_CONDITIONS))
    assert len(parse_filter(many).items) == MAX_CONDITIONS  # type: ignore[union-attr]
    with pytest.raises(ValueError, match=f"at most {MAX_CONDITIONS} conditions"):
        parse_filter(many + " OR k = -1")
    items = [{"key": "k", "op": "eq", "value": i} for i in range(MAX_CONDITIONS + 1)]
    with pytest.raises(ValueError, match=f"at most {MAX_CONDITIONS} conditions"):
        parse_filter({"or": items})


# --- typing ---

INDEXES = {
    "name": "string",
    "year": "integer",
    "score": "float",
    "active": "boolean",
    "when": "datetime",
}


TYPED: list[tuple[Condition, Any]] = [
    (Condition("name", EQ, "x"), "x"),
    (Condition("year", GTE, 2021), 2021),
    (Condition("score", LT, 3), 3.0),  # float index: ints become floats
    (Condition("score", EQ, 2.5), 2.5),
    (Condition("active", NEQ, False), False),
    (Condition("when", GT, "2024-05-01T10:00:00Z"), datetime(2024, 5, 1, 10, tzinfo=UTC)),
    (Condition("when", GT, "2024-05-01T10:00:00"), datetime(2024, 5, 1, 10, tzinfo=UTC)),
    (Condition("when", LTE, "2024-05-01"), datetime(2024, 5, 1, tzinfo=UTC)),
    (
        Condition("when", EQ, "2024-05-01T12:00:00+02:00"),
        datetime(2024, 5, 1, 10, tzinfo=UTC),
    ),
    (Condition("name", IS_NULL, True), True),
    (Condition("when", IS_NULL, False), False),
]


@pytest.mark.parametrize(("condition", "value"), TYPED)
def test_typed_filter_converts_values_to_the_index_type(condition: Condition, value: Any) -> None:
    typed = typed_filter(condition, INDEXES)
    assert isinstance(typed, Condition)
    assert typed.value == value and type(typed.value) is type(value)
    if isinstance(value, datetime):
        assert typed.value.utcoffset() == timedelta(0)


TYPE_ERRORS: list[tuple[Condition, str]] = [
    (Condition("year", EQ, "2021"), "key 'year' expects an integer between"),
    (Condition("year", EQ, True), "key 'year' expects an integer between"),
    (Condition("year", EQ, 2021.5), "key 'year' expects an integer between"),
    (Condition("year", EQ, 2**63), "key 'year' expects an integer between"),
    (Condition("score", EQ, "1.5"), "key 'score' expects a finite number"),
    (Condition("score", EQ, False), "key 'score' expects a finite number"),
    (Condition("active", EQ, 1), "key 'active' expects true or false"),
    (Condition("active", EQ, "true"), "key 'active' expects true or false"),
    (Condition("name", EQ, 5), "key 'name' expects a string"),
    (Condition("when", GT, "yesterday"), "key 'when' expects an ISO 8601 datetime"),
    (Condition("when", GT, 1714557600), "key 'when' expects an ISO 8601 datetime"),
    (Condition("name", LT, "m"), "key 'name' has a string index, which allows only eq, neq"),
    (Condition("active", GTE, True), "key 'active' has a boolean index"),
    (Condition("color", EQ, "red"), "key 'color' is not in the collection's metadata_indexes"),
]


@pytest.mark.parametrize(("condition", "message"), TYPE_ERRORS)
def test_typed_filter_refuses_unknown_keys_wrong_ops_and_wrong_types(
    condition: Condition, message: str
) -> None:
    with pytest.raises(InvalidInput, match=message):
        typed_filter(condition, INDEXES)


def test_typed_filter_walks_the_whole_tree() -> None:
    tree = parse_filter('score > 1 AND NOT (when < "2024-01-01" OR name = "x")')
    assert typed_filter(tree, INDEXES) == AllOf(
        (
            Condition("score", GT, 1.0),
            Negation(
                AnyOf(
                    (
                        Condition("when", LT, datetime(2024, 1, 1, tzinfo=UTC)),
                        Condition("name", EQ, "x"),
                    )
                )
            ),
        )
    )
    with pytest.raises(InvalidInput, match="'ghost'"):
        typed_filter(parse_filter("year > 1 OR NOT ghost = 1"), INDEXES)


def test_typed_filter_leaves_in_values_alone_but_converts_datetimes() -> None:
    ints = Condition("year", FilterOp.IN, (2020, "odd", 2021))
    assert typed_filter(ints, INDEXES) == ints
    dates = Condition("when", FilterOp.IN, ("2024-01-01T02:00:00+02:00", "nope", None))
    typed = typed_filter(dates, INDEXES)
    assert typed == Condition("when", FilterOp.IN, (datetime(2024, 1, 1, tzinfo=UTC),))
    with pytest.raises(InvalidInput, match="not in the collection's metadata_indexes"):
        typed_filter(Condition("ghost", FilterOp.IN, (1,)), INDEXES)


# --- the wire schemas ---


@pytest.mark.parametrize("model", [DocumentFetchRequest, SearchQuery])
def test_schemas_refuse_bad_filters_and_keep_good_ones_raw(model: type) -> None:
    extra = {"query": "q"} if model is SearchQuery else {}
    raw = {"or": [{"key": "a", "op": "eq", "value": 1}, {"key": "b", "op": "is_null"}]}
    assert model.model_validate({**extra, "metadata_filter": raw}).metadata_filter == raw
    text = "a = 1 AND b IS NOT NULL"
    assert model.model_validate({**extra, "metadata_filter": text}).metadata_filter == text
    for bad in ("a = ", {"key": "a", "op": "near", "value": 1}, {"and": [], "key": "a"}):
        with pytest.raises(ValidationError, match="metadata_filter"):
            model.model_validate({**extra, "metadata_filter": bad})
