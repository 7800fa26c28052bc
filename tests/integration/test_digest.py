"""Issue 12, items 7 and 9 (receipt): keyed public digests, the key's life cycle, and a receipt recomputed
field by field from the result it stands for."""

from __future__ import annotations

import json
import os
import re
import stat
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from obelisk_session_evidence.digest import (
    KEYED_PREFIX,
    DigestKey,
    canonical_json,
    content_digest,
    ensure_key,
    key_path,
    load_key,
)
from obelisk_session_evidence.fixtures.builder import FixtureInfo, build_fixture
from obelisk_session_evidence.service import answer

from tests.conftest import REPO, make_request, scope_entry, write_config

LIMITS = {"max_sessions": 20, "max_items": 20, "max_snippet_chars": 600, "max_total_chars": 12000}
TYPES = ["prior_failure", "decision", "tool_outcome", "summary", "file_history"]
TERMS = ["stripe", "billing", "ModuleNotFoundError"]


@pytest.fixture(scope="module")
def fx(tmp_path_factory: pytest.TempPathFactory) -> tuple[FixtureInfo, dict[str, Any]]:
    info = build_fixture(tmp_path_factory.mktemp("fx") / "current", generation="current")
    return info, json.loads(info.manifest_path.read_text(encoding="utf-8"))


def _scope(manifest: dict[str, Any]) -> dict[str, Any]:
    return scope_entry("claude-agent", "demo", "alpha-svc", manifest["agents"]["claude-agent"],
                       [manifest["repos"]["alpha-svc"]])


def _request(limits: dict[str, int] | None = None) -> dict[str, Any]:
    return make_request(scope={"agent_id": "claude-agent", "project_id": "demo", "repository_id": "alpha-svc",
                               "allow_cross_agent": False, "allow_cross_project": False},
                        evidence_types=TYPES, query_terms=TERMS, limits=limits or LIMITS)


def _answer(info: FixtureInfo, config: Path, request: dict[str, Any]) -> dict[str, Any]:
    return answer(json.dumps(request).encode(), db_path=info.db_path, config_path=config).envelope


