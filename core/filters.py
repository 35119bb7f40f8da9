"""Metadata filters (API.md §5): one store-neutral expression tree, parsed from either wire form.

`parse_filter` turns the object form or the string expression into an `Expr` (ValueError on bad
syntax or structure: the schemas turn it into a 422). `typed_filter` checks it against the
collection's metadata indexes and converts values to the index types (InvalidInput → 400).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Any, NoReturn

from pydantic import AfterValidator, StrictStr
from pydantic_core import PydanticCustomError

from core.enums import MetadataType
from core.errors import InvalidInput
from core.metadata import EXPECTED, parse_datetime, typed_value
from core.schemas.common import MAX_FILTER_DEPTH, NAME_RE, NAME_RULE


class FilterOp(StrEnum):
    EQ = "eq"
    NEQ = "neq"
    LT = "lt"
    GT = "gt"
    LTE = "lte"
    GTE = "gte"
    IS_NULL = "is_null"  # value True: missing or null; False: present and not null
    IN = "in"  # internal (joins): value is a tuple of allowed values; never parsed from the wire


@dataclass(frozen=True)
class Condition:
    """`metadata[key] <op> value`. After `typed_filter`, datetimes are aware `datetime`s."""

    key: str
    op: FilterOp
    value: Any = None


@dataclass(frozen=True)
class AllOf:
    items: tuple[Expr, ...]


@dataclass(frozen=True)
class AnyOf:
    items: tuple[Expr, ...]


@dataclass(frozen=True)
class Negation:
    item: Expr


Expr = Condition | AllOf | AnyOf | Negation


# Bounds: no input can nest deep enough to exhaust the stack or grow without limit (the depth,
# MAX_FILTER_DEPTH, is a documented cap and lives with the others in core.schemas.common).
MAX_CONDITIONS = 1000
MAX_TEXT = 20_000
Scalar = str | int | float | bool

_WIRE_OPS = {op.value: op for op in FilterOp if op is not FilterOp.IN}
_BOOLEAN_KEYS = frozenset({"and", "or", "not"})
_CONDITION_KEYS = frozenset({"key", "op", "value"})
_ORDERED_TYPES = frozenset({MetadataType.INTEGER, MetadataType.FLOAT, MetadataType.DATETIME})


# The error type of a filter refused for its depth: its 422 leaves the filter out (app.http.errors).
TOO_DEEP = "filter_too_deep"


class FilterTooDeep(ValueError):
    """A filter nested past MAX_FILTER_DEPTH."""


def _filter_syntax(value: dict[str, Any] | str) -> dict[str, Any] | str:
    try:
        parse_filter(value)  # ValueError → 422; the raw value stays for the worker to type
    except FilterTooDeep as exc:
        raise PydanticCustomError(TOO_DEEP, str(exc)) from None
    return value


# A wire `metadata_filter` in either form, checked for syntax and structure by the schemas.
MetadataFilterInput = Annotated[dict[str, Any] | StrictStr, AfterValidator(_filter_syntax)]


def parse_filter(raw: Mapping[str, Any] | str) -> Expr:
    """The expression tree of a wire filter; ValueError (message names the problem) if invalid."""
    if isinstance(raw, str):
        return _TextParser(raw).parse()
    if isinstance(raw, Mapping):
        return _ObjectReader().read(raw, 0)
    raise ValueError("metadata_filter must be an object or a string expression")


class _Counter:
    def __init__(self) -> None:
        self.conditions = 0

    def condition(self, key: str, op: FilterOp, value: Any) -> Condition:
        self.conditions += 1
        if self.conditions > MAX_CONDITIONS:
            raise ValueError(f"a filter holds at most {MAX_CONDITIONS} conditions")
        return Condition(key, op, value)


def _check_depth(depth: int) -> None:
    if depth > MAX_FILTER_DEPTH:
        raise FilterTooDeep(f"a filter nests at most {MAX_FILTER_DEPTH} levels deep")


def _check_key(key: Any) -> str:
    if not isinstance(key, str) or not NAME_RE.match(key):
        raise ValueError(f"filter key {key!r} must be {NAME_RULE}")
    return key


def _joined(kind: type[AllOf] | type[AnyOf], items: list[Expr]) -> Expr:
    return items[0] if len(items) == 1 else kind(tuple(items))


# --- the object form ---


class _ObjectReader(_Counter):
    def read(self, node: Any, depth: int) -> Expr:
        _check_depth(depth)
        if not isinstance(node, Mapping):
            raise ValueError(f"each filter must be an object, not {type(node).__name__}")
        boolean = _BOOLEAN_KEYS & set(node)
        if not boolean:
            return self._condition(node)
        if len(node) != 1:
            raise ValueError(
                "a filter object holds exactly one of 'and', 'or', 'not', or one condition"
                f" (key, op, value); got {', '.join(sorted(map(str, node)))}"
            )
        name, value = next(iter(node.items()))
        if name == "not":
            return Negation(self.read(value, depth + 1))
        if not isinstance(value, list) or not value:
            raise ValueError(f"'{name}' takes a non-empty list of filters")
        items = [self.read(item, depth + 1) for item in value]
        return _joined(AllOf if name == "and" else AnyOf, items)

    def _condition(self, node: Mapping[str, Any]) -> Condition:
        unknown = set(node) - _CONDITION_KEYS
        if unknown:
            raise ValueError(f"unknown filter field(s): {', '.join(sorted(map(str, unknown)))}")
        if "key" not in node:
            raise ValueError("a filter condition needs 'key', 'op' and 'value'")
        key = _check_key(node["key"])
        raw_op = node.get("op")
        op = _WIRE_OPS.get(raw_op.lower()) if isinstance(raw_op, str) else None
        if op is None:
            raise ValueError(
                f"unknown filter op {raw_op!r} for key '{key}': expected one of"
                f" {', '.join(_WIRE_OPS)}"
            )
        value = node.get("value")
        if op is FilterOp.IS_NULL:
            if value is None:
                value = True
            if not isinstance(value, bool):
                raise ValueError(f"is_null on key '{key}' takes true or false")
            return self.condition(key, op, value)
        if value is None:
            raise ValueError(f"{op.value} on key '{key}' needs a value; use is_null for nulls")
        if not isinstance(value, Scalar) or (isinstance(value, float) and not math.isfinite(value)):
            raise ValueError(f"the value for key '{key}' must be a string, number or boolean")
        return self.condition(key, op, value)


# --- the string form ---

_WORD = re.compile(r"[A-Za-z0-9_-]+")
_NUMBER = re.compile(r"-?\d+(?P<fraction>\.\d+)?(?P<exponent>[eE][+-]?\d+)?(?![A-Za-z0-9_.-])")
_SPACE = re.compile(r"\s*")
_COMPARISONS = {
    "<=": FilterOp.LTE,
    ">=": FilterOp.GTE,
    "!=": FilterOp.NEQ,
    "<": FilterOp.LT,
    ">": FilterOp.GT,
    "=": FilterOp.EQ,
}
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r"}


class _TextParser(_Counter):
    """Recursive descent: or := and (OR and)*; and := unary (AND unary)*;
    unary := NOT unary | '(' or ')' | key op value | key IS [NOT] NULL."""

    def __init__(self, text: str) -> None:
        super().__init__()
        if len(text) > MAX_TEXT:
            raise ValueError(f"a filter expression is at most {MAX_TEXT} characters")
        self.text = text
        self.pos = 0

    def parse(self) -> Expr:
        self._skip()
        if self.pos == len(self.text):
            raise ValueError("the filter expression is empty")
        expr = self._or(0)
        self._skip()
        if self.pos < len(self.text):
            self._fail("AND, OR or the end of the expression")
        return expr

    def _or(self, depth: int) -> Expr:
        items = [self._and(depth)]
        while self._keyword("OR"):
            items.append(self._and(depth))
        return _joined(AnyOf, items)

    def _and(self, depth: int) -> Expr:
        items = [self._unary(depth)]
        while self._keyword("AND"):
            items.append(self._unary(depth))
        return _joined(AllOf, items)

    def _unary(self, depth: int) -> Expr:
        _check_depth(depth)
        self._skip()
        if self.text.startswith("(", self.pos):
            self.pos += 1
            expr = self._or(depth + 1)
            self._skip()
            if not self.text.startswith(")", self.pos):
                self._fail("')'")
            self.pos += 1
            return expr
        if self._negation():
            return Negation(self._unary(depth + 1))
        return self._comparison()

    def _negation(self) -> bool:
        """NOT as a prefix; a key that happens to be called `not` is still a key."""
        start = self.pos
        if not self._keyword("NOT"):
            return False
        self._skip()
        rest = self.text[self.pos :]
        if rest[:1] in ("=", "!", "<", ">") or _word_is(rest, "IS"):
            self.pos = start
            return False
        return True

    def _comparison(self) -> Condition:
        start = self.pos
        word = _WORD.match(self.text, self.pos)
        if word is None:
            self._fail("a metadata key, '(' or NOT")
        key = word.group()
        if len(key) > 100:
            raise ValueError(f"the key at position {start} is longer than 100 characters")
        self.pos = word.end()
        if self._keyword("IS"):
            is_null = not self._keyword("NOT")
            if not self._keyword("NULL"):
                self._fail("NULL")
            return self.condition(key, FilterOp.IS_NULL, is_null)
        self._skip()
        for symbol, op in _COMPARISONS.items():
            if self.text.startswith(symbol, self.pos):
                self.pos += len(symbol)
                return self.condition(key, op, self._value(key))
        self._fail(f"a comparison (= != < <= > >=) or IS [NOT] NULL after key '{key}'")

    def _value(self, key: str) -> Scalar:
        self._skip()
        char = self.text[self.pos : self.pos + 1]
        if char in ("'", '"'):
            return self._string(char)
        number = _NUMBER.match(self.text, self.pos)
        if number is not None:
            self.pos = number.end()
            text = number.group()
            return float(text) if number["fraction"] or number["exponent"] else int(text)
        for word, value in (("TRUE", True), ("FALSE", False)):
            if self._keyword(word):
                return value
        if _word_is(self.text[self.pos :], "NULL"):
            raise ValueError(
                f"compare with NULL at position {self.pos} using '{key} IS NULL' or"
                f" '{key} IS NOT NULL'"
            )
        self._fail("a value: a quoted string, a number, true or false")

    def _string(self, quote: str) -> str:
        start = self.pos
        self.pos += 1
        out: list[str] = []
        while self.pos < len(self.text):
            char = self.text[self.pos]
            if char == quote:
                self.pos += 1
                return "".join(out)
            if char == "\\" and self.pos + 1 < len(self.text):
                self.pos += 1
                char = _ESCAPES.get(self.text[self.pos], self.text[self.pos])
            out.append(char)
            self.pos += 1
        raise ValueError(f"unterminated string starting at position {start}")

    def _keyword(self, word: str) -> bool:
        self._skip()
        if not _word_is(self.text[self.pos : self.pos + len(word) + 1], word):
            return False
        self.pos += len(word)
        return True

    def _skip(self) -> None:
        self.pos = _SPACE.match(self.text, self.pos).end()  # type: ignore[union-attr]

    def _fail(self, expected: str) -> NoReturn:
        found = self.text[self.pos : self.pos + 20]
        seen = repr(found) if found else "the end of the expression"
        raise ValueError(f"expected {expected} at position {self.pos}, found {seen}")


def _word_is(text: str, word: str) -> bool:
    """Whether `text` starts with the keyword `word` (any case) followed by a non-key character."""
    head = _WORD.match(text)
    return head is not None and head.group().upper() == word


# --- typing against the collection's metadata indexes ---


def typed_filter(expr: Expr, indexes: Mapping[str, str]) -> Expr:
    """Check keys and operators against `indexes` (metadata key → index type), convert values."""
    match expr:
        case Condition():
            return _typed_condition(expr, indexes)
        case AllOf(items):
            return AllOf(tuple(typed_filter(item, indexes) for item in items))
        case AnyOf(items):
            return AnyOf(tuple(typed_filter(item, indexes) for item in items))
        case Negation(item):
            return Negation(typed_filter(item, indexes))
    raise TypeError(f"not a filter expression: {expr!r}")


def _typed_condition(condition: Condition, indexes: Mapping[str, str]) -> Condition:
    key, op = condition.key, condition.op
    kind = indexes.get(key)
    if kind is None:
        raise InvalidInput(
            f"metadata_filter: key '{key}' is not in the collection's metadata_indexes"
        )
    if op is FilterOp.IS_NULL:
        return condition
    if op is FilterOp.IN:
        if kind != MetadataType.DATETIME:
            return condition
        # A stored value that is no datetime can match no datetime: leave it out.
        values = (parse_datetime(v) for v in condition.value)
        return Condition(key, op, tuple(v for v in values if v is not None))
    if kind not in _ORDERED_TYPES and op not in (FilterOp.EQ, FilterOp.NEQ):
        raise InvalidInput(
            f"metadata_filter: key '{key}' has a {kind} index, which allows only eq, neq and"
            f" is_null, not {op.value}"
        )
    return Condition(key, op, _typed_value(key, kind, condition.value))


def _typed_value(key: str, kind: str, value: Any) -> Any:
    typed = typed_value(kind, value)
    if typed is None:
        raise InvalidInput(
            f"metadata_filter: key '{key}' expects {EXPECTED[kind]}, got {value!r}"[:300]
        )
    return typed
