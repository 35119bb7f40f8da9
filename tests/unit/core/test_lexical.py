"""Unit tests for the lexical (keyword) sparse encoders."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.enums import VectorType
from core.lexical import (
    LexicalParams,
    document_length,
    document_vector,
    document_vectors,
    is_lookup,
    query_vector,
    token_id,
)
from core.lexical.encode import K1, SURFACE_WEIGHT
from core.lexical.language import detect, text_language
from core.lexical.views import is_code
from core.vectors import SparseVector

WMTR = LexicalParams(VectorType.WMTR)
FULL_TEXT = LexicalParams(VectorType.FULL_TEXT)
TRIGRAMS = LexicalParams(VectorType.TRIGRAMS)
WHITESPACE = LexicalParams(VectorType.WHITESPACE)
ALL_KINDS = [WMTR, FULL_TEXT, TRIGRAMS, WHITESPACE]
KIND_IDS = [p.kind.value for p in ALL_KINDS]

LONG_TEXT = " ".join(
    f"Paragraph {n} explains searching, ranking and indexing of documents number {n} "
    f"with codes AB-{n}x and words like retrieval{n} relevance{n} engine{n}."
    for n in range(40)
)
REPO_ROOT = Path(__file__).resolve().parents[3]


def dot(query: SparseVector, document: SparseVector) -> float:
    weights = dict(zip(document.indices, document.values, strict=True))
    return sum(v * weights.get(i, 0.0) for i, v in zip(query.indices, query.values, strict=True))


def score(query: str, text: str, params: LexicalParams, trigram_weight: float = 1.0) -> float:
    doc = document_vector(text, params, avg_length=10.0)
    return dot(query_vector(query, params, trigram_weight), doc.vector)


def trigram_ids(text: str) -> set[int]:
    params = LexicalParams(VectorType.TRIGRAMS, top_k=10000)
    return set(document_vector(text, params, avg_length=0).vector.indices)


@pytest.mark.parametrize("top_k", [512, 24])
@pytest.mark.parametrize("params", ALL_KINDS, ids=KIND_IDS)
def test_a_text_has_the_same_vector_alone_and_in_a_batch(params: LexicalParams, top_k: int) -> None:
    """A batch's texts are counted together (document_vectors): nothing of one text's terms,
    slots or length may reach another's, empty and long texts beside short ones."""
    params = LexicalParams(params.kind, top_k=top_k)
    roomy = LexicalParams(params.kind, top_k=10000)
    texts = [
        LONG_TEXT,
        "",
        "the cat and the hat",
        "!!",
        "zebra " * 300,
        "Part 12LP'-y03",
        LONG_TEXT,
    ]
    batch = document_vectors(texts, params, avg_length=20)
    alone = [document_vector(text, params, avg_length=20) for text in texts]
    assert batch == alone
    assert batch[0] == batch[-1]
    assert len(batch[0].vector) == min(top_k, len(document_vector(LONG_TEXT, roomy, 20).vector))
    assert len(batch[1].vector) == 0


def test_exact_code_matches_as_one_surface_token() -> None:
    doc = document_vector("Replacement part 12LP'-y03 in stock.", WMTR, avg_length=5)
    assert token_id("w:12lp'-y03") in doc.vector.indices
    assert score("12LP'-y03", "part 12LP'-y03", WMTR, trigram_weight=0) > 0
    assert score("12LP'-y03", "part 12LP'-y04", WMTR, trigram_weight=0) < score(
        "12LP'-y03", "part 12LP'-y03", WMTR, trigram_weight=0
    )


def test_code_pieces_match_partial_queries() -> None:
    assert score("y03", "part 12LP'-y03", WMTR, trigram_weight=0) > 0
    assert score("12lp", "part 12LP'-y03", WMTR, trigram_weight=0) > 0


def test_inflections_share_a_stemmed_token() -> None:
    assert score("running", "She runs every day", WMTR, trigram_weight=0) > 0
    assert score("running", "She runs every day", FULL_TEXT) > 0
    assert score("running", "She runs every day", WHITESPACE) == 0


def test_typo_overlaps_through_trigrams() -> None:
    assert score("serch", "full text search", WMTR) > 0
    assert score("serch", "full text search", TRIGRAMS) > 0
    assert score("serch", "full text search", WMTR, trigram_weight=0) == 0


