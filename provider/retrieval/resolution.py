"""Link a failure to what happened next in its session, so the answer shows the resolution right after it.

The ``prior_failure.resolution_*`` templates read, for the sessions where failures were found, the later
messages that state a cause or fix or supply what was missing, and the later successful tool calls. Here each
is kept only when it follows a failure of the same session: a message after the failure that states a cause or
fix (the first three per session), the first user message after it whatever its words (it often supplies what
was missing), and a call that runs the failed command again and succeeds (the first one per command). Each kept
item is tied to the failure it follows (``follows``) and takes that failure's score, so that folding places it
right after the failure.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from .evidence import Candidate, PendingResolution

RESOLUTION_MESSAGE = "resolution_message"
RESOLUTION_CALL = "resolution_call"
#: Messages kept per session after its failures (the user supplying what was missing, the agent's account).
MESSAGES_PER_SESSION = 3


def _is_failure(c: Candidate) -> bool:
    return c.evidence_type == "prior_failure" and c.kind not in (RESOLUTION_MESSAGE, RESOLUTION_CALL)


def _cued(res: Candidate | PendingResolution) -> bool:
    """Whether a resolution message states a cause or fix (a cue in its head: its score is not 0)."""
    return res.cued if isinstance(res, PendingResolution) else res.score != 0


def link_resolutions(candidates: Sequence[Candidate],
                     pending: Sequence[PendingResolution] = ()) -> list[Candidate]:
    """``candidates`` with each resolution kept only when it follows a failure of its session. A ``pending``
    resolution is decided by the same facts and composed only when kept (after the given candidates'
    resolutions at the same time and message ref, as if it had been given after them)."""
    failures: dict[str, list[Candidate]] = {}
    for cand in candidates:
        if _is_failure(cand) and cand.observed_at:
            failures.setdefault(cand.session_ref, []).append(cand)
    out = [c for c in candidates if c.kind not in (RESOLUTION_MESSAGE, RESOLUTION_CALL)]
    taken: Counter[tuple[str, str]] = Counter()
    given: list[Candidate | PendingResolution] = [c for c in candidates
                                                   if c.kind in (RESOLUTION_MESSAGE, RESOLUTION_CALL)]
    resolutions = sorted([*given, *pending], key=lambda c: (c.observed_at or "", c.message_ref or ""))
    for res in resolutions:
        before = [f for f in failures.get(res.session_ref, ())
                  if (f.observed_at or "") < (res.observed_at or "")
                  and (res.kind == RESOLUTION_MESSAGE or (f.command is not None and f.command == res.command))]
        if not before:
            continue
        anchor = max(before, key=lambda f: (f.observed_at or "", f.message_ref or ""))
        if res.kind == RESOLUTION_MESSAGE and not _cued(res):
            slot = (res.session_ref, "user")  # a user message without a cue: only the first after a failure
            limit = 1
        else:
            slot = (res.session_ref, res.kind if res.kind == RESOLUTION_MESSAGE else f"{res.kind}:{res.command}")
            limit = MESSAGES_PER_SESSION if res.kind == RESOLUTION_MESSAGE else 1
        if taken[slot] >= limit:
            continue
        composed = res.compose() if isinstance(res, PendingResolution) else res
        if composed is None:  # pragma: no cover - pending_resolution already left out what composes to None
            continue
        taken[slot] += 1
        out.append(composed._replace(follows=anchor.message_ref, score=anchor.score, priority=anchor.priority))
    return out


def place_after_failures(ordered: Sequence[Candidate]) -> list[Candidate]:
    """Move each resolution right after the failure it follows (or the first failure item of its session when
    that failure was folded into another item); the rest keeps its order."""
    rest = [c for c in ordered if c.follows is None]
    placed = list(rest)
    followers = sorted((c for c in ordered if c.follows is not None),
                       key=lambda c: (c.observed_at or "", c.message_ref or ""))
    for res in followers:  # in time order, so a session's story reads forward
        anchor = next((i for i, c in enumerate(placed) if c.message_ref == res.follows), None)
        if anchor is None:
            anchor = next((i for i, c in enumerate(placed) if c.session_ref == res.session_ref and _is_failure(c)),
                          None)
        if anchor is None:
            placed.append(res)
            continue
        end = anchor + 1
        while end < len(placed) and placed[end].follows is not None and placed[end].session_ref == res.session_ref:
            end += 1
        placed.insert(end, res)
    return placed
