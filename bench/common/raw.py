"""The model called directly in this process, through the same loader and runners as a holder."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

from core.enums import EmbedKind, EncoderBackend
from core.settings import Settings
from encoder import onnx
from encoder.registry import LoadedModel, ModelRegistry


def load(backend: EncoderBackend, data_dir: Path, model: str) -> LoadedModel:
    """The model as a holder loads it (ONNX exported into data_dir on first use)."""
    settings = Settings(data_dir=data_dir, device="cpu", encoder_backend=backend)
    return asyncio.run(ModelRegistry(settings).get(model))


def with_threads(model: LoadedModel, data_dir: Path, threads: int, batch: int) -> LoadedModel:
    """The same model with a document runner of `threads` intra-op threads, `batch` texts a call
    (ONNX; torch takes its thread count from `torch_threads`)."""
    if model.backend is not EncoderBackend.ONNX:
        return model
    (exported,) = (data_dir / "onnx").rglob("model.onnx")
    runner = onnx.OnnxRunner(model.model, exported, threads, batch)
    return replace(model, runners={**model.runners, EmbedKind.DOCUMENT: runner})


@contextlib.contextmanager
def torch_threads(threads: int) -> Iterator[None]:
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def throughput(model: LoadedModel, texts: list[str], batch: int, workers: int = 1) -> float:
    """Texts per second, embedding `texts` in batches of `batch`, `workers` calls side by side."""
    embed = model.embed_fn(True, False, EmbedKind.DOCUMENT)
    embed(texts[:batch])  # warm
    batches = [texts[start : start + batch] for start in range(0, len(texts), batch)]
    started = time.perf_counter()
    with ThreadPoolExecutor(workers) as pool:
        for _ in pool.map(embed, batches):
            pass
    return len(texts) / (time.perf_counter() - started)


def latencies(model: LoadedModel, texts: list[str], kind: EmbedKind) -> list[float]:
    """Milliseconds per single-text call, one after the other."""
    embed = model.embed_fn(True, False, kind)
    embed(texts[:1])
    out = []
    for text in texts:
        started = time.perf_counter()
        embed([text])
        out.append((time.perf_counter() - started) * 1000.0)
    return out
