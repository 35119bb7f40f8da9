"""OpenVINO's bfloat16 compile of the ONNX export: a document lane candidate where the CPU runs
bfloat16 natively, kept only when it measures fastest and matches float32."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bench.common import texts
from core.enums import EmbedKind, EncoderBackend, EncoderPrecision
from core.settings import Settings
from encoder import openvino, runners
from encoder.openvino import OpenVinoRunner
from encoder.registry import LoadedModel, ModelRegistry
from encoder.runners import Measured
from tests.fixtures.lanes import assert_matches_float32, cosines, rates

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
# Short queries, ~60-word documents and texts past 256 tokens (truncated), in one padded batch.
BATCH = texts.queries(4) + texts.documents(4) + texts.seed_documents(2) + ["Hello, World!"]

native = pytest.mark.skipif(
    not openvino.native_bf16(), reason="OpenVINO runs bfloat16 natively only with avx512_bf16/AMX"
)


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("data")  # one ONNX export for the module


def load(
    data_dir: Path,
    precision: EncoderPrecision = EncoderPrecision.AUTO,
    backend: EncoderBackend = EncoderBackend.AUTO,
) -> LoadedModel:
    settings = Settings(
        data_dir=data_dir, device="cpu", encoder_precision=precision, encoder_backend=backend
    )
    return asyncio.run(ModelRegistry(settings).get(MINILM))


@pytest.fixture(scope="module")
def minilm(data_dir: Path) -> LoadedModel:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(
            runners,
            "time_runners",
            rates({"onnx": 1000.0, "torch": 50.0, "torch-bf16": 100.0, "openvino-bf16": 150.0}),
        )
        return load(data_dir)


@native
def test_auto_takes_openvino_for_documents_when_it_is_fastest(minilm: LoadedModel) -> None:
    assert isinstance(minilm.runner(EmbedKind.DOCUMENT), OpenVinoRunner)
    assert minilm.lanes == "openvino-bf16+onnx"  # queries stay on ONNX Runtime


@native
@pytest.mark.parametrize("normalize", [True, False])
def test_its_embeddings_match_float32(minilm: LoadedModel, normalize: bool) -> None:
    assert_matches_float32(minilm, BATCH, normalize)


@native
def test_a_lane_batch_longer_than_its_calls_comes_back_whole_and_in_order(
    minilm: LoadedModel,
) -> None:
    """The lane hands the runner up to 32 texts; it runs openvino.BATCH texts a call."""
    many = (BATCH * 4)[: openvino.BATCH * 2 + 3]
    assert_matches_float32(minilm, many, normalize=True)


@native
def test_a_text_embeds_the_same_alone_and_in_a_longer_padded_batch(minilm: LoadedModel) -> None:
    embed = minilm.embed_fn(True, False)
    alone = np.asarray(embed(["a short text"]))
    batched = np.asarray(embed(["a short text", texts.seed_documents(1)[0]])[:1])
    assert cosines(alone, batched).min() >= 0.999


@native
def test_calls_side_by_side_give_what_calls_one_at_a_time_give(minilm: LoadedModel) -> None:
    """The lane runs two batches at once, each on its own thread's infer request."""
    runner = minilm.runner(EmbedKind.DOCUMENT)
    batches = [texts.documents(8)[i::4] for i in range(4)] * 3
    alone = [runner.encode(batch, True) for batch in batches]
    with ThreadPoolExecutor(2) as pool:
        together = list(pool.map(lambda batch: runner.encode(batch, True), batches))
    for a, b in zip(alone, together, strict=True):
        assert cosines(a, b).min() >= 0.99999


