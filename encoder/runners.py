"""What runs a lane's batches, and the measurement at load that picks each lane's runner.

A runner turns texts into float32 embeddings: `TorchRunner` is sentence-transformers' own
`encode()`; `Fp32Runner` and `Bf16Runner` run module 0 (the transformer) themselves, in float32 or
on a bfloat16 copy of its weights, and the modules after it (pooling, dense layers) and the
normalization in float32, as the ONNX runner does after its session. The registry may offer the
document lane more candidates (`encoder.openvino`: OpenVINO's bfloat16 compile of the export).

Which one is fastest depends on the CPU, not on a flag it reports: bfloat16 ran all-MiniLM-L6-v2
3.4× as fast as float32 on an AMX Xeon and 2.6× on AMD Zen 5 (no AMX), and where the CPU has no
native bfloat16 the products are emulated, 4-10× slower (oneDNN held to AVX-512 or AVX2 on that
Xeon). So at load, with
`BRAID_ENCODER_PRECISION=auto`, each lane times its candidates (`time_runners`: a fixed probe
batch for documents, single short queries for queries; a warm-up call each, then best of ROUNDS,
taken in turn) and keeps the fastest whose worst cosine to float32 on PROBE_TEXTS is at least
PROBE_MIN_COSINE; a lane other than the lane's default has to be SPEED_MARGIN times as fast
(`choose_lane`), so noise does not flip it; a runner with a runtime of its own (OpenVINO) has to
be SPEED_MARGIN times as fast as the best of the rest too, or its memory buys nothing. A forced
precision is not timed (bfloat16 is still probed).

How a runner turns texts into model calls (token-sorted, cut, padded, pooled) is `encoder.calls`.
"""

from __future__ import annotations

import copy
import logging
import random
import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from core.enums import EmbedKind, EncoderPrecision
from encoder.calls import finish, in_calls

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

# The timing probe: 16 texts of 60 common words (~62 tokens, padded to 64) for the
# document lane, one short query at a time for the query lane. About 1 s of start-up on 2 cores.
_WORDS = (
    "the of and to in is that for it as was with be by on not this are or from at which but "
    "have an they were there one all we their been has when who will more no if out so what up "
    "its about into than them can only other new some could time these two may then first any "
    "now such like our over even most made after also did many before must through back years "
    "where much way well down should because each just those people how too little state good "
    "very make world still own see work long get here between both life being under never day "
    "same another know while last might great old year off come since against go right used"
).split()
PROBE_BATCH = tuple(" ".join(random.Random(seed).choices(_WORDS, k=60)) for seed in range(16))
PROBE_QUERY = "how do vaccines train immunity"
QUERY_CALLS = 8
WARM_TEXTS = 4  # a warm-up call runs this many texts of the first timed call
ROUNDS = 3  # the first round of a shape builds kernels (oneDNN, OpenVINO): best of the rest
SPEED_MARGIN = 1.1  # how much faster than the lane's default another runner must be
CLEARLY_SLOWER = 3.0  # this much slower than the default at warm-up or in a round: timed no further


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


class PaddedRunner:
    """Module 0 (the transformer) run here in calls of `batch` texts (`in_calls`), then the
    modules after it on its token embeddings in float32 (finish)."""

    name = "padded"

    def __init__(self, model: SentenceTransformer, transformer: Any, batch: int) -> None:
        self._model = model
        self._transformer = transformer
        self._batch = batch

    def encode(self, texts: list[str], normalize: bool) -> np.ndarray:
        return in_calls(self._model, texts, self._batch, lambda call: self._call(call, normalize))

    def _call(self, features: dict[str, Any], normalize: bool) -> np.ndarray:
        import torch

        with torch.inference_mode():
            features = self._transformer(features)
            features["token_embeddings"] = features["token_embeddings"].float()
        return finish(self._model, features, normalize)


class Fp32Runner(PaddedRunner):
    """The model's own float32 transformer."""

    name = "torch"

    def __init__(self, model: SentenceTransformer, batch: int) -> None:
        super().__init__(model, model[0].eval(), batch)


class Bf16Runner(PaddedRunner):
    """The transformer on a bfloat16 copy of its weights."""

    name = "torch-bf16"

    def __init__(self, model: SentenceTransformer, batch: int) -> None:
        import torch

        super().__init__(model, copy.deepcopy(model[0]).to(torch.bfloat16).eval(), batch)


