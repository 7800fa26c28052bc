"""The wire types as the request path uses them: the RFC v0 literals, the validated request, and its strict
validator, with no pydantic import.

``contract.models`` (pydantic) is the contract of record: the ``schema`` command exports its JSON Schema, and
the test suite validates every envelope against it and checks, property by property, that
:func:`validate_request` accepts and refuses exactly what ``HistoricalEvidenceRequestV0`` does, with the same
typed rejection (``tests/unit/test_wire_validation.py``). The request path validates here because loading pydantic
and building its models would cost a one-shot ``query`` more than answering it does.

Validation follows the model's rules: an object where a model is, every required field present, exact JSON
types (an integer is not a boolean, a list is not a string), literal values spelled exactly, no unknown key, an
optional field absent rather than ``null``, a ``request_id`` of at most :data:`MAX_REQUEST_ID_CHARS` characters
and no control character (it is copied into the public receipt). The first problem in field order is reported,
by field path only.
"""

import re
from collections.abc import Mapping
from typing import Any, Literal, NamedTuple

from ..errors import CrossScopeRequested, InvalidRequest, UnknownField

REQUEST_SCHEMA = "historical_evidence_request_v0"
RESULT_SCHEMA = "historical_evidence_result_v0"
RECEIPT_SCHEMA = "historical_evidence_receipt_v0"
RESPONSE_SCHEMA = "historical_evidence_response_v0"
#: ``serve --stdio``: a line holding exactly ``{"schema_version": "provider_ping_v0"}`` is answered with one
#: ``provider_pong_v0`` line (who answers, which versions, the effective ceilings), not an envelope.
PING_SCHEMA = "provider_ping_v0"
PONG_SCHEMA = "provider_pong_v0"
#: The version of the shipped JSON Schemas and TypeScript declarations (``schemas/``): bumped when a document's
#: shape changes; each schema's ``$id`` carries it.
SCHEMAS_VERSION = "1.0.0"
SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def schema_id(name: str) -> str:
    """The ``$id`` of a shipped schema: a URN naming the provider, the document and :data:`SCHEMAS_VERSION`."""
    return f"urn:obelisk-session-evidence:schema:{name}:{SCHEMAS_VERSION}"

Trigger = Literal[
    "replan_repetition", "hypothesis_history_gap", "resume_or_handoff_gap", "operator_requested_history"
]
EvidenceType = Literal["prior_failure", "decision", "file_history", "tool_outcome", "summary"]
Freshness = Literal["fresh", "stale", "incomplete", "unknown"]
Outcome = Literal["ok", "failed", "rejected"]

TRIGGERS: tuple[Trigger, ...] = (
    "replan_repetition", "hypothesis_history_gap", "resume_or_handoff_gap", "operator_requested_history",
)
EVIDENCE_TYPES: tuple[EvidenceType, ...] = (
    "prior_failure", "decision", "file_history", "tool_outcome", "summary",
)

#: The longest ``request_id`` accepted, in characters (code points): the receipt copies it verbatim.
MAX_REQUEST_ID_CHARS = 128
#: The characters a ``request_id`` may not hold, as a character class's body: C0 and C1 controls and DEL (the
#: pydantic model's pattern is this class negated; both are checked against each other by the tests).
REQUEST_ID_CONTROLS = r"\x00-\x1f\x7f-\x9f"
_REQUEST_ID_FORBIDDEN = re.compile(f"[{REQUEST_ID_CONTROLS}]")


def request_id_or_none(value: object) -> str | None:
    """``value`` when it is a ``request_id`` the contract accepts (a string of at most
    :data:`MAX_REQUEST_ID_CHARS` characters, none of :data:`REQUEST_ID_CONTROLS`), else None: what a rejection
    may copy back of a request that did not validate."""
    if isinstance(value, str) and len(value) <= MAX_REQUEST_ID_CHARS and not _REQUEST_ID_FORBIDDEN.search(value):
        return value
    return None

# --- the validated request -----------------------------------------------------------------------------


