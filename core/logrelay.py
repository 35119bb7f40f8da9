"""The `logs` event listener: every program's output, line by line and prefixed by the program's
name, also on supervisord's own stdout (what `make run`'s terminal and `docker logs` show).

supervisord starts it (`[eventlistener:logs]` in supervisord.conf) as `python3 -m core.logrelay`;
it needs nothing but the standard library. The protocol, on this process's stdin and stdout:

- it writes `READY\\n`; supervisord sends one event: a header line of `key:value` tokens ending in
  `len:N`, then N *characters* of payload (supervisord counts its decoded text, not bytes);
- the payload of PROCESS_LOG_* starts with a line of tokens (`processname`, `pid`, `channel`),
  the program's output follows; supervisord sends what one read of the program's pipe gave, so a
  line may be split across events, and a chunk that was not UTF-8 arrives as
  `Undecodable: b'…'`, which is turned back into its bytes here;
- it answers `RESULT 2\\nOK` and is ready again.

The lines go to supervisord's stdout, opened anew through /proc (this process's own stdout is the
protocol channel), by a thread of their own. Nothing upstream ever waits for a slow reader: a
stalled terminal stalls only that thread; past OUTBOX_BYTES the newest lines are dropped and
counted, and supervisord's own buffer of events (`buffer_size`) drops the oldest. The listener
gets no events of its own output, so it cannot feed itself.
"""

from __future__ import annotations

import ast
import io
import logging
import os
import signal
import sys
import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from types import FrameType
from typing import BinaryIO, TextIO

log = logging.getLogger(__name__)

NAME = "logs"  # the listener's program name in supervisord.conf, and its own lines' prefix
NAME_WIDTH = 10  # names are padded to this (encoder-10), so the lines' text starts aligned
SEPARATOR = b" | "
LOG_EVENT = "PROCESS_LOG_"
ENDED = frozenset({"PROCESS_STATE_EXITED", "PROCESS_STATE_STOPPED", "PROCESS_STATE_BACKOFF"})
MAX_LINE = 64 * 1024  # a longer unfinished line is printed in pieces (output with no newline)
OUTBOX_BYTES = 1024 * 1024  # what may wait for a slow stdout before lines are dropped
PIPE_BUF = 4096  # a write up to this size to a pipe is never interleaved with another's
UNDECODABLE = "Undecodable: "  # supervisord's stand-in for a chunk that is not UTF-8
CLOSE_S = 2.0  # at a stop, how long the waiting lines may take to reach stdout


@dataclass(frozen=True)
class Event:
    """One event: its name, the tokens of its payload's first line, and (PROCESS_LOG_*) the
    program's output that followed it."""

    name: str
    tokens: dict[str, str]
    data: bytes = b""


def parse_tokens(line: str) -> dict[str, str]:
    """`ver:3.0 eventname:X len:12` → {"ver": "3.0", "eventname": "X", "len": "12"}."""
    pairs = (token.partition(":") for token in line.split())
    return {key: value for key, _, value in pairs}


def protocol_input(binary: BinaryIO) -> TextIO:
    """supervisord's side of the protocol as text: UTF-8, and no newline translation, since
    `len` counts "\\r\\n" as two characters."""
    return io.TextIOWrapper(binary, encoding="utf-8", errors="replace", newline="")


def read_event(stream: TextIO) -> Event | None:
    """The next event on `stream`, or None once supervisord has closed it."""
    header = stream.readline()
    if not header:
        return None
    envelope = parse_tokens(header)
    length = int(envelope["len"])
    payload = stream.read(length)
    if len(payload) < length:
        return None
    name = envelope.get("eventname", "")
    first, _, rest = payload.partition("\n")
    return Event(
        name, parse_tokens(first), output_bytes(rest) if name.startswith(LOG_EVENT) else b""
    )


def output_bytes(text: str) -> bytes:
    """A program's output as it wrote it: supervisord sends a chunk that is not UTF-8 (a
    character cut in two by a read) as `Undecodable: b'…'`."""
    if text.startswith(UNDECODABLE + "b"):
        try:
            value = ast.literal_eval(text[len(UNDECODABLE) :])
        except (ValueError, SyntaxError):
            value = None
        if isinstance(value, bytes):
            return value
    return text.encode("utf-8", "surrogateescape")


@dataclass
class _Partial:
    pid: str
    data: bytes


class Lines:
    """Output chunks to whole lines, per program and channel: an unfinished line waits for the
    rest of it, for as long as the same process runs and the line stays under `max_line`."""

    def __init__(self, max_line: int = MAX_LINE) -> None:
        self._max_line = max_line
        self._partial: dict[tuple[str, str], _Partial] = {}

    def feed(self, program: str, channel: str, pid: str, data: bytes) -> list[bytes]:
        key = (program, channel)
        held = self._partial.get(key)
        done: list[bytes] = []
        if held is not None and held.pid != pid:  # a new process: the old one's line is over
            done.append(held.data)
            held = None
        data = (held.data if held else b"") + data
        *lines, rest = data.split(b"\n")
        done.extend(lines)
        while len(rest) > self._max_line:
            done.append(rest[: self._max_line])
            rest = rest[self._max_line :]
        if rest:
            self._partial[key] = _Partial(pid, rest)
        else:
            self._partial.pop(key, None)
        return [line.removesuffix(b"\r") for line in done]

    def end(self, program: str) -> list[bytes]:
        """The unfinished lines of a program that stopped, as they are."""
        keys = [key for key in self._partial if key[0] == program]
        return [self._partial.pop(key).data for key in keys]

    def programs(self) -> list[str]:
        return sorted({program for program, _ in self._partial})


