"""Document and query sparse vectors for the lexical types (BM25 tf, no IDF)."""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from core.enums import LEXICAL_TYPES, VectorType
from core.lexical.language import text_language
from core.lexical.tokens import fold, surface_tokens, trigram_count, word_pieces
from core.lexical.views import CACHED_TOKENS, is_code, many_views, token_views
from core.vectors import SparseVector

# BM25 saturation constants; IDF is applied by the store at query time.
K1 = 1.2
B = 0.75
MAX_TOP_K = 10000

# What a WMTR entry weighs in a document vector, relative to a stem: a surface form repeats its
# stem (an exact match scores on both), and trigrams only catch typos and partial words. At 1.0
# each, trigrams outweighed the words of a long text and ranked SciFact at 0.50 nDCG@10 where
# the words alone reach 0.68 (docs/relevance.md has the sweep).
SURFACE_WEIGHT = 0.5
TRIGRAM_WEIGHT = 0.05


@dataclass(frozen=True)
class LexicalParams:
    kind: VectorType
    top_k: int = 512
    word_ratio: int = 90
    language: str = "en"
    keep_case: bool = False
    # Detect each text's language; use it when at least this sure, else `language`.
    detect_language: bool = False
    language_confidence: float = 0.9

    def __post_init__(self) -> None:
        if self.kind not in LEXICAL_TYPES:
            raise ValueError(f"not a lexical vector type: {self.kind}")
        if not 1 <= self.top_k <= MAX_TOP_K:
            raise ValueError(f"top_k must be 1..{MAX_TOP_K}, got {self.top_k}")
        if not 0 <= self.word_ratio <= 100:
            raise ValueError(f"word_ratio must be 0..100, got {self.word_ratio}")
        if not 0 <= self.language_confidence <= 1:
            raise ValueError(f"language_confidence must be 0..1, got {self.language_confidence}")

    def language_of(self, text: str) -> str:
        """The language that stems and drops stop words in `text` (trigrams use none)."""
        if self.kind == VectorType.TRIGRAMS:
            return self.language.lower()
        return text_language(
            text, self.language.lower(), self.detect_language, self.language_confidence
        )


@dataclass(frozen=True)
class DocumentTerms:
    vector: SparseVector
    length: int


@dataclass
class _Counts:
    """A query's terms: word and trigram ids with their counts, and its codes' trigrams."""

    words: Counter[int]
    trigrams: Counter[int]
    codes: frozenset[int] = frozenset()  # WMTR: the trigram ids of codes (see is_code)


# A batch's terms are counted in one numpy pass over keys, so numpy's cost per call is paid per
# batch, not per text (it was ~80 % of a seed document's 0.35 ms one text at a time). Each id a
# token contributes is kept as `text << 33 | id << 2 | side << 1 | surface`: sorting the keys puts
# each text's terms together, ids ascending, and each term's occurrences together with the lowest
# side first. A term's side is its lowest (a hash collision between sides folds into the word
# side) and it is a surface form when any of its occurrences is one.
_WORD, _TRIGRAM = 0, 1
_TEXT_SHIFT = 33  # past a 31-bit id and its two bits
_ID_MASK = (1 << 31) - 1
_TF_CEILING = (1 << 32) - 1  # above any term's count in a text


@lru_cache(maxsize=64)
def _keys_cache(kind: VectorType, language: str) -> dict[str, list[int]]:
    """Each token's keys once worked out, per kind and language (as views.views_cache)."""
    return {}


def _token_keys(token: str, kind: VectorType, language: str) -> list[int]:
    views = token_views(token, kind, language)
    surface = set(views.surface)
    keys = [i << 2 | (_WORD << 1) | (i in surface) for i in views.words]
    keys += [i << 2 | (_TRIGRAM << 1) for i in views.trigrams]
    return keys


def _document_keys(tokens: list[str], kind: VectorType, language: str) -> list[int]:
    """The keys of every token of a text, each distinct token's as many times as it occurs."""
    cache = _keys_cache(kind, language)
    if len(cache) > CACHED_TOKENS:
        cache.clear()
    keys: list[int] = []
    for token, n in Counter(tokens).items():
        found = cache.get(token)
        if found is None:
            found = cache[token] = _token_keys(token, kind, language)
        keys += found if n == 1 else found * n
    return keys


