"""The worker's lexical child: the same vectors as the worker makes, and a child that dies, or
fails on a text, costs nothing but itself."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from core.enums import VectorType
from core.lexical import LexicalParams
from harness.stack import alive, module_children
from worker.lexical import CHILDREN, SMALLEST_SENT, LexicalTexts, Lexicon, terms_of

ROOT = Path(__file__).resolve().parents[3]
WORDS = "quick brown foxes jumped over lazy dogs near riverbanks while searching x9-42 café"


def groups(n: int = 40) -> list[LexicalTexts]:
    texts = [" ".join(WORDS.split()[i % 7 :] * (1 + i % 3)) + f" doc{i}" for i in range(n)]
    return [
        LexicalTexts(LexicalParams(VectorType.WMTR), 12.0, texts),
        LexicalTexts(LexicalParams(VectorType.TRIGRAMS, top_k=64), 0.0, texts[: n // 2]),
    ]


def children() -> set[int]:
    """This process's live lexical children."""
    return module_children(os.getpid(), "worker.lexical")


def wait_gone(pid: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while alive(pid):
        assert time.monotonic() < deadline, f"process {pid} is still there"
        time.sleep(0.05)


@pytest.fixture
async def lexicon() -> AsyncIterator[Lexicon]:
    found = Lexicon()
    yield found
    await found.close()


async def test_the_child_makes_the_vectors_the_worker_makes(lexicon: Lexicon) -> None:
    asked = groups()
    before = children()
    answers = await lexicon.documents(asked)
    assert len(children() - before) == 1, "a batch of this size goes to the child"
    assert answers == [terms_of(group) for group in asked]


async def test_a_few_texts_stay_in_the_worker(lexicon: Lexicon) -> None:
    before = children()
    few = [LexicalTexts(LexicalParams(VectorType.WMTR), 0.0, [WORDS] * (SMALLEST_SENT - 1))]
    assert await lexicon.documents(few) == [terms_of(few[0])]
    assert children() == before


async def test_batches_at_once_go_to_children_of_their_own(lexicon: Lexicon) -> None:
    asked = groups()
    before = children()
    answers = await asyncio.gather(*(lexicon.documents(asked) for _ in range(CHILDREN + 1)))
    assert len(children() - before) == CHILDREN
    assert all(answer == [terms_of(group) for group in asked] for answer in answers)


async def test_a_killed_child_costs_only_itself() -> None:
    lexicon = Lexicon(children=1)
    asked = groups()
    before = children()
    await lexicon.documents(asked)
    (first,) = children() - before
    os.kill(first, signal.SIGKILL)
    wait_gone(first)
    assert await lexicon.documents(asked) == [terms_of(g) for g in asked]  # worked out here
    assert await lexicon.documents(asked) == [terms_of(g) for g in asked]
    (second,) = children() - before
    assert second != first
    await lexicon.close()


async def test_a_text_the_child_fails_on_fails_in_the_worker(lexicon: Lexicon) -> None:
    bad = groups()
    bad[0].texts[3] = None  # type: ignore[call-overload]
    with pytest.raises(AttributeError):
        await lexicon.documents(bad)
    assert await lexicon.documents(groups()) == [terms_of(g) for g in groups()]


async def test_close_ends_the_child() -> None:
    lexicon = Lexicon()
    before = children()
    await lexicon.documents(groups())
    (child,) = children() - before
    await lexicon.close()
    wait_gone(child)


def test_the_child_dies_with_the_worker() -> None:
    """A worker killed with -9 leaves no child behind: its stdin ends, and it exits."""
    script = textwrap.dedent(
        """
        import asyncio, os, signal
        from tests.unit.worker.test_lexical import children, groups
        from worker.lexical import Lexicon

        async def main():
            await Lexicon().documents(groups())
            print(*children(), flush=True)
            os.kill(os.getpid(), signal.SIGKILL)

        asyncio.run(main())
        """
    )
    worker = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert worker.returncode == -signal.SIGKILL, worker.stderr
    (child,) = (int(pid) for pid in worker.stdout.split())
    wait_gone(child)
