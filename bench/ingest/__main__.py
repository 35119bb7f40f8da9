"""`python3 -m bench.ingest`: Braid's end-to-end bulk ingest against a peer doing the same job on
the same documents, in one run on one machine: sentence-transformers' own `encode()` for the dense
table, Milvus Lite's BM25 collection for the keyword table (keyword.py, milvus.py).

Braid's figure is the user's path (braid.py): a JSON-lines file bulk-loaded through the public API
by the loader (`python3 -m loader`, batches of 100), timed from the first request until the
collection's stats show every document indexed, with the CPU each process of the stack spent on
it. Each peer runs in a process of its own with nothing else running, before and after Braid, and
the better of the two is the one Braid is held to.

Dense: the baseline is `SentenceTransformer(...).encode(texts, batch_size=32)` (baseline.py). Where
bfloat16 is native, Braid's document lane measures it faster at load and runs a bfloat16
transformer (encoder/runners.py), so the run also times `encode()` on the model cast to bfloat16
(after Braid), the fastest baseline a user could pick there, and reports Braid against it too.
The report says which precision each side ran (precision.py): the CPU's flags, and the lanes
Braid's encoder logged at model load. Corpora:
~60-word texts (bench/common/texts.py) into a collection with one `dense_model` vector; and BEIR
SciFact abstracts (../shared/relevance/scifact-train, skipped when absent) into the README's
default collection (keyword on name and content, the dense model on content). The model embeds
`content` in both, so the baseline embeds exactly the texts Braid embeds.

Keyword: the load study's seed documents (bench/load/workload.py) into a keyword-only collection,
and into Milvus Lite; LanceDB's full-text index and tantivy load them too (fulltext.py).
`--skip-dense` and `--skip-keyword` run one table alone.
"""

from __future__ import annotations

import argparse
import asyncio
import shlex
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.common import cpu, texts
from bench.common.report import Report
from bench.ingest import baseline, fulltext, keyword, milvus, precision
from bench.ingest.braid import TIMESTAMP, WARM, Corpus, Ingest, braid
from bench.load import workload
from bench.relevance import beir
from harness.stack import Stack

DOC = Path(__file__).resolve().parents[2] / "docs" / "benchmarks.md"
RUNS_HEADING = "## Runs of bench/ingest"
DENSE_HEADER = [
    "corpus",
    "encode() texts/s, before / after",
    "encode() on bfloat16, texts/s",
    "Braid docs/s",
    "Braid ÷ best encode()",
    "Braid ÷ encode() on bfloat16",
    *(f"{g} CPU-ms/doc" for g in cpu.GROUPS),
    "total CPU-ms/doc",
]


def corpora(short: int, abstracts: int, data: Path) -> list[Corpus]:
    found = [
        Corpus(
            f"~60-word texts, {short:,}; one dense_model vector",
            [workload.DENSE],
            [
                {"id": f"t{i}", "content": text, "timestamp": TIMESTAMP}
                for i, text in enumerate(texts.documents(short + WARM))
            ],
        )
    ]
    if beir.present(data):
        records = beir.load(data).corpus[: abstracts + WARM]
        found.append(
            Corpus(
                f"SciFact abstracts, {abstracts:,}; README's default collection",
                workload.CONFIGS["hybrid"],
                [
                    {"id": r.id, "name": r.title, "content": r.text, "timestamp": TIMESTAMP}
                    for r in records
                ],
            )
        )
    return found


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python3 -m bench.ingest")
    parser.add_argument("--texts", type=int, default=3000, help="~60-word texts")
    parser.add_argument("--abstracts", type=int, default=2000, help="SciFact abstracts")
    parser.add_argument(
        "--keyword-documents",
        type=int,
        default=keyword.DEFAULT_DOCUMENTS,
        help="seed-workload documents of the keyword table",
    )
    parser.add_argument("--data", type=Path, default=beir.DEFAULT_DATA)
    parser.add_argument("--env", action="append", default=[], help="KEY=VALUE for the stack")
    parser.add_argument("--skip-dense", action="store_true", help="the keyword table alone")
    parser.add_argument("--skip-keyword", action="store_true", help="the dense table alone")
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"300 of each dense corpus, {keyword.QUICK_DOCUMENTS} keyword documents",
    )
    parser.add_argument("--no-write", action="store_true", help="print, do not record")
    return parser.parse_args(argv)