def prefixed(program: str, lines: list[bytes]) -> bytes:
    """`api-1      | text`, one line each: a traceback stays a block of lines under one name."""
    head = program.encode().ljust(NAME_WIDTH) + SEPARATOR
    return b"".join(head + line + b"\n" for line in lines)


def relayed(event: Event, lines: Lines) -> bytes:
    """What an event adds to stdout."""
    program = event.tokens.get("processname", "")
    if event.name.startswith(LOG_EVENT):
        found = lines.feed(
            program, event.tokens.get("channel", ""), event.tokens.get("pid", ""), event.data
        )
    elif event.name in ENDED:
        found = lines.end(program)
    else:
        found = []
    return prefixed(program, found) if found else b""


def pieces(data: bytes, size: int = PIPE_BUF) -> Iterator[bytes]:
    """`data` in writes of whole lines up to `size` bytes (a longer line is a write of its own),
    so that supervisord's own lines on the same pipe never land inside one of ours."""
    start = 0
    while start < len(data):
        end = len(data) if len(data) - start <= size else data.rfind(b"\n", start, start + size) + 1
        if end <= start:  # one line longer than `size`
            end = data.find(b"\n", start) + 1 or len(data)
        yield data[start:end]
        start = end


class Outbox:
    """Bytes for stdout, written by a thread of its own; `put` never waits. Past `limit` bytes
    waiting, new lines are dropped, and a line says how many once stdout takes lines again."""

    def __init__(self, fd: int | None, limit: int = OUTBOX_BYTES) -> None:
        self._fd = fd
        self._limit = limit
        self._chunks: deque[bytes] = deque()
        self._size = 0
        self._dropped = 0
        self._closed = False
        self._ready = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="stdout", daemon=True)

    def start(self) -> Outbox:
        self._thread.start()
        return self

    def put(self, data: bytes) -> None:
        if not data or self._fd is None:
            return
        with self._ready:
            if self._size + len(data) > self._limit:
                self._dropped += data.count(b"\n")
                return
            self._chunks.append(data)
            self._size += len(data)
            self._ready.notify()

    def close(self, timeout: float = CLOSE_S) -> None:
        """Write what waits (for up to `timeout` seconds), then stop."""
        with self._ready:
            self._closed = True
            self._ready.notify()
        if self._thread.ident is not None:
            self._thread.join(timeout)

    def _take(self) -> bytes | None:
        with self._ready:
            while not self._chunks and not self._closed:
                self._ready.wait()
            if not self._chunks:
                return None
            data = b"".join(self._chunks)
            self._chunks.clear()
            self._size = 0
            dropped, self._dropped = self._dropped, 0
        if dropped:  # dropped after what waited, before what comes next
            data += prefixed(NAME, [b"%d lines dropped: stdout did not keep up" % dropped])
        return data

    def _run(self) -> None:
        while (data := self._take()) is not None:
            try:
                for piece in pieces(data):
                    self._write(piece)
            except OSError as exc:  # the reader is gone (a closed terminal): keep on, print nothing
                log.warning("stdout takes no more lines (%s): they stay in the program logs", exc)
                with self._ready:
                    self._fd = None
                    self._chunks.clear()
                    self._size = 0
                return

    def _write(self, piece: bytes) -> None:
        assert self._fd is not None
        view = memoryview(piece)
        while view:
            view = view[os.write(self._fd, view) :]


def open_stdout(path: str) -> int | None:
    """supervisord's stdout, for appending (a file shared with supervisord's own lines), or None
    when this user may not open it (docker/entrypoint.sh hands Docker's pipe to BRAID_RUN_AS)."""
    try:
        return os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
    except OSError as exc:
        log.warning("cannot open %s (%s): program output stays in the program logs", path, exc)
        return None


def serve(events: TextIO, replies: BinaryIO, outbox: Outbox, lines: Lines) -> None:
    """Answer supervisord's events until it closes our stdin."""
    replies.write(b"READY\n")
    replies.flush()
    while (event := read_event(events)) is not None:
        outbox.put(relayed(event, lines))
        replies.write(b"RESULT 2\nOKREADY\n")
        replies.flush()


def _stop(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(0)


def main() -> None:
    logging.basicConfig(stream=sys.stderr, format="%(asctime)s %(levelname)s %(message)s")
    signal.signal(signal.SIGTERM, _stop)
    target = sys.argv[1] if len(sys.argv) > 1 else f"/proc/{os.getppid()}/fd/1"
    lines = Lines()
    outbox = Outbox(open_stdout(target)).start()
    try:
        serve(protocol_input(sys.stdin.buffer), sys.stdout.buffer, outbox, lines)
    finally:
        for program in lines.programs():
            outbox.put(prefixed(program, lines.end(program)))
        outbox.close()


if __name__ == "__main__":
    main()
