"""The worker's marks as the search nodes on the host read them (store/replication/marks.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from store.replication.marks import Marked, Marks, pack, unpack


def test_a_node_reads_what_the_worker_marked_at_once(tmp_path: Path) -> None:
    path = tmp_path / "data" / "replication.marks"
    worker = Marks.open(path)
    node = Marks.read_only(path)
    assert node.read() == Marked(None, 0)  # a new file: no write a client was told about yet
    worker.mark_visible(3, 41)
    worker.bump_catalog()
    assert node.read() == Marked((3, 41), 1)
    worker.mark_visible(4, 0)
    assert node.read() == Marked((4, 0), 1)


def test_a_restarted_worker_writes_where_the_nodes_already_read(tmp_path: Path) -> None:
    path = tmp_path / "replication.marks"
    first = Marks.open(path)
    first.mark_visible(1, 7)
    first.bump_catalog()
    node = Marks.read_only(path)
    first.close()
    second = Marks.open(path)  # the same file, its words kept: the generation never goes back
    assert second.read() == Marked((1, 7), 1)
    second.bump_catalog()
    second.mark_visible(2, 0)
    assert node.read() == Marked((2, 0), 2)


def test_a_node_cannot_write_and_waits_for_the_worker_to_make_the_file(tmp_path: Path) -> None:
    path = tmp_path / "replication.marks"
    with pytest.raises(FileNotFoundError):
        Marks.read_only(path)
    Marks.open(path)
    with pytest.raises(PermissionError):
        Marks.read_only(path).bump_catalog()


@pytest.mark.parametrize(("epoch", "seq"), [(1, 0), (7, 123_456_789), (2**24 - 1, 2**40 - 1)])
def test_a_position_packs_into_one_word_and_back(epoch: int, seq: int) -> None:
    word = pack(epoch, seq)
    assert word < 2**64
    assert unpack(word) == (epoch, seq)


@pytest.mark.parametrize(("epoch", "seq"), [(0, 5), (2**24, 0), (1, 2**40), (1, -1)])
def test_a_position_that_does_not_fit_is_refused(epoch: int, seq: int) -> None:
    with pytest.raises(ValueError, match="does not fit"):
        pack(epoch, seq)
