"""The seed workload of the Amgix One load study: its documents, queries, collections and mix.

Shared by the Locust users (bench/locustfile.py) and the runner's pre-population (bench/loadrun),
so both write the same kind of documents. Faker text, as they ran it: `name` is `sentence(10)`,
`content` five `paragraphs` joined by blank lines, a query `sentence(5)`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from faker import Faker

COLLECTION = "load"  # the collection the runners create and bench/locustfile.py loads
ID_SPACE = 100_000  # document ids 0 .. 99,999
MODEL = "sentence-transformers/all-MiniLM-L6-v2"
# Weights of the user's tasks (they add up to 100).
SEARCH_WEIGHT, UPSERT_WEIGHT, DELETE_WEIGHT = 80, 19, 1
# Every document pre-populated gets this timestamp; the load's writes are all newer.
PREPOPULATED_AT = "2026-01-01T00:00:00Z"

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


def query(fake: Faker) -> str:
    return fake.sentence(5)


def now_iso() -> str:
    """A write's timestamp: UTC with microseconds, so two writes of a user never tie."""
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def seeded(seed: int) -> Faker:
    fake = Faker()
    fake.seed_instance(seed)
    return fake
