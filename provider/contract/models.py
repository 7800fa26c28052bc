"""Strict pydantic models of the RFC v0 wire types (RFC section 5) and the response envelope.

Field names, literal values and optional fields are spelled exactly as the RFC's TypeScript types. Optional
TypeScript fields (``revision?``, ``merge_base?``, ``message_ref?``, ``observed_at?``, ``revision_ref?``) may
be absent; an explicit ``null`` is refused on input and never emitted on output.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, model_validator

from .._version import ProviderId

REQUEST_SCHEMA = "historical_evidence_request_v0"
RESULT_SCHEMA = "historical_evidence_result_v0"
RECEIPT_SCHEMA = "historical_evidence_receipt_v0"
RESPONSE_SCHEMA = "historical_evidence_response_v0"

Trigger = Literal[
    "replan_repetition", "hypothesis_history_gap", "resume_or_handoff_gap", "operator_requested_history"
]
EvidenceType = Literal["prior_failure", "decision", "file_history", "tool_outcome", "summary"]
Freshness = Literal["fresh", "stale", "incomplete", "unknown"]
Outcome = Literal["ok", "failed", "rejected"]


def _require_bool(value: Any) -> Any:
    # Literal[False] alone also accepts 0; the wire contract wants the JSON boolean false.
    if not isinstance(value, bool):
        raise ValueError("expected the boolean false")  # noqa: TRY004 - pydantic wants ValueError
    return value


#: The JSON literal ``false`` and nothing else (not 0, not "false").
FalseOnly = Annotated[Literal[False], BeforeValidator(_require_bool)]

EVIDENCE_TYPES: tuple[EvidenceType, ...] = (
    "prior_failure", "decision", "file_history", "tool_outcome", "summary",
)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _no_explicit_null_for_optional(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for name, field in cls.model_fields.items():
                if not field.is_required() and name in data and data[name] is None:
                    raise ValueError(f"optional field {name!r} must be absent, not null")
        return data


# --- request -------------------------------------------------------------------------------------------


class RequestScope(_Strict):
    agent_id: str
    project_id: str
    repository_id: str
    allow_cross_agent: FalseOnly
    allow_cross_project: FalseOnly


class Revision(_Strict):
    current: str
    merge_base: str | None = None


class Limits(_Strict):
    max_sessions: int
    max_items: int
    max_snippet_chars: int
    max_total_chars: int


class HistoricalEvidenceRequestV0(_Strict):
    schema_version: Literal["historical_evidence_request_v0"]
    request_id: str
    situation_id: str
    trigger: Trigger
    scope: RequestScope
    revision: Revision | None = None
    evidence_types: list[EvidenceType]
    query_terms: list[str]
    limits: Limits


# --- private result ------------------------------------------------------------------------------------


class ScopeApplied(_Strict):
    agent_id: str
    project_id: str
    repository_id: str
    cross_agent_used: FalseOnly


class EvidenceItem(_Strict):
    session_ref: str
    message_ref: str | None = None
    evidence_type: EvidenceType
    observed_at: str | None = None
    revision_ref: str | None = None
    snippet: str


class HistoricalEvidenceResultV0(_Strict):
    schema_version: Literal["historical_evidence_result_v0"]
    request_id: str
    provider_id: ProviderId
    provider_version: str
    index_revision: str
    scope_applied: ScopeApplied
    freshness: Freshness
    items: list[EvidenceItem]
    truncated: bool
    omitted_count: int


# --- public receipt ------------------------------------------------------------------------------------


class HistoricalEvidenceReceiptV0(_Strict):
    schema_version: Literal["historical_evidence_receipt_v0"]
    request_id: str
    provider_id: ProviderId
    provider_version: str
    index_revision_digest: str
    scope_digest: str
    query_digest: str
    result_digest: str
    result_count: int
    evidence_type_counts: dict[str, int]
    freshness: Freshness
    truncated: bool
    omitted_count: int
    grants_new_action_authority: FalseOnly
    external_writes_performed: FalseOnly
    raw_content_captured: FalseOnly


# --- envelope ------------------------------------------------------------------------------------------


# The envelope models describe the stdout document (``schema``, tests); the request path builds envelopes as
# plain dicts, so their validators are built on first use rather than at import (cold start).


class ErrorInfo(_Strict):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, defer_build=True)

    code: str
    retryable: bool
    detail: str


MetaValue = int | float | bool | str | list[str] | dict[str, int]


class HistoricalEvidenceResponseV0(BaseModel):
    """The one JSON document written to stdout per invocation (nullable fields are explicit nulls)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, defer_build=True)

    schema_version: Literal["historical_evidence_response_v0"]
    request_id: str | None
    outcome: Outcome
    error: ErrorInfo | None
    result: HistoricalEvidenceResultV0 | None
    receipt: HistoricalEvidenceReceiptV0 | None
    provider_meta: dict[str, MetaValue]


CONTRACT_MODELS: dict[str, type[BaseModel]] = {
    REQUEST_SCHEMA: HistoricalEvidenceRequestV0,
    RESULT_SCHEMA: HistoricalEvidenceResultV0,
    RECEIPT_SCHEMA: HistoricalEvidenceReceiptV0,
    RESPONSE_SCHEMA: HistoricalEvidenceResponseV0,
}