def min_cosine(a: np.ndarray, b: np.ndarray) -> float:
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return float((a * b).sum(axis=1).min())


def probe(model: SentenceTransformer, runner: Runner) -> float:
    """Worst cosine between the float32 torch embeddings of PROBE_TEXTS and `runner`'s."""
    texts = list(PROBE_TEXTS)
    reference = TorchRunner(model).encode(texts, normalize=False)
    return min_cosine(reference, runner.encode(texts, normalize=False))


def bf16_runner(model: SentenceTransformer, batch: int) -> Bf16Runner | None:
    """A bfloat16 copy of `model`'s transformer, or None (logged) where torch refuses one."""
    try:
        runner = Bf16Runner(model, batch)
        runner.encode(["a first text"], normalize=False)
    except Exception as exc:  # torch or the model refusing bfloat16: keep float32
        log.warning("bfloat16 is not available for this model: %s: %s", type(exc).__name__, exc)
        return None
    return runner


@dataclass(frozen=True)
class Measured:
    """One candidate runner of a lane: texts a second (None: not timed) and worst cosine to
    float32 (None: not probed, as a runner that cannot win on speed is not)."""

    name: str
    rate: float | None = None
    cosine: float | None = None
    warm_up_only: bool = False  # clearly slower at warm-up: timed no further

    def __str__(self) -> str:
        rate = "untimed" if self.rate is None else f"{self.rate:.0f}/s"
        if self.warm_up_only:
            rate += " at warm-up"
        cosine = "" if self.cosine is None else f" (cosine {self.cosine:.5f})"
        return f"{self.name} {rate}{cosine}"


def matches(measured: Measured) -> bool:
    return measured.cosine is not None and measured.cosine >= PROBE_MIN_COSINE


def could_win(default: Measured, other: Measured) -> bool:
    """Whether `other` is fast enough to replace the lane's default (if it matches float32)."""
    if default.rate is None or other.rate is None:
        return False
    return other.rate >= SPEED_MARGIN * default.rate


def choose_lane(measured: Sequence[Measured], extras: Collection[str] = ()) -> tuple[str, str]:
    """The runner a lane keeps, and why. The first is the lane's default (float32, or a runner
    already checked against it) and stays unless another matches float32 and is SPEED_MARGIN
    times as fast; of those, the fastest wins. A runner named in `extras` brings a runtime of
    its own, hundreds of MB resident (OpenVINO: ~270 MB), so it must also be SPEED_MARGIN times
    as fast as the best of the others."""
    default, *others = measured
    if not others:
        return default.name, "the only candidate the settings allow"
    winners = [m for m in others if could_win(default, m) and matches(m)]
    kept = max((m for m in winners if m.name not in extras), key=_rate_of, default=default)
    unworthy = [m.name for m in winners if m.name in extras and not could_win(kept, m)]
    winners = [m for m in winners if m.name not in unworthy]
    if winners:  # never empty with `unworthy` set: `kept` is then one of them
        best = max(winners, key=_rate_of)
        assert best.rate and default.rate
        speedup = best.rate / default.rate
        why = f"{speedup:.2f}x as fast as {default.name} (needs {SPEED_MARGIN}x)"
        if unworthy:
            why += (
                f"; {', '.join(unworthy)} under {SPEED_MARGIN}x {kept.name}:"
                " not worth its runtime's memory"
            )
        return best.name, why
    differing = [m.name for m in others if could_win(default, m) and not matches(m)]
    if differing:
        return default.name, f"{', '.join(differing)} faster but under cosine {PROBE_MIN_COSINE}"
    return default.name, f"nothing {SPEED_MARGIN}x as fast"


def _rate_of(measured: Measured) -> float:
    return measured.rate or 0.0


def time_runners(runners: Sequence[Runner], calls: Sequence[list[str]]) -> list[Measured]:
    """Texts a second of each runner over `calls`, best of ROUNDS, the runners taken in turn.

    Each first runs one warm-up call of WARM_TEXTS. After it and after each round, a runner
    under 1/CLEARLY_SLOWER of the first runner's rate is timed no further (a bfloat16 copy where
    the CPU emulates bfloat16 would cost seconds)."""
    warm = [calls[0][:WARM_TEXTS]]
    rates = [_rate(runner, warm) for runner in runners]
    timed = [i for i, rate in enumerate(rates) if rate * CLEARLY_SLOWER >= rates[0]]
    dropped = {i: rates[i] for i in range(len(runners)) if i not in timed}
    best = dict.fromkeys(timed, 0.0)
    for round_ in range(ROUNDS):
        for i in timed if round_ % 2 == 0 else reversed(timed):
            best[i] = max(best[i], _rate(runners[i], calls))
        timed = [i for i in timed if best[i] * CLEARLY_SLOWER >= best[0]]
    return [
        Measured(runner.name, dropped[i], warm_up_only=True)
        if i in dropped
        else Measured(runner.name, best[i])
        for i, runner in enumerate(runners)
    ]


