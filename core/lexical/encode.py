"""Document and query sparse vectors for the lexical types (BM25 tf, no IDF)."""

from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from core.enums import LEXICAL_TYPES, VectorType
from core.lexical.language import text_language
from core.lexical.tokens import fold, surface_tokens, trigram_count, word_pieces
from core.lexical.views import is_code, many_views
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
    words: Counter[int]
    demoted: Counter[int]
    trigrams: Counter[int]
    length: int
    surface: frozenset[int] = frozenset()  # WMTR: the word ids that are surface forms
    codes: frozenset[int] = frozenset()  # WMTR: the trigram ids of codes (see is_code)


def document_vector(text: str, params: LexicalParams, avg_length: float) -> DocumentTerms:
    """BM25-saturated term weights, at most top_k entries, ids ascending.

    The worker runs this for every indexed field of every document, so the arithmetic is one
    numpy pass over the chosen terms rather than a Python expression per term."""
    counts = _count(text, params)
    _merge_collisions(counts)
    n_candidates = len(counts.words) + len(counts.demoted)
    n_words, n_trigrams = _slots(params, n_candidates, len(counts.trigrams))
    chosen = _top(counts.words, n_words)
    # stop words kept as surface tokens only fill word slots that are left over
    chosen.update(_top(counts.demoted, n_words - len(chosen)))
    trigrams = _top(counts.trigrams, n_trigrams)
    wmtr = params.kind == VectorType.WMTR
    if wmtr:
        scales = [SURFACE_WEIGHT if i in counts.surface else 1.0 for i in chosen]
        scales += [TRIGRAM_WEIGHT] * len(trigrams)
    chosen.update(trigrams)
    ids = np.fromiter(chosen, np.int64, len(chosen))
    tf = np.fromiter(chosen.values(), np.float64, len(chosen))
    scale = np.array(scales) if wmtr else np.ones(len(chosen))
    order = np.argsort(ids)
    ids, tf, scale = ids[order], tf[order], scale[order]
    norm = K1 * (1 - B + B * _length_ratio(counts.length, avg_length))
    values = scale * tf * (K1 + 1) / (tf + norm)
    vector = SparseVector.model_construct(indices=ids.tolist(), values=values.tolist())
    return DocumentTerms(vector=vector, length=counts.length)


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
    weights.update(dict.fromkeys(counts.words | counts.demoted, 1.0))
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
    demoted: list[int] = []
    trigrams: list[int] = []
    surface: set[int] = set()
    codes: set[int] = set()
    distinct = Counter(tokens)
    for views, n in zip(
        many_views(list(distinct), params.kind, language), distinct.values(), strict=True
    ):
        words += views.words * n
        demoted += views.demoted * n
        trigrams += views.trigrams * n
        surface.update(views.surface)
        if views.code:
            codes.update(views.trigrams)
    length = len(trigrams) if params.kind == VectorType.TRIGRAMS else len(tokens)
    counts = Counter(words), Counter(demoted), Counter(trigrams)
    return _Counts(*counts, length, frozenset(surface), frozenset(codes))


def _merge_collisions(counts: _Counts) -> None:
    """Keep ids unique across the sides: a hash collision folds into the word side."""
    for source, target in (
        (counts.demoted, counts.words),
        (counts.trigrams, counts.words),
        (counts.trigrams, counts.demoted),
    ):
        for i in source.keys() & target.keys():
            target[i] += source.pop(i)


def _slots(params: LexicalParams, n_words: int, n_trigrams: int) -> tuple[int, int]:
    """Slots per side: WMTR gives word_ratio % to words and the rest to trigrams; trigram slots
    left unused go to words, never the other way round (a long text's trigrams would crowd out
    its words, and a short text has few enough trigrams to fit its share)."""
    top_k = params.top_k
    if params.kind != VectorType.WMTR:
        return top_k, top_k  # only one side has candidates
    share = (top_k * params.word_ratio + 50) // 100
    trigrams = min(n_trigrams, top_k - share)
    return min(n_words, top_k - trigrams), trigrams


def _top(counts: Counter[int], n: int) -> dict[int, int]:
    """The n best (id: tf): higher tf (so higher weight) first, ties to the lower id; all of
    them when they fit, as most texts' words do."""
    if len(counts) <= n:
        return dict(counts)
    ids = np.fromiter(counts, np.int64, len(counts))
    tf = np.fromiter(counts.values(), np.int64, len(counts))
    best = np.lexsort((ids, -tf))[: max(n, 0)]
    return dict(zip(ids[best].tolist(), tf[best].tolist(), strict=True))


def _length_ratio(length: int, avg_length: float) -> float:
    return length / avg_length if avg_length > 0 else 1.0
