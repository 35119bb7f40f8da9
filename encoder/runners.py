"""What runs a lane's batches: the model on torch, in float32 or with a bfloat16 transformer.

A runner turns texts into float32 embeddings. `TorchRunner` is sentence-transformers' own
`encode()`. `Bf16Runner` runs module 0 (the transformer) on a bfloat16 copy of its weights and
the modules after it (pooling, dense layers) and the normalization in float32, as the ONNX runner
does after its session. On a CPU with AMX tiles the bfloat16 matrix products ran all-MiniLM-L6-v2
3.4× as fast as float32 on ~60-word texts and 3.1× on 250-token abstracts (one thread; worst
cosine to float32 0.99989; docs/benchmarks.md). Without native bfloat16 the products are emulated
and slower, so `auto` takes it only where the CPU reports `amx_bf16`.

The bfloat16 runner pads each batch's token length up to a multiple of SEQUENCE_STEP (masked, so
the embeddings do not change): oneDNN builds and caches kernels per input shape, and with every
length its own shape an encoder's memory grew without end under mixed traffic (docs/benchmarks.md).

Every non-float32 runner is probed against the float32 model at load (`probe`): one whose worst
cosine on PROBE_TEXTS is under PROBE_MIN_COSINE is not used.
"""

from __future__ import annotations

import copy
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from core.enums import EncoderPrecision

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

log = logging.getLogger(__name__)

PROBE_MIN_COSINE = 0.999
PROBE_TEXTS = (
    "hello",
    "a short query about pasta",
    "The quick brown fox jumps over the lazy dog near the river bank at dawn. " * 12,
    "Tokens, numbers 12345 and punctuation!? all count; so do UPPER and lower case.",
)
CPUINFO = Path("/proc/cpuinfo")
SEQUENCE_STEP = 32


class Runner(Protocol):
    @property
    def name(self) -> str: ...

    def encode(self, texts: list[str], normalize: bool) -> np.ndarray: ...


class TorchRunner:
    """sentence-transformers' own `encode()`, one model batch per call."""

    name = "torch"

    def __init__(self, model: SentenceTransformer) -> None:
        self.model = model

    def encode(self, texts: list[str], normalize: bool) -> np.ndarray:
        vectors = self.model.encode(
            texts,
            batch_size=max(1, len(texts)),
            normalize_embeddings=normalize,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)


class Bf16Runner:
    """The transformer on a bfloat16 copy of its weights; pooling onwards in float32."""

    name = "torch-bf16"

    def __init__(self, model: SentenceTransformer) -> None:
        import torch

        self._model = model
        self._transformer = copy.deepcopy(model[0]).to(torch.bfloat16).eval()

    def encode(self, texts: list[str], normalize: bool) -> np.ndarray:
        import torch

        features = pad_tokens(self._model.preprocess(texts), self._model.max_seq_length)
        with torch.inference_mode():
            features = self._transformer(features)
            features["token_embeddings"] = features["token_embeddings"].float()
        return finish(self._model, features, normalize)


def pad_tokens(features: dict[str, Any], longest: int | None) -> dict[str, Any]:
    """Token tensors padded (masked) up to a multiple of SEQUENCE_STEP, at most `longest`."""
    import torch

    length = int(features["input_ids"].shape[1])
    wanted = -(-length // SEQUENCE_STEP) * SEQUENCE_STEP
    if longest:
        wanted = min(wanted, max(length, longest))
    if wanted == length:
        return features
    for name in ("input_ids", "attention_mask", "token_type_ids"):
        if name in features:
            features[name] = torch.nn.functional.pad(features[name], (0, wanted - length))
    return features


def finish(model: SentenceTransformer, features: dict[str, Any], normalize: bool) -> np.ndarray:
    """The modules after the transformer (pooling, dense, ...) on its float32 token embeddings."""
    import torch

    with torch.inference_mode():
        for module in list(model)[1:]:
            features = module(features)
        embeddings = features["sentence_embedding"]
        if normalize:
            embeddings = torch.nn.functional.normalize(embeddings, p=2, dim=1)
    return np.asarray(embeddings.float().numpy(), dtype=np.float32)


def min_cosine(a: np.ndarray, b: np.ndarray) -> float:
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return float((a * b).sum(axis=1).min())


def probe(model: SentenceTransformer, runner: Runner) -> float:
    """Worst cosine between the float32 torch embeddings of PROBE_TEXTS and `runner`'s."""
    texts = list(PROBE_TEXTS)
    reference = TorchRunner(model).encode(texts, normalize=False)
    return min_cosine(reference, runner.encode(texts, normalize=False))


def cpu_flags() -> set[str]:
    """The CPU's feature flags (Linux); empty where /proc/cpuinfo cannot tell."""
    try:
        text = CPUINFO.read_text()
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.partition(":")[2].split())
    return set()


def pick_precision(wanted: EncoderPrecision, device: str) -> EncoderPrecision:
    """bfloat16 document batches on a CPU with AMX (`auto`) or when asked; float32 otherwise.
    On CUDA the model runs as loaded."""
    if device != "cpu":
        if wanted is EncoderPrecision.BF16:
            log.warning("BRAID_ENCODER_PRECISION=bf16 applies on CPU only; float32 on %s", device)
        return EncoderPrecision.FP32
    if wanted is EncoderPrecision.AUTO:
        return EncoderPrecision.BF16 if "amx_bf16" in cpu_flags() else EncoderPrecision.FP32
    return wanted


def bf16_runner(model: SentenceTransformer) -> Bf16Runner | None:
    """A bfloat16 runner for `model`, or None (logged) when it cannot make one that matches."""
    try:
        runner = Bf16Runner(model)
        cosine = probe(model, runner)
    except Exception as exc:  # torch or the model refusing bfloat16: keep float32
        log.warning("bfloat16 is not available for this model: %s: %s", type(exc).__name__, exc)
        return None
    if cosine < PROBE_MIN_COSINE:
        log.warning("bfloat16 embeddings differ from float32 (cosine %.5f): kept float32", cosine)
        return None
    return runner
