"""Fusion on hand-checked examples: weighted RRF with k=2, linear min-max, tie-breaking, and
retrievers that sum several fields of one vector."""

from __future__ import annotations

import pytest

from core.enums import FusionMode
from search.fusion import Retriever, fuse, retriever_scores
from store.protocol import ArmHit, summed_ranking


def one_per_arm(weights: list[float]) -> list[Retriever]:
    """Every arm its own retriever, as a request's vector_options with fields make them."""
    return [Retriever((arm,), weight) for arm, weight in enumerate(weights)]


def hits(*pairs: tuple[str, float]) -> list[ArmHit]:
    return [ArmHit(doc_id, score) for doc_id, score in pairs]


def test_weighted_rrf_sums_weight_over_two_plus_rank() -> None:
    arms = [hits(("a", 9.0), ("b", 5.0)), hits(("b", 0.9), ("c", 0.8))]
    fused = fuse(arms, one_per_arm([1.0, 2.0]), FusionMode.RRF)
    scores = {f.doc_id: f.score for f in fused}
    assert scores["a"] == pytest.approx(1 / 3)
    assert scores["b"] == pytest.approx(1 / 4 + 2 / 3)
    assert scores["c"] == pytest.approx(2 / 4)
    assert [f.doc_id for f in fused] == ["b", "c", "a"]


def test_rrf_ties_break_by_raw_score_sum_then_id() -> None:
    arms = [hits(("x", 1.0)), hits(("y", 3.0)), hits(("z", 3.0))]
    assert [f.doc_id for f in fuse(arms, one_per_arm([1.0, 1.0, 1.0]), FusionMode.RRF)] == [
        "y",
        "z",
        "x",
    ]


def test_linear_normalises_each_arm_min_max() -> None:
    arms = [hits(("a", 10.0), ("b", 5.0), ("c", 0.0)), hits(("c", 2.0), ("a", 1.0))]
    fused = {f.doc_id: f.score for f in fuse(arms, one_per_arm([1.0, 0.5]), FusionMode.LINEAR)}
    assert fused == pytest.approx({"a": 1.0, "b": 0.5, "c": 0.5})


def test_linear_arm_with_equal_scores_gives_one() -> None:
    fused = fuse([hits(("a", 3.0), ("b", 3.0))], one_per_arm([2.0]), FusionMode.LINEAR)
    assert [f.score for f in fused] == [2.0, 2.0]


def test_fused_keeps_raw_score_and_rank_per_arm() -> None:
    fused = fuse(
        [hits(("a", 7.0)), hits(("q", 1.0), ("a", 0.5))], one_per_arm([1.0, 1.0]), FusionMode.RRF
    )
    entry = next(f for f in fused if f.doc_id == "a")
    assert entry.arm_scores == {0: (7.0, 1), 1: (0.5, 2)}


def test_a_retriever_sums_its_fields_with_their_weights_before_normalising() -> None:
    # one vector over name (weight 0.5) and content: b's 0.5 * 8 + 6 beats a's 9 alone
    name, content = hits(("b", 8.0), ("c", 2.0)), hits(("a", 9.0), ("b", 6.0))
    retriever = Retriever((0, 1), 1.0, (0.5, 1.0))
    fused = {f.doc_id: f.score for f in fuse([name, content], [retriever], FusionMode.LINEAR)}
    assert fused == pytest.approx({"b": 1.0, "a": (9 - 1) / (10 - 1), "c": 0.0})


def test_a_summed_retriever_is_one_voice_in_rrf() -> None:
    arms = [hits(("a", 3.0)), hits(("a", 2.0), ("b", 1.0)), hits(("b", 0.9), ("a", 0.1))]
    retrievers = [Retriever((0, 1), 1.0, (1.0, 1.0)), Retriever((2,), 1.0)]
    fused = {f.doc_id: f.score for f in fuse(arms, retrievers, FusionMode.RRF)}
    assert fused == pytest.approx({"a": 1 / 3 + 1 / 4, "b": 1 / 4 + 1 / 3})


def test_a_summed_retriever_keeps_each_arms_raw_score_and_rank() -> None:
    arms = [hits(("a", 3.0)), hits(("b", 2.0), ("a", 1.0))]
    fused = fuse(arms, [Retriever((0, 1), 1.0, (0.4, 1.0))], FusionMode.LINEAR)
    entry = next(f for f in fused if f.doc_id == "a")
    assert entry.arm_scores == {0: (3.0, 1), 1: (1.0, 2)}


def test_over_a_pool_a_document_missing_from_a_list_scored_zero_there() -> None:
    # Three pool documents; the first arm's list misses c (no shared term), so its min-max runs
    # from 0, not from b's 2.0; the second arm scored all three and keeps its own range.
    arms = [hits(("a", 4.0), ("b", 2.0)), hits(("c", 3.0), ("a", 2.0), ("b", 1.0))]
    pooled = {f.doc_id: f.score for f in fuse(arms, one_per_arm([1.0, 1.0]), FusionMode.LINEAR, 3)}
    assert pooled == pytest.approx({"a": 1.0 + 0.5, "b": 0.5 + 0.0, "c": 0.0 + 1.0})
    listed = {f.doc_id: f.score for f in fuse(arms, one_per_arm([1.0, 1.0]), FusionMode.LINEAR)}
    assert listed == pytest.approx({"a": 1.5, "b": 0.0, "c": 1.0})


@pytest.mark.parametrize("mode", [FusionMode.LINEAR, FusionMode.RRF])
def test_one_retrievers_scores_from_its_ranking_alone_are_what_fusion_gives(
    mode: FusionMode,
) -> None:
    # What a search node computes from the store's summed ranking (Store.query_summed), without
    # the arms' hit lists: the same scores fuse gives the retriever's first candidates.
    arms = [hits(("a", 3.0), ("b", 2.0), ("c", 1.0)), hits(("b", 4.0), ("d", 0.5))]
    retriever = Retriever((0, 1), 0.7, (0.4, 1.0))
    fused = fuse(arms, [retriever], mode)
    ranking = summed_ranking(arms, retriever.field_weights)
    scores = retriever_scores([s for _, s in ranking], retriever.weight, mode, top=3)
    assert [doc for doc, _ in ranking[:3]] == [f.doc_id for f in fused[:3]]
    assert scores == pytest.approx([f.score for f in fused[:3]])
