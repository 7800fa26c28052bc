"""Fold identical evidence repeated across sessions into one item that says how often it happened.

That count is the repetition signal a replan needs ("this exact failure happened 3 times in 3 sessions").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from ..contract.models import EVIDENCE_TYPES
from ..retrieval.evidence import Candidate


@dataclass(frozen=True)
class Folded:
    item: Candidate  # the newest occurrence, its text prefixed with the repetition count when > 1
    occurrences: int
    sessions: int


def _order_key(c: Candidate) -> tuple[float, int, str, int, str, str]:
    # Deterministic: best score first, recorded outcomes before narration, newest first, type, refs.
    newest = "".join(chr(0x10FFFF - ord(ch)) for ch in (c.observed_at or ""))
    return (-c.score, c.priority, newest, EVIDENCE_TYPES.index(c.evidence_type), c.session_ref,
            c.message_ref or "")


def fold(candidates: Sequence[Candidate]) -> list[Folded]:
    groups: dict[str, list[Candidate]] = {}
    seen_refs: set[tuple[str, str]] = set()
    for cand in sorted(candidates, key=_order_key):
        if cand.message_ref is not None:
            ref = (cand.session_ref, cand.message_ref)
            if ref in seen_refs:
                # The same row reached again (two templates, or a failure that is also a tool outcome):
                # shown once, under the first evidence type in contract order.
                continue
            seen_refs.add(ref)
        groups.setdefault(cand.fold_key, []).append(cand)
    folded: list[Folded] = []
    for members in groups.values():
        head = members[0]
        sessions = len({m.session_ref for m in members})
        if len(members) > 1:
            head = replace(head, text=f"[repeated {len(members)}x in {sessions} sessions] {head.text}")
        folded.append(Folded(head, len(members), sessions))
    folded.sort(key=lambda f: _order_key(f.item))
    return folded
