"""The OpenVINO document runner: the cached ONNX export (`encoder.onnx`) compiled for bfloat16.

A candidate of the document lane only, where OpenVINO says the CPU runs bfloat16 natively
(avx512_bf16 or AMX): on AMD Zen 5 it ran ~60-word batches on 10 CPU-ms a text against 12 for
torch's bfloat16 copy, and two one-thread calls side by side at 1.2-1.3x torch's rate, worst
cosine to float32 0.99996 (docs/benchmarks.md, issue 32). The lane picker times it against torch
and keeps it only if it is faster there and matches float32 (`runners.LanePicker`).

- The compiled model has one stream per document call the lane runs side by side, each with
  its share of the threads; each calling thread has an infer request of its own.
- A call runs on its stream's threads, not the caller's, and those are started by the compile:
  it runs in a thread of its own at the document lane's nice value, so they inherit it and
  queries, the event loop and the broker still preempt bulk embedding.
- A batch runs in calls of BATCH texts, longest in tokens first, each padded as the torch
  runners pad theirs (`calls.in_calls`), so a lane sees few shapes and its memory levels off.
- Tokenizing and the modules after the transformer are sentence-transformers' own
  (`calls.finish`), as for ONNX Runtime.
"""

from __future__ import annotations

import functools
import logging
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from encoder.batcher import lower_priority
from encoder.calls import finish, in_calls
from encoder.onnx import OUTPUT, token_feed

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

log = logging.getLogger(__name__)
# Texts a call at most. Two callers side by side on Zen 5 ran 8-16 texts a call fastest: 60-word
# texts 183-190 texts/s against 171-179 at 32 and 157-159 at 64, 256-token texts 55 against
# 51-53 at 32 (docs/benchmarks.md, issue 32); the lane's batches are 32.
BATCH = 16


@functools.cache
def _core() -> Any:
    """The process's OpenVINO runtime: it reads the CPU's capabilities and compiles.

    `import openvino` imports its converter (openvino.tools.ovc), which loads the
    openvino_telemetry package where installed: that writes a client id under ~/intel and sends
    usage events to Google Analytics. A None in sys.modules makes that import fail, and ovc falls
    back to its own stub (openvino.tools.ovc.telemetry_stub)."""
    sys.modules.setdefault("openvino_telemetry", None)  # type: ignore[arg-type]
    import openvino

    return openvino.Core()


def native_bf16() -> bool:
    """Whether OpenVINO is installed and runs bfloat16 natively on this CPU."""
    try:
        core = _core()
    except ImportError:
        return False
    try:
        capabilities = core.get_property("CPU", "OPTIMIZATION_CAPABILITIES")
    except RuntimeError as exc:  # no CPU plugin: nothing to offer
        log.warning("OpenVINO has no CPU device here: %s", exc)
        return False
    return "BF16" in capabilities


class OpenVinoRunner:
    """Module 0 from the ONNX export, compiled by OpenVINO in bfloat16 on `streams` streams."""

    name = "openvino-bf16"

    def __init__(
        self, model: SentenceTransformer, path: Path, threads: int, streams: int, nice: int = 0
    ) -> None:
        self._model = model
        self._path = path
        self._threads = max(threads, streams)
        self._streams = streams
        self._compiled = self._compile(nice)
        self._requests = threading.local()

    def _compile(self, nice: int) -> Any:
        """Compiled at once, so the lane picker times runs, not the compile (~0.5 s), in a thread
        at `nice`, which the streams' threads it starts inherit."""
        config = {
            "INFERENCE_PRECISION_HINT": "bf16",
            "NUM_STREAMS": self._streams,
            "INFERENCE_NUM_THREADS": self._threads,
            # The cores are shared with the broker, the event loop and the query lane.
            "ENABLE_CPU_PINNING": False,
        }
        with ThreadPoolExecutor(1, initializer=lower_priority, initargs=(nice,)) as compiler:
            work = compiler.submit(_core().compile_model, str(self._path), "CPU", config)
            return work.result()

    def _request(self) -> Any:
        request = getattr(self._requests, "request", None)
        if request is None:
            request = self._requests.request = self._compiled.create_infer_request()
        return request

    def encode(self, texts: list[str], normalize: bool) -> np.ndarray:
        return in_calls(self._model, texts, BATCH, lambda call: self._call(call, normalize))

    def _call(self, features: dict[str, Any], normalize: bool) -> np.ndarray:
        import torch

        request = self._request()
        feed = {port.any_name: token_feed(features, port.any_name) for port in request.model_inputs}
        hidden = request.infer(feed)[OUTPUT]
        features["token_embeddings"] = torch.from_numpy(np.array(hidden, dtype=np.float32))
        return finish(self._model, features, normalize)


def openvino_runner(
    model: SentenceTransformer, path: Path, threads: int, streams: int, nice: int
) -> OpenVinoRunner | None:
    """The runner, compiled and tried on a text; None (logged) where OpenVINO refuses the export."""
    try:
        runner = OpenVinoRunner(model, path, threads, streams, nice)
        runner.encode(["a first text"], normalize=False)
    except Exception as exc:  # a third-party compiler: any failure means "not this lane"
        log.warning("OpenVINO cannot run this model: %s: %s", type(exc).__name__, exc)
        return None
    return runner