def _bases(scope: dict[str, Any], request: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The scope and query bases, written out here from the config and the request (not from the code)."""
    scope_basis = {"agent_id": scope["agent_id"], "project_id": scope["project_id"],
                   "repository_id": scope["repository_id"], "sources": sorted(scope["sources"]),
                   "roots": sorted(scope["roots"])}
    query_basis = {"trigger": request["trigger"], "evidence_types": request["evidence_types"],
                   "query_terms": request["query_terms"], "limits": request["limits"], "revision": None}
    return scope_basis, query_basis


def _recomputed(envelope: dict[str, Any], key: DigestKey, scope: dict[str, Any],
                request: dict[str, Any]) -> dict[str, Any]:
    result = envelope["result"]
    scope_basis, query_basis = _bases(scope, request)
    return {
        "schema_version": "historical_evidence_receipt_v0",
        "request_id": request["request_id"],
        "provider_id": "obelisk-session-evidence",
        "provider_version": result["provider_version"],
        "index_revision_digest": key.of(result["index_revision"]),
        "scope_digest": key.of(scope_basis),
        "query_digest": key.of(query_basis),
        "result_digest": key.of(result),
        "result_count": len(result["items"]),
        "evidence_type_counts": dict(sorted(Counter(i["evidence_type"] for i in result["items"]).items())),
        "freshness": result["freshness"],
        "truncated": result["truncated"],
        "omitted_count": result["omitted_count"],
        "grants_new_action_authority": False,
        "external_writes_performed": False,
        "raw_content_captured": False,
    }


@pytest.mark.parametrize("max_items", [20, 2])
def test_every_receipt_field_is_recomputed_from_the_result(fx: tuple[FixtureInfo, dict[str, Any]],
                                                           tmp_path: Path, max_items: int) -> None:
    info, manifest = fx
    scope = _scope(manifest)
    config = write_config(tmp_path / "config.json", [scope], transcript_homes=[str(info.home)])
    request = _request({**LIMITS, "max_items": max_items})
    envelope = _answer(info, config, request)
    assert envelope["outcome"] == "ok", envelope["error"]
    receipt = envelope["receipt"]
    assert receipt == _recomputed(envelope, load_key(config), scope, request)
    # The cases this test needs to tell digests and counts apart were really exercised.
    assert receipt["result_count"] >= 2 and len(receipt["evidence_type_counts"]) >= (2 if max_items > 2 else 1)
    if max_items == 2:  # richer snippets can truncate the larger answer too; the small one must be
        assert receipt["truncated"] is True and receipt["omitted_count"] > 0
    assert receipt["scope_digest"] != receipt["query_digest"] != receipt["result_digest"]


def test_digests_are_keyed_per_install_and_stable_within_one(fx: tuple[FixtureInfo, dict[str, Any]],
                                                             tmp_path: Path) -> None:
    info, manifest = fx
    scope = _scope(manifest)
    request = _request()
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    one = write_config(tmp_path / "one" / "config.json", [scope], transcript_homes=[str(info.home)])
    two = write_config(tmp_path / "two" / "config.json", [scope], transcript_homes=[str(info.home)])
    first, again, other = (_answer(info, one, request)["receipt"], _answer(info, one, request)["receipt"],
                           _answer(info, two, request)["receipt"])
    names = ("index_revision_digest", "scope_digest", "query_digest", "result_digest")
    for name in names:
        assert first[name] == again[name]  # same install: replay and dedupe still work
        assert first[name] != other[name]  # another install's key: another digest
        assert first[name].startswith(KEYED_PREFIX) and re.fullmatch(r"[0-9a-f]{64}", first[name][12:])
    # Without the key, a guess cannot be confirmed: the unkeyed digest of the right basis does not match.
    scope_basis, query_basis = _bases(scope, request)
    assert content_digest(query_basis).split(":")[1] != first["query_digest"].split(":")[1]
    assert content_digest(scope_basis).split(":")[1] != first["scope_digest"].split(":")[1]


def test_a_query_without_the_key_is_refused_and_creates_nothing(fx: tuple[FixtureInfo, dict[str, Any]],
                                                                tmp_path: Path) -> None:
    info, manifest = fx
    config = write_config(tmp_path / "config.json", [_scope(manifest)], transcript_homes=[str(info.home)])
    key_path(config).unlink()
    before = sorted(os.listdir(tmp_path))
    envelope = _answer(info, config, _request())
    assert envelope["outcome"] == "rejected" and envelope["error"]["code"] == "config_invalid"
    assert "rotate-key" in envelope["error"]["detail"] and str(tmp_path) not in json.dumps(envelope)
    assert envelope["receipt"] is None
    assert sorted(os.listdir(tmp_path)) == before  # no key made at query time


@pytest.mark.parametrize("content", [b"", b"zz" * 32, b"ab" * 31 + b"\n", b"ab" * 33, b"\xff" * 64])
def test_a_malformed_key_is_refused(tmp_path: Path, content: bytes) -> None:
    config = tmp_path / "config.json"
    key_path(config).write_bytes(content)
    key_path(config).chmod(0o600)  # private: refused for its content alone
    with pytest.raises(Exception) as caught:
        load_key(config)
    assert getattr(caught.value, "code", None) == "config_invalid"


def test_a_key_that_is_not_a_regular_file_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    key_path(config).mkdir()
    with pytest.raises(Exception) as caught:
        load_key(config)
    assert getattr(caught.value, "code", None) == "config_invalid"
    os.rmdir(key_path(config))
    target = tmp_path / "elsewhere.key"
    target.write_text("ab" * 32)
    key_path(config).symlink_to(target)  # followed nowhere: O_NOFOLLOW
    with pytest.raises(Exception) as caught:
        load_key(config)
    assert getattr(caught.value, "code", None) == "config_invalid"


def test_the_key_is_made_once_owner_only_and_atomically(tmp_path: Path) -> None:
    config = tmp_path / "cfg" / "config.json"
    keys: list[DigestKey] = []
    threads = [threading.Thread(target=lambda: keys.append(ensure_key(config))) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(keys) == 8 and len({k.secret for k in keys}) == 1
    assert stat.S_IMODE(key_path(config).stat().st_mode) == 0o600
    assert sorted(os.listdir(config.parent)) == ["digest.key"]  # no temp file left behind
    assert ensure_key(config) == keys[0] == load_key(config)
    assert len(keys[0].secret) == 32
    assert keys[0].of({"a": 1}) == keys[0].of({"a": 1}) != DigestKey(b"\0" * 32).of({"a": 1})
    assert keys[0].of("x") != keys[0].of_text("x")  # canonical JSON of a string is its quoted form
    assert canonical_json("x") == b'"x"'


def test_the_provider_id_is_spelled_once() -> None:
    spelled = [path for path in (REPO / "provider").rglob("*.py")
               for _ in range(path.read_text(encoding="utf-8").count('"obelisk-session-evidence"'))]
    assert [p.relative_to(REPO).as_posix() for p in spelled] == ["provider/_version.py"]


def test_an_absent_optional_field_is_left_out_of_the_result_and_its_digest() -> None:
    """RFC §5 writes ``message_ref?: string``: an item with no message, time or branch carries no such key
    (never ``null``), in the envelope's result and in the JSON its ``result_digest`` is taken over."""
    from obelisk_session_evidence.bounding.receipt import build_receipt, build_result
    from obelisk_session_evidence.contract.models import HistoricalEvidenceResultV0
    from obelisk_session_evidence.contract.wire import EvidenceItem

    wire = build_result(request_id="r", index_revision="obx1-x", agent_id="a", project_id="p", repository_id="r",
                        freshness="fresh", truncated=False, omitted_count=0,
                        items=[EvidenceItem(session_ref="s1", evidence_type="summary", snippet="a title"),
                               EvidenceItem(session_ref="s2", message_ref="m2", evidence_type="decision",
                                            snippet="b", observed_at="2026-01-01T00:00:00Z", revision_ref="main")])
    assert wire["items"][0] == {"session_ref": "s1", "evidence_type": "summary", "snippet": "a title"}
    assert set(wire["items"][1]) == {"session_ref", "message_ref", "evidence_type", "snippet", "observed_at",
                                     "revision_ref"}
    # the contract of record reads it back to the same JSON (nothing dropped, nothing null)
    assert HistoricalEvidenceResultV0.model_validate(wire).model_dump(mode="json", exclude_none=True) == wire
    key = DigestKey(b"k" * 32)
    receipt = build_receipt(wire, scope_basis={}, query_basis={}, key=key)
    assert receipt["result_digest"] == key.of(wire)
    assert b"null" not in canonical_json(wire)
