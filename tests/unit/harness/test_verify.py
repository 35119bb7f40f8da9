"""The load runner's nothing-lost check: the newest acknowledged write decides each document."""

from __future__ import annotations

from pathlib import Path

from harness.verify import Write, read_oplog, verify

OLD = "2026-01-01T00:00:00Z"
T1 = "2026-11-21T10:00:00.000001Z"
T2 = "2026-11-21T10:00:00.000002Z"


def upsert(doc: str, at: str, name: str, status: int = 200) -> Write:
    return Write("upsert", doc, at, name, status)


def delete(doc: str, at: str, status: int = 200) -> Write:
    return Write("delete", doc, at, "", status)


def test_untouched_prepopulated_documents_must_keep_their_names() -> None:
    assert verify({"1": "a", "2": "b"}, OLD, [], {"1": "a", "2": "b"}).ok
    verdict = verify({"1": "a", "2": "b"}, OLD, [], {"1": "a"})
    assert verdict.missing == ["2"]
    assert not verdict.ok


def test_the_newest_acknowledged_write_wins_whatever_order_it_was_logged_in() -> None:
    writes = [upsert("1", T2, "new"), upsert("1", T1, "older")]
    assert verify({"1": "a"}, OLD, writes, {"1": "new"}).ok
    assert verify({"1": "a"}, OLD, writes, {"1": "older"}).stale == ["1"]


def test_an_acknowledged_delete_means_gone_and_a_newer_upsert_brings_it_back() -> None:
    assert verify({"1": "a"}, OLD, [delete("1", T1)], {"1": "a"}).unexpected == ["1"]
    assert verify({"1": "a"}, OLD, [delete("1", T1)], {}).ok
    assert verify({"1": "a"}, OLD, [delete("1", T1), upsert("1", T2, "back")], {"1": "back"}).ok
    assert verify({}, OLD, [upsert("7", T1, "new")], {}).missing == ["7"]


def test_an_unacknowledged_newer_write_allows_both_outcomes_and_nothing_else() -> None:
    writes = [upsert("1", T1, "acked"), upsert("1", T2, "maybe", status=503)]
    for actual in ({"1": "acked"}, {"1": "maybe"}):
        verdict = verify({}, OLD, writes, actual)
        assert verdict.ok and verdict.undecided == 1 and verdict.unacknowledged == 1
    assert verify({}, OLD, writes, {}).missing == ["1"]
    # Older than the acknowledged winner: it cannot decide anything.
    older = [upsert("1", T2, "acked"), delete("1", T1, status=0)]
    assert verify({}, OLD, older, {}).missing == ["1"]


def test_documents_nobody_wrote_are_reported() -> None:
    assert verify({}, OLD, [], {"99": "ghost"}).unexpected == ["99"]


def test_the_oplog_pairs_starts_with_answers_and_a_write_without_answer_is_unacknowledged(
    tmp_path: Path,
) -> None:
    log = tmp_path / "oplog.txt"
    log.write_text(f"B 1 upsert 5 {T1} Name with spaces.\nB 2 delete 6 {T2} \nE 1 200\n")
    assert read_oplog(log) == [upsert("5", T1, "Name with spaces."), delete("6", T2, status=0)]
    assert read_oplog(tmp_path / "absent.txt") == []