class RequestScope(NamedTuple):
    agent_id: str
    project_id: str
    repository_id: str
    allow_cross_agent: Literal[False] = False
    allow_cross_project: Literal[False] = False

    def as_dict(self) -> dict[str, str | bool]:
        return {"agent_id": self.agent_id, "project_id": self.project_id, "repository_id": self.repository_id,
                "allow_cross_agent": False, "allow_cross_project": False}


class Revision(NamedTuple):
    current: str
    merge_base: str | None = None

    def as_dict(self) -> dict[str, str]:
        """As the wire spells it: an absent ``merge_base`` is left out."""
        return {"current": self.current} if self.merge_base is None else {"current": self.current,
                                                                          "merge_base": self.merge_base}


class Limits(NamedTuple):
    max_sessions: int
    max_items: int
    max_snippet_chars: int
    max_total_chars: int

    def as_dict(self) -> dict[str, int]:
        return {"max_sessions": self.max_sessions, "max_items": self.max_items,
                "max_snippet_chars": self.max_snippet_chars, "max_total_chars": self.max_total_chars}


class Request(NamedTuple):
    """A request that passed :func:`validate_request` (``historical_evidence_request_v0``)."""

    schema_version: Literal["historical_evidence_request_v0"]
    request_id: str
    situation_id: str
    trigger: Trigger
    scope: RequestScope
    revision: Revision | None
    evidence_types: tuple[EvidenceType, ...]
    query_terms: tuple[str, ...]
    limits: Limits

    def as_dict(self) -> dict[str, Any]:
        """The request as the wire spells it (an absent ``revision`` is left out)."""
        out: dict[str, Any] = {"schema_version": self.schema_version, "request_id": self.request_id,
                               "situation_id": self.situation_id, "trigger": self.trigger,
                               "scope": self.scope.as_dict()}
        if self.revision is not None:
            out["revision"] = self.revision.as_dict()
        out.update({"evidence_types": list(self.evidence_types), "query_terms": list(self.query_terms),
                    "limits": self.limits.as_dict()})
        return out


# --- the private result's item -------------------------------------------------------------------------


class EvidenceItem(NamedTuple):
    session_ref: str
    evidence_type: EvidenceType
    snippet: str
    message_ref: str | None = None
    observed_at: str | None = None
    revision_ref: str | None = None

    def as_dict(self) -> dict[str, str]:
        """The wire item, fields in the contract's order; an absent optional field is left out."""
        out = {"session_ref": self.session_ref}
        if self.message_ref is not None:
            out["message_ref"] = self.message_ref
        out["evidence_type"] = self.evidence_type
        if self.observed_at is not None:
            out["observed_at"] = self.observed_at
        if self.revision_ref is not None:
            out["revision_ref"] = self.revision_ref
        out["snippet"] = self.snippet
        return out


# --- the validator ---------------------------------------------------------------------------------------
#
# A field is (name, kind, required). Kinds: "str", "id" (a string bounded as ``request_id`` is), "int" (not
# bool), "false" (the JSON false only), a tuple of allowed strings (a literal), ("list", kind), or a nested spec
# (a model).

_Kind = Any
_Spec = tuple[tuple[str, _Kind, bool], ...]

_SCOPE: _Spec = (("agent_id", "str", True), ("project_id", "str", True), ("repository_id", "str", True),
                 ("allow_cross_agent", "false", True), ("allow_cross_project", "false", True))
_REVISION: _Spec = (("current", "str", True), ("merge_base", "str", False))
_LIMITS: _Spec = (("max_sessions", "int", True), ("max_items", "int", True), ("max_snippet_chars", "int", True),
                  ("max_total_chars", "int", True))
_REQUEST: _Spec = (("schema_version", (REQUEST_SCHEMA,), True), ("request_id", "id", True),
                   ("situation_id", "str", True), ("trigger", TRIGGERS, True), ("scope", _SCOPE, True),
                   ("revision", _REVISION, False), ("evidence_types", ("list", EVIDENCE_TYPES), True),
                   ("query_terms", ("list", "str"), True), ("limits", _LIMITS, True))

