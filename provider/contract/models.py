"""Strict pydantic models of the RFC v0 wire types (RFC section 5) and the response envelope.

Field names, literal values and optional fields are spelled exactly as the RFC's TypeScript types. Optional
TypeScript fields (``revision?``, ``merge_base?``, ``message_ref?``, ``observed_at?``, ``revision_ref?``) may
be absent; an explicit ``null`` is refused on input and never emitted on output.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, NamedTuple, get_type_hints

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    TypeAdapter,
    create_model,
    model_validator,
)

from .._version import PROVIDER_ID, ProviderId
from ..errors import ERROR_CODES
from ..redaction.redact import REDACTION_KINDS
from .documents import (
    OPERATOR_CODES,
    CheckSchemaReportV0,
    CheckSchemaUnreadableV0,
    DisableDoneV0,
    EnableDoneV0,
    OperatorRefusalV0,
    ProviderPingV0,
    ProviderPongV0,
    QualifySummaryV0,
    ReplaySummaryV0,
    RotateKeyDoneV0,
    StatusV0,
)
from .meta import DEGRADATIONS, FRESHNESS_DETAIL_KEYS, META_KEYS, UNKNOWN_REASONS, ProviderMeta
from .typescript import render_declarations
from .wire import (  # the literals are shared with the request path, which does not import pydantic
    MAX_REQUEST_ID_CHARS,
    PING_SCHEMA,
    PONG_SCHEMA,
    RECEIPT_SCHEMA,
    REQUEST_ID_CONTROLS,
    REQUEST_SCHEMA,
    RESPONSE_SCHEMA,
    RESULT_SCHEMA,
    SCHEMA_DIALECT,
    SCHEMAS_VERSION,
    EvidenceType,
    Freshness,
    Outcome,
    Trigger,
    schema_id,
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
_DETAIL_FIELDS: dict[str, Any] = {name: (int, None) for name in FRESHNESS_DETAIL_KEYS}
FreshnessDetail = create_model("FreshnessDetail", __base__=_Strict,
                               __doc__="Content-free counts and flags of the freshness judgement.", **_DETAIL_FIELDS)

#: ``provider_meta.redactions``: secrets replaced in the snippets, counted by kind (``redaction.REDACTION_KINDS``).
Redactions = Annotated[dict[str, int], Field(json_schema_extra={"propertyNames": {"enum": list(REDACTION_KINDS)}})]

#: ``provider_meta`` as a model: the keys and value types of ``contract.meta.ProviderMeta``, each optional.
_META_FIELDS: dict[str, Any] = {
    name: ({"freshness_detail": FreshnessDetail, "redactions": Redactions}.get(name, hint), None)
    for name, hint in get_type_hints(ProviderMeta).items()}
ProviderMetaModel = create_model("ProviderMeta", __base__=_Strict, __doc__=ProviderMeta.__doc__, **_META_FIELDS)


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


class Document(NamedTuple):
    """One shipped document: its schema's name (the file ``<name>.schema.json``), its TypeScript type, its shape
    (a model, or a union of models for a command that prints one of several) and what prints or reads it."""

    name: str
    type_name: str
    shape: Any
    where: str


#: Every document of the integration surface, in the order the schemas and declarations list them.
DOCUMENTS: tuple[Document, ...] = (
    Document(REQUEST_SCHEMA, "HistoricalEvidenceRequestV0", HistoricalEvidenceRequestV0,
             "the request: query (stdin or --request), serve --stdio (one per line)"),
    Document(RESULT_SCHEMA, "HistoricalEvidenceResultV0", HistoricalEvidenceResultV0,
             "the private result, in the envelope"),
    Document(RECEIPT_SCHEMA, "HistoricalEvidenceReceiptV0", HistoricalEvidenceReceiptV0,
             "the public receipt, in the envelope"),
    Document(RESPONSE_SCHEMA, "HistoricalEvidenceResponseV0", HistoricalEvidenceResponseV0,
             "the envelope: query, serve --stdio (one per line)"),
    Document(PING_SCHEMA, "ProviderPingV0", ProviderPingV0, "serve --stdio: a line asking who answers"),
    Document(PONG_SCHEMA, "ProviderPongV0", ProviderPongV0, "serve --stdio: the answer to a ping"),
    Document("status_v0", "StatusV0", StatusV0, "status --format json"),
    Document("enable_v0", "EnableOutputV0", EnableDoneV0 | OperatorRefusalV0, "enable --format json"),
    Document("disable_v0", "DisableOutputV0", DisableDoneV0 | OperatorRefusalV0, "disable --format json"),
    Document("rotate_key_v0", "RotateKeyOutputV0", RotateKeyDoneV0 | OperatorRefusalV0, "rotate-key --format json"),
    Document("check_schema_v0", "CheckSchemaOutputV0", CheckSchemaReportV0 | CheckSchemaUnreadableV0,
             "check-schema --format json"),
    Document("qualify_v0", "QualifyOutputV0", QualifySummaryV0 | ReplaySummaryV0 | OperatorRefusalV0,
             "qualify --format json (--self-test or --replay)"),
)


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


def document_schema(document: Document) -> dict[str, Any]:
    """The JSON Schema of one document as shipped: ``$schema``, ``$id``, ``version``, ``title`` and the runtime
    contract (optional fields are absent or their type, never null; limits have ``minimum: 1``; codes, meta keys
    and degradations are enums)."""
    shape = document.shape
    model = isinstance(shape, type) and issubclass(shape, BaseModel)
    schema = shape.model_json_schema() if model else TypeAdapter(shape).json_schema()
    _drop_null_from_optional(schema)
    head: dict[str, Any] = {"$schema": SCHEMA_DIALECT, "$id": schema_id(document.name), "version": SCHEMAS_VERSION,
                            "title": document.type_name}
    if model:
        schema.pop("title", None)
    return {**head, **schema}


def export_json_schema() -> dict[str, Any]:
    """The JSON Schema of every document, by name, as the ``schema`` command prints them and the package ships
    them (``schemas/<name>.schema.json``)."""
    return {document.name: document_schema(document) for document in DOCUMENTS}


def typescript_declarations() -> str:
    """The TypeScript declarations of every document (``schema --format typescript``; shipped as
    ``schemas/obelisk-session-evidence.d.ts``), with the enumerations integrators branch on as named unions."""
    header = (f"// {PROVIDER_ID}: TypeScript declarations of its documents (schemas {SCHEMAS_VERSION}).\n"
              f"// Generated from the JSON Schemas by `{PROVIDER_ID} schema --format typescript`; do not edit.\n")
    unions = {"ProviderMetaKey": META_KEYS, "Degradation": DEGRADATIONS, "UnknownReason": UNKNOWN_REASONS,
              "FreshnessDetailKey": FRESHNESS_DETAIL_KEYS, "ErrorCode": tuple(ERROR_CODES),
              "OperatorCode": OPERATOR_CODES, "RedactionKind": REDACTION_KINDS}
    return render_declarations(export_json_schema(), {d.name: d.type_name for d in DOCUMENTS}, unions,
                               header=header)