# What a WMTR term weighs, by `side << 1 | surface` (the low two bits of its key).
_WMTR_SCALES = np.array([1.0, SURFACE_WEIGHT, TRIGRAM_WEIGHT, TRIGRAM_WEIGHT])


@dataclass(frozen=True)
class _Terms:
    """The distinct terms of a batch of texts, by text and then id ascending: the text each is
    of, its id, tf and flags (`side << 1 | surface`); and how many times each text's trigrams
    occur."""

    text: np.ndarray
    ids: np.ndarray
    tf: np.ndarray
    flags: np.ndarray
    trigram_occurrences: np.ndarray

    @classmethod
    def of(cls, keys: list[list[int]]) -> _Terms:
        sizes = np.fromiter(map(len, keys), np.int64, len(keys))
        ordered = np.fromiter(itertools.chain.from_iterable(keys), np.int64, int(sizes.sum()))
        ordered |= np.repeat(np.arange(len(keys), dtype=np.int64), sizes) << _TEXT_SHIFT
        ordered.sort()
        starts = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))
        unique, counts = ordered[starts], np.diff(starts, append=len(ordered))
        text = unique >> _TEXT_SHIFT
        trigram = unique & 2 == 2  # side 1 is bit 1 of a key
        occurrences = np.bincount(text[trigram], counts[trigram], len(keys)).astype(np.int64)
        term_keys, flags = unique >> 2, unique & 3
        first = np.concatenate(([True], term_keys[1:] != term_keys[:-1]))
        term = np.cumsum(first) - 1  # the term of each key: the first is its lowest side
        surface = np.bincount(term, weights=flags & 1) > 0
        return cls(
            text[first],
            term_keys[first] & _ID_MASK,
            np.bincount(term, weights=counts),
            (flags[first] & 2) | surface,
            occurrences,
        )

    def chosen(self, params: LexicalParams) -> np.ndarray:
        """Which terms fill each text's slots (see _slots): the higher tf first, ties to the
        lower id."""
        side = self.flags >> 1
        texts = len(self.trigram_occurrences)
        words, trigrams = (np.bincount(self.text[side == s], minlength=texts) for s in range(2))
        allowed = np.stack(_slots(params, words, trigrams))
        # Best first within each text's side: terms are by id already, so a stable sort on
        # (text, side, -tf) leaves ties by id ascending.
        group = self.text * 2 + side
        worse = _TF_CEILING - self.tf.astype(np.int64)
        best_first = np.argsort(group << 32 | worse, kind="stable")
        grouped = group[best_first]
        starts = np.flatnonzero(np.concatenate(([True], grouped[1:] != grouped[:-1])))
        rank = np.arange(len(grouped)) - np.repeat(starts, np.diff(starts, append=len(grouped)))
        keep = np.empty(len(grouped), dtype=bool)
        keep[best_first] = rank < allowed[side[best_first], self.text[best_first]]
        return keep


def document_vector(text: str, params: LexicalParams, avg_length: float) -> DocumentTerms:
    """BM25-saturated term weights, at most top_k entries, ids ascending (document_vectors)."""
    return document_vectors([text], params, avg_length)[0]


def document_vectors(
    texts: list[str], params: LexicalParams, avg_length: float
) -> list[DocumentTerms]:
    """Each text's BM25-saturated term weights, at most top_k entries, ids ascending.

    The worker runs this for every indexed field of a batch's documents: past the tokens, it is
    a fixed handful of numpy calls over all the texts' keys at once (_Terms)."""
    if not texts:
        return []
    tokens = [surface_tokens(fold(text, params.keep_case)) for text in texts]
    keys = [
        _document_keys(words, params.kind, params.language_of(text))
        for text, words in zip(texts, tokens, strict=True)
    ]
    if not any(keys):  # no terms to count: every vector empty, each text its own
        trigrams = params.kind == VectorType.TRIGRAMS
        return [
            DocumentTerms(
                SparseVector.model_construct(indices=[], values=[]), 0 if trigrams else len(words)
            )
            for words in tokens
        ]
    terms = _Terms.of(keys)
    if params.kind == VectorType.TRIGRAMS:
        lengths = terms.trigram_occurrences.tolist()
    else:
        lengths = [len(words) for words in tokens]
    norms = np.array([K1 * (1 - B + B * _length_ratio(n, avg_length)) for n in lengths])
    keep = terms.chosen(params)
    text, ids, tf = terms.text[keep], terms.ids[keep], terms.tf[keep]
    scale = _WMTR_SCALES[terms.flags[keep]] if params.kind == VectorType.WMTR else 1.0
    values = scale * tf * (K1 + 1) / (tf + norms[text])
    ends = np.cumsum(np.bincount(text, minlength=len(texts))).tolist()
    all_ids, all_values = ids.tolist(), values.tolist()
    result = []
    for start, end, length in zip([0, *ends[:-1]], ends, lengths, strict=True):
        vector = SparseVector.model_construct(
            indices=all_ids[start:end], values=all_values[start:end]
        )
        result.append(DocumentTerms(vector=vector, length=length))
    return result


