"""Each lane's runner, picked at load by measurement: the fastest that matches float32 wins."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bench.common import texts
from core.enums import EmbedKind, EncoderBackend, EncoderPrecision
from core.settings import Settings
from encoder import calls, runners
from encoder.registry import LoadedModel, ModelRegistry
from encoder.runners import Bf16Runner, Fp32Runner, Measured, TorchRunner, choose_lane
from tests.fixtures.lanes import assert_matches_float32, cosines, rates

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
# Short queries, ~60-word documents and texts past 256 tokens (truncated), in one padded batch.
BATCH = texts.queries(4) + texts.documents(4) + texts.seed_documents(2) + ["Hello, World!"]
PASSES = runners.PROBE_MIN_COSINE + 0.0009
FAILS = runners.PROBE_MIN_COSINE - 0.01


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def load(
    data_dir: Path,
    precision: EncoderPrecision,
    backend: EncoderBackend = EncoderBackend.TORCH,
) -> LoadedModel:
    settings = Settings(
        data_dir=data_dir, device="cpu", encoder_precision=precision, encoder_backend=backend
    )
    return asyncio.run(ModelRegistry(settings).get(MINILM))


def untimed(*args: object) -> list[Measured]:
    raise AssertionError("a forced precision is not timed")


@pytest.fixture(scope="module")
def bf16(tmp_path_factory: pytest.TempPathFactory) -> LoadedModel:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(runners, "time_runners", untimed)
        return load(tmp_path_factory.mktemp("data"), EncoderPrecision.BF16)


def test_forced_bf16_runs_both_torch_lanes_untimed(bf16: LoadedModel) -> None:
    assert isinstance(bf16.runner(EmbedKind.DOCUMENT), Bf16Runner)
    assert isinstance(bf16.runner(EmbedKind.QUERY), Bf16Runner)
    assert bf16.lanes == "torch-bf16"


@pytest.mark.parametrize("normalize", [True, False])
def test_bf16_embeddings_match_float32(bf16: LoadedModel, normalize: bool) -> None:
    assert_matches_float32(bf16, BATCH, normalize)


@pytest.mark.parametrize("normalize", [True, False])
def test_the_padded_float32_runner_gives_encodes_embeddings(
    bf16: LoadedModel, normalize: bool
) -> None:
    reference = TorchRunner(bf16.model).encode(BATCH, normalize)
    found = Fp32Runner(bf16.model, 4).encode(BATCH, normalize)  # calls of 4: cut and reordered
    assert cosines(found, reference).min() >= 0.99999
    assert np.allclose(np.linalg.norm(found, axis=1), np.linalg.norm(reference, axis=1), rtol=1e-4)


def test_forced_float32_is_not_timed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runners, "time_runners", untimed)
    model = load(tmp_path, EncoderPrecision.FP32)
    assert isinstance(model.runner(EmbedKind.DOCUMENT), Fp32Runner)
    assert isinstance(model.runner(EmbedKind.QUERY), TorchRunner)
    assert model.lanes == "torch"


def test_a_forced_bf16_copy_that_disagrees_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runners, "time_runners", untimed)
    monkeypatch.setattr(runners, "probe", lambda model, runner: FAILS)
    model = load(tmp_path, EncoderPrecision.BF16)
    assert isinstance(model.runner(EmbedKind.DOCUMENT), Fp32Runner)
    assert len(model.embed_fn(True, False)(["still works"])[0]) == 384


@pytest.mark.parametrize(
    ("fp32_rate", "bf16_rate", "document_lane"),
    [(50.0, 200.0, "torch-bf16"), (200.0, 50.0, "torch"), (100.0, 105.0, "torch")],
)
def test_auto_keeps_the_lane_that_measured_fastest(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    fp32_rate: float,
    bf16_rate: float,
    document_lane: str,
) -> None:
    monkeypatch.setattr(
        runners, "time_runners", rates({"torch": fp32_rate, "torch-bf16": bf16_rate})
    )
    model = load(tmp_path, EncoderPrecision.AUTO)
    assert model.runner(EmbedKind.DOCUMENT).name == document_lane
    assert model.lanes.split("+")[0] == document_lane


def test_auto_never_takes_a_faster_bf16_that_disagrees(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runners, "time_runners", rates({"torch": 10.0, "torch-bf16": 1000.0}))
    monkeypatch.setattr(runners, "probe", lambda model, runner: FAILS)
    model = load(tmp_path, EncoderPrecision.AUTO)
    assert isinstance(model.runner(EmbedKind.DOCUMENT), Fp32Runner)
    assert model.lanes == "torch"


def test_auto_measures_for_real_and_says_what_it_chose(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="encoder"):
        model = load(tmp_path, EncoderPrecision.AUTO, EncoderBackend.AUTO)
    document, query = model.runner(EmbedKind.DOCUMENT), model.runner(EmbedKind.QUERY)
    assert document.name in {"torch", "torch-bf16", "openvino-bf16"}
    assert query.name in {"onnx", "torch", "torch-bf16"}
    assert model.lanes in {document.name, f"{document.name}+{query.name}"}
    lines = {
        kind: next(r.getMessage() for r in caplog.records if f" {kind} lane (" in r.getMessage())
        for kind in ("document", "query")
    }
    assert f"runs {document.name}:" in lines["document"] and "/s" in lines["document"]
    assert f"runs {query.name}:" in lines["query"] and "/s" in lines["query"]
    assert any(f"on cpu/{model.lanes} " in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize(
    ("measured", "chosen"),
    [
        ([Measured("torch", 100.0, 1.0)], "torch"),
        ([Measured("torch", None, 1.0)], "torch"),  # forced: untimed
        ([Measured("torch", 100.0, 1.0), Measured("torch-bf16", 300.0, PASSES)], "torch-bf16"),
        ([Measured("torch", 300.0, 1.0), Measured("torch-bf16", 100.0, PASSES)], "torch"),
        # under PROBE_MIN_COSINE a runner never wins, however fast
        ([Measured("torch", 100.0, 1.0), Measured("torch-bf16", 900.0, FAILS)], "torch"),
        # the margin keeps the default on a near tie
        ([Measured("torch", 100.0, 1.0), Measured("torch-bf16", 105.0, PASSES)], "torch"),
        ([Measured("onnx", 100.0, 1.0), Measured("torch", 105.0, 1.0)], "onnx"),
        # not probed: it did not win on speed, so it does not win at all
        ([Measured("torch", 100.0, 1.0), Measured("torch-bf16", 300.0, None)], "torch"),
        # of several past the margin, the fastest that matches
        (
            [
                Measured("onnx", 100.0, 1.0),
                Measured("torch", 130.0, 1.0),
                Measured("torch-bf16", 150.0, PASSES),
            ],
            "torch-bf16",
        ),
        (
            [
                Measured("onnx", 100.0, 1.0),
                Measured("torch", 130.0, 1.0),
                Measured("torch-bf16", 150.0, FAILS),
            ],
            "torch",
        ),
        ([Measured("onnx", 100.0, 1.0), Measured("torch", None, 1.0)], "onnx"),
    ],
)
def test_choose_lane(measured: list[Measured], chosen: str) -> None:
    name, reason = choose_lane(measured)
    assert name == chosen
    assert reason


def test_choose_lane_says_why() -> None:
    _, faster = choose_lane([Measured("torch", 100.0, 1.0), Measured("torch-bf16", 250.0, PASSES)])
    assert "2.50x as fast as torch" in faster
    _, differs = choose_lane([Measured("torch", 100.0, 1.0), Measured("torch-bf16", 250.0, FAILS)])
    assert "torch-bf16" in differs and "cosine" in differs


class FakeRunner:
    """Costs `seconds_per_text` of a fake clock a text; counts its calls."""

    def __init__(self, name: str, seconds_per_text: float, clock: list[float]) -> None:
        self.name = name
        self.cost = seconds_per_text
        self.clock = clock
        self.calls = 0

    def encode(self, texts: list[str], normalize: bool) -> np.ndarray:
        self.calls += 1
        self.clock[0] += self.cost * len(texts)
        return np.ones((len(texts), 4), dtype=np.float32)


def test_time_runners_warms_up_then_takes_each_runner_in_turn(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = [0.0]
    monkeypatch.setattr(runners.time, "perf_counter", lambda: clock[0])
    fast, slow, emulated = (
        FakeRunner("torch", 0.01, clock),
        FakeRunner("onnx", 0.02, clock),
        FakeRunner("torch-bf16", 0.2, clock),  # 20x slower than the default at warm-up
    )
    measured = runners.time_runners([fast, slow, emulated], runners.probe_calls(EmbedKind.DOCUMENT))
    assert (fast.calls, slow.calls, emulated.calls) == (1 + runners.ROUNDS, 1 + runners.ROUNDS, 1)
    assert [m.name for m in measured] == ["torch", "onnx", "torch-bf16"]
    assert [m.warm_up_only for m in measured] == [False, False, True]
    assert measured[0].rate == pytest.approx(100.0) and measured[1].rate == pytest.approx(50.0)
    assert choose_lane(measured)[0] == "torch"


def test_the_probe_batch_is_fixed_and_about_60_tokens_long(bf16: LoadedModel) -> None:
    assert runners.PROBE_BATCH == tuple(runners.probe_calls(EmbedKind.DOCUMENT)[0])
    assert len(runners.PROBE_BATCH) == 16
    tokens = bf16.model.preprocess(list(runners.PROBE_BATCH))["input_ids"].shape[1]
    assert 40 < tokens <= 64


def test_a_text_embeds_the_same_alone_and_in_a_longer_padded_batch(bf16: LoadedModel) -> None:
    embed = bf16.embed_fn(True, False)
    alone = np.asarray(embed(["a short text"]))
    batched = np.asarray(embed(["a short text", texts.seed_documents(1)[0]])[:1])
    assert cosines(alone, batched).min() >= 0.999


def test_token_lengths_are_padded_by_steps_that_grow_with_them() -> None:
    """Fine steps where a batch's tensors are small, coarse where they are large: the padding
    stays a small share of a short text, and long batches take few shapes (runners.py)."""
    lengths = range(1, 300)
    padded = [calls.padded_length(n) for n in lengths]
    assert all(0 <= p - n < 32 for n, p in zip(lengths, padded, strict=True))
    assert all(p - n < 8 for n, p in zip(lengths[:128], padded[:128], strict=True))
    assert len(set(padded[:256])) == 20
    steps = {1: 8, 8: 8, 9: 16, 64: 64, 65: 72, 73: 80, 121: 128, 129: 160, 250: 256, 257: 288}
    assert {n: calls.padded_length(n) for n in steps} == steps


def test_calls_run_longest_in_tokens_first_each_cut_to_its_own_longest(bf16: LoadedModel) -> None:
    seen: list[list[int]] = []

    def lengths(features: dict[str, Any]) -> np.ndarray:
        """Each row's token count as its 'embedding', and the call's widths for the test."""
        mask = features["attention_mask"]
        assert features["input_ids"].shape == mask.shape
        seen.append([int(mask.shape[1]), *mask.sum(dim=1).tolist()])
        return mask.sum(dim=1, keepdim=True).numpy().astype(np.float32)

    found = calls.in_calls(bf16.model, BATCH, 4, lengths)
    tokens = [len(bf16.model.tokenizer(text, truncation=True)["input_ids"]) for text in BATCH]
    assert found[:, 0].tolist() == tokens  # back in the caller's order
    assert [len(call) - 1 for call in seen] == [4, 4, 3]
    rows = [n for call in seen for n in call[1:]]
    assert rows == sorted(tokens, reverse=True)
    assert [call[0] for call in seen] == [
        min(calls.padded_length(call[1]), bf16.model.max_seq_length) for call in seen
    ]


def test_token_lengths_are_padded_masked_and_capped() -> None:
    import torch

    ones = torch.ones((2, 73), dtype=torch.long)
    padded = calls.pad_tokens({"input_ids": ones, "attention_mask": ones.clone()}, 256)
    assert padded["input_ids"].shape == (2, 80)
    assert padded["attention_mask"][:, 73:].sum() == 0 and padded["attention_mask"].sum() == 146
    capped = calls.pad_tokens({"input_ids": torch.ones((1, 250), dtype=torch.long)}, 256)
    assert capped["input_ids"].shape == (1, 256)
    exact = calls.pad_tokens({"input_ids": torch.ones((1, 64), dtype=torch.long)}, 256)
    assert exact["input_ids"].shape == (1, 64)


@pytest.mark.parametrize(
    ("openvino", "chosen"),
    [
        (283.0, "torch-bf16"),  # an AMX Xeon: 2 % over torch's bfloat16 copy buys no runtime
        (340.0, "openvino-bf16"),  # Zen 5: 1.2-1.3x, worth its memory
    ],
)
def test_a_runner_with_a_runtime_of_its_own_must_beat_the_best_of_the_rest(
    openvino: float, chosen: str
) -> None:
    measured = [
        Measured("torch", 84.0, 1.0),
        Measured("torch-bf16", 277.0, PASSES),
        Measured("openvino-bf16", openvino, PASSES),
    ]
    name, why = choose_lane(measured, extras={"openvino-bf16"})
    assert name == chosen
    assert ("not worth its runtime's memory" in why) is (chosen == "torch-bf16")
    # Alone against float32 it wins as any runner would.
    assert choose_lane([measured[0], measured[2]], extras={"openvino-bf16"})[0] == "openvino-bf16"
