"""Joins (API.md §5): attach matching documents of child collections to each parent document.

A spec is `child`, `child[$id=$$.meta.parent_ref]`, `child(<filter expr>)` or both; the parent
side is `$id` or `$.meta.<key>` and comes first, the child side `$$id` or `$$.meta.<key>`,
default `[$id=$$id]`. As in Amgix, only the child's key must be an indexed metadata key (it is
what the child collection is filtered by); the parent's is read from each parent's stored
metadata, indexed or not.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from core.catalog import Catalog
from core.errors import InvalidInput
from core.filters import AllOf, Condition, Expr, FilterOp, parse_filter, typed_filter
from core.schemas.common import NAME_RE
from search.filtering import metadata_indexes, require_indexed
from store.payload import public_document
from store.protocol import PointFilter, StoreReader

MAX_JOINS = 8
MAX_CHILDREN = 10_000  # per join and request: joins are for small fan-outs
PAGE = 1000

INVALID = "Invalid join expression"  # the words Amgix answers a spec that does not read with
_META = re.compile(r"^\.meta\.(?P<key>[a-zA-Z0-9_-]{1,100})$")


@dataclass(frozen=True)
class JoinSpec:
    child: str
    parent_key: str | None  # None: the parent's id; else a metadata key
    child_key: str | None  # None: the child's id; else a metadata key
    filter: str | None


def _split(spec: str) -> tuple[str, str | None, str | None, str | None] | None:
    """child, left, right and filter text of `child[left=right](filter)`; None if it does not
    read. A scan, not a regular expression: a client's spec of any length parses in linear time."""
    text = spec.strip()
    end = next((i for i, c in enumerate(text) if c.isspace() or c in "[]("), len(text))
    child, rest = text[:end], text[end:].lstrip()
    left = right = None
    if rest.startswith("["):
        close = rest.find("]")
        if close < 0 or "=" not in rest[:close]:
            return None
        left, right = rest[1:close].split("=", 1)
        rest = rest[close + 1 :].lstrip()
    condition = None
    if rest.startswith("(") and rest.endswith(")"):
        condition, rest = rest[1:-1], ""
    return (child, left, right, condition) if child and not rest else None


def parse_join(spec: str) -> JoinSpec:
    """The parts of one join spec; InvalidInput ("Invalid join expression") when it does not
    read."""
    shown = spec if len(spec) <= 200 else spec[:200] + "..."
    parts = _split(spec)
    if parts is None or not NAME_RE.match(parts[0]):
        raise InvalidInput(f"{INVALID} '{shown}': expected child, child[$id=$$id] or child(expr)")
    child, left, right, condition = parts
    parent_key = child_key = None
    if left is not None and right is not None:
        parent_key = _side(shown, left.strip(), "$", "parent side, first")
        child_key = _side(shown, right.strip(), "$$", "child side, second")
    return JoinSpec(child, parent_key, child_key, None if condition is None else condition.strip())


def _side(shown: str, term: str, sigil: str, side: str) -> str | None:
    if not term.startswith(sigil) or term.startswith(sigil + "$"):
        raise InvalidInput(
            f"{INVALID} '{shown}': the {side} must start with '{sigil}', not '{term}'"
        )
    rest = term[len(sigil) :]
    if rest == "id":
        return None
    meta = _META.match(rest)
    if meta is None:
        raise InvalidInput(f"{INVALID} '{shown}': '{term}' must be {sigil}id or {sigil}.meta.<key>")
    return meta["key"]


def join_specs(join: str | list[str] | None) -> list[JoinSpec]:
    raw = [join] if isinstance(join, str) else list(join or [])
    if len(raw) > MAX_JOINS:
        raise InvalidInput(f"join: at most {MAX_JOINS} joins per request")
    specs = [parse_join(s) for s in raw]
    children = [s.child for s in specs]
    if len(set(children)) != len(children):
        raise InvalidInput("join: each child collection may be joined once")
    return specs


class Joiner:
    def __init__(self, store: StoreReader, catalog: Catalog) -> None:
        self._store = store
        self._catalog = catalog

    async def attach(
        self,
        documents: list[dict[str, Any]],
        specs: list[JoinSpec],
        exclude: Iterable[str] = (),
    ) -> None:
        """Set `joined[child]` (a list, [] when none match) on every document, for every spec
        (`join_specs` read them: a request's specs are parsed once, by its caller). The child
        collections and their keys are checked with no documents too: a join that names a
        missing collection is a 400 whether or not anything matched. `exclude` nulls those
        fields of the children; the caller nulls the parents' after this, which reads their
        metadata."""
        if not specs:
            return
        plans = [(spec, await self._child_filter(spec)) for spec in specs]
        for document in documents:
            document["joined"] = {}
        for spec, child_expr in plans:
            await self._attach_one(spec, child_expr, documents, tuple(exclude))

    async def _child_filter(self, spec: JoinSpec) -> Expr | None:
        """The child collection's own filter of a spec, typed by its indexes (400s: the child
        missing, its key not indexed, a filter that does not read)."""
        child = await self._catalog.get(spec.child)
        if child is None:
            raise InvalidInput(f"Join collection '{spec.child}' not found")
        if spec.child_key is not None:
            require_indexed(child, spec.child_key, f"join {spec.child}")
        if not spec.filter:
            return None
        try:
            expr = parse_filter(spec.filter)
        except ValueError as exc:
            raise InvalidInput(f"{INVALID} for '{spec.child}': {exc}") from exc
        return typed_filter(expr, metadata_indexes(child))

    async def _attach_one(
        self,
        spec: JoinSpec,
        child_expr: Expr | None,
        documents: list[dict[str, Any]],
        exclude: tuple[str, ...],
    ) -> None:
        wanted: dict[Any, list[dict[str, Any]]] = defaultdict(list)
        for document in documents:
            document["joined"][spec.child] = []
            for value in _join_values(document, spec.parent_key):
                # A child's id is text: the parent's integer 7 names the child "7".
                wanted[value if spec.child_key else str(value)].append(document)
        if not wanted:
            return
        values = tuple(wanted)
        if spec.child_key is None:
            keys = PointFilter(metadata=child_expr, doc_ids=values)
        else:
            match = Condition(spec.child_key, FilterOp.IN, values)
            expr = match if child_expr is None else AllOf((match, child_expr))
            keys = PointFilter(metadata=expr)
        for child in await self._children(spec.child, keys):
            shaped = public_document(child)
            keyed_by = _join_values(shaped, spec.child_key)  # before `exclude` drops metadata
            for excluded in exclude:
                shaped[excluded] = None
            for value in keyed_by:
                for document in wanted.get(value, []):
                    document["joined"][spec.child].append(shaped)

    async def _children(self, name: str, keys: PointFilter) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        after = None
        while len(found) < MAX_CHILDREN:
            page = await self._store.scroll(name, keys, after, min(PAGE, MAX_CHILDREN - len(found)))
            found.extend(p.payload for p in page.points)
            after = page.after
            if after is None:
                break
        return sorted(found, key=lambda payload: str(payload.get("id")))


def _join_values(document: dict[str, Any], key: str | None) -> list[Any]:
    if key is None:
        return [document["id"]]
    value = (document.get("metadata") or {}).get(key)
    items = value if isinstance(value, list) else [value]
    return [v for v in items if v is not None and not isinstance(v, dict | list)]