def query_vector(
    text: str, params: LexicalParams, trigram_weight: float = 1.0, code_trigrams: bool = False
) -> SparseVector:
    """1.0 per distinct query term; WMTR trigrams scaled by trigram_weight, 0 drops. With
    `code_trigrams` a code's trigrams (is_code) weigh at least 1.0, whatever trigram_weight:
    its compact or partial forms match only by them."""
    if trigram_weight < 0:
        raise ValueError(f"trigram_weight must be >= 0, got {trigram_weight}")
    counts = _query_counts(text, params)
    weights = dict.fromkeys(counts.trigrams, 1.0)
    if params.kind == VectorType.WMTR:
        scaled = float(trigram_weight)
        weights = dict.fromkeys(weights, scaled) if scaled > 0 else {}
        if code_trigrams:
            weights.update((i, max(scaled, 1.0)) for i in counts.codes)
    weights.update(dict.fromkeys(counts.words, 1.0))
    indices = sorted(weights)
    return SparseVector(indices=indices, values=[weights[i] for i in indices])


@lru_cache(maxsize=64)  # asked by planning and by fusion of the same search
def is_lookup(text: str) -> bool:
    """Whether a query asks for a code (views.is_code: a part number, SKU or version) and
    nothing else: its other tokens are numbers or one or two characters (`12lp y03 5 xl`,
    `no. 884-12B`), where a sentence around a code (`bearing 12lpy03`, `vitamin B12 deficiency`)
    is not."""
    tokens = surface_tokens(text)
    return any(is_code(t) for t in tokens) and all(
        is_code(t) or len(t) <= 2 or not any(c.isalpha() for c in t) for t in tokens
    )


def document_length(text: str, params: LexicalParams) -> int:
    """The BM25 length document_vector uses: word tokens, or trigrams for TRIGRAMS."""
    tokens = surface_tokens(fold(text, params.keep_case))
    if params.kind == VectorType.TRIGRAMS:
        return sum(trigram_count(p) for t in tokens for p in word_pieces(t))
    return len(tokens)


@lru_cache(maxsize=64)
def _query_counts(text: str, params: LexicalParams) -> _Counts:
    """A query's counts, kept a moment: a search asks for one vector's query vector once per
    trigram weight (search.planning: its main field's arm has trigrams, the others not).
    Read only: the same object goes to every caller."""
    return _count(text, params)


def _count(text: str, params: LexicalParams) -> _Counts:
    """Each distinct token's views once (a text repeats its words), times its count."""
    tokens = surface_tokens(fold(text, params.keep_case))
    language = params.language_of(text)
    words: list[int] = []
    trigrams: list[int] = []
    codes: set[int] = set()
    distinct = Counter(tokens)
    for views, n in zip(
        many_views(list(distinct), params.kind, language), distinct.values(), strict=True
    ):
        words += views.words * n
        trigrams += views.trigrams * n
        if views.code:
            codes.update(views.trigrams)
    return _Counts(Counter(words), Counter(trigrams), frozenset(codes))


def _slots(
    params: LexicalParams, n_words: np.ndarray, n_trigrams: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Slots per side, text by text: WMTR gives word_ratio % to words and the rest to trigrams;
    trigram slots left unused go to words, never the other way round (a long text's trigrams
    would crowd out its words, and a short text has few enough trigrams to fit its share)."""
    top_k = params.top_k
    if params.kind != VectorType.WMTR:  # only one side has candidates
        return np.full_like(n_words, top_k), np.full_like(n_trigrams, top_k)
    share = (top_k * params.word_ratio + 50) // 100
    trigrams = np.minimum(n_trigrams, top_k - share)
    return np.minimum(n_words, top_k - trigrams), trigrams


def _length_ratio(length: int, avg_length: float) -> float:
    return length / avg_length if avg_length > 0 else 1.0