def thread_cpu() -> dict[int, tuple[float, int]]:
    """CPU seconds and nice value of each of this process's threads (Linux /proc)."""
    found = {}
    for tid in os.listdir("/proc/self/task"):
        with contextlib.suppress(OSError):  # a thread that ended meanwhile
            fields = Path(f"/proc/self/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()
            ticks = int(fields[11]) + int(fields[12])
            found[int(tid)] = (ticks / os.sysconf("SC_CLK_TCK"), int(fields[16]))
    return found


@native
def test_its_batches_run_at_the_nice_value_it_is_given(minilm: LoadedModel, data_dir: Path) -> None:
    """OpenVINO runs a call on its streams' threads: they must yield to queries as the document
    lane's own threads do."""
    (exported,) = (data_dir / "onnx").rglob("model.onnx")
    base = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    runner = OpenVinoRunner(minilm.model, exported, threads=2, streams=2, nice=7)
    before = thread_cpu()
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(lambda batch: runner.encode(batch, True), [texts.documents(16)] * 12))
    used = {
        tid: (cpu - before.get(tid, (0.0, nice))[0], nice)
        for tid, (cpu, nice) in thread_cpu().items()
    }
    total = sum(cpu for cpu, _ in used.values())
    lowered = sum(cpu for cpu, nice in used.values() if nice >= min(19, base + 7))
    assert total > 0 and lowered / total >= 0.7


@native
@pytest.mark.parametrize(
    ("openvino_rate", "openvino_cosine"),
    [(120.0, None), (900.0, 0.98)],  # slower than torch's bfloat16; far faster, but differs
)
def test_torch_bfloat16_keeps_the_lane_from_a_slower_or_differing_openvino(
    data_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    openvino_rate: float,
    openvino_cosine: float | None,
) -> None:
    monkeypatch.setattr(
        runners,
        "time_runners",
        rates({"onnx": 1000.0, "torch": 50.0, "torch-bf16": 150.0, "openvino-bf16": openvino_rate}),
    )
    real = runners.probe

    def probe(model: Any, runner: runners.Runner) -> float:
        if openvino_cosine is not None and runner.name == "openvino-bf16":
            return openvino_cosine
        return real(model, runner)

    monkeypatch.setattr(runners, "probe", probe)
    assert load(data_dir).runner(EmbedKind.DOCUMENT).name == "torch-bf16"


@native
@pytest.mark.parametrize(
    ("precision", "backend"),
    [
        (EncoderPrecision.BF16, EncoderBackend.AUTO),  # forced: torch's bfloat16, untimed
        (EncoderPrecision.FP32, EncoderBackend.AUTO),
        (EncoderPrecision.AUTO, EncoderBackend.TORCH),  # no export to compile
    ],
)
def test_it_is_offered_only_with_auto_precision_and_backend(
    data_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    precision: EncoderPrecision,
    backend: EncoderBackend,
) -> None:
    offered: list[list[str]] = []

    def measure(candidates: Sequence[runners.Runner], calls: object) -> list[Measured]:
        offered.append([runner.name for runner in candidates])
        return [Measured(runner.name, 100.0) for runner in candidates]

    compiled: list[object] = []
    real = openvino.openvino_runner

    def counted(*args: Any) -> OpenVinoRunner | None:
        compiled.append(args)
        return real(*args)

    monkeypatch.setattr(runners, "time_runners", measure)
    monkeypatch.setattr(openvino, "openvino_runner", counted)
    model = load(data_dir, precision, backend)
    assert not compiled  # not even compiled: ~0.5 s of start-up for nothing
    assert not any("openvino" in name for names in offered for name in names)
    assert not isinstance(model.runner(EmbedKind.DOCUMENT), OpenVinoRunner)


def test_not_offered_where_the_cpu_has_no_native_bfloat16(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(openvino, "native_bf16", lambda: False)
    monkeypatch.setattr(
        runners, "time_runners", rates({"onnx": 1000.0, "torch": 50.0, "torch-bf16": 100.0})
    )
    model = load(data_dir)
    assert model.runner(EmbedKind.DOCUMENT).name == "torch-bf16"


@native
def test_a_model_openvino_cannot_run_loads_without_it(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def refuse(self: OpenVinoRunner, texts: list[str], normalize: bool) -> np.ndarray:
        raise RuntimeError("unsupported operation")

    monkeypatch.setattr(OpenVinoRunner, "encode", refuse)
    monkeypatch.setattr(
        runners, "time_runners", rates({"onnx": 1000.0, "torch": 50.0, "torch-bf16": 100.0})
    )
    with caplog.at_level(logging.WARNING, logger="encoder"):
        model = load(data_dir)
    assert model.runner(EmbedKind.DOCUMENT).name == "torch-bf16"
    assert any("OpenVINO cannot run" in r.getMessage() for r in caplog.records)
