"""The RFC v0 types as code: exact field sets, literals, optional fields, strictness, rejections."""

from __future__ import annotations

import json
from typing import Any

import pytest
from obelisk_session_evidence.contract.models import (
    HistoricalEvidenceReceiptV0,
    HistoricalEvidenceRequestV0,
    HistoricalEvidenceResultV0,
)
from obelisk_session_evidence.contract.parse import MAX_REQUEST_BYTES, parse_request
from obelisk_session_evidence.errors import ERROR_CODES, ProviderError

from tests.conftest import make_request


def _props(model: Any) -> dict[str, Any]:
    return dict(model.model_json_schema()["properties"])


def _reject(payload: bytes) -> ProviderError:
    with pytest.raises(ProviderError) as info:
        parse_request(payload)
    return info.value


def test_request_fields_match_rfc_exactly() -> None:
    schema = HistoricalEvidenceRequestV0.model_json_schema()
    assert set(schema["properties"]) == {
        "schema_version", "request_id", "situation_id", "trigger", "scope", "revision", "evidence_types",
        "query_terms", "limits"}
    assert set(schema["required"]) == set(schema["properties"]) - {"revision"}
    defs = schema["$defs"]
    assert defs["RequestScope"]["properties"]["allow_cross_agent"] == {
        "const": False, "title": "Allow Cross Agent", "type": "boolean"}
    assert set(defs["Limits"]["required"]) == {"max_sessions", "max_items", "max_snippet_chars",
                                                "max_total_chars"}
    assert set(defs["Revision"]["required"]) == {"current"}
    assert schema["properties"]["trigger"]["enum"] == [
        "replan_repetition", "hypothesis_history_gap", "resume_or_handoff_gap", "operator_requested_history"]


def test_result_and_receipt_fields_match_rfc_exactly() -> None:
    assert set(_props(HistoricalEvidenceResultV0)) == {
        "schema_version", "request_id", "provider_id", "provider_version", "index_revision", "scope_applied",
        "freshness", "items", "truncated", "omitted_count"}
    item = HistoricalEvidenceResultV0.model_json_schema()["$defs"]["EvidenceItem"]
    assert set(item["properties"]) == {"session_ref", "message_ref", "evidence_type", "observed_at",
                                       "revision_ref", "snippet"}
    assert set(item["required"]) == {"session_ref", "evidence_type", "snippet"}
    receipt = _props(HistoricalEvidenceReceiptV0)
    assert set(receipt) == {
        "schema_version", "request_id", "provider_id", "provider_version", "index_revision_digest",
        "scope_digest", "query_digest", "result_digest", "result_count", "evidence_type_counts", "freshness",
        "truncated", "omitted_count", "grants_new_action_authority", "external_writes_performed",
        "raw_content_captured"}
    for literal in ("grants_new_action_authority", "external_writes_performed", "raw_content_captured"):
        assert receipt[literal]["const"] is False
    assert receipt["provider_id"]["const"] == "obelisk-session-evidence"
    assert receipt["freshness"]["enum"] == ["fresh", "stale", "incomplete", "unknown"]


def test_valid_request_round_trips_exactly() -> None:
    request = make_request(revision={"current": "abc123", "merge_base": "def456"})
    parsed = parse_request(json.dumps(request).encode())
    assert parsed.as_dict() == request


@pytest.mark.parametrize(("mutate", "code"), [
    (lambda r: r.update(extra=1), "unknown_field"),
    (lambda r: r["scope"].update(team="x"), "unknown_field"),
    (lambda r: r["limits"].update(max_bytes=1), "unknown_field"),
    (lambda r: r["scope"].update(allow_cross_agent=True), "cross_scope_requested"),
    (lambda r: r["scope"].update(allow_cross_project=True), "cross_scope_requested"),
    (lambda r: r["scope"].update(allow_cross_agent=0), "cross_scope_requested"),
    (lambda r: r["scope"].pop("agent_id"), "invalid_request"),
    (lambda r: r.pop("scope"), "invalid_request"),
    (lambda r: r.update(trigger="whenever"), "invalid_request"),
    (lambda r: r.update(evidence_types=["gossip"]), "invalid_request"),
    (lambda r: r.update(schema_version="historical_evidence_request_v1"), "invalid_request"),
    (lambda r: r["limits"].update(max_items="5"), "invalid_request"),
    (lambda r: r["limits"].update(max_items=True), "invalid_request"),
    (lambda r: r["limits"].update(max_items=5.0), "invalid_request"),
    (lambda r: r.update(revision=None), "invalid_request"),
    (lambda r: r.update(query_terms="jwt"), "invalid_request"),
    (lambda r: r.update(request_id=7), "invalid_request"),
])
def test_request_rejections_are_typed(mutate: Any, code: str) -> None:
    request = make_request()
    mutate(request)
    err = _reject(json.dumps(request).encode())
    assert err.code == code
    assert err.outcome == "rejected"


@pytest.mark.parametrize(("payload", "code"), [
    (b"", "malformed_json"),
    (b"not json", "malformed_json"),
    (b"[1, 2]", "malformed_json"),
    (b'{"a": 1, "a": 2}', "malformed_json"),
    (b"\xff\xfe{}", "malformed_json"),
    (b"[" * 100 + b"]" * 100, "malformed_json"),
    (b'{"x": ' + b"9" * 5000 + b"}", "malformed_json"),
    (b'{"x": NaN}', "malformed_json"),
    (b" " * (MAX_REQUEST_BYTES + 1), "request_too_large"),
])
def test_malformed_payloads_are_rejected(payload: bytes, code: str) -> None:
    assert _reject(payload).code == code


def test_rejection_detail_never_echoes_request_content() -> None:
    secret = "PRIVATE-TERM-CANARY-123"
    for request in (make_request(**{secret: 1}), make_request(trigger=secret),
                    make_request(query_terms=[secret], limits={"max_items": secret})):
        err = _reject(json.dumps(request).encode())
        assert secret not in err.detail
        assert secret not in str(err)


def test_every_error_code_is_documented_in_the_readme() -> None:
    from tests.conftest import REPO

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    for code in ERROR_CODES:
        assert f"`{code}`" in readme, code


def test_the_readme_request_example_is_a_valid_request() -> None:
    from tests.conftest import REPO

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    example = readme.split("A request (`request.json`)", 1)[1].split("```json\n", 1)[1].split("```", 1)[0]
    assert parse_request(example.encode()).schema_version == "historical_evidence_request_v0"
