"""Fold identical evidence repeated within one session; never fold across sessions.

The same failure repeated in several sessions is the most important fact to show, so every session keeps its
own item, labelled with how often the evidence happened in that session and in how many sessions of the
answer the same evidence occurs ("[repeated 2x in this session, in 3 sessions]"), counted by its signature
(``Candidate.signature``: paths, numbers, hashes and times taken out). The first item of a signature repeated in
several sessions also says when it happened first and last ("[repeated in 20 sessions, 2026-08-31 to
2026-09-19]"); ``bounding.bound`` gives every signature one item before any gets a second. What happened after a
failure (``retrieval.resolution``) is placed right after that failure; a decision superseded by a later one
(``retrieval.timeline``) right after that one, labelled ``[superseded_by <ref> on <day>]``, so the answer leads
with the current decision; a failure that came back after a fix says ``[regression: …]``.
"""

from collections.abc import Sequence
from typing import NamedTuple

from ..contract.wire import EVIDENCE_TYPES
from .evidence import Candidate
from .resolution import place_after_failures


class Folded(NamedTuple):
    item: Candidate  # the newest occurrence in its session, its text prefixed with the repetition label
    occurrences: int  # occurrences folded into this item (all in one session)
    sessions: int  # sessions in which the same evidence occurs


def _order_key(c: Candidate) -> tuple[float, int, str, int, str, str]:
    # Deterministic: best score first, recorded outcomes before narration, newest first, type, refs.
    newest = "".join(chr(0x10FFFF - ord(ch)) for ch in (c.observed_at or ""))
    return (-c.score, c.priority, newest, EVIDENCE_TYPES.index(c.evidence_type), c.session_ref,
            c.message_ref or "")


#: Which evidence type a row reached by two templates is shown under (lower first).
_SPECIFICITY = {"prior_failure": 0, "file_history": 1, "decision": 2, "summary": 3, "tool_outcome": 4}


def _specific(c: Candidate) -> tuple[float, tuple[float, int, str, int, str, str]]:
    # An edit reached both as file history and as what happened after a failure is shown as the file history
    # asked for (it is what happened next only when no file history was asked for).
    rank = 1.5 if c.edit else _SPECIFICITY[c.evidence_type]
    return (rank, _order_key(c))


def _label(occurrences: int, sessions: int, span: tuple[str, str] | None = None) -> str:
    parts = []
    if occurrences > 1:
        parts.append(f"{occurrences}x in this session")
    if sessions > 1:
        parts.append(f"in {sessions} sessions" + (f", {span[0]} to {span[1]}" if span and span[0] else ""))
    return f"[repeated {', '.join(parts)}] " if parts else ""


def signature(c: Candidate) -> str:
    """What makes two items the same evidence across sessions: the signature, else the fold key."""
    return c.signature or c.fold_key


def _time_labels(c: Candidate) -> str:
    out = f"[superseded_by {c.superseded_by}] " if c.superseded_by else ""
    return out + (f"[regression: failed again after the fix of {c.regression}] " if c.regression else "")


def fold(candidates: Sequence[Candidate]) -> list[Folded]:
    # The same row reached again (two templates: a failure or an edit that is also a tool outcome) is shown
    # once, under its most specific evidence type (the generic tool outcome last).
    best: dict[tuple[str, str], Candidate] = {}
    unique: list[Candidate] = []
    for cand in candidates:
        if cand.message_ref is None:
            unique.append(cand)
            continue
        ref = (cand.session_ref, cand.message_ref)
        if ref not in best or _specific(cand) < _specific(best[ref]):
            best[ref] = cand
    groups: dict[tuple[str, str], list[Candidate]] = {}
    for cand in sorted([*unique, *best.values()], key=_order_key):
        groups.setdefault((cand.session_ref, cand.fold_key), []).append(cand)
    sessions_of: dict[str, set[str]] = {}
    days: dict[str, list[str]] = {}
    for (session_ref, _), members in groups.items():
        for member in members:
            sessions_of.setdefault(signature(member), set()).add(session_ref)
            days.setdefault(signature(member), []).extend(m.observed_at[:10] for m in members if m.observed_at)
    # The groups were made in rank order, so their heads (each group's first member) are in rank order too.
    folded: list[Folded] = []
    led: set[str] = set()
    for members in groups.values():
        key = signature(members[0])
        sessions = len(sessions_of[key])
        span = (min(days[key]), max(days[key])) if key not in led and days.get(key) else None
        led.add(key)
        head = members[0]._replace(text=_time_labels(members[0]) + _label(len(members), sessions, span)
                                   + members[0].text)
        folded.append(Folded(head, len(members), sessions))
    by_item = {id(f.item): f for f in folded}
    placed = place_after_superseders(place_after_failures([f.item for f in folded]))
    return [by_item[id(item)] for item in placed]


def place_after_superseders(ordered: Sequence[Candidate]) -> list[Candidate]:
    """Move each superseded decision right after the decision that supersedes it (when that one is shown), so the
    current decision comes first; the rest keeps its order."""
    refs = {f"{c.message_ref} on {(c.observed_at or '')[:10]}" for c in ordered if c.message_ref}
    placed = [c for c in ordered if not c.superseded_by or c.superseded_by not in refs]
    for moved in (c for c in ordered if c.superseded_by and c.superseded_by in refs):
        at = next(i for i, c in enumerate(placed) if f"{c.message_ref} on {(c.observed_at or '')[:10]}"
                  == moved.superseded_by)
        end = at + 1
        while end < len(placed) and placed[end].superseded_by == moved.superseded_by:
            end += 1
        placed.insert(end, moved)
    return placed
