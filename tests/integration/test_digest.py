"""Issue 12, items 7 and 9 (receipt): keyed public digests, a query without the key, and a receipt recomputed
field by field from the result it stands for (the key file itself: tests/unit/test_digest_key.py)."""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from obelisk_session_evidence.digest import (
    KEYED_PREFIX,
    DigestKey,
    content_digest,
    key_path,
    load_key,
)
from obelisk_session_evidence.fixtures.builder import FixtureInfo, build_fixture
from obelisk_session_evidence.service import answer

from tests.conftest import make_request, scope_entry, write_config

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
