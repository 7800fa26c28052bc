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
from dataclasses import dataclass, field

from ..contract.models import EvidenceItem, Limits
from .fold import Folded
from .redact import redact

ELLIPSIS = "…"


@dataclass
class BoundReport:
    items: list[EvidenceItem]
    omitted_count: int
    truncated: bool
    snippets_cut: int = 0
    redactions: Counter[str] = field(default_factory=Counter)
    folded_occurrences: int = 0
    total_chars: int = 0


def cut_snippet(text: str, limit: int) -> tuple[str, bool]:
    if len(text) <= limit:
        return text, False
    return text[: max(0, limit - len(ELLIPSIS))] + ELLIPSIS, True


def bound(folded: Sequence[Folded], limits: Limits, *, fetch_ceiling_reached: bool) -> BoundReport:
    report = BoundReport(items=[], omitted_count=0, truncated=fetch_ceiling_reached)
    sessions: list[str] = []
    for entry in folded:
        cand = entry.item
        redacted = redact(cand.text)
        report.redactions.update(redacted.counts)
        snippet, was_cut = cut_snippet(redacted.text, limits.max_snippet_chars)
        if cand.session_ref not in sessions and len(sessions) >= limits.max_sessions:
            report.omitted_count += 1
            continue
        if len(report.items) >= limits.max_items:
            report.omitted_count += 1
            continue
        if report.total_chars + len(snippet) > limits.max_total_chars:
            report.omitted_count += 1
            continue
        if cand.session_ref not in sessions:
            sessions.append(cand.session_ref)
        report.snippets_cut += int(was_cut)
        report.total_chars += len(snippet)
        report.folded_occurrences += entry.occurrences - 1
        report.items.append(_item(cand.evidence_type, cand.session_ref, cand.message_ref, cand.observed_at,
                                  revision_ref=cand.revision_ref, snippet=snippet))
    report.truncated = report.truncated or report.omitted_count > 0 or report.snippets_cut > 0
    return report


def _item(evidence_type: str, session_ref: str, message_ref: str | None, observed_at: str | None, *,
          revision_ref: str | None, snippet: str) -> EvidenceItem:
    data: dict[str, str] = {"session_ref": session_ref, "evidence_type": evidence_type, "snippet": snippet}
    if message_ref is not None:
        data["message_ref"] = message_ref
    if observed_at is not None:
        data["observed_at"] = observed_at
    if revision_ref is not None:
        data["revision_ref"] = revision_ref
    return EvidenceItem.model_validate(data)
