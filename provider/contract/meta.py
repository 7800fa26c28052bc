"""The names of the envelope's ``provider_meta``: its keys, the degradations, the freshness detail's counts and
the reasons freshness is ``unknown``, and the open modes and schema verdicts it reports. The one place they are
spelled.

The layers that produce them type their values with these literals (the index's freshness and connection, the
retrieval's terms, the service's envelope), so mypy refuses a name that is not listed here; ``contract.models``
turns them into the enumerations of the shipped JSON Schema and TypeScript declarations. Standard library only:
the request path imports this module.
"""

from __future__ import annotations

from typing import Final, Literal, TypedDict, get_args

from .wire import EvidenceType

#: What may hide evidence in an ``ok`` answer (``provider_meta.degradations``; the README's Freshness section
#: says what each means): the enabled scope matches no session, the revision was not resolved (the recency window
#: was searched), CJK terms matched by a bounded substring scan or as prefixes, trigram terms under three
#: characters applied as a post-filter.
Degradation = Literal["scope_matches_no_session", "revision_unresolved", "cjk_substring_match", "cjk_prefix_match",
                      "trigram_short_term_post_filter"]
DEGRADATIONS: Final[tuple[Degradation, ...]] = get_args(Degradation)

#: Why freshness is ``unknown`` (``FreshnessReport.unknown_reasons``; in ``provider_meta.freshness_detail`` each
#: is the flag :func:`unknown_reason_flag` names).
UnknownReason = Literal["no_transcript_home", "unreadable_home", "unreadable_root", "unsupported_source",
                        "unknown_cursor", "unreadable_file", "every_in_scope_file_missing", "no_transcript_in_scope"]
UNKNOWN_REASONS: Final[tuple[UnknownReason, ...]] = get_args(UnknownReason)
UNKNOWN_REASON_PREFIX: Final = "unknown_reason_"

#: How the index was opened: read-only, or immutable once nothing beside it could change it.
OpenMode = Literal["ro", "immutable_verified"]
#: The live schema against the pinned snapshots (``index.schema_verdict``; ``check-schema`` adds ``unreadable``).
SchemaVerdictName = Literal["exact", "compatible", "degraded", "incompatible"]

#: The integer counts and flags (1 when set) of ``provider_meta.freshness_detail``, besides one flag per unknown
#: reason: the scope's transcript units and how they were judged, the age of the last build, the app build and
#: heartbeat markers, and whether the judgement ran out of the request's deadline.
FRESHNESS_COUNTS: Final = ("units_in_scope", "up_to_date", "stale", "unindexed", "missing_on_disk", "unknown_cursor",
                           "unreadable_units", "unattributed_files", "last_build_age_ms", "heartbeat_fresh",
                           "app_build_partial", "lines_counted", "freshness_deadline_exceeded")


def unknown_reason_flag(reason: UnknownReason) -> str:
    """The ``freshness_detail`` key of one unknown reason (``unknown_reason_no_transcript_home``, ...)."""
    return UNKNOWN_REASON_PREFIX + reason


#: Every key ``provider_meta.freshness_detail`` may hold.
FRESHNESS_DETAIL_KEYS: Final[tuple[str, ...]] = (*FRESHNESS_COUNTS, *map(unknown_reason_flag, UNKNOWN_REASONS))


class ProviderMeta(TypedDict, total=False):
    """``provider_meta``: content-free counts, flags and names; every key is optional (a rejection carries none, a
    failure what the request got so far)."""

    open_mode: OpenMode
    tokenizer: str
    schema_verdict: SchemaVerdictName
    schema_snapshot: str
    skipped_evidence_types: list[EvidenceType]
    freshness_detail: dict[str, int]
    templates_run: list[str]
    templates_skipped: list[str]
    candidates_found: int
    folded_repeats: int
    snippets_cut: int
    fields_withheld: int
    fetch_ceiling_reached: bool
    redactions: dict[str, int]
    degradations: list[Degradation]
    total_chars: int
    elapsed_ms: float
    since: str


#: Every key ``provider_meta`` may hold, in the order the envelope writes them.
META_KEYS: Final[tuple[str, ...]] = tuple(ProviderMeta.__annotations__)
