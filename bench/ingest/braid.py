"""Braid's side of the ingest benchmark: a corpus bulk-loaded through the public API by the loader
(`python3 -m loader`, batches of 100) into a collection of its own, timed from the first request
until the collection's stats show every document indexed, with the CPU each process group of the
stack spent on it. Both tables use it: the dense corpora and the keyword one."""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from bench.common import cpu, procs
from bench.common.memory import program_pids
from harness.stack import Stack
from loader.load import load

TIMESTAMP = "2026-01-01T00:00:00Z"
WARM = 64  # documents indexed before the clock starts: the model and the collection are loaded


@dataclass
class Corpus:
    name: str
    vectors: list[dict[str, Any]]
    documents: list[dict[str, Any]]  # the first WARM are loaded before the clock starts

    @property
    def contents(self) -> list[str]:
        return [d["content"] for d in self.documents]

    @property
    def timed(self) -> list[dict[str, Any]]:
        return self.documents[WARM:]


@dataclass
class Ingest:
    docs_s: float
    seconds: float
    cpu_ms: dict[str, float]  # per document, by group (bench/common/cpu.py)


async def braid(stack: Stack, corpus: Corpus, folder: Path, number: int) -> Ingest:
    collection = f"ingest{number}"
    warm, timed = corpus.documents[:WARM], corpus.timed
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
