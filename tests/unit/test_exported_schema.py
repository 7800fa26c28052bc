"""The exported JSON Schema (the ``schema`` command's document) is the runtime contract: optional fields are not
null-able, limits have ``minimum: 1``, ``error.code`` is the enum of ``ERROR_CODES``, and the schema refuses what
the runtime refuses (envelopes of real requests, the CLI's output and the RFC's TypeScript types:
tests/integration/test_wire_schema.py)."""

from __future__ import annotations

import json

from obelisk_session_evidence.contract.models import (
    RECEIPT_SCHEMA,
    REQUEST_SCHEMA,
    RESPONSE_SCHEMA,
    RESULT_SCHEMA,
    export_json_schema,
)
from obelisk_session_evidence.errors import ERROR_CODES

from tests.conftest import make_request
from tests.envelope_schema import problems


def test_schema_optional_fields_are_not_nullable_and_limits_are_positive() -> None:
    schema = export_json_schema()
    request = schema[REQUEST_SCHEMA]
    assert request["properties"]["revision"] == {"$ref": "#/$defs/Revision"}
    assert request["$defs"]["Revision"]["properties"]["merge_base"] == {"title": "Merge Base", "type": "string"}
    for name in ("max_sessions", "max_items", "max_snippet_chars", "max_total_chars"):
        assert request["$defs"]["Limits"]["properties"][name]["minimum"] == 1
    item = schema[RESULT_SCHEMA]["$defs"]["EvidenceItem"]["properties"]
    for name in ("message_ref", "observed_at", "revision_ref"):
        assert item[name] == {"title": item[name]["title"], "type": "string"}, name
    code = schema[RESPONSE_SCHEMA]["$defs"]["ErrorInfo"]["properties"]["code"]
    assert code["enum"] == list(ERROR_CODES)
    assert "null" not in json.dumps(schema[REQUEST_SCHEMA])
    assert "null" not in json.dumps(schema[RESULT_SCHEMA]) and "null" not in json.dumps(schema[RECEIPT_SCHEMA])


def test_schema_refuses_what_the_runtime_refuses() -> None:
    request = make_request()
    assert problems(REQUEST_SCHEMA, request) == []
    assert problems(REQUEST_SCHEMA, {**request, "revision": None})
    assert problems(REQUEST_SCHEMA, {**request, "revision": {"current": "a", "merge_base": None}})
    assert problems(REQUEST_SCHEMA, {**request, "limits": {**request["limits"], "max_items": 0}})
    assert problems(REQUEST_SCHEMA, {**request, "extra": 1})
    envelope = {"schema_version": RESPONSE_SCHEMA, "request_id": None, "outcome": "rejected",
                "error": {"code": "malformed_json", "retryable": False, "detail": "x"}, "result": None,
                "receipt": None, "provider_meta": {}}
    assert problems(RESPONSE_SCHEMA, envelope) == []
    assert problems(RESPONSE_SCHEMA, {**envelope, "error": {**envelope["error"], "code": "no_such_code"}})