def _rate(runner: Runner, calls: Sequence[list[str]]) -> float:
    started = time.perf_counter()
    for texts in calls:
        runner.encode(texts, normalize=True)
    return sum(len(texts) for texts in calls) / max(time.perf_counter() - started, 1e-9)


class LanePicker:
    """Picks each lane's runner for one model on CPU: the candidates the settings allow (the
    lane's default first), timed when there are several, then `choose_lane`.

    `cosines` holds what is already known (ONNX was probed at export); float32 torch is 1. The
    torch runners run `batch` texts a call.
    """

    def __init__(
        self,
        model: SentenceTransformer,
        precision: EncoderPrecision,
        cosines: dict[str, float],
        batch: int,
        documents_also: Sequence[Runner] = (),
    ) -> None:
        self._model = model
        self._precision = precision
        self._batch = batch
        self._cosines = {TorchRunner.name: 1.0, **cosines}
        self._documents_also = list(documents_also)
        self._bf16 = None if precision is EncoderPrecision.FP32 else bf16_runner(model, batch)
        if self._bf16 and precision is EncoderPrecision.BF16:  # forced: untimed, still probed
            cosine = self.cosine(self._bf16)
            if cosine < PROBE_MIN_COSINE:
                log.warning("bfloat16 differs from float32 (cosine %.5f): kept float32", cosine)
                self._bf16 = None

    def cosine(self, runner: Runner) -> float:
        if runner.name not in self._cosines:
            self._cosines[runner.name] = probe(self._model, runner)
        return self._cosines[runner.name]

    def candidates(self, kind: EmbedKind, default: Runner | None) -> list[Runner]:
        """`default` (an ONNX runner) if any, the torch runners the precision allows, then for
        documents the other runners the registry offers (OpenVINO, with auto precision only)."""
        fp32 = (
            Fp32Runner(self._model, self._batch)
            if kind is EmbedKind.DOCUMENT
            else TorchRunner(self._model)
        )
        torch: list[Runner] = [fp32]
        if self._bf16 is not None:
            torch = [self._bf16] if self._precision is EncoderPrecision.BF16 else [fp32, self._bf16]
        also = self._documents_also if kind is EmbedKind.DOCUMENT else []
        return ([default] if default else []) + torch + also

    def pick(self, kind: EmbedKind, default: Runner | None, model_name: str) -> Runner:
        """The lane's runner; one INFO line says what was measured and why it won."""
        started = time.perf_counter()
        candidates = self.candidates(kind, default)
        if len(candidates) == 1:
            measured = [Measured(candidates[0].name, cosine=self._cosines.get(candidates[0].name))]
        else:
            timed = time_runners(candidates, probe_calls(kind))
            # Probed only where it matters: the default, and runners fast enough to replace it.
            probed = [i == 0 or could_win(timed[0], m) for i, m in enumerate(timed)]
            measured = [
                replace(m, cosine=self.cosine(runner)) if wanted else m
                for m, runner, wanted in zip(timed, candidates, probed, strict=True)
            ]
        name, why = choose_lane(measured, {runner.name for runner in self._documents_also})
        log.info(
            "%s %s lane (%s): %s; runs %s: %s (%.2f s)",
            model_name,
            kind,
            f"texts a second, batches of {len(PROBE_BATCH)}"
            if kind is EmbedKind.DOCUMENT
            else "queries a second, one at a time",
            ", ".join(map(str, measured)),
            name,
            why,
            time.perf_counter() - started,
        )
        return next(runner for runner in candidates if runner.name == name)


def probe_calls(kind: EmbedKind) -> list[list[str]]:
    """What a lane is timed on: the probe batch, or one short query at a time."""
    if kind is EmbedKind.DOCUMENT:
        return [list(PROBE_BATCH)]
    return [[PROBE_QUERY] for _ in range(QUERY_CALLS)]
