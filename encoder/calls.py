"""How a runner's texts become model calls: sorted by token count, cut into calls of the
runner's size, each cut to its own longest text and padded (`in_calls`), and the modules after
the transformer run on its token embeddings (`finish`). The torch, ONNX and OpenVINO runners
(`encoder.runners`, `encoder.onnx`, `encoder.openvino`) share it.

The document lane's runners pad each call's token length up (masked, so the embeddings do not
change; `padded_length`): oneDNN builds and caches kernels per input shape, and glibc keeps what
tensors of many sizes freed, so with every length its own shape an encoder's memory grew without
end under mixed traffic (docs/benchmarks.md). Padded, float32 levelled off at 1.1 GB where
`encode()` passed 1.4 GB and kept growing. The steps are fine where tensors are small and coarse
where they are large: a multiple of 32 throughout padded ~60-word texts (~73 tokens) to 96, 31 %
more tokens, and a multiple of 8 or 16 throughout kept the memory growing. A multiple of 8 up to
128 tokens levels off as well and pads those texts half as much as 16 did. The query lane's
float32 runner is `encode()` itself: queries are short, and padding one costs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

TOKEN_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
# Token lengths are padded up to a multiple of SHORT_STEP up to SHORT_UP_TO, of LONG_STEP beyond.
SHORT_UP_TO = 128
SHORT_STEP = 8
LONG_STEP = 32


def padded_length(length: int) -> int:
    """The token length a batch whose longest text has `length` tokens is padded up to."""
    step = SHORT_STEP if length <= SHORT_UP_TO else LONG_STEP
    return -(-length // step) * step


def pad_tokens(features: dict[str, Any], longest: int | None) -> dict[str, Any]:
    """Token tensors padded (masked) up to `padded_length`, at most `longest`."""
    import torch

    length = int(features["input_ids"].shape[1])
    wanted = padded_length(length)
    if longest:
        wanted = min(wanted, max(length, longest))
    if wanted == length:
        return features
    for name in TOKEN_INPUTS:
        if name in features:
            features[name] = torch.nn.functional.pad(features[name], (0, wanted - length))
    return features


def in_calls(
    model: SentenceTransformer,
    texts: list[str],
    batch: int,
    run: Callable[[dict[str, Any]], np.ndarray],
    pad: bool = True,
) -> np.ndarray:
    """`run`'s embeddings of `texts`, in their order, from calls of up to `batch` texts taken
    longest in tokens first, each cut to its own longest and, with `pad`, padded (`pad_tokens`).

    The lane sorts a window of texts by characters; tokens sort it closer: ~60-word texts in
    windows of 64 filled 8 % fewer token slots in calls of 16, and OpenVINO ran them 6 % faster
    (docs/benchmarks.md, issue 32)."""
    import torch

    def padded_run(call: dict[str, Any]) -> np.ndarray:
        return run(pad_tokens(call, model.max_seq_length) if pad else call)

    features = model.preprocess(texts)
    if len(texts) <= batch:  # one call, already cut to its longest: nothing to sort (a query)
        return padded_run(features)
    lengths = features["attention_mask"].sum(dim=1)
    order = torch.argsort(lengths, descending=True, stable=True)
    parts = []
    for start in range(0, len(texts), batch):
        rows = order[start : start + batch]
        call = {k: v[rows] if torch.is_tensor(v) else v for k, v in features.items()}
        width = int(lengths[rows[0]])
        for name in TOKEN_INPUTS:
            if name in call:
                call[name] = call[name][:, :width]
        parts.append(padded_run(call))
    vectors = np.concatenate(parts)
    in_order = np.empty_like(vectors)
    in_order[order.numpy()] = vectors
    return in_order


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
