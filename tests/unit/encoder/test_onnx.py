"""The ONNX Runtime backend: same embeddings as torch, exported once, one session per lane."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from bench.common import texts
from core.enums import EmbedKind, EncoderBackend, EncoderPrecision
from core.settings import Settings
from encoder import onnx, runners
from encoder.registry import LoadedModel, ModelRegistry, pick_backend
from encoder.runners import TorchRunner

MINILM = "sentence-transformers/all-MiniLM-L6-v2"


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def load(data_dir: Path, backend: EncoderBackend = EncoderBackend.AUTO, **extra) -> LoadedModel:
    settings = Settings(data_dir=data_dir, device="cpu", encoder_backend=backend, **extra)
    return asyncio.run(ModelRegistry(settings).get(MINILM))


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("data")


@pytest.fixture(scope="module")
def minilm(data_dir: Path) -> LoadedModel:
    return load(
        data_dir, EncoderBackend.ONNX, encoder_threads=2, query_threads=1, document_workers=1
    )


def cosines(a: list[list[float]], b: list[list[float]]) -> np.ndarray:
    x, y = np.asarray(a), np.asarray(b)
    return (x * y).sum(1) / np.linalg.norm(x, axis=1) / np.linalg.norm(y, axis=1)


def test_onnx_runs_both_lanes_of_minilm_on_onnx_runtime(minilm: LoadedModel) -> None:
    assert minilm.backend is EncoderBackend.ONNX and minilm.lanes == "onnx"
    assert isinstance(minilm.runner(EmbedKind.DOCUMENT), onnx.OnnxRunner)
    assert isinstance(minilm.runner(EmbedKind.QUERY), onnx.OnnxRunner)


@pytest.mark.parametrize(
    ("onnx_rate", "torch_rate", "query_lane"),
    [(200.0, 100.0, "onnx"), (100.0, 105.0, "onnx"), (100.0, 300.0, "torch")],
)
def test_auto_times_onnx_against_torch_for_queries_and_runs_documents_on_torch(
    data_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    onnx_rate: float,
    torch_rate: float,
    query_lane: str,
) -> None:
    by_name = {"onnx": onnx_rate, "torch": torch_rate}

    def measure(candidates: Sequence[runners.Runner], calls: object) -> list[runners.Measured]:
        return [runners.Measured(runner.name, by_name[runner.name]) for runner in candidates]

    monkeypatch.setattr(runners, "time_runners", measure)
    model = load(data_dir, encoder_precision=EncoderPrecision.FP32)
    assert model.lanes == f"torch+{query_lane}".removesuffix("+torch")
    assert model.runner(EmbedKind.QUERY).name == query_lane
    assert isinstance(model.runner(EmbedKind.DOCUMENT), runners.Fp32Runner)


@pytest.mark.parametrize("normalize", [True, False])
@pytest.mark.parametrize("kind", [EmbedKind.DOCUMENT, EmbedKind.QUERY])
def test_onnx_embeddings_match_torch(minilm: LoadedModel, kind: EmbedKind, normalize: bool) -> None:
    # Short queries, ~60-word documents and texts past 256 tokens (truncated), in one padded batch.
    batch = texts.queries(4) + texts.documents(4) + texts.seed_documents(2) + ["Hello, World!"]
    torch_vectors = TorchRunner(minilm.model).encode(batch, normalize)
    onnx_vectors = minilm.embed_fn(normalize, keep_case=True, kind=kind)(batch)
    assert cosines(onnx_vectors, torch_vectors.tolist()).min() >= 0.999
    norms = np.linalg.norm(np.asarray(onnx_vectors), axis=1)
    assert np.allclose(norms, np.linalg.norm(torch_vectors, axis=1), rtol=1e-3)


def test_a_text_embeds_the_same_alone_and_in_a_padded_batch(minilm: LoadedModel) -> None:
    embed = minilm.embed_fn(True, False, EmbedKind.DOCUMENT)
    alone = embed(["a short text"])
    batched = embed(["a short text", texts.seed_documents(1)[0]])[:1]
    assert cosines(alone, batched).min() >= 0.9999


def test_each_lane_has_its_own_session_and_thread_count(minilm: LoadedModel) -> None:
    def threads(kind: EmbedKind) -> int:
        runner = minilm.runner(kind)
        assert isinstance(runner, onnx.OnnxRunner)
        runner.encode(["made on first use"], True)
        assert runner._session is not None
        return int(runner._session.get_session_options().intra_op_num_threads)

    assert (threads(EmbedKind.DOCUMENT), threads(EmbedKind.QUERY)) == (2, 1)


def test_the_export_is_made_once_and_reused(minilm: LoadedModel, data_dir: Path) -> None:
    (exported,) = (data_dir / "onnx").rglob("model.onnx")
    made = exported.stat().st_mtime_ns
    again = load(data_dir, EncoderBackend.ONNX)
    assert again.backend is EncoderBackend.ONNX
    assert [p.stat().st_mtime_ns for p in (data_dir / "onnx").rglob("model.onnx")] == [made]
    assert not list((data_dir / "onnx").rglob("*.tmp"))


def test_torch_when_asked(tmp_path: Path) -> None:
    model = load(tmp_path, EncoderBackend.TORCH)
    assert model.backend is EncoderBackend.TORCH
    assert not any(isinstance(runner, onnx.OnnxRunner) for runner in model.runners.values())
    assert not (tmp_path / "onnx").exists()


def test_a_model_that_cannot_be_exported_stays_on_torch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: object) -> Path:
        raise onnx.OnnxUnavailable("no exporter for this one")

    monkeypatch.setattr(onnx, "cached_export", refuse)
    model = load(tmp_path)
    assert model.backend is EncoderBackend.TORCH
    assert len(model.embed_fn(True, False)(["still works"])[0]) == 384


@pytest.mark.parametrize(
    ("wanted", "device", "has_ort", "expected"),
    [
        (EncoderBackend.AUTO, "cpu", True, EncoderBackend.ONNX),
        (EncoderBackend.AUTO, "cpu", False, EncoderBackend.TORCH),
        (EncoderBackend.AUTO, "cuda", True, EncoderBackend.TORCH),
        (EncoderBackend.ONNX, "cuda", True, EncoderBackend.TORCH),
        (EncoderBackend.ONNX, "cpu", True, EncoderBackend.ONNX),
        (EncoderBackend.TORCH, "cpu", True, EncoderBackend.TORCH),
    ],
)
def test_pick_backend(
    monkeypatch: pytest.MonkeyPatch,
    wanted: EncoderBackend,
    device: str,
    has_ort: bool,
    expected: EncoderBackend,
) -> None:
    monkeypatch.setattr(onnx, "available", lambda: has_ort)
    assert pick_backend(wanted, device) is expected
