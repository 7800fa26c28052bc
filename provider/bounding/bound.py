"""Apply the request's limits and the provider's ceilings to every string of every item. Truncation is explicit.

Order of application: redact, then per-snippet cut (``max_snippet_chars``, a visible ``…`` marker inside
the budget), then ``max_sessions`` (items from sessions past the first N are omitted), then ``max_items``,
then ``max_total_chars`` (items that do not fit are dropped whole, never cut into invalid JSON). Items are
taken in this order under those limits: the best item of every evidence type, the first item of every distinct
failure signature (when one repeats), the best item of each session, then the rest; they are shown in rank
order.
``omitted_count`` counts every found item not returned; ``truncated`` is true when anything was omitted or
cut, or when a template reached the provider's fetch ceiling (so more may exist than was found).

The other strings of an item: refs (``session_ref``, ``message_ref``, ``revision_ref``) are opaque ids, so they
are redacted and, when longer than ``REF_CEILING`` or holding a control or format character, withheld whole
rather than cut into a prefix that would name another id; ``observed_at`` is kept only as a plausible
ISO-8601 time of at most ``TIME_CEILING`` characters. An item whose ``session_ref`` is withheld is omitted
(counted in ``omitted_count``); a withheld optional field is left out (counted in ``fields_withheld``).

Redaction runs once per text that may be kept: the final pass over a composed text (composition already
redacted each read) runs when an item reaches the character budget, never for one that ``max_sessions`` or
``max_items`` leaves out. The counts are the replacements made while answering: composition's for every
folded item (as before) and the final pass's for the texts it ran on.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..contract.parse import MAX_REQUEST_BYTES
from ..contract.wire import EvidenceItem, Limits
from ..redaction.redact import redact
from ..retrieval.fold import Folded, signature

ELLIPSIS = "…"
#: Characters of a ref (session, message, revision): ids are 36 to 72 characters in real indexes, a git branch
#: name rarely more than a hundred.
REF_CEILING = 256
#: Characters of ``observed_at`` (``2026-10-30T10:00:00.123456789+05:30`` is 35).
TIME_CEILING = 35
#: Bytes one character of a string may take in the JSON the CLI writes (``\u0001`` and ``\u2028`` take six).
JSON_BYTES_PER_CHAR = 6
#: Bytes of one item's frame: its keys, quotes, separators and evidence type.
ITEM_FRAME_BYTES = 160
#: Bytes of the envelope's frame outside the items and the echoed request strings: keys, the receipt (digests,
#: counts, flags) and ``provider_meta`` (counts and names).
ENVELOPE_FRAME_BYTES = 64 * 1024

#: A control (C0, DEL, C1), bidi or zero-width format character, a line or paragraph separator, a surrogate.
_UNFIT_REF = re.compile(r"[\x00-\x1f\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff"
                        r"\ud800-\udfff]")
_ISO_TIME = re.compile(r"[0-9]{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])"
                       r"(?:[T ](?:[01][0-9]|2[0-3]):[0-5][0-9](?::(?:[0-5][0-9]|60)(?:[.,][0-9]{1,9})?)?"
                       r"(?:Z|[+-](?:[01][0-9]|2[0-3]):?[0-5][0-9])?)?")


def envelope_ceiling(limits: Limits) -> int:
    """The most bytes an answer's envelope may take: six bytes for every character the items may hold
    (``max_total_chars`` of snippets, ``max_items`` times three refs and a time at their ceilings) and for the
    request strings it repeats (at most three times a request of ``MAX_REQUEST_BYTES``), plus the frames."""
    item_chars = limits.max_total_chars + limits.max_items * (3 * REF_CEILING + TIME_CEILING)
    return (JSON_BYTES_PER_CHAR * (item_chars + 3 * MAX_REQUEST_BYTES) + limits.max_items * ITEM_FRAME_BYTES
            + ENVELOPE_FRAME_BYTES)


def bounded_ref(value: str | None) -> tuple[str | None, Counter[str]]:
    """A ref as it may be shown: redacted, or None (withheld) when over ``REF_CEILING`` characters before or
    after redaction, or holding a control or format character. Never cut."""
    if value is None or len(value) > REF_CEILING or _UNFIT_REF.search(value) is not None:
        return None, Counter()
    redacted = redact(value)
    if len(redacted.text) > REF_CEILING:
        return None, Counter()
    return redacted.text, Counter(redacted.counts)


def bounded_time(value: str | None) -> str | None:
    """``observed_at`` when it is a plausible ISO-8601 time of at most ``TIME_CEILING`` characters, else None."""
    if value is None or len(value) > TIME_CEILING or _ISO_TIME.fullmatch(value) is None:
        return None
    return value


@dataclass(slots=True)
class BoundReport:
    """What :func:`bound` returns (filled in as it goes)."""

    items: list[EvidenceItem]
    omitted_count: int
    truncated: bool
    snippets_cut: int = 0
    redactions: Counter[str] = field(default_factory=Counter)
    folded_occurrences: int = 0
    total_chars: int = 0
    fields_withheld: int = 0  # optional refs and times left out (over a ceiling, unfit)


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


def _type_firsts(folded: Sequence[Folded], usable: Sequence[int]) -> list[int]:
    """The best item of each evidence type among the ``usable`` ones, when the answer holds more than one type:
    every asked type that has evidence gets an item before any type gets a second."""
    firsts: dict[str, int] = {}
    for index in usable:
        firsts.setdefault(folded[index].item.evidence_type, index)
    return sorted(firsts.values()) if len(firsts) > 1 else []


def _signature_leads(folded: Sequence[Folded], usable: Sequence[int]) -> list[int]:
    """The first failure of each distinct signature, when a signature has more than one item (one failure
    repeated in many sessions): every distinct failure gets an item before any gets a second."""
    leads: dict[str, int] = {}
    repeated = False
    for index in usable:
        item = folded[index].item
        if item.evidence_type != "prior_failure" or item.follows is not None:
            continue
        key = signature(item)
        repeated = repeated or key in leads
        leads.setdefault(key, index)
    return sorted(leads.values()) if repeated else []


def _session_firsts(folded: Sequence[Folded], limits: Limits, usable: Sequence[int]) -> set[int]:
    """Indices of the best item of each of the first ``max_sessions`` sessions (at most ``max_items``) among
    the ``usable`` ones: these are placed first, so that many items from one session never hide another."""
    firsts: dict[str, int] = {}
    for index in usable:
        ref = folded[index].item.session_ref
        if ref not in firsts and len(firsts) < min(limits.max_sessions, limits.max_items):
            firsts[ref] = index
    return set(firsts.values())


def bound(folded: Sequence[Folded], limits: Limits, *, fetch_ceiling_reached: bool) -> BoundReport:
    report = BoundReport(items=[], omitted_count=0, truncated=fetch_ceiling_reached)
    for entry in folded:  # made while composing the text: counted for every folded item, as before
        report.redactions.update(dict(entry.item.redactions))
    # Each distinct session ref is judged once (bounded, redacted); an item whose ref is withheld is omitted.
    session_refs = {ref: bounded_ref(ref) for ref in dict.fromkeys(entry.item.session_ref for entry in folded)}
    usable = [i for i, entry in enumerate(folded) if session_refs[entry.item.session_ref][0] is not None]
    firsts = _session_firsts(folded, limits, usable)
    # Taken in this order, shown in rank order: every asked evidence type, then every distinct failure, then every
    # session's best item, then the rest.
    order = [*_type_firsts(folded, usable), *_signature_leads(folded, usable), *sorted(firsts), *usable]
    sessions: list[str] = []
    snippets: dict[int, tuple[str, bool]] = {}
    accepted: list[int] = []
    for index in dict.fromkeys(order):
        cand = folded[index].item
        if cand.session_ref not in sessions and len(sessions) >= limits.max_sessions:
            continue
        if len(accepted) >= limits.max_items:
            continue
        redacted = redact(cand.text)  # again: composition redacted each read before cutting it
        report.redactions.update(redacted.counts)
        snippets[index] = snippet = cut_snippet(redacted.text, limits.max_snippet_chars)
        if report.total_chars + len(snippet[0]) > limits.max_total_chars:
            continue
        if cand.session_ref not in sessions:
            sessions.append(cand.session_ref)
        report.total_chars += len(snippet[0])
        accepted.append(index)
    report.omitted_count = len(folded) - len(accepted)
    for index in sorted(accepted):  # in rank order
        report.items.append(_item(folded[index], snippets[index], session_refs[folded[index].item.session_ref],
                                  report))
    report.truncated = report.truncated or report.omitted_count > 0 or report.snippets_cut > 0
    return report


def _item(entry: Folded, snippet: tuple[str, bool], session: tuple[str | None, Counter[str]],
          report: BoundReport) -> EvidenceItem:
    """The item of one kept entry: every string bounded and redacted, the report's counts updated."""
    cand = entry.item
    session_ref, session_counts = session
    if session_ref is None:  # pragma: no cover - such entries are never accepted
        raise ValueError("withheld session ref")
    report.snippets_cut += int(snippet[1])
    report.folded_occurrences += entry.occurrences - 1
    report.redactions.update(session_counts)
    message_ref, message_counts = bounded_ref(cand.message_ref)
    revision_ref, revision_counts = bounded_ref(cand.revision_ref)
    observed_at = bounded_time(cand.observed_at)
    report.redactions.update(message_counts + revision_counts)
    report.fields_withheld += sum(1 for raw, shown in ((cand.message_ref, message_ref),
                                                       (cand.revision_ref, revision_ref),
                                                       (cand.observed_at, observed_at))
                                  if raw is not None and shown is None)
    return EvidenceItem(session_ref=session_ref, evidence_type=cand.evidence_type, snippet=snippet[0],
                        message_ref=message_ref, observed_at=observed_at, revision_ref=revision_ref)
