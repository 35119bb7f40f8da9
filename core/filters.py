"""Metadata filters (API.md §5): one store-neutral expression tree, parsed from either wire form.

`parse_filter` turns the object form or the string expression into an `Expr` (ValueError on bad
syntax or structure: the schemas turn it into a 422). `typed_filter` checks it against the
collection's metadata indexes and converts values to the index types (InvalidInput → 400).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


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


def parse_filter(raw: Mapping[str, Any] | str) -> Expr:
    """The expression tree of a wire filter; ValueError (message names the problem) if invalid."""
    raise NotImplementedError


def typed_filter(expr: Expr, indexes: Mapping[str, str]) -> Expr:
    """Check keys and operators against `indexes` (metadata key → index type), convert values."""
    raise NotImplementedError
