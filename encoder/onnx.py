"""The ONNX Runtime backend: export a sentence-transformers model once, run it with ORT on CPU.

The transformer (module 0) is exported from the model's own weights with torch's exporter (eager
attention) and cached under `$BRAID_DATA_DIR/onnx`; nothing comes from a hub. Tokenizing and the
modules after the transformer (pooling, dense, ...) stay sentence-transformers' own
(`calls.finish`), so the embeddings are the torch ones: a probe checks cosine >=
`runners.PROBE_MIN_COSINE` at load, else the caller keeps torch. ORT's transformer optimizer
(fused Attention) is not applied: measured slower on batches here (docs/benchmarks.md).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import tempfile
import threading
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from core.settings import telemetry_off
from encoder.calls import TOKEN_INPUTS, finish, in_calls

if TYPE_CHECKING:
    import onnxruntime
    from sentence_transformers import SentenceTransformer

log = logging.getLogger(__name__)

EXPORT_VERSION = "1"  # bump when the export recipe changes: old cache entries are then ignored
OUTPUT = "last_hidden_state"


class OnnxUnavailable(RuntimeError):
    """This model cannot run on ONNX Runtime here; the caller keeps the torch backend."""


def runtime() -> Any:
    """ONNX Runtime with its telemetry off: it reads ORT_DISABLE_TELEMETRY once, at its import
    (`core.settings.telemetry_off`)."""
    telemetry_off()
    import onnxruntime

    return onnxruntime


def available() -> bool:
    try:
        runtime()
    except ImportError:
        return False
    return True


def fingerprint(model_path: Path) -> str:
    """Changes when the model's config or weights change (file sizes and mtimes suffice)."""
    digest = hashlib.sha256(EXPORT_VERSION.encode())
    for path in sorted(model_path.rglob("*")):
        if path.is_file() and path.suffix in {".json", ".safetensors", ".bin"}:
            stat = path.stat()
            digest.update(
                f"{path.relative_to(model_path)}:{stat.st_size}:{stat.st_mtime_ns}".encode()
            )
    return digest.hexdigest()[:16]


def cached_export(model: SentenceTransformer, model_path: Path, cache_dir: Path) -> Path:
    """The model's ONNX file, exported into `cache_dir` on first use (atomic: holders may race)."""
    target = cache_dir / fingerprint(model_path) / "model.onnx"
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, scratch = tempfile.mkstemp(dir=target.parent, suffix=".onnx.tmp")
    os.close(handle)
    try:
        export(model, Path(scratch))
        os.replace(scratch, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(scratch)
    return target


def _transformer(model: SentenceTransformer) -> Any:
    """The Hugging Face model inside module 0, if module 0 is a text transformer."""
    from sentence_transformers.base.modules.transformer import Transformer

    first = model[0]
    hf_model = getattr(first, "model", None) if isinstance(first, Transformer) else None
    if hf_model is None or not hasattr(hf_model, "set_attn_implementation"):
        raise OnnxUnavailable(f"module 0 is {type(first).__name__}, not an exportable Transformer")
    return hf_model


def export(model: SentenceTransformer, target: Path) -> None:
    """Export module 0 with eager attention (measured faster under ORT than the SDPA graph)."""
    import torch

    hf_model = _transformer(model)
    names = [name for name in TOKEN_INPUTS if name in _forward_params(hf_model)]
    sample = model.preprocess(["an example text", "another, somewhat longer example text"])
    previous = getattr(hf_model.config, "_attn_implementation", None)

    class Wrapper(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = hf_model

        def forward(self, *tensors: torch.Tensor) -> torch.Tensor:
            output = self.inner(**dict(zip(names, tensors, strict=True)))
            hidden: torch.Tensor = output.last_hidden_state
            return hidden

    try:
        hf_model.set_attn_implementation("eager")
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                Wrapper().eval(),
                tuple(sample[name] for name in names),
                str(target),
                input_names=names,
                output_names=[OUTPUT],
                dynamic_axes={name: {0: "batch", 1: "sequence"} for name in [*names, OUTPUT]},
                opset_version=17,
                dynamo=False,  # the TorchScript exporter: needs onnx (to write), not onnxscript
            )
    except Exception as exc:  # third-party exporter: any failure means "no ONNX for this model"
        raise OnnxUnavailable(f"export failed: {type(exc).__name__}: {exc}") from exc
    finally:
        if previous:
            hf_model.set_attn_implementation(previous)


def _forward_params(hf_model: Any) -> set[str]:
    import inspect

    return set(inspect.signature(hf_model.forward).parameters)


def session(path: Path, threads: int) -> onnxruntime.InferenceSession:
    """A CPU session with `threads` intra-op threads (the caller's thread is one of them)."""
    ort = runtime()

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    # Idle pool threads sleep instead of spinning: the cores are shared with the broker, the
    # event loop and the other lane.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.log_severity_level = 3
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


class OnnxRunner:
    """sentence-transformers' tokenizing and post-transformer modules around an ORT session, in
    calls of `batch` texts (`calls.in_calls`).

    The session is made by the first thread that runs it: ORT's intra-op pool threads are
    created then and inherit that thread's CPU priority (the document lane's is lowered).
    """

    name = "onnx"

    def __init__(self, model: SentenceTransformer, path: Path, threads: int, batch: int) -> None:
        self._model = model
        self._path = path
        self.threads = threads
        self._batch = batch
        self._session: onnxruntime.InferenceSession | None = None
        self._lock = threading.Lock()

    def _ready_session(self) -> onnxruntime.InferenceSession:
        with self._lock:
            if self._session is None:
                self._session = session(self._path, self.threads)
            return self._session

    def encode(self, texts: list[str], normalize: bool) -> np.ndarray:
        """Calls unpadded, as ORT always ran them here: a query pays for every token."""
        return in_calls(
            self._model, texts, self._batch, lambda call: self._call(call, normalize), pad=False
        )

    def _call(self, features: dict[str, Any], normalize: bool) -> np.ndarray:
        import torch

        ort_session = self._session or self._ready_session()
        feed = {node.name: token_feed(features, node.name) for node in ort_session.get_inputs()}
        hidden = ort_session.run([OUTPUT], feed)[0]
        features["token_embeddings"] = torch.from_numpy(hidden)
        return finish(self._model, features, normalize)


def token_feed(features: dict[str, Any], name: str) -> np.ndarray:
    """One of the tokenizer's tensors as the int64 array an exported graph takes."""
    return np.asarray(features[name].numpy(), dtype=np.int64)
