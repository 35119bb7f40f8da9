"""Document batches on a bfloat16 transformer: picked on AMX CPUs, probed, float32 after it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest

from bench.common import texts
from core.enums import EmbedKind, EncoderPrecision
from core.settings import Settings
from encoder import runners
from encoder.registry import LoadedModel, ModelRegistry
from encoder.runners import Bf16Runner, TorchRunner

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
# Short queries, ~60-word documents and texts past 256 tokens (truncated), in one padded batch.
BATCH = texts.queries(4) + texts.documents(4) + texts.seed_documents(2) + ["Hello, World!"]


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def load(data_dir: Path, precision: EncoderPrecision) -> LoadedModel:
    settings = Settings(data_dir=data_dir, device="cpu", encoder_precision=precision)
    return asyncio.run(ModelRegistry(settings).get(MINILM))


@pytest.fixture(scope="module")
def bf16(tmp_path_factory: pytest.TempPathFactory) -> LoadedModel:
    return load(tmp_path_factory.mktemp("data"), EncoderPrecision.BF16)


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


def test_bf16_runs_the_document_lane_and_leaves_queries_on_float32(bf16: LoadedModel) -> None:
    assert isinstance(bf16.runner(EmbedKind.DOCUMENT), Bf16Runner)
    assert bf16.lanes in {"torch-bf16+onnx", "torch-bf16+torch"}


@pytest.mark.parametrize("normalize", [True, False])
def test_bf16_embeddings_match_float32(bf16: LoadedModel, normalize: bool) -> None:
    reference = TorchRunner(bf16.model).encode(BATCH, normalize)
    found = np.asarray(bf16.embed_fn(normalize, keep_case=True)(BATCH))
    assert cosines(found, reference).min() >= runners.PROBE_MIN_COSINE
    norms = np.linalg.norm(found, axis=1)
    if normalize:  # normalized in float32, after the bfloat16 transformer
        assert np.allclose(norms, 1.0, atol=1e-5)
    else:
        assert np.allclose(norms, np.linalg.norm(reference, axis=1), rtol=1e-2)


def test_float32_when_asked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runners, "cpu_flags", lambda: {"avx512f", "amx_bf16"})
    model = load(tmp_path, EncoderPrecision.FP32)
    assert isinstance(model.runner(EmbedKind.DOCUMENT), TorchRunner)


def test_a_bf16_copy_that_disagrees_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runners, "probe", lambda model, runner: 0.98)
    model = load(tmp_path, EncoderPrecision.BF16)
    assert isinstance(model.runner(EmbedKind.DOCUMENT), TorchRunner)
    assert len(model.embed_fn(True, False)(["still works"])[0]) == 384


@pytest.mark.parametrize(
    ("wanted", "device", "flags", "expected"),
    [
        (EncoderPrecision.AUTO, "cpu", {"avx512_bf16", "amx_bf16"}, EncoderPrecision.BF16),
        (EncoderPrecision.AUTO, "cpu", {"avx2", "avx512_bf16"}, EncoderPrecision.FP32),
        (EncoderPrecision.AUTO, "cpu", set(), EncoderPrecision.FP32),
        (EncoderPrecision.BF16, "cpu", set(), EncoderPrecision.BF16),
        (EncoderPrecision.FP32, "cpu", {"amx_bf16"}, EncoderPrecision.FP32),
        (EncoderPrecision.AUTO, "cuda", {"amx_bf16"}, EncoderPrecision.FP32),
        (EncoderPrecision.BF16, "cuda", {"amx_bf16"}, EncoderPrecision.FP32),
    ],
)
def test_pick_precision(
    monkeypatch: pytest.MonkeyPatch,
    wanted: EncoderPrecision,
    device: str,
    flags: set[str],
    expected: EncoderPrecision,
) -> None:
    monkeypatch.setattr(runners, "cpu_flags", lambda: flags)
    assert runners.pick_precision(wanted, device) is expected


def test_cpu_flags_read_proc_cpuinfo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nmodel name\t: Xeon\nflags\t\t: fpu avx2 amx_bf16\n\n")
    monkeypatch.setattr(runners, "CPUINFO", cpuinfo)
    assert runners.cpu_flags() == {"fpu", "avx2", "amx_bf16"}
    monkeypatch.setattr(runners, "CPUINFO", tmp_path / "absent")
    assert runners.cpu_flags() == set()


def test_a_text_embeds_the_same_alone_and_in_a_longer_padded_batch(bf16: LoadedModel) -> None:
    embed = bf16.embed_fn(True, False)
    alone = np.asarray(embed(["a short text"]))
    batched = np.asarray(embed(["a short text", texts.seed_documents(1)[0]])[:1])
    assert cosines(alone, batched).min() >= 0.999


def test_token_lengths_are_padded_to_a_step_masked_and_capped() -> None:
    import torch

    ones = torch.ones((2, 33), dtype=torch.long)
    padded = runners.pad_tokens({"input_ids": ones, "attention_mask": ones.clone()}, 256)
    assert padded["input_ids"].shape == (2, 64)
    assert padded["attention_mask"][:, 33:].sum() == 0 and padded["attention_mask"].sum() == 66
    capped = runners.pad_tokens({"input_ids": torch.ones((1, 250), dtype=torch.long)}, 256)
    assert capped["input_ids"].shape == (1, 256)
    exact = runners.pad_tokens({"input_ids": torch.ones((1, 64), dtype=torch.long)}, 256)
    assert exact["input_ids"].shape == (1, 64)
