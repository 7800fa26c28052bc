"""Fold identical evidence repeated within one session; never fold across sessions.

The same failure repeated in several sessions is the most important fact to show, so every session keeps its
own item, labelled with how often the evidence happened in that session and in how many sessions of the
answer the same evidence occurs ("[repeated 2x in this session, in 3 sessions]"). What happened after a failure
(``retrieval.resolution``) is placed right after that failure.
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


def _specific(c: Candidate) -> tuple[int, tuple[float, int, str, int, str, str]]:
    return (_SPECIFICITY[c.evidence_type], _order_key(c))


def _label(occurrences: int, sessions: int) -> str:
    parts = []
    if occurrences > 1:
        parts.append(f"{occurrences}x in this session")
    if sessions > 1:
        parts.append(f"in {sessions} sessions")
    return f"[repeated {', '.join(parts)}] " if parts else ""


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
    for session_ref, key in groups:
        sessions_of.setdefault(key, set()).add(session_ref)
    # The groups were made in rank order, so their heads (each group's first member) are in rank order too.
    folded: list[Folded] = []
    for (_, key), members in groups.items():
        sessions = len(sessions_of[key])
        head = members[0]._replace(text=_label(len(members), sessions) + members[0].text)
        folded.append(Folded(head, len(members), sessions))
    by_item = {id(f.item): f for f in folded}
    return [by_item[id(item)] for item in place_after_failures([f.item for f in folded])]
