"""DocIds: the point id of a document is point_id's, and a point id maps back to the document id
it was computed or learnt from, within a bounded memory."""

from __future__ import annotations

import uuid

from store.ids import DocIds, point_id


def test_a_computed_point_id_is_point_ids_and_maps_back() -> None:
    ids = DocIds()
    point = ids.point("doc:1")
    assert str(point) == point_id("doc:1")
    assert ids.point("doc:1") == point  # remembered
    assert ids.doc_of(uuid.UUID(point_id("doc:1")).int) == "doc:1"  # a new UUID, as the engine's


def test_a_learnt_point_maps_back_whatever_form_its_id_came_in() -> None:
    ids = DocIds()
    ids.learn(point_id("é"), "é")  # as a string
    assert ids.doc_of(uuid.UUID(point_id("é")).int) == "é"
    assert ids.doc_of(uuid.UUID(point_id("other")).int) is None


def test_past_its_limit_it_starts_over_and_learns_again() -> None:
    ids = DocIds(limit=2)
    first = ids.point("a")
    ids.point("b")
    ids.point("c")  # the third entry starts over
    assert ids.doc_of(first.int) is None
    assert ids.doc_of(ids.point("a").int) == "a"
    assert len(ids) == 2
