"""The keyword table: the load study's seed documents bulk-loaded into a keyword-only Braid
collection, against Milvus Lite's BM25 collection on the same documents (milvus.py).

The documents are bench/load/workload.py's `document` (Faker, seeded with their number as the load
study seeds its pre-population: name a 10-word sentence, content five paragraphs). Braid takes
them through `braid()` like the dense corpora. Milvus Lite runs in a process of its own before and
after Braid, and the better of the two is the one Braid is held to, as with `encode()`; its CPU is
that of the better run. LanceDB's full-text index and tantivy load the same documents too
(fulltext.py), once each, after Milvus Lite's second run.
"""

from __future__ import annotations

from bench.common import cpu
from bench.ingest.braid import WARM, Corpus, Ingest
from bench.ingest.milvus import Result
from bench.load import workload

DEFAULT_DOCUMENTS = 20_000
QUICK_DOCUMENTS = 500
HEADER = [
    "documents",
    "Braid docs/s",
    "Milvus Lite docs/s, before / after",
    "Braid ÷ best Milvus Lite",
    *(f"Braid {g} CPU-ms/doc" for g in cpu.GROUPS),
    "Braid total CPU-ms/doc",
    "Milvus Lite CPU-ms/doc",
    "LanceDB docs/s (CPU-ms/doc)",
    "tantivy docs/s (CPU-ms/doc)",
]


def corpus(documents: int) -> Corpus:
    fake = workload.seeded(documents)
    made = [workload.document(fake, n, workload.PREPOPULATED_AT) for n in range(documents + WARM)]
    return Corpus(f"seed workload, {documents:,}; keyword only", [workload.KEYWORD], made)


def row(
    documents: int, run: Ingest, before: Result, after: Result, others: list[Result]
) -> list[str]:
    """The table's row; `others` are LanceDB's and tantivy's loads (fulltext.py)."""
    best = max(before, after, key=lambda r: r.docs_s)
    return [
        f"{documents:,}",
        f"{run.docs_s:.1f}",
        f"{before.docs_s:.1f} / {after.docs_s:.1f}",
        f"**{run.docs_s / best.docs_s:.2f}×**",
        *(f"{run.cpu_ms[g]:.2f}" for g in cpu.GROUPS),
        f"{sum(run.cpu_ms.values()):.2f}",
        f"{best.cpu_ms:.2f}",
        *(f"{other.docs_s:.1f} ({other.cpu_ms:.2f})" for other in others),
    ]
