"""Issue 36: the anchoring rules of ``retrieval.resolution.place_after_failures``.

After folding, what happened next (a resolution: ``follows`` names the failure's message ref) is moved right
after its failure. The rules, as the module states them:

* a resolution goes right after the item whose message ref it follows;
* when that failure was folded into another item, right after the first failure item of its session (a
  failure: a ``prior_failure`` item that is not itself a resolution);
* with neither, it goes last (never dropped, never a crash);
* resolutions are placed in time order, each after the resolutions of its session already placed there, so a
  session's story reads forward; a resolution of another session there does not push it back;
* every other item keeps its order.
"""

from __future__ import annotations

import pytest
from obelisk_session_evidence.retrieval.evidence import Candidate
from obelisk_session_evidence.retrieval.resolution import (
    RESOLUTION_CALL,
    RESOLUTION_MESSAGE,
    place_after_failures,
)


def item(ref: str, session: str, at: str, *, kind: str = "", follows: str | None = None,
         evidence_type: str = "prior_failure") -> Candidate:
    return Candidate(evidence_type=evidence_type, session_ref=session, message_ref=ref,  # type: ignore[arg-type]
                     observed_at=at, revision_ref=None, text=ref, score=1.0, sidechain=False,
                     fold_key=ref, kind=kind, follows=follows)


def fix(ref: str, session: str, at: str, follows: str, kind: str = RESOLUTION_MESSAGE) -> Candidate:
    return item(ref, session, at, kind=kind, follows=follows)


def refs(placed: list[Candidate]) -> list[str | None]:
    return [c.message_ref for c in placed]


def test_a_resolution_goes_right_after_the_failure_it_follows() -> None:
    ordered = [item("fail-a", "s1", "t1"), item("fail-b", "s2", "t2"),
               item("dec", "s1", "t3", evidence_type="decision"), fix("next-a", "s1", "t4", "fail-a")]
    assert refs(place_after_failures(ordered)) == ["fail-a", "next-a", "fail-b", "dec"]


def test_a_resolution_follows_its_failure_wherever_that_failure_stands() -> None:
    ordered = [item("dec", "s1", "t0", evidence_type="decision"), item("fail-b", "s2", "t2"),
               item("fail-a", "s1", "t1"), fix("next-b", "s2", "t5", "fail-b", RESOLUTION_CALL),
               item("tool", "s1", "t6", evidence_type="tool_outcome")]
    assert refs(place_after_failures(ordered)) == ["dec", "fail-b", "next-b", "fail-a", "tool"]


def test_a_resolution_of_a_folded_failure_goes_after_its_sessions_first_failure() -> None:
    """Its failure (``folded``) is no item of its own: the first failure item of the same session anchors it, not
    an earlier item of the session that is no failure, not a failure of another session, not a resolution."""
    ordered = [item("out-s1", "s1", "t0", evidence_type="tool_outcome"),
               item("fail-s2", "s2", "t1"),
               item("dec-s1", "s1", "t2", evidence_type="decision"),
               item("first-s1", "s1", "t3"),
               item("second-s1", "s1", "t4"),
               fix("next-s1", "s1", "t5", "folded")]
    assert refs(place_after_failures(ordered)) == ["out-s1", "fail-s2", "dec-s1", "first-s1", "next-s1",
                                                   "second-s1"]


def test_a_resolution_is_no_anchor_for_a_folded_failure() -> None:
    """A resolution is a ``prior_failure`` item too, but no failure: with no failure of its session among the
    items, a resolution of a folded failure goes last, not after a resolution of its session placed earlier."""
    ordered = [item("x", "s2", "t0", evidence_type="decision"), item("y", "s2", "t1", evidence_type="decision"),
               fix("r1", "s1", "t2", "x"), fix("r2", "s1", "t3", "folded")]
    assert refs(place_after_failures(ordered)) == ["x", "r1", "y", "r2"]


@pytest.mark.parametrize("others", [[], [item("dec", "s1", "t0", evidence_type="decision"),
                                          item("fail-s2", "s2", "t1")]])
def test_a_resolution_with_no_anchor_goes_last(others: list[Candidate]) -> None:
    """No item with its failure's ref and no failure of its session: kept, at the end, in time order."""
    ordered = [*others, fix("late", "s1", "t9", "gone"), fix("early", "s1", "t8", "gone")]
    assert refs(place_after_failures(ordered)) == [*refs(others), "early", "late"]


def test_resolutions_of_one_failure_read_forward_in_time() -> None:
    """Given late first, they are placed in time order: each after those of its session already placed."""
    ordered = [item("fail", "s1", "t1"), item("other", "s2", "t2"),
               fix("third", "s1", "t5", "fail"), fix("first", "s1", "t3", "fail", RESOLUTION_CALL),
               fix("second", "s1", "t4", "fail")]
    assert refs(place_after_failures(ordered)) == ["fail", "first", "second", "third", "other"]


def test_resolutions_after_the_last_item_read_forward_too() -> None:
    ordered = [item("fail", "s1", "t1"), fix("second", "s1", "t3", "fail"), fix("first", "s1", "t2", "fail")]
    assert refs(place_after_failures(ordered)) == ["fail", "first", "second"]


def test_the_same_time_is_ordered_by_message_ref() -> None:
    ordered = [item("fail", "s1", "t1"), fix("m-b", "s1", "t2", "fail"), fix("m-a", "s1", "t2", "fail")]
    assert refs(place_after_failures(ordered)) == ["fail", "m-a", "m-b"]


def test_another_sessions_resolution_does_not_push_a_sessions_story_back() -> None:
    """Two sessions' resolutions anchored on the same item (a message ref both name): each session's are kept
    together right after it, the later session's first; the earlier-placed other session's come after."""
    ordered = [item("shared", "s1", "t1"), item("tail", "s3", "t9", evidence_type="decision"),
               fix("s2-next", "s2", "t2", "shared"), fix("s1-next", "s1", "t3", "shared")]
    assert refs(place_after_failures(ordered)) == ["shared", "s1-next", "s2-next", "tail"]


def test_every_other_item_keeps_its_order_and_nothing_is_lost() -> None:
    ordered = [item(f"i{n}", f"s{n % 3}", f"t{n}", evidence_type=("decision", "prior_failure", "summary")[n % 3])
               for n in range(9)]
    followers = [fix("r1", "s1", "t10", "i4"), fix("r2", "s2", "t11", "gone"), fix("r0", "s1", "t12", "i7")]
    placed = place_after_failures([*ordered, *followers])
    assert sorted(refs(placed), key=str) == sorted(refs([*ordered, *followers]), key=str)
    assert [c for c in placed if c.follows is None] == ordered
    assert refs(placed) == ["i0", "i1", "i2", "i3", "i4", "r1", "i5", "i6", "i7", "r0", "i8", "r2"]
