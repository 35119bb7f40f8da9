"""A batch's lexical document vectors, worked out in child processes beside the worker.

The worker's process is the serial step of a keyword load: its event loop and the engine's
calls share one GIL. Tokenizing and counting a batch's texts (~0.1 ms a seed document) is the
largest piece of it that needs nothing the worker holds, so it goes to a child: `python3 -m
worker.lexical`, which reads requests on its stdin and answers on its stdout, one at a time.
There are CHILDREN of them, so the batches in flight do not queue behind one another's texts.

- A child dies with the worker: its stdin closes, it reads the end and exits; nothing is left
  behind a `kill -9`.
- A child that dies, hangs past CHILD_TIMEOUT_S or answers nonsense is killed, the request is
  worked out in the worker (the same function, yielding the event loop every LOCAL_A_TURN
  texts), and its next request starts a new child. A text a child fails on is worked out in
  the worker too, so its exception is raised where the batch can isolate it.
- Requests of fewer than SMALLEST_SENT texts (a sync write, a trickle) stay in the worker: the
  round trip is not worth it, and they never queue behind a bulk load's batch.

Both sides run `document_vectors`, so a vector is the same wherever it was made.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import pickle
import signal
import sys
from dataclasses import dataclass
from typing import BinaryIO

from core.lexical import DocumentTerms, LexicalParams, document_vectors
from core.lifecycle import start_module
from core.vectors import SparseVector

log = logging.getLogger(__name__)

# Children: two, so one batch's texts need not wait for another's while three are in flight.
CHILDREN = 2
SMALLEST_SENT = 16
CHILD_TIMEOUT_S = 60.0
# Texts worked out in the worker between two turns of its event loop: 256 at once held the loop
# ~100 ms under a bulk load, and with it the batch ahead, which holds the store's write lock
# across its awaits (the engine's thread, the broadcast), and RPCs.
LOCAL_A_TURN = 32
_HEADER = 8


@dataclass(frozen=True)
class LexicalTexts:
    """Texts of one lexical slot: its parameters and the collection's average length."""

    params: LexicalParams
    avg_length: float
    texts: list[str]


# A text's terms as they cross the pipe: the vector's indices and values, and the text's length.
_Terms = tuple[list[int], list[float], int]


@dataclass(frozen=True)
class _Answer:
    """A child's answer to a request: each group's terms, text for text; or why it failed."""

    terms: list[list[_Terms]]
    failed: str = ""


def terms_of(group: LexicalTexts) -> list[DocumentTerms]:
    return document_vectors(group.texts, group.params, group.avg_length)


class Lexicon:
    """Lexical document vectors for the index pipeline, from a child when it is worth it."""

    def __init__(self, children: int = CHILDREN) -> None:
        self._idle: asyncio.Queue[_Child] = asyncio.Queue()
        self._children = [_Child() for _ in range(children)]
        for child in self._children:
            self._idle.put_nowait(child)

    async def documents(self, groups: list[LexicalTexts]) -> list[list[DocumentTerms]]:
        """Each group's terms, text for text."""
        if not self._children or sum(len(g.texts) for g in groups) < SMALLEST_SENT:
            return await _here(groups)
        child = await self._idle.get()
        try:
            answers = await asyncio.wait_for(child.ask(groups), CHILD_TIMEOUT_S)
        except Exception as exc:  # a process boundary: whatever went wrong, the worker can do it
            log.warning("lexical child failed (%r); this batch's vectors are worked out here", exc)
            answers = None
        finally:
            self._idle.put_nowait(child)
        if answers is None:  # a child that failed, or raised on a text: raise it here, isolated
            return await _here(groups)
        return [
            [
                DocumentTerms(SparseVector.model_construct(indices=i, values=v), length)
                for i, v, length in group
            ]
            for group in answers
        ]

    async def close(self) -> None:
        await asyncio.gather(*(child.close() for child in self._children))


class _Child:
    """One child process, started at its first request and again after one it failed."""

    def __init__(self) -> None:
        self._process: asyncio.subprocess.Process | None = None

    async def ask(self, groups: list[LexicalTexts]) -> list[list[_Terms]] | None:
        """The groups' answers; None where the child raised on a text."""
        process = self._process
        if process is None or process.returncode is not None:
            process = self._process = await start_module(
                "worker.lexical", stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
            )
        assert process.stdin is not None and process.stdout is not None
        try:
            body = pickle.dumps(groups, protocol=pickle.HIGHEST_PROTOCOL)
            process.stdin.write(len(body).to_bytes(_HEADER, "big") + body)
            await process.stdin.drain()
            size = int.from_bytes(await process.stdout.readexactly(_HEADER), "big")
            answer = pickle.loads(await process.stdout.readexactly(size))
            asked = [len(g.texts) for g in groups]
            if not isinstance(answer, _Answer) or (
                not answer.failed and [len(t) for t in answer.terms] != asked
            ):
                raise ValueError("the lexical child answered for other texts")
        except BaseException:  # mid-request, cancelled included: its next answer is not ours
            self._process = None
            _kill(process)
            raise
        if answer.failed:
            log.warning("lexical child: %s; the batch is worked out here", answer.failed)
            return None
        return answer.terms

    async def close(self) -> None:
        """Close the child's stdin, so it exits; kill it if it has not within a second."""
        process, self._process = self._process, None
        if process is None or process.returncode is not None:
            return
        if process.stdin is not None:
            process.stdin.close()
        try:
            await asyncio.wait_for(process.wait(), 1.0)
        except TimeoutError:
            _kill(process)
            await process.wait()


def _kill(child: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError):
        child.kill()


async def _here(groups: list[LexicalTexts]) -> list[list[DocumentTerms]]:
    """The groups' terms worked out in this process, yielding the event loop now and then."""
    result: list[list[DocumentTerms]] = []
    for group in groups:
        terms: list[DocumentTerms] = []
        for start in range(0, len(group.texts), LOCAL_A_TURN):
            texts = group.texts[start : start + LOCAL_A_TURN]
            terms += document_vectors(texts, group.params, group.avg_length)
            await asyncio.sleep(0)
        result.append(terms)
    return result


def _read(source: BinaryIO) -> list[LexicalTexts] | None:
    header = source.read(_HEADER)
    if len(header) < _HEADER:
        return None  # the worker closed our stdin, or is gone
    body = source.read(int.from_bytes(header, "big"))
    groups: list[LexicalTexts] = pickle.loads(body)
    return groups


def _answer(groups: list[LexicalTexts]) -> _Answer:
    try:
        return _Answer(
            [
                [(t.vector.indices, t.vector.values, t.length) for t in terms_of(group)]
                for group in groups
            ]
        )
    except Exception as exc:  # the worker works the request out itself and sees it raised
        return _Answer([], failed=repr(exc))


def main() -> None:
    """The child: requests on stdin, answers on stdout, until stdin ends."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's ^C is for the worker to handle
    source = sys.stdin.buffer
    sink = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # anything else printed goes to the worker's log, not into the answers
    while (groups := _read(source)) is not None:
        body = pickle.dumps(_answer(groups), protocol=pickle.HIGHEST_PROTOCOL)
        sink.write(len(body).to_bytes(_HEADER, "big") + body)
        sink.flush()


if __name__ == "__main__":  # run as the module proper, so what it pickles names worker.lexical
    from worker.lexical import main as run

    run()
