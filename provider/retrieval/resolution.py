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

from .evidence import (
    RESOLUTION_CALL,
    RESOLUTION_MESSAGE,
    USER_LABEL,
    Candidate,
    PendingResolution,
    candidate,
    command_text,
    pending_resolution,
    searched_cells,
    shape_of,
)
from .hits import RawHit
from .terms import PreparedTerms, admits, has_supply_cue, match_variants
from .timeline import mark_regressions, mark_superseded

#: Messages kept per session after its failures: the agent's account of the cause or fix, and the user's messages
#: that supply what was missing (beside the user's first reply, kept whatever its words).
MESSAGES_PER_SESSION = 3
USER_MESSAGES_PER_SESSION = 2


def candidates_of(hits: Sequence[RawHit], *, terms: PreparedTerms, roots: Sequence[str],
                  window: int) -> list[Candidate]:
    """The candidates of a run's rows, each composed by its template's shape (``evidence.SHAPES``): what happened
    after a failure is kept only when it follows one of its session (and composed only then); under a trigram
    post-filter only the candidates that name a term are kept. ``roots``: each bound root's spellings."""
    variants = match_variants(terms.instr_terms, roots)
    made: list[Candidate] = []
    pending: list[PendingResolution] = []
    for hit in hits:
        if shape_of(hit.template).kind:
            found = pending_resolution(hit, terms=variants, roots=roots, window=window)
            if found is not None:
                pending.append(found)
        elif _admitted(hit, terms, roots, window):
            composed = candidate(hit, terms=variants, roots=roots, window=window)
            if composed is not None:
                made.append(composed)
    linked = link_resolutions(made, pending)
    kept = [c for c in linked if c.score > 0] if terms.post_filter_terms else linked
    return mark_regressions(mark_superseded(kept, terms, roots))


def _admitted(hit: RawHit, terms: PreparedTerms, roots: Sequence[str], window: int) -> bool:
    """Whether the row holds a term, a form of one, a command equivalent to one or its tool's name
    (``terms.admits``): SQL finds rows by substrings, so a form's row may hold it only inside another word (``test``
    in ``latest``), or only inside a path that a read or a search names (a form counts in a path only for the
    history of that file)."""
    texts, cut = searched_cells(hit.row, window)
    row = hit.row
    tool = None if row.get("call_name") is None else str(row["call_name"])
    command = command_text(row.get("call_name"), row.get("call_input")) if tool is not None else None
    return admits(terms, texts, cut=cut, command=command, tool=tool, roots=roots,
                  edited_file=hit.evidence_type == "file_history")


def _is_failure(c: Candidate) -> bool:
    return c.evidence_type == "prior_failure" and c.kind not in (RESOLUTION_MESSAGE, RESOLUTION_CALL)


def _cued(res: Candidate | PendingResolution) -> bool:
    """Whether a resolution message states a cause or fix (a cue in its head: its score is not 0)."""
    return res.cued if isinstance(res, PendingResolution) else res.score != 0


def _user(res: Candidate | PendingResolution) -> tuple[bool, bool]:
    """Whether a resolution message is the user's, and whether it supplies what was missing."""
    if isinstance(res, PendingResolution):
        return res.user, res.supplies
    user = res.kind == RESOLUTION_MESSAGE and USER_LABEL in res.text
    return user, user and has_supply_cue(res.text)


def _edited(res: Candidate | PendingResolution) -> tuple[str, ...]:
    return res.edited if isinstance(res, PendingResolution) else ()


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
    # The later successful runs of each session's commands: an edit before one of them fixed that command.
    reruns = [(r.session_ref, r.command, r.observed_at or "") for r in resolutions
              if r.kind == RESOLUTION_CALL and r.command and not _edited(r)]
    for res in resolutions:
        anchor = _anchor(res, failures.get(res.session_ref, ()), reruns)
        slot, limit = _slot(res, anchor)
        if anchor is None or taken[slot] >= limit:
            continue
        composed = res.compose() if isinstance(res, PendingResolution) else res
        if composed is None:  # pragma: no cover - pending_resolution already left out what composes to None
            continue
        taken[slot] += 1
        out.append(composed._replace(follows=anchor.message_ref, score=anchor.score, priority=anchor.priority))
    return out


def _anchor(res: Candidate | PendingResolution, failures: Sequence[Candidate],
            reruns: Sequence[tuple[str, str | None, str]] = ()) -> Candidate | None:
    """The latest failure of the session before ``res`` that it can resolve: any, for a message; for an edit, one
    that names a file it changes or whose command passes after it (``reruns``); for another call, one of the same
    command."""
    when = res.observed_at or ""
    before = [f for f in failures if (f.observed_at or "") < when]
    edited = _edited(res)
    if res.kind == RESOLUTION_MESSAGE:
        fits = before
    elif edited:
        fits = [f for f in before if set(edited) & f.names or any(
            session == res.session_ref and command == f.command and rerun > when for session, command, rerun in reruns)]
    else:
        fits = [f for f in before if f.command is not None and f.command == res.command]
    return max(fits, key=lambda f: (f.observed_at or "", f.message_ref or "")) if fits else None


def _slot(res: Candidate | PendingResolution, anchor: Candidate | None = None) -> tuple[tuple[str, str], int]:
    """What a kept resolution counts against, and how many that slot holds: the user's first message after a
    failure whatever its words, and two that supply what was missing; the agent's messages stating a cause or
    fix, a few per session; per failure the first edit that fixes it; per command the first call that passes."""
    user, supplies = _user(res)
    if res.kind == RESOLUTION_MESSAGE and user and (supplies or _cued(res)):
        return (res.session_ref, "user supplies"), USER_MESSAGES_PER_SESSION
    if res.kind == RESOLUTION_MESSAGE and not _cued(res):
        return (res.session_ref, "user"), 1
    if res.kind == RESOLUTION_MESSAGE:
        return (res.session_ref, res.kind), MESSAGES_PER_SESSION
    if _edited(res):
        return (res.session_ref, f"edit:{anchor.message_ref if anchor else ''}"), 1
    return (res.session_ref, f"{res.kind}:{res.command}"), 1


def place_after_failures(ordered: Sequence[Candidate]) -> list[Candidate]:
    """Move each resolution right after the failure it follows (or the first failure item of its session when
    that failure was folded into another item); the rest keeps its order."""
    placed = [c for c in ordered if c.follows is None]
    followers = sorted((c for c in ordered if c.follows is not None),
                       key=lambda c: (c.observed_at or "", c.message_ref or ""))
    for res in followers:  # in time order, so a session's story reads forward
        anchor = _anchor_index(placed, res)
        if anchor is None:
            placed.append(res)
            continue
        end = anchor + 1
        while end < len(placed) and placed[end].follows is not None and placed[end].session_ref == res.session_ref:
            end += 1
        placed.insert(end, res)
    return placed


def _anchor_index(placed: Sequence[Candidate], res: Candidate) -> int | None:
    """Where the failure ``res`` follows stands, else the first failure item of its session."""
    found = next((i for i, c in enumerate(placed) if c.message_ref == res.follows), None)
    if found is None:
        found = next((i for i, c in enumerate(placed) if c.session_ref == res.session_ref and _is_failure(c)), None)
    return found