def test_unrelated_text_does_not_overlap() -> None:
    for params in ALL_KINDS:
        assert score("banana smoothie", "quantum physics lecture", params) == 0


def test_more_relevant_document_scores_higher() -> None:
    query = "hybrid search engine"
    relevant = "A hybrid search engine combines keyword search with vectors."
    passing = "The engine room of the ship was loud and hot all night long."
    for params in ALL_KINDS:
        assert score(query, relevant, params) > score(query, passing, params)


@pytest.mark.parametrize("top_k", [1, 5, 37, 128])
@pytest.mark.parametrize("params", ALL_KINDS, ids=KIND_IDS)
def test_document_vector_keeps_at_most_top_k_entries(params: LexicalParams, top_k: int) -> None:
    limited = LexicalParams(params.kind, top_k=top_k)
    assert len(document_vector(LONG_TEXT, limited, avg_length=100).vector) == top_k


@pytest.mark.parametrize(
    ("word_ratio", "words", "trigrams"),
    [(80, 16, 4), (50, 10, 10), (0, 0, 20), (100, 20, 0)],
)
def test_word_ratio_splits_slots_between_words_and_trigrams(
    word_ratio: int, words: int, trigrams: int
) -> None:
    params = LexicalParams(VectorType.WMTR, top_k=20, word_ratio=word_ratio)
    indices = document_vector(LONG_TEXT, params, avg_length=100).vector.indices
    n_trigrams = len(set(indices) & trigram_ids(LONG_TEXT))
    assert (len(indices) - n_trigrams, n_trigrams) == (words, trigrams)


def test_trigrams_never_take_unused_word_slots() -> None:
    # 4 word entries (two surface tokens, two stems) and 33 trigrams for 30 slots: the
    # trigrams keep their 20 % share (6), the 20 word slots nobody needs stay empty
    text = "internationalization documentation"
    params = LexicalParams(VectorType.WMTR, top_k=30, word_ratio=80)
    indices = document_vector(text, params, avg_length=2).vector.indices
    n_trigrams = len(set(indices) & trigram_ids(text))
    assert (len(indices), n_trigrams) == (10, 6)


def test_unused_trigram_slots_go_to_words() -> None:
    # 100 slots, 10 % for words: the 40 trigrams leave 50 of their 90 to the 40 word entries
    text = " ".join(f"w{n}" for n in range(20))  # 2-letter pieces: 2 trigrams each
    params = LexicalParams(VectorType.WMTR, top_k=100, word_ratio=10)
    indices = document_vector(text, params, avg_length=20).vector.indices
    n_trigrams = len(set(indices) & trigram_ids(text))
    assert n_trigrams == len(trigram_ids(text))  # every trigram fits its share
    assert len(indices) - n_trigrams == 40  # 20 surface tokens and 20 stems, past the 10 %


def test_wmtr_words_outweigh_their_trigrams_and_stems_outweigh_surface_forms() -> None:
    doc = document_vector("catalogue", WMTR, avg_length=1).vector
    weights = dict(zip(doc.indices, doc.values, strict=True))
    stem = weights[token_id("s:catalogu")]
    assert weights[token_id("w:catalogue")] == pytest.approx(stem / 2)
    assert max(weights[i] for i in trigram_ids("catalogue")) < stem / 10


def test_wmtr_stop_words_leave_no_term_so_a_field_of_them_only_is_empty() -> None:
    roomy = LexicalParams(VectorType.WMTR, top_k=100)
    indices = document_vector("the the the the catalogue", roomy, avg_length=5).vector.indices
    assert token_id("w:the") not in indices and token_id("w:catalogue") in indices
    assert document_vector("I Do", roomy, avg_length=5).vector.indices == []
    assert query_vector("to be or not", roomy).indices == []


def test_bm25_saturation_downweights_long_documents() -> None:
    short = document_vector("zebra " + "filler " * 4, FULL_TEXT, avg_length=20)
    long = document_vector("zebra " + "filler " * 60, FULL_TEXT, avg_length=20)
    zebra = token_id("s:zebra")
    weight = dict(zip(short.vector.indices, short.vector.values, strict=True))[zebra]
    long_weight = dict(zip(long.vector.indices, long.vector.values, strict=True))[zebra]
    assert weight > long_weight


