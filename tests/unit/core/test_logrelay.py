"""The `logs` event listener: supervisord's framing read back (built by supervisor's own code),
output chunks joined into whole lines, each line prefixed by its program, and a stdout that
never holds the listener up."""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from types import SimpleNamespace

import pytest
from supervisor import events
from supervisor.compat import as_bytes
from supervisor.process import EventListenerPool
from supervisor.states import ProcessStates

from core.logrelay import (
    Event,
    Lines,
    Outbox,
    open_stdout,
    output_bytes,
    pieces,
    prefixed,
    protocol_input,
    read_event,
    relayed,
    serve,
)

POOL = SimpleNamespace(config=SimpleNamespace(name="logs", options=SimpleNamespace(identifier="s")))


def program(name: str, pid: int = 41) -> SimpleNamespace:
    group = SimpleNamespace(config=SimpleNamespace(name=name.split("-")[0]))
    return SimpleNamespace(config=SimpleNamespace(name=name), group=group, pid=pid)


def framed(*sent: events.Event) -> bytes:
    """The bytes supervisord writes to a listener's stdin for these events, by its own code."""
    return b"".join(
        as_bytes(EventListenerPool._eventEnvelope(POOL, type(e), n, n, e.payload()))
        for n, e in enumerate(sent, 1)
    )


def output(name: str, data: bytes, pid: int = 41) -> events.Event:
    return events.ProcessLogStdoutEvent(program(name, pid), pid, data)


def read_all(data: bytes) -> list[Event]:
    stream = protocol_input(io.BytesIO(data))
    found = []
    while (event := read_event(stream)) is not None:
        found.append(event)
    return found


def test_events_are_read_as_supervisord_frames_them_len_counting_characters() -> None:
    exited = events.ProcessStateExitedEvent(program("worker"), ProcessStates.RUNNING)
    data = framed(
        output("api-1", "café ready\r\nnext\n".encode()),  # len counts characters, "\r\n" as 2
        exited,
        output("encoder-2", b"\xe2\x9c\x93 done\n", pid=7),
    )
    assert read_all(data) == [
        Event(
            "PROCESS_LOG_STDOUT",
            {"processname": "api-1", "groupname": "api", "pid": "41", "channel": "stdout"},
            "café ready\r\nnext\n".encode(),
        ),
        Event(
            "PROCESS_STATE_EXITED",
            {
                "processname": "worker",
                "groupname": "worker",
                "from_state": "RUNNING",
                "expected": "1",
                "pid": "41",
            },
        ),
        Event(
            "PROCESS_LOG_STDOUT",
            {"processname": "encoder-2", "groupname": "encoder", "pid": "7", "channel": "stdout"},
            b"\xe2\x9c\x93 done\n",
        ),
    ]


def test_a_stream_cut_inside_an_event_is_its_end() -> None:
    whole = framed(output("api-1", b"one\n"), output("api-1", b"two\n"))
    assert [e.data for e in read_all(whole[:-2])] == [b"one\n"]
    assert read_all(b"") == []


def test_a_chunk_supervisord_could_not_decode_comes_back_as_its_bytes() -> None:
    # A read of the pipe cut "é" in two: supervisord sends each half as `Undecodable: b'…'`.
    (first, second) = read_all(framed(output("api-1", b"caf\xc3"), output("api-1", b"\xa9\n")))
    assert (first.data, second.data) == (b"caf\xc3", b"\xa9\n")
    lines = Lines()
    assert lines.feed("api-1", "stdout", "41", first.data) == []
    assert lines.feed("api-1", "stdout", "41", second.data) == ["café".encode()]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("plain\n", b"plain\n"),
        ("Undecodable: b'\\xff\\n'", b"\xff\n"),
        ("Undecodable: not bytes", b"Undecodable: not bytes"),  # a program's own line
        ("Undecodable: b'x' and more", b"Undecodable: b'x' and more"),
    ],
)
def test_output_bytes(text: str, expected: bytes) -> None:
    assert output_bytes(text) == expected


