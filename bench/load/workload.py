"""The seed workload of the Amgix One load study: its documents, queries, collections and mix.

Shared by the Locust users (locustfile.py) and the runners' pre-population (bench/load,
bench/soak), so both write the same kind of documents. Faker text, as they ran it: `name` is
`sentence(10)`, `content` five `paragraphs` joined by blank lines, a query `sentence(5)`; or, with
varied lengths (bench/soak --hybrid), content of 3 to 300 words.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from faker import Faker

COLLECTION = "load"  # the collection the runners create and locustfile.py loads
ID_SPACE = 100_000  # document ids 0 .. 99,999
MODEL = "sentence-transformers/all-MiniLM-L6-v2"
# Weights of the user's tasks (they add up to 100).
SEARCH_WEIGHT, UPSERT_WEIGHT, DELETE_WEIGHT = 80, 19, 1
# Every document pre-populated gets this timestamp; the load's writes are all newer.
PREPOPULATED_AT = "2026-01-01T00:00:00Z"
# Words of a varied document's content, drawn uniformly. Faker's text is 1.1-1.2 tokens a word
# for all-MiniLM-L6-v2's tokenizer (plus 2), so 3-300 words is 5-335 tokens: every 32-token step
# the document lane pads to (encoder/runners.py) up to the model's 256, about a tenth of the
# documents each, and a fifth past 256 (truncated).
VARIED_WORDS = (3, 300)

KEYWORD = {"name": "keyword", "type": "keyword", "index_fields": ["name", "content"]}
DENSE = {"name": "dense", "type": "dense_model", "model": MODEL, "index_fields": ["content"]}
CONFIGS: dict[str, list[dict[str, Any]]] = {"keyword": [KEYWORD], "hybrid": [KEYWORD, DENSE]}


def collection_body(config: str) -> dict[str, Any]:
    return {"vectors": CONFIGS[config]}


def doc_id(number: int) -> str:
    return str(number)


def document(fake: Faker, number: int, timestamp: str) -> dict[str, Any]:
    return {
        "id": doc_id(number),
        "timestamp": timestamp,
        "name": fake.sentence(10),
        "content": "\n\n".join(fake.paragraphs(5)),
    }


def varied_document(fake: Faker, number: int, timestamp: str) -> dict[str, Any]:
    """A seed document whose content is VARIED_WORDS long, a different length each."""
    return {
        "id": doc_id(number),
        "timestamp": timestamp,
        "name": fake.sentence(10),
        "content": text(fake, fake.random_int(*VARIED_WORDS)),
    }


def text(fake: Faker, words: int) -> str:
    """Faker sentences cut at exactly `words` words."""
    out: list[str] = []
    while len(out) < words:
        out += fake.sentence(12).split()
    return " ".join(out[:words])


class Lengths(StrEnum):
    """How long the written documents are: the seed workload's (five paragraphs, ~70 words) or
    varied (VARIED_WORDS), which takes a model holder through every token-length shape."""

    SEED = "seed"
    VARIED = "varied"


DocumentMaker = Callable[[Faker, int, str], dict[str, Any]]
MAKERS: dict[Lengths, DocumentMaker] = {Lengths.SEED: document, Lengths.VARIED: varied_document}


def query(fake: Faker) -> str:
    return fake.sentence(5)


def now_iso() -> str:
    """A write's timestamp: UTC with microseconds, so two writes of a user never tie."""
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def seeded(seed: int) -> Faker:
    fake = Faker()
    fake.seed_instance(seed)
    return fake