def say(line: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {line}", file=sys.stderr, flush=True)


@dataclass
class Found:
    dense: list[list[str]] = field(default_factory=list)
    keyword: list[list[str]] = field(default_factory=list)
    encoder: list[str] = field(default_factory=list)  # what the encoders logged at model load


def measure(dense: list[Corpus], words: Corpus | None, env: dict[str, str], folder: Path) -> Found:
    before = {c.name: _timed_baseline(c, folder, "before") for c in dense}
    peer_before = _timed_milvus(words, folder, "before") if words else None
    found, keyword_run = Found(), None
    with Stack(env) as stack:
        runs = {}
        for number, corpus in enumerate(dense):
            say(f"Braid: {corpus.name}")
            runs[corpus.name] = asyncio.run(braid(stack, corpus, folder, number))
        if words:
            say(f"Braid: {words.name}")
            keyword_run = asyncio.run(braid(stack, words, folder, len(dense)))
        found.encoder = precision.encoder_lines(stack)
    after = {c.name: _timed_baseline(c, folder, "after") for c in dense}
    half = {c.name: _timed_baseline(c, folder, "after", bf16=True) for c in dense}
    found.dense = [
        _dense_row(c.name, (before[c.name], after[c.name], half[c.name]), runs[c.name])
        for c in dense
    ]
    if words and peer_before and keyword_run:
        peer_after = _timed_milvus(words, folder, "after")
        others = [_timed_fulltext(peer, words, folder) for peer in fulltext.PEERS]
        found.keyword = [
            keyword.row(len(words.timed), keyword_run, peer_before, peer_after, others)
        ]
    return found


def _dense_row(name: str, baselines: tuple[float, float, float], run: Ingest) -> list[str]:
    before, after, half = baselines
    return [
        name,
        f"{before:.1f} / {after:.1f}",
        f"{half:.1f}",
        f"{run.docs_s:.1f}",
        f"**{run.docs_s / max(before, after):.2f}×**",
        f"{run.docs_s / half:.2f}×",
        *(f"{run.cpu_ms[g]:.2f}" for g in cpu.GROUPS),
        f"{sum(run.cpu_ms.values()):.2f}",
    ]


def _timed_baseline(corpus: Corpus, folder: Path, when: str, bf16: bool = False) -> float:
    model = "bfloat16 model" if bf16 else "defaults"
    say(f"sentence-transformers encode(), {model} ({when} Braid): {corpus.name}")
    return baseline.measure(corpus.contents[WARM:], folder, bf16)


def _timed_milvus(corpus: Corpus, folder: Path, when: str) -> milvus.Result:
    say(f"Milvus Lite BM25 ({when} Braid): {corpus.name}")
    return milvus.measure(corpus.documents, WARM, folder)


def _timed_fulltext(peer: str, corpus: Corpus, folder: Path) -> milvus.Result:
    say(f"{peer} full-text index (after Braid): {corpus.name}")
    return fulltext.measure(peer, corpus.documents, WARM, folder)


def write(report: Report, found: Found, env: dict[str, str]) -> None:
    report.text(precision.machine_cpu())
    report.text()
    if env:
        report.text(f"Stack settings: {', '.join(f'`{k}={v}`' for k, v in env.items())}.")
        report.text()
    if found.dense:
        for line in precision.dense_notes(found.encoder):
            report.text(line)
        report.table(DENSE_HEADER, found.dense)
    if found.keyword:
        report.text(
            "Keyword bulk load, Braid (keyword on name and content) against Milvus Lite "
            "(BM25 on name + newline + content), CPU-ms per document; LanceDB's full-text "
            "index and tantivy on the same text, neither durable per batch (fulltext.py):"
        )
        report.text()
        report.table(keyword.HEADER, found.keyword)


def main(argv: list[str]) -> int:
    args = parse(argv)
    short, abstracts = (300, 300) if args.quick else (args.texts, args.abstracts)
    documents = keyword.QUICK_DOCUMENTS if args.quick else args.keyword_documents
    env = dict(item.split("=", 1) for item in args.env)
    report = Report(
        title="bulk ingest, Braid end to end vs encode() (dense) and Milvus Lite (keyword)",
        command=shlex.join(["python3", "-m", "bench.ingest", *argv]),
        runs_heading=RUNS_HEADING,
    )
    dense = [] if args.skip_dense else corpora(short, abstracts, args.data)
    if len(dense) == 1:
        say(f"no relevance set at {args.data}: the SciFact corpus is skipped")
    words = None if args.skip_keyword else keyword.corpus(documents)
    with tempfile.TemporaryDirectory(prefix="braid-ingest-") as scratch:
        found = measure(dense, words, env, Path(scratch))
    write(report, found, env)
    print(report.markdown())
    if not args.no_write:
        report.append_to(DOC)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