def test_bm25_weight_follows_the_formula_and_saturates() -> None:
    # length == avg_length (or avg_length <= 0) makes the length factor 1
    for tf in (1, 2, 5):
        for avg_length in (float(tf), 0.0):
            doc = document_vector("zebra " * tf, FULL_TEXT, avg_length=avg_length)
            assert doc.vector.values == [pytest.approx(tf * 2.2 / (tf + 1.2))]
    many = document_vector("zebra " * 1000, FULL_TEXT, avg_length=1000)
    assert many.vector.values[0] < 2.2


def test_trigram_weight_scales_and_zero_drops_trigrams() -> None:
    trigrams = trigram_ids("searching")
    full = query_vector("searching", WMTR)
    half = query_vector("searching", WMTR, trigram_weight=0.5)
    none = query_vector("searching", WMTR, trigram_weight=0)
    full_weights = dict(zip(full.indices, full.values, strict=True))
    half_weights = dict(zip(half.indices, half.values, strict=True))
    assert trigrams <= set(full_weights)
    assert all(half_weights[i] == 0.5 * full_weights[i] for i in trigrams)
    assert all(half_weights[i] == 1.0 for i in set(half_weights) - trigrams)
    assert not trigrams & set(none.indices)
    assert len(none) == len(full) - len(trigrams)


def test_query_weights_are_one_per_distinct_term() -> None:
    query = query_vector("cat cat Cat dog", FULL_TEXT)
    assert query.indices == sorted([token_id("s:cat"), token_id("s:dog")])
    assert query.values == [1.0, 1.0]


def test_token_ids_are_stable_31_bit() -> None:
    assert token_id("search") == 1953518150
    assert token_id("w:search") == 1303722080
    tokens = ("", "a", "é", "12lp'-y03", "x" * 1000)
    assert all(0 <= token_id(t) < 2**31 for t in tokens)


def test_token_ids_are_identical_across_processes() -> None:
    code = "from core.lexical import token_id; print(token_id('w:café'))"
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        check=True,
    )
    assert int(out.stdout) == token_id("w:café")


def test_stop_words_removed_in_full_text() -> None:
    assert len(query_vector("the and of", FULL_TEXT)) == 0
    doc = document_vector("The cat and the hat", FULL_TEXT, avg_length=5)
    assert sorted(doc.vector.indices) == sorted([token_id("s:cat"), token_id("s:hat")])


def test_whitespace_keeps_tokens_unstemmed_minus_stop_words() -> None:
    doc = document_vector("The Runner's shoes, running.", WHITESPACE, avg_length=4)
    expected = {token_id("w:runner's"), token_id("w:shoes"), token_id("w:running")}
    assert set(doc.vector.indices) == expected


def test_language_changes_stemming() -> None:
    german = LexicalParams(VectorType.FULL_TEXT, language="de")
    assert score("Häuser", "ein altes Haus", german) > 0
    assert score("Häuser", "ein altes Haus", FULL_TEXT) == 0
    assert len(query_vector("und", german)) == 0
    assert len(query_vector("und", FULL_TEXT)) == 1


GERMAN_TEXT = "Die alten Häuser stehen am Fluss und die Kinder spielen im Garten"


def full_text_ids(text: str, **options: object) -> set[int]:
    params = LexicalParams(VectorType.FULL_TEXT, **options)  # type: ignore[arg-type]
    return set(document_vector(text, params, avg_length=10).vector.indices)


def test_detection_names_the_language_of_a_sentence_with_its_confidence() -> None:
    language, confidence = detect(GERMAN_TEXT)
    assert language == "de" and confidence > 0.9
    assert detect("The old houses stand by the river")[0] == "en"


def test_a_german_text_is_stemmed_as_german_under_language_detect() -> None:
    detected = full_text_ids(GERMAN_TEXT, detect_language=True, language_confidence=0.9)
    assert token_id("s:haus") in detected and token_id("s:kind") in detected
    assert token_id("s:und") not in detected  # German stop word dropped
    english = full_text_ids(GERMAN_TEXT)
    assert token_id("s:haus") not in english and token_id("s:und") in english


