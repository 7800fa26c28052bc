"""Apply the request's limits and the provider's ceilings. Truncation is always explicit.

Order of application: redact, then per-snippet cut (``max_snippet_chars``, a visible ``…`` marker inside
the budget), then ``max_sessions`` (items from sessions past the first N are omitted), then ``max_items``,
then ``max_total_chars`` (items that do not fit are dropped whole, never cut into invalid JSON).
``omitted_count`` counts every found item not returned; ``truncated`` is true when anything was omitted or
cut, or when a template reached the provider's fetch ceiling (so more may exist than was found).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from ..contract.wire import EvidenceItem, EvidenceType, Limits
from .fold import Folded
from .redact import redact

ELLIPSIS = "…"


class BoundReport:
    """What :func:`bound` returns (filled in as it goes)."""

    __slots__ = ("folded_occurrences", "items", "omitted_count", "redactions", "snippets_cut", "total_chars",
                 "truncated")

    def __init__(self, items: list[EvidenceItem], omitted_count: int, truncated: bool, *, snippets_cut: int = 0,
                 redactions: Counter[str] | None = None, folded_occurrences: int = 0, total_chars: int = 0) -> None:
        self.items = items
        self.omitted_count = omitted_count
        self.truncated = truncated
        self.snippets_cut = snippets_cut
        self.redactions: Counter[str] = Counter() if redactions is None else redactions
        self.folded_occurrences = folded_occurrences
        self.total_chars = total_chars


def cut_snippet(text: str, limit: int) -> tuple[str, bool]:
    """``text`` within ``limit`` characters, cut at a line or token boundary and marked with ``…``."""
    if len(text) <= limit:
        return text, False
    room = max(0, limit - len(ELLIPSIS))
    head = text[:room]
    boundary = max(head.rfind(" "), head.rfind("\n"), head.rfind("\t"))
    if boundary > room // 2:
        head = head[:boundary + 1]
    return head + ELLIPSIS, True


def _session_firsts(folded: Sequence[Folded], limits: Limits) -> set[int]:
    """Indices of the best item of each of the first ``max_sessions`` sessions (at most ``max_items``):
    these are placed first, so that many items from one session never hide another session."""
    firsts: dict[str, int] = {}
    for index, entry in enumerate(folded):
        if entry.item.session_ref not in firsts and len(firsts) < min(limits.max_sessions, limits.max_items):
            firsts[entry.item.session_ref] = index
    return set(firsts.values())


def bound(folded: Sequence[Folded], limits: Limits, *, fetch_ceiling_reached: bool) -> BoundReport:
    report = BoundReport(items=[], omitted_count=0, truncated=fetch_ceiling_reached)
    sessions: list[str] = []
    snippets: list[tuple[str, bool]] = []
    for entry in folded:
        cand = entry.item
        redacted = redact(cand.text)  # again: composition redacted each read before cutting it
        report.redactions.update(redacted.counts)
        report.redactions.update(dict(cand.redactions))
        snippets.append(cut_snippet(redacted.text, limits.max_snippet_chars))
    firsts = _session_firsts(folded, limits)
    accepted: list[int] = []
    for index in [*sorted(firsts), *(i for i in range(len(folded)) if i not in firsts)]:
        cand = folded[index].item
        snippet, _ = snippets[index]
        if cand.session_ref not in sessions and len(sessions) >= limits.max_sessions:
            continue
        if len(accepted) >= limits.max_items:
            continue
        if report.total_chars + len(snippet) > limits.max_total_chars:
            continue
        if cand.session_ref not in sessions:
            sessions.append(cand.session_ref)
        report.total_chars += len(snippet)
        accepted.append(index)
    report.omitted_count = len(folded) - len(accepted)
    for index in sorted(accepted):  # in rank order
        cand = folded[index].item
        snippet, was_cut = snippets[index]
        report.snippets_cut += int(was_cut)
        report.folded_occurrences += folded[index].occurrences - 1
        report.items.append(_item(cand.evidence_type, cand.session_ref, cand.message_ref, cand.observed_at,
                                  revision_ref=cand.revision_ref, snippet=snippet))
    report.truncated = report.truncated or report.omitted_count > 0 or report.snippets_cut > 0
    return report


def _item(evidence_type: EvidenceType, session_ref: str, message_ref: str | None, observed_at: str | None, *,
          revision_ref: str | None, snippet: str) -> EvidenceItem:
    return EvidenceItem(session_ref=session_ref, evidence_type=evidence_type, snippet=snippet,
                        message_ref=message_ref, observed_at=observed_at, revision_ref=revision_ref)
