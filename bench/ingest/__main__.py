"""`python3 -m bench.ingest`: Braid's end-to-end bulk ingest against sentence-transformers' own
`encode()` on the same texts, in one run on one machine.

For each corpus the baseline is `SentenceTransformer(...).encode(texts, batch_size=32)` in a
process of its own with nothing else running (bench/ingest/baseline.py), measured before and
after Braid, and the better of the two is the one Braid is held to. Braid's figure is the user's
path: a JSON-lines file bulk-loaded through the public API by the loader (`python3 -m loader`,
batches of 100), timed from the first request until the collection's stats show every document
indexed, with the CPU each process of the stack spent on it.

On a CPU with AMX Braid's document lane runs a bfloat16 transformer (encoder/runners.py), so the
run also times `encode()` on the model cast to bfloat16 (after Braid), the fastest baseline a
user could pick there, and reports Braid against it too.

Corpora: ~60-word texts (bench/common/texts.py) into a collection with one `dense_model` vector; and
BEIR SciFact abstracts (../shared/relevance/scifact-train, skipped when absent) into the README's
default collection (keyword on name and content, the dense model on content). The model embeds
`content` in both, so the baseline embeds exactly the texts Braid embeds.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import shlex
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from bench.common import cpu, procs, texts
from bench.common.memory import program_pids
from bench.common.report import Report
from bench.ingest import baseline
from bench.relevance import beir
from harness.stack import Stack
from loader.load import load

DOC = Path(__file__).resolve().parents[2] / "docs" / "benchmarks.md"
RUNS_HEADING = "## Runs of bench/ingest"
MODEL = "sentence-transformers/all-MiniLM-L6-v2"
TIMESTAMP = "2026-01-01T00:00:00Z"
DENSE = {"name": "dense", "type": "dense_model", "model": MODEL, "index_fields": ["content"]}
KEYWORD = {"name": "keyword", "type": "keyword", "index_fields": ["name", "content"]}
WARM = 64  # documents indexed before the clock starts: the model and the collection are loaded


@dataclass
class Corpus:
    name: str
    vectors: list[dict[str, Any]]
    documents: list[dict[str, Any]]

    @property
    def contents(self) -> list[str]:
        return [d["content"] for d in self.documents]


def corpora(short: int, abstracts: int, data: Path) -> list[Corpus]:
    found = [
        Corpus(
            f"~60-word texts, {short:,}; one dense_model vector",
            [DENSE],
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
                [KEYWORD, DENSE],
                [
                    {"id": r.id, "name": r.title, "content": r.text, "timestamp": TIMESTAMP}
                    for r in records
                ],
            )
        )
    return found


@dataclass
class Ingest:
    docs_s: float
    seconds: float
    cpu_ms: dict[str, float]  # per document, by group (bench/common/cpu.py)


async def braid(stack: Stack, corpus: Corpus, folder: Path, number: int) -> Ingest:
    collection = f"ingest{number}"
    warm, timed = corpus.documents[:WARM], corpus.documents[WARM:]
    file = folder / f"{collection}.jsonl"
    file.write_text("".join(json.dumps(d) + "\n" for d in timed))
    async with httpx.AsyncClient(base_url=stack.base_url, timeout=120.0) as client:
        created = await client.post(
            f"/v1/collections/{collection}", json={"vectors": corpus.vectors}
        )
        created.raise_for_status()
        (folder / "warm.jsonl").write_text("".join(json.dumps(d) + "\n" for d in warm))
        await load(client, collection, folder / "warm.jsonl", out=io.StringIO())
        pids = program_pids(stack, {})
        before = cpu.program_cpu(procs.all_procs(), pids)
        result = await load(client, collection, file)
        after = cpu.program_cpu(procs.all_procs(), pids)
    per_group = cpu.by_group(cpu.spent(before, after))
    return Ingest(
        result.docs_s,
        result.seconds,
        {group: used * 1000 / len(timed) for group, used in per_group.items()},
    )


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python3 -m bench.ingest")
    parser.add_argument("--texts", type=int, default=3000, help="~60-word texts")
    parser.add_argument("--abstracts", type=int, default=2000, help="SciFact abstracts")
    parser.add_argument("--data", type=Path, default=beir.DEFAULT_DATA)
    parser.add_argument("--env", action="append", default=[], help="KEY=VALUE for the stack")
    parser.add_argument("--quick", action="store_true", help="300 of each, to try the harness")
    parser.add_argument("--no-write", action="store_true", help="print, do not record")
    return parser.parse_args(argv)


def say(line: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {line}", file=sys.stderr, flush=True)


def measure(found: list[Corpus], env: dict[str, str], folder: Path) -> list[list[str]]:
    before = {c.name: _timed_baseline(c, folder, "before") for c in found}
    with Stack(env) as stack:
        runs = {}
        for number, corpus in enumerate(found):
            say(f"Braid: {corpus.name}")
            runs[corpus.name] = asyncio.run(braid(stack, corpus, folder, number))
    after = {c.name: _timed_baseline(c, folder, "after") for c in found}
    half = {c.name: _timed_baseline(c, folder, "after", bf16=True) for c in found}
    rows = []
    for corpus in found:
        best = max(before[corpus.name], after[corpus.name])
        run = runs[corpus.name]
        groups = [f"{run.cpu_ms[g]:.2f}" for g in cpu.GROUPS]
        rows.append(
            [
                corpus.name,
                f"{before[corpus.name]:.1f} / {after[corpus.name]:.1f}",
                f"{half[corpus.name]:.1f}",
                f"{run.docs_s:.1f}",
                f"**{run.docs_s / best:.2f}×**",
                f"{run.docs_s / half[corpus.name]:.2f}×",
                *groups,
                f"{sum(run.cpu_ms.values()):.2f}",
            ]
        )
    return rows


def _timed_baseline(corpus: Corpus, folder: Path, when: str, bf16: bool = False) -> float:
    model = "bfloat16 model" if bf16 else "defaults"
    say(f"sentence-transformers encode(), {model} ({when} Braid): {corpus.name}")
    return baseline.measure(corpus.contents[WARM:], folder, bf16)


def main(argv: list[str]) -> int:
    args = parse(argv)
    short, abstracts = (300, 300) if args.quick else (args.texts, args.abstracts)
    env = dict(item.split("=", 1) for item in args.env)
    report = Report(
        title="bulk ingest, Braid end to end vs sentence-transformers' encode()",
        command=shlex.join(["python3", "-m", "bench.ingest", *argv]),
        runs_heading=RUNS_HEADING,
    )
    found = corpora(short, abstracts, args.data)
    if len(found) == 1:
        say(f"no relevance set at {args.data}: the SciFact corpus is skipped")
    with tempfile.TemporaryDirectory(prefix="braid-ingest-") as scratch:
        rows = measure(found, env, Path(scratch))
    if env:
        report.text(f"Stack settings: {', '.join(f'`{k}={v}`' for k, v in env.items())}.")
        report.text()
    report.table(
        [
            "corpus",
            "encode() texts/s, before / after",
            "encode() on bfloat16, texts/s",
            "Braid docs/s",
            "Braid ÷ best encode()",
            "Braid ÷ encode() on bfloat16",
            *(f"{g} CPU-ms/doc" for g in cpu.GROUPS),
            "total CPU-ms/doc",
        ],
        rows,
    )
    print(report.markdown())
    if not args.no_write:
        report.append_to(DOC)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
