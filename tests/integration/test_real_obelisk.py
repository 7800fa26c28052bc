"""End to end on the database built by the real Obelisk indexer (../shared/real-obelisk).

Each fact of ground_truth.json is found with the right evidence type under its own agent and repository
scope, and never under another agent's or another repository's scope. The originals stay byte-identical.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from obelisk_session_evidence.service import answer

from tests.conftest import make_request, scope_entry, write_config
from tests.realobelisk import HOME, materialize, real_dir

REPOS = {"acme-api": f"{HOME}/src/acme-api", "acme-web": f"{HOME}/src/acme-web",
         "acme-api-wt-auth": f"{HOME}/src/acme-api-wt-auth"}
AGENTS = {"claude": "claude-main", "codex": "codex-main"}

# fact id -> (db, evidence type, query terms, a substring the evidence must show)
FACTS: dict[str, tuple[str, str, list[str], str]] = {
    "F1": ("fresh", "prior_failure", ["ModuleNotFoundError", "jwt"], "No module named 'jwt'"),
    "F4": ("fresh", "decision", ["redis", "TTLCache"], "TTLCache"),
    "F5": ("fresh", "prior_failure", ["test_report_invalidation"], "stale report returned after update"),
    "F7": ("fresh", "prior_failure", ["Connection refused", "5432"], "Connection refused"),
    "F8": ("fresh", "file_history", ["last_login_at"], "alembic/versions/3f2a1c9d8e7b_add_last_login_at.py"),
    "F9": ("fresh", "prior_failure", ["TS2322"], "TS2322"),
    "F10": ("fresh", "decision", ["eslint-plugin-import-x"], "eslint-plugin-import-x"),
    "F11": ("fresh", "prior_failure", ["context.getScope"], "context.getScope is not a function"),
    "F12": ("fresh", "decision", ["freezegun"], "freezegun"),
    "F13": ("fresh", "prior_failure", ["requirements-dev.txt"], "File has not been read yet"),
    "F16": ("fresh", "prior_failure", ["ExpiredSignatureError"], "ExpiredSignatureError"),
    "F14": ("reindexed", "prior_failure", ["Hydration failed"], "Hydration failed"),
    "F15": ("reindexed", "prior_failure", ["RepositoryNotFoundException"], "RepositoryNotFoundException"),
}


@pytest.fixture(scope="module")
def truth() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((real_dir() / "ground_truth.json").read_text(encoding="utf-8"))
    return data


@pytest.fixture(scope="module")
def dbs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    materialize("fresh")
    out = tmp_path_factory.mktemp("real")
    copies = {}
    for name in ("fresh", "stale", "reindexed"):
        copies[name] = out / f"{name}.sqlite"
        shutil.copyfile(real_dir() / f"{name}.sqlite", copies[name])
    return copies


def _ask(tmp_path: Path, db: Path, source: str, repo: str, etype: str, terms: list[str]) -> dict[str, Any]:
    agent = AGENTS[source]
    config = write_config(tmp_path / f"config-{source}-{repo}.json",
                          [scope_entry(agent, "acme", repo, [source], [REPOS[repo]])])
    request = make_request(scope={"agent_id": agent, "project_id": "acme", "repository_id": repo,
                                  "allow_cross_agent": False, "allow_cross_project": False},
                           evidence_types=[etype], query_terms=terms,
                           limits={"max_sessions": 10, "max_items": 10, "max_snippet_chars": 400,
                                   "max_total_chars": 6000})
    response = answer(json.dumps(request).encode(), db_path=db, config_path=config)
    assert response.envelope["outcome"] == "ok", response.envelope["error"]
    return response.envelope


def _fact(truth: dict[str, Any], fact_id: str) -> dict[str, Any]:
    return next(f for f in truth["facts"] if f["id"] == fact_id)


@pytest.mark.real_obelisk
@pytest.mark.parametrize("fact_id", sorted(FACTS))
def test_fact_found_in_its_own_scope(fact_id: str, truth: dict[str, Any], dbs: dict[str, Path],
                                     tmp_path: Path) -> None:
    db_name, etype, terms, shown = FACTS[fact_id]
    fact = _fact(truth, fact_id)
    envelope = _ask(tmp_path, dbs[db_name], fact["source"], fact["project"], etype, terms)
    items = [i for i in envelope["result"]["items"] if i["session_ref"] == fact["db_session_id"]]
    assert items, f"{fact_id} not found"
    assert any(i["evidence_type"] == etype and shown in i["snippet"] for i in items), items
    assert all(len(i["snippet"]) <= 400 for i in envelope["result"]["items"])


@pytest.mark.real_obelisk
@pytest.mark.parametrize("fact_id", sorted(FACTS))
def test_fact_never_returned_under_another_scope(fact_id: str, truth: dict[str, Any], dbs: dict[str, Path],
                                                 tmp_path: Path) -> None:
    db_name, etype, terms, _shown = FACTS[fact_id]
    fact = _fact(truth, fact_id)
    other_source = "codex" if fact["source"] == "claude" else "claude"
    other_repos = [r for r in REPOS if r != fact["project"]]
    for source, repo in [(other_source, fact["project"])] + [(fact["source"], r) for r in other_repos]:
        envelope = _ask(tmp_path, dbs[db_name], source, repo, etype, terms)
        refs = {i["session_ref"] for i in envelope["result"]["items"]}
        assert fact["db_session_id"] not in refs, (fact_id, source, repo)


@pytest.mark.real_obelisk
@pytest.mark.parametrize("fact_id", ["F14", "F15"])
def test_appended_facts_only_after_reindex(fact_id: str, truth: dict[str, Any], dbs: dict[str, Path],
                                           tmp_path: Path) -> None:
    _db, etype, terms, _shown = FACTS[fact_id]
    fact = _fact(truth, fact_id)
    for db_name in ("fresh", "stale"):
        envelope = _ask(tmp_path, dbs[db_name], fact["source"], fact["project"], etype, terms)
        assert fact["db_session_id"] not in {i["session_ref"] for i in envelope["result"]["items"]}


@pytest.mark.real_obelisk
def test_f1_end_to_end_and_nothing_from_acme_web(truth: dict[str, Any], dbs: dict[str, Path],
                                                tmp_path: Path) -> None:
    envelope = _ask(tmp_path, dbs["fresh"], "claude", "acme-api-wt-auth", "prior_failure",
                    ["pytest -k auth", "ModuleNotFoundError", "jwt"])
    result = envelope["result"]
    web = {s["db_session_id"] for s in truth["sessions"] if s["project"] == "acme-web"}
    assert result["items"]
    assert not web & {i["session_ref"] for i in result["items"]}
    first = result["items"][0]
    assert first["session_ref"] == _fact(truth, "F1")["db_session_id"]
    assert "pytest -k auth" in first["snippet"] and "No module named 'jwt'" in first["snippet"]
    assert first["message_ref"].startswith("toolu_")
    assert first["revision_ref"] == "feat/jwt-auth"
    assert result["freshness"] == "fresh"
    receipt = envelope["receipt"]
    assert receipt["result_count"] == len(result["items"])
    text = json.dumps(receipt)
    for private in ("jwt", "pytest", "obelisk-home", first["session_ref"], first["message_ref"]):
        assert private not in text


@pytest.mark.real_obelisk
def test_originals_stay_byte_identical(dbs: dict[str, Path]) -> None:
    sums = dict(line.split()[::-1] for line in (real_dir() / "SHA256SUMS").read_text().splitlines())
    for name in ("fresh", "stale", "reindexed"):
        digest = hashlib.sha256((real_dir() / f"{name}.sqlite").read_bytes()).hexdigest()
        assert digest == sums[f"{name}.sqlite"]
        assert hashlib.sha256(dbs[name].read_bytes()).hexdigest() == sums[f"{name}.sqlite"]


@pytest.mark.real_obelisk
def test_stale_index_says_so_and_empty_is_not_absence(truth: dict[str, Any], dbs: dict[str, Path],
                                                      tmp_path: Path) -> None:
    """F14 happened after the build: stale.sqlite cannot show it, and the answer says the index is stale."""
    from tests.realobelisk import materialized

    _db, etype, terms, _shown = FACTS["F14"]
    fact = _fact(truth, "F14")
    with materialized("stale"):
        envelope = _ask(tmp_path, dbs["stale"], fact["source"], fact["project"], etype, terms)
        assert fact["db_session_id"] not in {i["session_ref"] for i in envelope["result"]["items"]}
        assert envelope["result"]["freshness"] == "stale"
        assert envelope["receipt"]["freshness"] == "stale"
        assert envelope["provider_meta"]["freshness_detail"]["stale"] == 1
        reindexed = _ask(tmp_path, dbs["reindexed"], fact["source"], fact["project"], etype, terms)
        assert reindexed["result"]["freshness"] == "fresh"
        assert fact["db_session_id"] in {i["session_ref"] for i in reindexed["result"]["items"]}
    materialize("fresh")
