"""`python3 -m bench.relevance`: nDCG@10 and recall@100 on a BEIR set
(../shared/relevance/scifact-train) for every shape a user sends a search in (the vector whole,
its fields listed as Amgix clients list them, per-field weights, explicit fusion modes, keyword
only, dense only, the default hybrid), through the public API of one stack, next to a BM25
reference (bm25s) in the same run, with the CPU a query of each costs the stack (warm: see
service.Braid.settle); the same with a typo in every query; recall@1 on a catalogue of part
codes (bench/relevance/codes.py) in titles and contents, asked by their compact, partial and
spaced forms; and a keyword document and query with the lexical defaults and with the defaults
before them. Appends the tables to docs/relevance.md (unless --no-write); skips cleanly when the
data are absent."""

from __future__ import annotations

import argparse
import asyncio
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from bench.common.report import Report
from bench.relevance import beir, codes, service
from bench.relevance.reference import bm25_runs
from harness.stack import Stack

DOC = Path(__file__).resolve().parents[2] / "docs" / "relevance.md"
RUNS_HEADING = "## Runs of bench/relevance"
EXCLUDE = {"exclude": ["content"]}  # the answers carry ids; abstracts would only cost transfer

# Request shapes searched on the README's default collection; {} is the default a user gets.
KEYWORD_FIELDS = [
    {"vector_name": "keyword", "field": "name"},
    {"vector_name": "keyword", "field": "content"},
]
PER_ARM = [*KEYWORD_FIELDS, {"vector_name": "dense", "field": "content"}]
KEYWORD_WHOLE = {"vector_options": [{"vector_name": "keyword"}]}
KEYWORD_LISTED = {"vector_options": KEYWORD_FIELDS}
ARM_SETS: dict[str, dict[str, Any]] = {
    "keyword, the vector whole": KEYWORD_WHOLE,
    "keyword, its fields listed (Amgix style)": KEYWORD_LISTED,
    "keyword, fields listed, name weighted 2": {
        "vector_options": [{**KEYWORD_FIELDS[0], "weight": 2.0}, KEYWORD_FIELDS[1]]
    },
    "keyword, fields listed, `fusion_mode: rrf` (as amgix-client sends)": {
        **KEYWORD_LISTED,
        "fusion_mode": "rrf",
    },
    "keyword, content only": {"vector_options": [KEYWORD_FIELDS[1]]},
    "dense": {"vector_options": [{"vector_name": "dense"}]},
    "**default hybrid** (no options: linear over the pool)": {},
    "hybrid, every field listed (Amgix style)": {"vector_options": PER_ARM},
    "hybrid, `fusion_mode: linear` (Amgix's linear)": {"fusion_mode": "linear"},
    "hybrid, `fusion_mode: rrf` (what amgix-client sends)": {"fusion_mode": "rrf"},
    "every field listed, rrf (Amgix's arms)": {"vector_options": PER_ARM, "fusion_mode": "rrf"},
    "every field listed, linear": {"vector_options": PER_ARM, "fusion_mode": "linear"},
}
# The same queries with a typo in each (beir.with_typos): these shapes.
TYPO_SETS = [
    "keyword, the vector whole",
    "keyword, its fields listed (Amgix style)",
    "**default hybrid** (no options: linear over the pool)",
]


def say(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] relevance: {message}", flush=True)


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python3 -m bench.relevance", description=__doc__)
    parser.add_argument("--data", type=Path, default=beir.DEFAULT_DATA, help="a BEIR folder")
    parser.add_argument("--no-write", action="store_true", help="print instead of recording")
    return parser.parse_args(argv)


def quality(
    runs: dict[str, list[str]], deep: dict[str, list[str]], data: beir.RelevanceSet
) -> list[str]:
    ndcg = beir.mean(beir.ndcg_at_10, runs, data.qrels)
    recall = beir.mean(beir.recall_at_100, deep, data.qrels)
    return [f"{ndcg:.3f}", f"{recall:.3f}"]


