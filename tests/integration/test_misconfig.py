"""Misconfiguration is loud and nothing verified is never "fresh" (issues 10.4, 10.5).

* an enabled scope whose sources or roots match no session of the index: ``scope_matches_no_session`` in the
  answer's ``provider_meta.degradations`` and in ``status`` (JSON and text);
* freshness is ``unknown`` when no in-scope unit could be verified (the transcript homes missing; every
  in-scope transcript gone), the reason in ``freshness_detail``;
* a ``revision`` that does not resolve in the bound repository: ``revision_unresolved``.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from obelisk_session_evidence.service import answer

from tests.conftest import make_request, run_cli, scope_entry, write_config

AGENT = "claude-agent"


@pytest.fixture
def fixture(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    from obelisk_session_evidence.fixtures.builder import build_fixture

    info = build_fixture(tmp_path / "fx", generation="current")
    return info.db_path, json.loads(info.manifest_path.read_text(encoding="utf-8"))


def _request(**overrides: Any) -> bytes:
    return json.dumps(make_request(
        scope={"agent_id": AGENT, "project_id": "demo", "repository_id": "alpha-svc",
               "allow_cross_agent": False, "allow_cross_project": False},
        evidence_types=["prior_failure"], query_terms=["ModuleNotFoundError", "stripe"], **overrides)).encode()


def _config(path: Path, manifest: dict[str, Any], *, sources: list[str], root: str,
            homes: list[str] | None = None) -> Path:
    return write_config(path, [scope_entry(AGENT, "demo", "alpha-svc", sources, [root])],
                        transcript_homes=homes if homes is not None else [manifest["home"]])


def test_scope_matching_no_session_is_a_named_degradation(fixture: tuple[Path, dict[str, Any]],
                                                         tmp_path: Path, isolated_env: dict[str, str]) -> None:
    db, manifest = fixture
    good = _config(tmp_path / "good.json", manifest, sources=["claude"], root=manifest["repos"]["alpha-svc"])
    envelope = answer(_request(), db_path=db, config_path=good).envelope
    assert envelope["result"]["items"]
    assert "scope_matches_no_session" not in envelope["provider_meta"]["degradations"]
    empty_root = tmp_path / "elsewhere"
    empty_root.mkdir()
    for name, sources, root in (("root", ["claude"], str(empty_root)),
                                ("source", ["kimi"], manifest["repos"]["alpha-svc"])):
        config = _config(tmp_path / f"{name}.json", manifest, sources=sources, root=root)
        envelope = answer(_request(), db_path=db, config_path=config).envelope
        assert envelope["outcome"] == "ok" and envelope["result"]["items"] == []
        assert "scope_matches_no_session" in envelope["provider_meta"]["degradations"], name
        result = run_cli("status", "--format", "json", "--db", str(db), "--config", str(config), env=isolated_env)
        scope = json.loads(result.stdout)["scopes"][0]
        assert scope["sessions_in_index"] == 0 and scope["degradations"] == ["scope_matches_no_session"]
        text = run_cli("status", "--db", str(db), "--config", str(config), env=isolated_env).stdout
        assert "scope_matches_no_session" in text
    result = run_cli("status", "--format", "json", "--db", str(db), "--config", str(good), env=isolated_env)
    scope = json.loads(result.stdout)["scopes"][0]
    assert scope["sessions_in_index"] > 0 and scope["degradations"] == []



@pytest.mark.parametrize("recency_days", [36500, 1])
def test_a_scope_with_sessions_but_no_hit_is_not_flagged(fixture: tuple[Path, dict[str, Any]], tmp_path: Path,
                                                         recency_days: int) -> None:
    """No item is not "no session": with sessions in the window (read once, the scope set) and with every
    session older than the window (the scope then read again over all time), nothing is flagged."""
    db, manifest = fixture
    config = write_config(tmp_path / "c.json", [scope_entry(AGENT, "demo", "alpha-svc", ["claude"],
                                                            [manifest["repos"]["alpha-svc"]])],
                          transcript_homes=[manifest["home"]], recency_days=recency_days)
    request = json.dumps(make_request(
        scope={"agent_id": AGENT, "project_id": "demo", "repository_id": "alpha-svc",
               "allow_cross_agent": False, "allow_cross_project": False},
        evidence_types=["prior_failure"], query_terms=["zqxjkvwy"])).encode()
    envelope = answer(request, db_path=db, config_path=config).envelope
    assert envelope["outcome"] == "ok" and envelope["result"]["items"] == []
    assert "scope_matches_no_session" not in envelope["provider_meta"]["degradations"]

def test_missing_homes_give_unknown_with_the_reason(fixture: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    db, manifest = fixture
    root = manifest["repos"]["alpha-svc"]
    fresh = answer(_request(), db_path=db,
                   config_path=_config(tmp_path / "ok.json", manifest, sources=["claude"], root=root)).envelope
    assert fresh["result"]["freshness"] == "fresh"
    gone = _config(tmp_path / "gone.json", manifest, sources=["claude"], root=root,
                   homes=[str(tmp_path / "no-such-home")])
    envelope = answer(_request(), db_path=db, config_path=gone).envelope
    assert envelope["result"]["freshness"] == "unknown"
    assert envelope["receipt"]["freshness"] == "unknown"
    assert envelope["provider_meta"]["freshness_detail"]["unknown_reason_unreadable_home"] == 1


def test_every_in_scope_file_gone_is_unknown_not_fresh(fixture: tuple[Path, dict[str, Any]],
                                                       tmp_path: Path) -> None:
    db, manifest = fixture
    root = manifest["repos"]["alpha-svc"]
    config = _config(tmp_path / "c.json", manifest, sources=["claude"], root=root)
    encoded = re.sub(r"[^A-Za-z0-9]", "-", root)  # Claude Code's project folder name for the root
    transcripts = Path(manifest["home"]) / ".claude" / "projects" / encoded
    assert any(transcripts.glob("*.jsonl"))
    shutil.rmtree(transcripts)
    envelope = answer(_request(), db_path=db, config_path=config).envelope
    detail = envelope["provider_meta"]["freshness_detail"]
    assert detail["missing_on_disk"] > 0 and detail["units_in_scope"] == 0
    assert envelope["result"]["freshness"] == "unknown"
    assert detail["unknown_reason_every_in_scope_file_missing"] == 1


def test_unresolvable_revision_is_disclosed(fixture: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    db, manifest = fixture
    root = manifest["repos"]["alpha-svc"]
    config = _config(tmp_path / "c.json", manifest, sources=["claude"], root=root)
    head = subprocess.run(["git", "-C", root, "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()
    resolved = answer(_request(revision={"current": head}), db_path=db, config_path=config).envelope
    assert "revision_unresolved" not in resolved["provider_meta"]["degradations"]
    missing = answer(_request(revision={"current": "0" * 40}), db_path=db, config_path=config).envelope
    assert missing["outcome"] == "ok"
    assert "revision_unresolved" in missing["provider_meta"]["degradations"]
    plain = answer(_request(), db_path=db, config_path=config).envelope
    assert "revision_unresolved" not in plain["provider_meta"]["degradations"]