def test_lines_wait_for_their_end_across_chunks_per_program_and_channel() -> None:
    lines = Lines()
    assert lines.feed("api-1", "stdout", "1", b"INFO start") == []
    assert lines.feed("api-2", "stdout", "2", b"other\nhalf") == [b"other"]
    assert lines.feed("api-1", "stderr", "1", b"err\n") == [b"err"]
    assert lines.feed("api-1", "stdout", "1", b"ed\r\nnext\n") == [b"INFO started", b"next"]
    assert lines.feed("api-1", "stdout", "1", b"\n\n") == [b"", b""]
    assert lines.programs() == ["api-2"]
    assert lines.end("api-2") == [b"half"]
    assert lines.end("api-2") == []


def test_a_new_process_ends_the_line_its_predecessor_left_unfinished() -> None:
    lines = Lines()
    assert lines.feed("worker", "stdout", "10", b"Fatal Python error") == []
    assert lines.feed("worker", "stdout", "11", b"booting\n") == [b"Fatal Python error", b"booting"]


def test_a_line_with_no_end_is_printed_in_pieces() -> None:
    lines = Lines(max_line=4)
    assert lines.feed("redis", "stdout", "1", b"abcdefghij") == [b"abcd", b"efgh"]
    assert lines.end("redis") == [b"ij"]


def test_each_line_is_prefixed_by_its_program_so_a_traceback_stays_one_block() -> None:
    traceback = [b"Traceback (most recent call last):", b'  File "x.py", line 1', b"Error: no"]
    assert prefixed("api-1", traceback) == (
        b"api-1      | Traceback (most recent call last):\n"
        b'api-1      |   File "x.py", line 1\n'
        b"api-1      | Error: no\n"
    )
    assert prefixed("encoder-12", [b"x"]) == b"encoder-12 | x\n"


def test_relayed_prints_log_lines_and_what_a_stopped_program_left() -> None:
    lines = Lines()
    log = {"processname": "worker", "channel": "stdout", "pid": "5"}
    assert relayed(Event("PROCESS_LOG_STDOUT", log, b"a\nb"), lines) == b"worker     | a\n"
    assert relayed(Event("PROCESS_STATE_STARTING", {"processname": "worker"}), lines) == b""
    stopped = Event("PROCESS_STATE_STOPPED", {"processname": "worker"})
    assert relayed(stopped, lines) == b"worker     | b\n"
    assert relayed(stopped, lines) == b""


def test_pieces_are_whole_lines_up_to_a_pipes_atomic_write() -> None:
    data = b"aaaa\nbb\ncccccccccc\ndd\ne"
    assert list(pieces(data, size=8)) == [b"aaaa\nbb\n", b"cccccccccc\n", b"dd\ne"]
    assert b"".join(pieces(data * 100, size=64)) == data * 100
    assert list(pieces(b"")) == []


@pytest.fixture
def pipe() -> Iterator[tuple[int, int]]:
    read, write = os.pipe()
    yield read, write
    for fd in (read, write):
        try:
            os.close(fd)
        except OSError:
            pass


def drain(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
    return b"".join(chunks)


def test_serve_answers_each_event_and_prints_its_lines(pipe: tuple[int, int]) -> None:
    read, write = pipe
    replies = io.BytesIO()
    outbox = Outbox(write).start()
    sent = framed(output("api-1", b"Uvicorn running\nhal"), output("api-1", b"f\n"))
    serve(protocol_input(io.BytesIO(sent)), replies, outbox, Lines())
    outbox.close()
    os.close(write)
    assert replies.getvalue() == b"READY\n" + b"RESULT 2\nOKREADY\n" * 2
    assert drain(read) == b"api-1      | Uvicorn running\napi-1      | half\n"


def test_a_full_outbox_drops_new_lines_and_says_how_many(pipe: tuple[int, int]) -> None:
    read, write = pipe
    outbox = Outbox(write, limit=20)
    outbox.put(b"redis      | 1\n")  # 15 bytes wait (the writer has not started: stdout stalled)
    outbox.put(b"redis      | 2\nredis      | 3\n")  # would pass 20: dropped, never waits
    outbox.start().close()
    os.close(write)
    assert drain(read) == (
        b"redis      | 1\nlogs       | 2 lines dropped: stdout did not keep up\n"
    )


def test_no_stdout_means_lines_are_discarded() -> None:
    outbox = Outbox(None).start()
    outbox.put(b"x\n")
    outbox.close()
    assert open_stdout("/nonexistent/stdout") is None