async def measure(stack: Stack, data: beir.RelevanceSet, report: Report) -> None:
    async with httpx.AsyncClient(base_url=stack.base_url, timeout=120.0) as client:
        braid = service.Braid(stack, client, say)
        n_docs, n_queries = len(data.corpus), len(data.queries)
        costs = []
        for name, vectors in (
            ("kw_before", service.BEFORE_VECTORS),
            ("kw", service.KEYWORD_VECTORS),
        ):
            await braid.create(name, vectors)
            say(f"{name}: bulk-loading {n_docs:,} documents")
            ingest = await braid.ingest(name, data)
            await braid.settle(name, data.queries)
            runs, search = await braid.search_all(name, data.queries, EXCLUDE, 10)
            deep, _ = await braid.search_all(name, data.queries, EXCLUDE, 100)
            costs.append((name, ingest, search, quality(runs, deep, data)))
        await braid.create("scifact", service.DEFAULT_VECTORS)
        say(f"scifact: bulk-loading {n_docs:,} documents with the dense model")
        hybrid_ingest = await braid.ingest("scifact", data)
        await braid.settle("scifact", data.queries)
        rows = []
        for label, options in ARM_SETS.items():
            say(f"scifact: {label}")
            rows.append([label, *await shape(braid, data, data.queries, options)])
        typo_rows = []
        typed = beir.with_typos(data.queries)
        for label in TYPO_SETS:
            say(f"scifact, a typo in every query: {label}")
            typo_rows.append([label, *await shape(braid, data, typed, ARM_SETS[label])])
        code_rows = await code_recall(braid)
    report.text(f"Braid ({n_docs:,} documents, {n_queries} queries; README's default collection):")
    report.text()
    header = ["request shape", "nDCG@10", "recall@100", "query CPU-ms/query (limit 10)"]
    report.table(header, rows)
    report.text("The same queries with a typo in each (two adjacent letters of the longest word):")
    report.text()
    report.table(header, typo_rows)
    report.text(
        f"Part codes ({len(codes.catalogue())} products of bench/relevance/codes.py, README's "
        "default collection, default search): recall@1 by where the code sits and how it is asked"
    )
    report.text()
    report.table(["code in", *codes.FORMS], code_rows)
    report.text(
        f"Bulk ingest of the default collection (keyword + dense): {hybrid_ingest.seconds:.0f} s, "
        f"{n_docs / hybrid_ingest.seconds:.1f} docs/s."
    )
    report.text()
    report.text(
        "Keyword-only collections, the lexical defaults before (top_k 128, word ratio 80) "
        "and now; CPU summed over every process of the stack:"
    )
    report.text()
    cost_rows = [
        [
            name,
            f"{ingest.cpu_s / n_docs * 1000:.2f}",
            f"{search.cpu_s / n_queries * 1000:.2f}",
            *scores,
        ]
        for name, ingest, search, scores in costs
    ]
    report.table(
        ["collection", "ingest CPU-ms/doc", "query CPU-ms/query", "nDCG@10", "recall@100"],
        cost_rows,
    )


async def shape(
    braid: service.Braid,
    data: beir.RelevanceSet,
    queries: list[beir.Query],
    options: dict[str, Any],
) -> list[str]:
    """nDCG@10, recall@100 and query CPU-ms of one request shape on the default collection."""
    body = {**options, **EXCLUDE}
    runs, spent = await braid.search_all("scifact", queries, body, 10)
    deep, _ = await braid.search_all("scifact", queries, body, 100)
    return [*quality(runs, deep, data), f"{spent.cpu_s / len(queries) * 1000:.2f}"]


async def code_recall(braid: service.Braid) -> list[list[str]]:
    """Recall@1 of the code catalogue's queries, by where the code sits and the form asked."""
    products = codes.catalogue()
    await braid.create("codes", service.DEFAULT_VECTORS)
    await braid.load(
        "codes", [{"id": p.id, "name": p.name, "content": p.content} for p in products]
    )
    asked = {f"{q.product}:{q.form}": q for q in codes.queries(products)}
    texts = [beir.Query(key, q.text) for key, q in asked.items()]
    runs, _ = await braid.search_all("codes", texts, EXCLUDE, 1)
    recall = codes.recall_at_1({q: next(iter(runs[key]), None) for key, q in asked.items()})
    return [
        [where, *(f"{recall[(where, form)]:.3f}" for form in codes.FORMS)]
        for where in ("title", "content")
    ]


def main(argv: list[str]) -> int:
    args = parse(argv)
    if not beir.present(args.data):
        say(f"skipped: no relevance set at {args.data} (corpus.jsonl, queries.jsonl, qrels.tsv)")
        return 0
    data = beir.load(args.data)
    report = Report(
        title=f"relevance on {args.data.name}",
        command=shlex.join(["python3", "-m", "bench.relevance", *argv]),
        runs_heading=RUNS_HEADING,
    )
    say("BM25 reference (bm25s)")
    reference = bm25_runs(data)
    report.text("Reference, same run: bm25s (title + text, English stop words, Snowball stemmer).")
    report.text()
    report.table(
        ["reference", "nDCG@10", "recall@100"],
        [["BM25 (bm25s)", *quality(reference, reference, data)]],
    )
    with Stack() as stack:
        asyncio.run(measure(stack, data, report))
    print(report.markdown())
    if not args.no_write:
        report.append_to(DOC)
        say(f"recorded in {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