def test_detection_below_the_confidence_threshold_keeps_the_default_language() -> None:
    sure_enough = full_text_ids(GERMAN_TEXT, detect_language=True, language_confidence=1.0)
    assert sure_enough == full_text_ids(GERMAN_TEXT)
    assert text_language("Haus", "en", True, 0.9) == "en"  # one word: not sure enough


def test_detection_is_off_unless_asked() -> None:
    assert text_language(GERMAN_TEXT, "en", False, 0.0) == "en"
    assert text_language(GERMAN_TEXT, "en", True, 0.0) == "de"


def test_a_query_is_detected_too() -> None:
    params = LexicalParams(VectorType.FULL_TEXT, detect_language=True, language_confidence=0.9)
    query = query_vector("Wo stehen die alten Häuser der Kinder", params)
    assert token_id("s:haus") in query.indices


def test_an_english_text_encodes_differently_with_default_de_and_en() -> None:
    text = "The runners are running through the houses"
    english, german = full_text_ids(text, language="en"), full_text_ids(text, language="de")
    assert english != german
    assert token_id("s:run") in english and token_id("s:the") not in english
    assert token_id("s:the") in german


def test_trigrams_ignore_the_language() -> None:
    trigram_params = LexicalParams(VectorType.TRIGRAMS, detect_language=True, language="de")
    assert document_vector(GERMAN_TEXT, trigram_params, 10) == document_vector(
        GERMAN_TEXT, TRIGRAMS, 10
    )


def test_unknown_language_has_no_stemming_or_stop_words() -> None:
    unknown = LexicalParams(VectorType.FULL_TEXT, language="zz")
    assert score("running", "runs", unknown) == 0
    assert query_vector("the running", unknown).indices == sorted(
        [token_id("s:the"), token_id("s:running")]
    )


def test_non_ascii_words_fold_case() -> None:
    for params in ALL_KINDS:
        assert score("CAFÉ", "un café noir", params) > 0
        assert score("ΣΟΦΙΑ", "σοφια", params) > 0


def test_keep_case_distinguishes_case() -> None:
    cased = LexicalParams(VectorType.WHITESPACE, keep_case=True)
    assert score("Apple", "apple pie", cased) == 0
    assert score("Apple", "Apple pie", cased) > 0
    assert score("Apple", "apple pie", WHITESPACE) > 0


@pytest.mark.parametrize("text", ["", "   \n\t ", "!!! -- ..."])
@pytest.mark.parametrize("params", ALL_KINDS, ids=KIND_IDS)
def test_empty_text_gives_empty_vector(params: LexicalParams, text: str) -> None:
    doc = document_vector(text, params, avg_length=10)
    assert (doc.vector.indices, doc.vector.values, doc.length) == ([], [], 0)
    assert len(query_vector(text, params)) == 0
    assert document_length(text, params) == 0


@pytest.mark.parametrize("params", ALL_KINDS, ids=KIND_IDS)
def test_indices_unique_and_sorted(params: LexicalParams) -> None:
    doc = document_vector(LONG_TEXT, params, avg_length=100).vector
    query = query_vector(LONG_TEXT, params, trigram_weight=0.3)
    for vector in (doc, query):
        assert vector.indices == sorted(set(vector.indices))
        assert len(vector.indices) == len(vector.values)
        assert all(v > 0 for v in vector.values)


@pytest.mark.parametrize("params", ALL_KINDS, ids=KIND_IDS)
def test_document_length_matches_document_vector(params: LexicalParams) -> None:
    for text in (LONG_TEXT, "one", "part 12LP'-y03, x" + "y" * 100):
        assert document_length(text, params) == document_vector(text, params, 10).length


def test_document_length_counts_words_or_trigrams() -> None:
    assert document_length("The quick, brown fox!", WMTR) == 4
    assert document_length("The quick, brown fox!", FULL_TEXT) == 4
    assert document_length("ab cde", TRIGRAMS) == 5


