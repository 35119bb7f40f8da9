"""bench/relevance's metrics on hand-checked rankings, and its reading of a BEIR folder."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from bench.relevance import beir, codes
from bench.relevance.__main__ import main


def test_ndcg_at_10_is_one_for_the_ideal_order_and_discounts_by_log2() -> None:
    relevant = {"a": 1, "b": 1}
    assert beir.ndcg_at_10(["a", "b", "x"], relevant) == pytest.approx(1.0)
    ideal = 1 + 1 / math.log2(3)
    assert beir.ndcg_at_10(["x", "a", "b"], relevant) == pytest.approx(
        (1 / math.log2(3) + 1 / math.log2(4)) / ideal
    )
    assert beir.ndcg_at_10([f"x{i}" for i in range(10)] + ["a"], relevant) == 0.0


def test_graded_gain_is_two_to_the_relevance_minus_one() -> None:
    relevant = {"a": 2, "b": 1}
    assert beir.ndcg_at_10(["b", "a"], relevant) == pytest.approx(
        (1 + 3 / math.log2(3)) / (3 + 1 / math.log2(3))
    )


def test_recall_at_100_counts_the_judged_documents_found() -> None:
    relevant = {"a": 1, "b": 1, "c": 0}
    assert beir.recall_at_100(["a"] + [f"x{i}" for i in range(99)] + ["b"], relevant) == 0.5


def test_mean_scores_a_query_without_a_run_as_zero() -> None:
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}}
    assert beir.mean(beir.ndcg_at_10, {"q1": ["a"]}, qrels) == pytest.approx(0.5)


def test_load_keeps_judged_queries_and_maps_the_corpus(tmp_path: Path) -> None:
    (tmp_path / "corpus.jsonl").write_text(
        json.dumps({"_id": "d1", "title": "T", "text": "body"}) + "\n"
    )
    (tmp_path / "queries.jsonl").write_text(
        json.dumps({"_id": "1", "text": "judged"}) + "\n" + json.dumps({"_id": "2", "text": "no"})
    )
    (tmp_path / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\n1\td1\t1\n")
    data = beir.load(tmp_path)
    assert data.corpus == [beir.Record("d1", "T", "body")]
    assert data.queries == [beir.Query("1", "judged")]
    assert data.qrels == {"1": {"d1": 1}}


def test_the_benchmark_skips_cleanly_without_the_data(tmp_path: Path) -> None:
    assert main(["--data", str(tmp_path / "absent"), "--no-write"]) == 0


def test_a_typo_swaps_two_adjacent_letters_of_the_longest_word_and_nothing_else() -> None:
    queries = [beir.Query("1", "Vitamin D deficiency and tuberculosis"), beir.Query("2", "a b c")]
    typed = beir.with_typos(queries)
    assert typed == beir.with_typos(queries)  # the same every run
    assert typed[1] == queries[1]  # no word of five letters: left as it is
    before, after = queries[0].text.split(), typed[0].text.split()
    changed = [(b, a) for b, a in zip(before, after, strict=True) if b != a]
    assert [b for b, _ in changed] == ["tuberculosis"]
    [(word, typo)] = changed
    assert sorted(word) == sorted(typo) and word[0] == typo[0]
    assert sum(x != y for x, y in zip(word, typo, strict=True)) == 2


def test_the_code_catalogue_holds_each_code_once_in_a_title_or_a_content() -> None:
    products = codes.catalogue()
    assert {p.where for p in products[::2]} == {"title"}
    assert {p.where for p in products[1::2]} == {"content"}
    for product in products:
        holder = product.name if product.where == "title" else product.content
        other = product.content if product.where == "title" else product.name
        assert product.code in holder and product.code not in other
    asked = codes.queries(products)
    # Each form names one product: the same text never stands for two.
    assert len({q.text for q in asked}) == len(asked) == 3 * len(products)
    assert codes.forms("12LP'-y03/5-XL") == {
        "compact": "12lpy035xl",
        "partial": "12lpy03",
        "spaced": "12lp y03 5 xl",
    }


def test_recall_at_1_counts_by_where_the_code_sits_and_the_form_asked() -> None:
    hit = codes.CodeQuery("p1", "title", "compact", "a1")
    miss = codes.CodeQuery("p2", "title", "compact", "b2")
    none = codes.CodeQuery("p3", "content", "spaced", "c 3")
    recall = codes.recall_at_1({hit: "p1", miss: "p1", none: None})
    assert recall == {("title", "compact"): 0.5, ("content", "spaced"): 0.0}
