"""Issue 36: which resolutions ``retrieval.resolution.link_resolutions`` keeps, and to which failure it ties them.

The module's rules: after a failure of the same session, the messages stating a cause or fix (the first
``MESSAGES_PER_SESSION`` of the session, in time order), the first user message after it whatever its words,
and a call running the failed command again (one per command); each tied to the latest failure before it that
it can resolve. Any row shape (a missing time, a missing message ref, no command) is decided, never a crash.
"""

from __future__ import annotations

from obelisk_session_evidence.retrieval.evidence import Candidate
from obelisk_session_evidence.retrieval.resolution import (
    RESOLUTION_CALL,
    RESOLUTION_MESSAGE,
    link_resolutions,
)


def failure(ref: str | None, at: str | None, *, command: str | None = None, session: str = "s1") -> Candidate:
    return Candidate(evidence_type="prior_failure", session_ref=session, message_ref=ref, observed_at=at,
                     revision_ref=None, text=f"failed {ref}", score=2.0, sidechain=False, fold_key=str(ref),
                     command=command)


def later(ref: str, at: str | None, *, cued: bool = True, kind: str = RESOLUTION_MESSAGE,
          command: str | None = None, session: str = "s1") -> Candidate:
    return Candidate(evidence_type="prior_failure", session_ref=session, message_ref=ref, observed_at=at,
                     revision_ref=None, text=f"then {ref}", score=1.0 if cued else 0.0, sidechain=False,
                     fold_key=ref, command=command, kind=kind)


def kept(linked: list[Candidate]) -> list[tuple[str | None, str | None]]:
    return [(c.message_ref, c.follows) for c in linked if c.follows is not None]


def test_the_first_three_messages_stating_a_cause_or_fix_in_time_order() -> None:
    """Five messages stating a fix after one failure: the first three by time are kept (their message refs
    sort the other way round, so an order by ref alone keeps the wrong ones)."""
    fixes = [later(f"m{9 - n}", f"2026-01-01T00:0{n + 1}:00Z") for n in range(5)]
    linked = link_resolutions([failure("f", "2026-01-01T00:00:00Z"), *fixes])
    assert kept(linked) == [("m9", "f"), ("m8", "f"), ("m7", "f")]


def test_only_the_first_plain_user_message_after_a_failure() -> None:
    linked = link_resolutions([failure("f", "2026-01-01T00:00:00Z"),
                               later("u1", "2026-01-01T00:01:00Z", cued=False),
                               later("u2", "2026-01-01T00:02:00Z", cued=False)])
    assert kept(linked) == [("u1", "f")]


def test_a_resolution_without_a_time_is_left_out_without_a_crash() -> None:
    linked = link_resolutions([failure("f", "2026-01-01T00:00:00Z"), later("m1", None),
                               later("m2", "2026-01-01T00:01:00Z")])
    assert kept(linked) == [("m2", "f")]


def test_failures_at_one_time_without_a_message_ref_are_ordered_without_a_crash() -> None:
    """Two failures at the same moment, one without a message ref: the resolution ties to the one with it."""
    at = "2026-01-01T00:00:00Z"
    linked = link_resolutions([failure(None, at), failure("f", at), later("m1", "2026-01-01T00:01:00Z")])
    assert kept(linked) == [("m1", "f")]


def test_a_call_without_a_command_resolves_no_failure_without_one() -> None:
    """A call resolves a failure only by running the same command again: with no command on either side
    there is nothing run again, so nothing is tied."""
    linked = link_resolutions([failure("f", "2026-01-01T00:00:00Z"),
                               later("c1", "2026-01-01T00:01:00Z", kind=RESOLUTION_CALL)])
    assert kept(linked) == []
    linked = link_resolutions([failure("f", "2026-01-01T00:00:00Z", command="make test"),
                               later("c1", "2026-01-01T00:01:00Z", kind=RESOLUTION_CALL, command="make test")])
    assert kept(linked) == [("c1", "f")]
