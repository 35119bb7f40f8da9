"""Deterministic pseudo-English for benchmarks: ~60-word documents, seed-style five-paragraph
texts (past the model's 256 tokens, so the model truncates them) and short queries."""

from __future__ import annotations

import random

WORDS = (
    "the of and to in is that for it as was with be by on not this are or from at which but "
    "have an they you were her she there one all we their been has when who will more no if "
    "out so said what up its about into than them can only other new some could time these two "
    "may then do first any my now such like our over man even most made after also did many "
    "before must through back years where much your way well down should because each just "
    "those people how too little state good very make world still own see men work long here "
    "get both between life being under never day same another know while last might great old "
    "year off come since against go came right used take three garden kitchen river market "
    "winter summer engine window letter morning evening village station harbour mountain forest "
    "recipe butter flour tomato pepper cheese bread coffee music paper report system service "
    "search engine document vector index query answer number table chapter history science "
    "travel weather family school doctor question company product customer order payment price "
    "network server client storage memory process thread model result measure quickly slowly "
    "bright quiet early late simple careful modern ancient golden northern southern"
).split()


def _sentence(rng: random.Random, low: int, high: int) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(low, high))]
    return " ".join(words).capitalize() + "."


def document(rng: random.Random, words: int = 60) -> str:
    """About `words` words in sentences of 6-14 words."""
    out: list[str] = []
    while sum(len(s.split()) for s in out) < words:
        out.append(_sentence(rng, 6, 14))
    return " ".join(out)


def seed_document(rng: random.Random) -> str:
    """Five paragraphs of 4-7 sentences, like the seed data (Faker paragraphs)."""
    paragraphs = [
        " ".join(_sentence(rng, 8, 16) for _ in range(rng.randint(4, 7))) for _ in range(5)
    ]
    return "\n\n".join(paragraphs)


def query(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 6)))


def documents(count: int, seed: int = 1) -> list[str]:
    rng = random.Random(seed)
    return [document(rng) for _ in range(count)]


def seed_documents(count: int, seed: int = 2) -> list[str]:
    rng = random.Random(seed)
    return [seed_document(rng) for _ in range(count)]


def queries(count: int, seed: int = 3) -> list[str]:
    rng = random.Random(seed)
    return [f"{query(rng)} {i}" for i in range(count)]  # distinct: no cache can answer twice
