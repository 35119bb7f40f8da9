"""Per-token views (surface, pieces, stems, trigrams) as hashed ids, cached."""

from functools import lru_cache
from typing import NamedTuple

from core.enums import VectorType
from core.lexical.stemming import stem
from core.lexical.stopwords import stop_words
from core.lexical.tokens import token_id, trigrams, word_pieces

# View prefixes keep the views apart in one id space: the surface token "run" and the
# stem "run" are different entries, so an exact match scores on both.
WORD = "w:"
STEM = "s:"
TRIGRAM = "t:"


class TokenViews(NamedTuple):
    """The ids one surface token contributes, one per occurrence."""

    words: tuple[int, ...] = ()
    trigrams: tuple[int, ...] = ()
    # WMTR: the ids in `words` that are surface forms (the rest are stems); they weigh less.
    surface: tuple[int, ...] = ()
    code: bool = False  # WMTR: the token is a code (is_code), known once per token


CACHED_TOKENS = 32768  # per kind and language; a text's tokens are looked up once each


@lru_cache(maxsize=64)
def views_cache(kind: VectorType, language: str) -> dict[str, TokenViews]:
    """The token views already worked out for a kind and language: `many_views` reads it with
    one dictionary lookup a token (an lru_cache of three arguments cost more than the views'
    use in a document's counts)."""
    return {}


def many_views(tokens: list[str], kind: VectorType, language: str) -> list[TokenViews]:
    """token_views of each token, in order."""
    cache = views_cache(kind, language)
    if len(cache) > CACHED_TOKENS:
        cache.clear()
    return [cache.get(token) or _remember(cache, token, kind, language) for token in tokens]


def _remember(
    cache: dict[str, TokenViews], token: str, kind: VectorType, language: str
) -> TokenViews:
    views = cache[token] = token_views(token, kind, language)
    return views


def token_views(token: str, kind: VectorType, language: str) -> TokenViews:
    """The views of one surface token (case-folded unless keep_case) for a kind."""
    stops = stop_words(language)
    if kind == VectorType.WMTR:
        return _wmtr(token, language, stops)
    if kind == VectorType.FULL_TEXT:
        return TokenViews(words=_stems(word_pieces(token), language, stops))
    if kind == VectorType.TRIGRAMS:
        return TokenViews(trigrams=_trigrams(word_pieces(token)))
    if kind == VectorType.WHITESPACE:
        is_stop = token.casefold() in stops
        return TokenViews(words=() if is_stop else (token_id(WORD + token),))
    raise ValueError(f"not a lexical vector type: {kind}")


def _wmtr(token: str, language: str, stops: frozenset[str]) -> TokenViews:
    pieces = word_pieces(token)
    exact = [token] if pieces == [token] else [token, *pieces]
    content = [p for p in pieces if p.casefold() not in stops]
    code = is_code(token)
    if len(pieces) > 1 and code:
        # A code written with separators (12LP'-y03/5-XL) is also its compact form: a user
        # types 12lpy035xl or 12lpy03, and only the compact form's trigrams span the joints.
        compact = "".join(pieces)
        exact.append(compact)
        content.append(compact)
    # Stop words leave no term, as in every type but trigrams (and as Amgix's keyword type): a
    # field of stop words only ("I Do") is an empty vector.
    words = [token_id(WORD + t) for t in exact if t.casefold() not in stops]
    surface = tuple(words)
    words.extend(_stems(content, language, stops))
    return TokenViews(tuple(words), _trigrams(content), surface, code)


def is_code(token: str) -> bool:
    """A token mixing letters and digits: a part number, SKU, version or identifier
    (`12LP'-y03/5-XL`, `v2.13`, `p53`)."""
    return any(c.isdigit() for c in token) and any(c.isalpha() for c in token)


def _stems(pieces: list[str], language: str, stops: frozenset[str]) -> tuple[int, ...]:
    folded = (p.casefold() for p in pieces)
    return tuple(token_id(STEM + stem(p, language)) for p in folded if p not in stops)


def _trigrams(pieces: list[str]) -> tuple[int, ...]:
    return tuple(token_id(TRIGRAM + t) for p in pieces for t in trigrams(p))
