"""SPLADE-style sparse encoding: a masked-language model's logits pooled into vocabulary weights.

weight(token t) = max over positions p of log(1 + relu(logit[p, t])), padding masked out; the
`top_k` largest non-zero weights are kept, indices are vocabulary ids.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.errors import InvalidInput
from core.vectors import SparseVector

if TYPE_CHECKING:
    import torch

log = logging.getLogger(__name__)

SparseFn = Callable[[list[str]], list[SparseVector]]
# Logit floats one forward pass may hold (rows x positions x vocabulary): ~256 MB.
LOGIT_BUDGET = 64_000_000


def splade_pool(logits: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """(batch, positions, vocab) logits -> (batch, vocab) weights: max of log(1 + relu).

    log(1 + relu(x)) is monotonic, so the max over positions is taken on the raw logits first
    and the transform runs on (batch, vocab) only. Padding positions of `logits` are overwritten
    with -inf in place (it is the model's fresh output; a copy would cost 10x the max).
    """
    import torch

    logits.masked_fill_(attention_mask.unsqueeze(-1) == 0, float("-inf"))
    return torch.log1p(torch.relu(logits.amax(dim=1)))


def top_k_sparse(weights: torch.Tensor, top_k: int) -> list[SparseVector]:
    """Each row's `top_k` largest positive weights as a SparseVector, indices ascending."""
    import torch

    k = min(top_k, weights.shape[-1])
    values, indices = torch.topk(weights, k, dim=-1)
    rows = []
    for row_values, row_indices in zip(values.tolist(), indices.tolist(), strict=True):
        pairs = sorted((i, v) for i, v in zip(row_indices, row_values, strict=True) if v > 0)
        rows.append(SparseVector(indices=[i for i, _ in pairs], values=[v for _, v in pairs]))
    return rows


def rows_per_pass(positions: int, vocab: int) -> int:
    """How many texts one forward pass may take within LOGIT_BUDGET (at least one)."""
    return max(1, LOGIT_BUDGET // max(1, positions * vocab))


@dataclass
class SparseModel:
    """A loaded masked-language model and its tokenizer."""

    name: str
    revision: str | None
    model: Any  # transformers PreTrainedModel with an MLM head
    tokenizer: Any
    max_length: int
    device: str

    @property
    def vocab_size(self) -> int:
        return int(self.model.config.vocab_size)

    def encode(self, texts: list[str], top_k: int) -> list[SparseVector]:
        import torch

        batch = self.tokenizer(
            texts, padding=True, truncation=True, max_length=self.max_length, return_tensors="pt"
        )
        out: list[SparseVector] = []
        step = rows_per_pass(int(batch["input_ids"].shape[1]), self.vocab_size)
        with torch.inference_mode():
            for start in range(0, len(texts), step):
                rows = {k: v[start : start + step] for k, v in batch.items()}
                width = int(rows["attention_mask"].sum(dim=1).max())  # trim shared padding
                rows = {k: v[:, :width].to(self.device) for k, v in rows.items()}
                logits = self.model(**rows).logits
                out += top_k_sparse(splade_pool(logits, rows["attention_mask"]).cpu(), top_k)
        return out

    def embed_fn(self, top_k: int, keep_case: bool) -> SparseFn:
        def embed(texts: list[str]) -> list[SparseVector]:
            return self.encode(texts if keep_case else [t.lower() for t in texts], top_k)

        return embed


def load_sparse_model(name: str, revision: str | None, path: Path, device: str) -> SparseModel:
    """Load with transformers; a model without a masked-language head is not a sparse model."""
    from transformers import AutoModelForMaskedLM, AutoTokenizer
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
        model, info = AutoModelForMaskedLM.from_pretrained(
            str(path), local_files_only=True, output_loading_info=True
        )
    except Exception as exc:  # third-party loader: anything it raises means "not usable"
        raise InvalidInput(f"Model validation failed: {type(exc).__name__}: {exc}") from exc
    if info.get("missing_keys"):
        raise InvalidInput(
            f"Model validation failed: '{name}' has no trained masked-language-model head "
            f"(missing {', '.join(sorted(info['missing_keys'])[:3])}); sparse_model needs a "
            "SPLADE-style masked-language model"
        )
    model.to(device).eval()
    positions = getattr(model.config, "max_position_embeddings", None) or 512
    limits = [int(tokenizer.model_max_length), int(positions), 512]
    return SparseModel(name, revision, model, tokenizer, min(limits), device)
