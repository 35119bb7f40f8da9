import io
from pathlib import Path

import pytest

from loader.load import FINE_POLL_S, POLL_S, LoadError, State, _Acks, next_poll, prefix_digest
from loader.progress import Progress


def stats(queued: int = 0, requeued: int = 0, failed: int = 0) -> dict[str, object]:
    return {
        "doc_count": 0,
        "queue": {"queued_upsert": queued, "requeued_upsert": requeued, "failed_upsert": failed},
    }


def test_indexed_is_what_was_sent_less_what_waits_beyond_the_queue_before_the_load() -> None:
    progress = Progress(total=1000, out=io.StringIO())
    progress.begin(stats(queued=40, failed=3))  # another client's writes, an old failure
    progress.sent = 300
    snapshot = progress.sample(stats(queued=140, requeued=10, failed=5), now=0.0)
    assert (snapshot.indexed, snapshot.failed) == (300 - 110 - 2, 2)


def test_rate_and_eta_come_from_the_recent_samples() -> None:
    progress = Progress(total=1000, out=io.StringIO())
    progress.begin(stats())
    progress.sent = 1000
    progress.sample(stats(queued=1000), now=0.0)
    progress.sample(stats(queued=900), now=10.0)
    snapshot = progress.sample(stats(queued=800), now=20.0)
    assert snapshot.docs_s == pytest.approx(10.0)
    assert snapshot.eta_s == pytest.approx(80.0)
    assert "200/1,000 indexed" in snapshot.line() and "ETA 1m20s" in snapshot.line()


def test_a_pipe_gets_a_line_every_few_seconds_and_the_last_one() -> None:
    out = io.StringIO()
    progress = Progress(total=10, out=out)
    progress.begin(stats())
    progress.sent = 10
    for second in range(5):
        progress.sample(stats(queued=10 - second), now=float(second))
    progress.sample(stats(), now=5.0)
    assert len(out.getvalue().splitlines()) == 2  # the first, then the finished one


def test_done_moves_only_over_batches_acknowledged_without_a_gap() -> None:
    acks = _Acks(0, "d0")
    assert not acks.ack(100, 100, "d200")
    assert (acks.done, acks.digest) == (0, "d0")
    assert acks.ack(0, 100, "d100")
    assert (acks.done, acks.digest) == (200, "d200")


def test_a_state_resumes_only_while_the_acknowledged_lines_are_unchanged(tmp_path: Path) -> None:
    data, state_file = tmp_path / "docs.jsonl", tmp_path / "docs.jsonl.progress"
    data.write_text('{"id": "a"}\n\n{"id": "b"}\n{"id": "c"}\n')
    State(str(data.resolve()), 2, prefix_digest(data, 2), "t").write(state_file)
    data.write_text('{"id": "a"}\n{"id": "b"}\n{"id": "c", "name": "fixed"}\n{"id": "d"}\n')
    assert State.read(state_file, data).done == 2  # a later line fixed, one appended
    data.write_text('{"id": "A"}\n{"id": "b"}\n')
    with pytest.raises(LoadError, match="changed"):
        State.read(state_file, data)


def test_the_wait_for_the_last_documents_polls_as_soon_as_the_rate_says_they_are_done() -> None:
    progress = Progress(total=1000, out=io.StringIO())
    progress.begin(stats())
    progress.sent = 1000
    assert next_poll(progress.sample(stats(queued=1000), now=0.0)) == POLL_S  # no rate yet
    assert next_poll(progress.sample(stats(queued=950), now=1.0)) == POLL_S  # 19 s left
    assert next_poll(progress.sample(stats(queued=700), now=2.0)) == pytest.approx(0.4667, 1e-3)
    assert next_poll(progress.sample(stats(queued=10), now=3.0)) == FINE_POLL_S