# A problem: (location, kind); kind is "missing", "wrong", "extra" or "null:<field>". For "extra" the location
# is the object holding the unknown key (the key itself is request content and is never kept).
_Problem = tuple[tuple[str, ...], str]


def _check_value(value: Any, kind: _Kind, loc: tuple[str, ...], problems: list[_Problem]) -> Any:
    if isinstance(kind, tuple) and isinstance(kind[0], tuple):  # a nested object
        return _check_object(value, kind, loc, problems)
    if isinstance(kind, tuple) and kind[0] == "list":
        ok = isinstance(value, list)
        if ok:  # each element is checked; its problems are the list's (a position is not a field name)
            return tuple(_check_value(v, kind[1], loc, problems) for v in value)
    elif isinstance(kind, tuple):  # a literal
        ok = isinstance(value, str) and value in kind
    elif kind == "str":
        ok = isinstance(value, str)
    elif kind == "id":
        ok = request_id_or_none(value) is not None
    elif kind == "int":
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:  # "false"
        ok = value is False
    if ok:
        return value
    problems.append((loc, "wrong"))
    return None


def _check_object(data: Any, spec: _Spec, loc: tuple[str, ...], problems: list[_Problem]) -> dict[str, Any] | None:
    if not isinstance(data, dict):
        problems.append((loc, "wrong"))
        return None
    for name, _, required in spec:  # an optional field is absent or its type, never null (checked first)
        if not required and name in data and data[name] is None:
            problems.append((loc, f"null:{name}"))
            return None
    out: dict[str, Any] = {}
    for name, kind, required in spec:
        if name in data:
            out[name] = _check_value(data[name], kind, (*loc, name), problems)
        elif required:
            problems.append(((*loc, name), "missing"))
        else:
            out[name] = None
    known = {name for name, _, _ in spec}
    problems.extend((loc, "extra") for key in data if key not in known)
    return out


def _rejection(problems: list[_Problem]) -> InvalidRequest | UnknownField | CrossScopeRequested:
    """The first problem, named by its field path; an unknown key anywhere is reported before anything else,
    then a cross-scope flag that is not the JSON false."""
    for loc, kind in problems:
        if kind == "extra":
            where = f"in {'.'.join(loc)}" if loc else "at the top level of the request"
            return UnknownField(f"request carries a field the contract does not define ({where})")
    for loc, _ in problems:
        if loc[:1] == ("scope",) and loc[-1] in ("allow_cross_agent", "allow_cross_project"):
            return CrossScopeRequested(f"scope.{loc[-1]} must be false: cross-agent or cross-project retrieval "
                                       "is not offered")
    loc, kind = problems[0]
    where = ".".join(loc)
    if kind.startswith("null:"):
        field = ".".join(part for part in (where, kind.removeprefix("null:")) if part)
        return InvalidRequest(f"field {field} must be absent, not null")
    return InvalidRequest(f"field {where or 'request'} is missing or has the wrong type or value")


def validate_request(data: Mapping[str, Any]) -> Request:
    """The validated request, or the typed rejection of its first problem (never request content)."""
    problems: list[_Problem] = []
    checked = _check_object(dict(data) if not isinstance(data, dict) else data, _REQUEST, (), problems)
    if problems or checked is None:
        raise _rejection(problems)
    scope, limits, revision = checked["scope"], checked["limits"], checked["revision"]
    return Request(
        schema_version=checked["schema_version"], request_id=checked["request_id"],
        situation_id=checked["situation_id"], trigger=checked["trigger"],
        scope=RequestScope(scope["agent_id"], scope["project_id"], scope["repository_id"]),
        revision=None if revision is None else Revision(revision["current"], revision["merge_base"]),
        evidence_types=checked["evidence_types"], query_terms=checked["query_terms"],
        limits=Limits(limits["max_sessions"], limits["max_items"], limits["max_snippet_chars"],
                      limits["max_total_chars"]),
    )