@pytest.mark.parametrize("params", ALL_KINDS, ids=KIND_IDS)
def test_encoding_is_deterministic(params: LexicalParams) -> None:
    first = document_vector(LONG_TEXT, params, avg_length=50)
    assert document_vector(LONG_TEXT, params, avg_length=50) == first
    assert query_vector(LONG_TEXT, params) == query_vector(LONG_TEXT, params)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"kind": VectorType.DENSE_MODEL},
        {"kind": VectorType.WMTR, "top_k": 0},
        {"kind": VectorType.WMTR, "top_k": 10001},
        {"kind": VectorType.WMTR, "word_ratio": 101},
        {"kind": VectorType.WMTR, "word_ratio": -1},
        {"kind": VectorType.FULL_TEXT, "language_confidence": 1.5},
    ],
)
def test_params_reject_out_of_range_values(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        LexicalParams(**kwargs)  # type: ignore[arg-type]


def test_negative_trigram_weight_is_rejected() -> None:
    with pytest.raises(ValueError):
        query_vector("search", WMTR, trigram_weight=-1)


def test_top_k_keeps_the_most_frequent_terms_ties_by_lowest_id() -> None:
    text = "alpha alpha alpha beta beta gamma delta"
    two = LexicalParams(VectorType.FULL_TEXT, top_k=2)
    kept = document_vector(text, two, avg_length=7).vector.indices
    assert kept == sorted([token_id("s:alpha"), token_id("s:beta")])
    one = LexicalParams(VectorType.FULL_TEXT, top_k=1)
    tie = document_vector("gamma delta", one, avg_length=2).vector.indices
    assert tie == [min(token_id("s:gamma"), token_id("s:delta"))]


def test_a_word_and_a_trigram_of_one_id_are_one_entry_weighed_as_the_word() -> None:
    """31-bit ids collide now and then: the surface word `zq18543` and the trigram `9mq` (of
    `a9mqb`) share one. The vector has it once, on the word side, its tf the two counts'."""
    shared = token_id("w:zq18543")
    assert shared == token_id("t:9mq")
    vector = document_vector("zq18543 a9mqb", WMTR, avg_length=2).vector
    assert vector.indices.count(shared) == 1
    tf, norm = 2, K1  # two occurrences; length 2 at average 2
    surface_weight = SURFACE_WEIGHT * tf * (K1 + 1) / (tf + norm)
    assert vector.values[vector.indices.index(shared)] == pytest.approx(surface_weight)


@pytest.mark.parametrize(
    ("token", "code"),
    [("12lpy03", True), ("12LP'-y03/5-XL", True), ("v2.13", True), ("p53", True)]
    + [("bearing", False), ("2026", False), ("-", False)],
)
def test_a_code_mixes_letters_and_digits(token: str, code: bool) -> None:
    assert is_code(token) is code


def test_code_trigrams_keep_a_codes_trigrams_where_the_trigram_weight_drops_them() -> None:
    params = LexicalParams(VectorType.WMTR)
    words_only = query_vector("bearing 12lpy03", params, trigram_weight=0.0)
    with_codes = query_vector("bearing 12lpy03", params, trigram_weight=0.0, code_trigrams=True)
    code = set(query_vector("12lpy03", params, trigram_weight=1.0).indices)
    word = set(query_vector("bearing", params, trigram_weight=1.0).indices)
    assert set(with_codes.indices) - set(words_only.indices) == code - word - set(
        words_only.indices
    )
    assert set(with_codes.indices) & (word - set(words_only.indices)) == set()  # a word's: none
    assert query_vector("bearing", params, 0.0, code_trigrams=True) == query_vector(
        "bearing", params, 0.0
    )


def test_a_code_written_with_separators_is_also_its_compact_form() -> None:
    """12LP'-y03/5-XL is found by 12lpy035xl, and its compact trigrams span the joints."""
    written = set(document_vector("Bearing 12LP'-y03/5-XL", WMTR, 5.0).vector.indices)
    compact = set(query_vector("12lpy035xl", WMTR).indices)
    assert compact <= written
    partial = set(query_vector("12lpy03", WMTR).indices)
    plain = set(document_vector("Bearing 12LP y03 5 XL", WMTR, 5.0).vector.indices)
    assert len(partial & written) > len(partial & plain)


@pytest.mark.parametrize(
    ("query", "lookup"),
    [("12lpy03", True), ("12lp y03 5 xl", True), ("no 884-12B", True), ("LP-1203", True)]
    + [("bearing 12lpy03", False), ("vitamin B12 deficiency", False), ("4 seasons", False)],
)
def test_a_lookup_asks_for_a_code_and_nothing_else(query: str, lookup: bool) -> None:
    assert is_lookup(query) is lookup
