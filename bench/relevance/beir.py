"""A BEIR relevance set read from disk (corpus, queries, qrels) and its two metrics: nDCG@10 as
BEIR computes it (gain 2^rel - 1, log2 discount, ideal from the judgements) and recall@100."""

from __future__ import annotations

import json
import math
import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

# ../shared/relevance/scifact-train from the repository root; never copied into the repo.
DEFAULT_DATA = Path(__file__).resolve().parents[3] / "shared" / "relevance" / "scifact-train"
FILES = ("corpus.jsonl", "queries.jsonl", "qrels.tsv")


@dataclass(frozen=True)
class Record:
    id: str
    title: str
    text: str


@dataclass(frozen=True)
class Query:
    id: str
    text: str


@dataclass(frozen=True)
class RelevanceSet:
    corpus: list[Record]
    queries: list[Query]  # those with at least one judgement
    qrels: dict[str, dict[str, int]]  # query id -> document id -> relevance


def present(folder: Path) -> bool:
    return all((folder / name).is_file() for name in FILES)


def load(folder: Path) -> RelevanceSet:
    corpus = [
        Record(str(row["_id"]), str(row.get("title") or ""), str(row.get("text") or ""))
        for row in _jsonl(folder / "corpus.jsonl")
    ]
    qrels: dict[str, dict[str, int]] = {}
    with (folder / "qrels.tsv").open() as lines:
        next(lines)  # header
        for line in lines:
            query, doc, score = line.rstrip("\n").split("\t")
            qrels.setdefault(query, {})[doc] = int(score)
    queries = [
        Query(str(row["_id"]), str(row["text"]))
        for row in _jsonl(folder / "queries.jsonl")
        if str(row["_id"]) in qrels
    ]
    return RelevanceSet(corpus, queries, qrels)


def _jsonl(path: Path) -> list[dict[str, object]]:
    with path.open() as lines:
        return [json.loads(line) for line in lines if line.strip()]


def ndcg_at_10(ranked: Sequence[str], relevant: Mapping[str, int]) -> float:
    gains = [(2 ** relevant.get(d, 0) - 1) / math.log2(i + 2) for i, d in enumerate(ranked[:10])]
    ideal = sorted(relevant.values(), reverse=True)[:10]
    best = sum((2**rel - 1) / math.log2(i + 2) for i, rel in enumerate(ideal))
    return sum(gains) / best if best > 0 else 0.0


def recall_at_100(ranked: Sequence[str], relevant: Mapping[str, int]) -> float:
    wanted = {doc for doc, rel in relevant.items() if rel > 0}
    return len(wanted & set(ranked[:100])) / len(wanted) if wanted else 0.0


def with_typos(queries: Sequence[Query], seed: int = 11) -> list[Query]:
    """The same queries, each with one typo a user makes: two adjacent letters swapped inside
    its longest word (of five letters or more; a query without one is left as it is)."""
    rng = random.Random(seed)
    typed = []
    for query in queries:
        words = [m for m in re.finditer(r"[A-Za-z]{5,}", query.text)]
        if not words:
            typed.append(query)
            continue
        word = max(words, key=lambda m: (len(m.group()), -m.start()))
        at = word.start() + rng.randint(1, len(word.group()) - 3)
        text = query.text
        typed.append(Query(query.id, text[:at] + text[at + 1] + text[at] + text[at + 2 :]))
    return typed


Metric = Callable[[Sequence[str], Mapping[str, int]], float]


def mean(
    metric: Metric, runs: Mapping[str, Sequence[str]], qrels: Mapping[str, Mapping[str, int]]
) -> float:
    """The metric averaged over every judged query; a query with no run scores 0."""
    return sum(metric(runs.get(q, []), rel) for q, rel in qrels.items()) / len(qrels)
