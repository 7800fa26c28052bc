"""Strict pydantic models of the RFC v0 wire types (RFC section 5) and the response envelope.

Field names, literal values and optional fields are spelled exactly as the RFC's TypeScript types. Optional
TypeScript fields (``revision?``, ``merge_base?``, ``message_ref?``, ``observed_at?``, ``revision_ref?``) may
be absent; an explicit ``null`` is refused on input and never emitted on output.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_type_hints

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    create_model,
    model_validator,
)

from .._version import ProviderId
from ..errors import ERROR_CODES
from ..redaction.redact import REDACTION_KINDS
from .meta import FRESHNESS_DETAIL_KEYS, ProviderMeta
from .wire import (  # the literals are shared with the request path, which does not import pydantic
    MAX_REQUEST_ID_CHARS,
    PING_SCHEMA,
    PONG_SCHEMA,
    RECEIPT_SCHEMA,
    REQUEST_ID_CONTROLS,
    REQUEST_SCHEMA,
    RESPONSE_SCHEMA,
    RESULT_SCHEMA,
    EvidenceType,
    Freshness,
    Outcome,
    Trigger,
)


def _require_bool(value: Any) -> Any:
    # Literal[False] alone also accepts 0; the wire contract wants the JSON boolean false.
    if not isinstance(value, bool):
        raise ValueError("expected the boolean false")  # noqa: TRY004 - pydantic wants ValueError
    return value


#: The JSON literal ``false`` and nothing else (not 0, not "false").
FalseOnly = Annotated[Literal[False], BeforeValidator(_require_bool)]


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

#: A ``request_id``: copied verbatim into the result and the public receipt, so bounded (at most
#: ``MAX_REQUEST_ID_CHARS`` characters) and free of control characters (``contract.wire`` checks the same).
RequestId = Annotated[str, StringConstraints(max_length=MAX_REQUEST_ID_CHARS,
                                             pattern=f"^[^{REQUEST_ID_CONTROLS}]*$")]


class RequestScope(_Strict):
    agent_id: str
    project_id: str
    repository_id: str
    allow_cross_agent: FalseOnly
    allow_cross_project: FalseOnly


class Revision(_Strict):
    current: str
    merge_base: str | None = None


#: A request limit: the schema says ``minimum: 1``; admission refuses a smaller value (``invalid_request``,
#: naming the field) after the scope checks, so a limit below 1 is refused whatever else the request holds.
PositiveLimit = Annotated[int, Field(json_schema_extra={"minimum": 1})]


class Limits(_Strict):
    max_sessions: PositiveLimit
    max_items: PositiveLimit
    max_snippet_chars: PositiveLimit
    max_total_chars: PositiveLimit


class HistoricalEvidenceRequestV0(_Strict):
    schema_version: Literal["historical_evidence_request_v0"]
    request_id: RequestId
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
    request_id: RequestId
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
    request_id: RequestId
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
# plain dicts, so their validators are built on first use (``defer_build``), not at import.


def _known_code(code: str) -> str:
    if code not in ERROR_CODES:
        raise ValueError("unknown error code")
    return code


#: One of the error codes of ``provider.errors.ERROR_CODES`` (an enum in the exported schema).
ErrorCode = Annotated[str, AfterValidator(_known_code), Field(json_schema_extra={"enum": list(ERROR_CODES)})]


class ErrorInfo(_Strict):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, defer_build=True)

    code: ErrorCode
    retryable: bool
    detail: str


#: ``provider_meta.freshness_detail``: integer counts and flags (1 when set), each optional, named in
#: ``contract.meta`` (a flag per unknown reason among them).
FreshnessDetail = create_model(
    "FreshnessDetail", __base__=_Strict, __doc__="Content-free counts and flags of the freshness judgement.",
    **{name: (int, None) for name in FRESHNESS_DETAIL_KEYS})

#: ``provider_meta.redactions``: secrets replaced in the snippets, counted by kind (``redaction.REDACTION_KINDS``).
Redactions = Annotated[dict[str, int], Field(json_schema_extra={"propertyNames": {"enum": list(REDACTION_KINDS)}})]

#: ``provider_meta`` as a model: the keys and value types of ``contract.meta.ProviderMeta``, each optional.
ProviderMetaModel = create_model(
    "ProviderMeta", __base__=_Strict, __doc__=ProviderMeta.__doc__,
    **{name: ({"freshness_detail": FreshnessDetail, "redactions": Redactions}.get(name, hint), None)
       for name, hint in get_type_hints(ProviderMeta).items()})


class HistoricalEvidenceResponseV0(BaseModel):
    """The one JSON document written to stdout per invocation (nullable fields are explicit nulls)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, defer_build=True)

    schema_version: Literal["historical_evidence_response_v0"]
    request_id: str | None
    outcome: Outcome
    error: ErrorInfo | None
    result: HistoricalEvidenceResultV0 | None
    receipt: HistoricalEvidenceReceiptV0 | None
    provider_meta: ProviderMetaModel  # type: ignore[valid-type]  # a model made from the TypedDict


CONTRACT_MODELS: dict[str, type[BaseModel]] = {
    REQUEST_SCHEMA: HistoricalEvidenceRequestV0,
    RESULT_SCHEMA: HistoricalEvidenceResultV0,
    RECEIPT_SCHEMA: HistoricalEvidenceReceiptV0,
    RESPONSE_SCHEMA: HistoricalEvidenceResponseV0,
}


def _drop_null_from_optional(node: Any) -> None:
    """In place: an optional (not required) property is absent or its type, never ``null``; required
    properties keep their ``null`` (the envelope's ``request_id``, ``error``, ``result``, ``receipt``)."""
    if isinstance(node, dict):
        properties = node.get("properties")
        if isinstance(properties, dict):
            required = set(node.get("required", ()))
            for name, prop in properties.items():
                if name in required or not isinstance(prop, dict):
                    continue
                options = prop.get("anyOf")
                if isinstance(options, list):
                    kept = [o for o in options if o != {"type": "null"}]
                    if len(kept) != len(options):
                        prop.pop("anyOf")
                        if len(kept) == 1:
                            prop.update(kept[0])
                        else:
                            prop["anyOf"] = kept
                if prop.get("default", 0) is None:
                    prop.pop("default")
        for value in node.values():
            _drop_null_from_optional(value)
    elif isinstance(node, list):
        for value in node:
            _drop_null_from_optional(value)


def export_json_schema() -> dict[str, Any]:
    """The JSON Schema of every contract type, as the ``schema`` command prints it: the runtime contract
    (optional fields are not null-able, limits have ``minimum: 1``, ``error.code`` is an enum)."""
    out: dict[str, Any] = {}
    for name, model in CONTRACT_MODELS.items():
        schema = model.model_json_schema()
        _drop_null_from_optional(schema)
        out[name] = schema
    return out
