"""Several repositories per agent and project (issue 10.3): keyed enablements, --replace, disable per
repository or all, and --source checked against the sources the index knows."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from obelisk_session_evidence.admission.config import load_config

from tests.conftest import CLI, REPO, make_request


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    from obelisk_session_evidence.fixtures.builder import build_fixture

    info = build_fixture(tmp_path_factory.mktemp("multi"), generation="current")
    return info.db_path, json.loads(info.manifest_path.read_text(encoding="utf-8"))


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    base = {k: v for k, v in os.environ.items() if not k.startswith(("OBELISK", "GIT_"))}
    base.update({"HOME": str(home), "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
                 "OBELISK_SESSION_EVIDENCE_CONFIG": str(tmp_path / "config.json")})
    return base


def cli(env: dict[str, str], *args: str, stdin: bytes = b"") -> tuple[int, dict[str, Any]]:
    proc = subprocess.run([*CLI, *args], input=stdin, capture_output=True, env=env, cwd=REPO, timeout=120,
                          check=False)
    assert proc.stderr == b"", proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def enable(env: dict[str, str], db: Path, repo: str, root: str, *extra: str, agent: str = "claude-agent",
           source: str = "claude") -> tuple[int, dict[str, Any]]:
    return cli(env, "enable", "--db", str(db), "--agent-id", agent, "--project-id", "demo", "--repository-id",
               repo, "--source", source, "--root", root, *extra)


def ask(env: dict[str, str], db: Path, repo: str, types: list[str], terms: list[str],
        agent: str = "claude-agent") -> tuple[int, dict[str, Any]]:
    request = make_request(scope={"agent_id": agent, "project_id": "demo", "repository_id": repo,
                                  "allow_cross_agent": False, "allow_cross_project": False},
                           evidence_types=types, query_terms=terms)
    return cli(env, "query", "--db", str(db), stdin=json.dumps(request).encode())


def test_two_repositories_answer_side_by_side(demo: tuple[Path, dict[str, Any]], env: dict[str, str]) -> None:
    db, manifest = demo
    repos = manifest["repos"]
    code, first = enable(env, db, "alpha-svc", repos["alpha-svc"])
    assert code == 0 and first["action"] == "enabled" and first["sources_checked"] is True
    code, second = enable(env, db, "beta-web", repos["beta-web"])
    assert code == 0 and second["action"] == "enabled"
    assert second["repositories_of_agent_and_project"] == ["alpha-svc", "beta-web"]
    scopes = load_config(Path(env["OBELISK_SESSION_EVIDENCE_CONFIG"])).scopes
    assert [(s.repository_id, s.roots) for s in scopes] == [("alpha-svc", (repos["alpha-svc"],)),
                                                            ("beta-web", (repos["beta-web"],))]
    code, alpha = ask(env, db, "alpha-svc", ["prior_failure"], ["ModuleNotFoundError", "stripe"])
    assert code == 0 and alpha["result"]["items"]
    code, beta = ask(env, db, "beta-web", ["file_history", "summary"], ["Button"])
    assert code == 0 and beta["result"]["items"]
    assert any("Button.tsx" in item["snippet"] for item in beta["result"]["items"])
    assert not any("stripe" in item["snippet"] for item in beta["result"]["items"])
    assert not any("Button" in item["snippet"] for item in alpha["result"]["items"])
    assert alpha["receipt"]["scope_digest"] != beta["receipt"]["scope_digest"]
    # Admission picks the exact (agent, project, repository); anything else is refused as before.
    assert ask(env, db, "gamma-cli", ["prior_failure"], ["x"])[1]["error"]["code"] == "scope_mismatch"
    assert ask(env, db, "beta-web", ["prior_failure"], ["x"], agent="codex-agent")[1]["error"]["code"] == \
        "not_enabled"


def test_replacing_needs_replace_and_names_ids_only(demo: tuple[Path, dict[str, Any]], env: dict[str, str],
                                                   tmp_path: Path) -> None:
    db, manifest = demo
    repos = manifest["repos"]
    assert enable(env, db, "alpha-svc", repos["alpha-svc"])[0] == 0
    config = Path(env["OBELISK_SESSION_EVIDENCE_CONFIG"])
    before = config.read_bytes()
    code, doc = enable(env, db, "alpha-svc", repos["alpha-svc-wt"])
    assert code == 2
    assert doc["error"]["code"] == "already_enabled"
    assert "alpha-svc" in doc["error"]["detail"] and "--replace" in doc["error"]["detail"]
    assert repos["alpha-svc"] not in json.dumps(doc) and repos["alpha-svc-wt"] not in json.dumps(doc)
    assert config.read_bytes() == before
    code, doc = enable(env, db, "alpha-svc", repos["alpha-svc-wt"], "--replace")
    assert code == 0 and doc["action"] == "replaced"
    assert [s.roots for s in load_config(config).scopes] == [(repos["alpha-svc-wt"],)]


def test_disable_one_repository_or_all(demo: tuple[Path, dict[str, Any]], env: dict[str, str]) -> None:
    db, manifest = demo
    repos = manifest["repos"]
    for repo in ("alpha-svc", "beta-web"):
        assert enable(env, db, repo, repos[repo])[0] == 0
    assert enable(env, db, "alpha-svc", repos["alpha-svc"], agent="codex-agent", source="codex")[0] == 0
    code, doc = cli(env, "disable", "--agent-id", "claude-agent", "--project-id", "demo", "--repository-id",
                    "beta-web")
    assert code == 0
    assert doc["removed"] == [{"agent_id": "claude-agent", "project_id": "demo", "repository_id": "beta-web"}]
    assert doc["remaining_scopes"] == 2
    code, doc = cli(env, "disable", "--agent-id", "claude-agent", "--project-id", "demo", "--repository-id",
                    "beta-web")
    assert code == 2 and doc["error"]["code"] == "not_enabled"
    assert enable(env, db, "beta-web", repos["beta-web"])[0] == 0
    code, doc = cli(env, "disable", "--agent-id", "claude-agent", "--project-id", "demo")
    assert code == 0
    assert [r["repository_id"] for r in doc["removed"]] == ["alpha-svc", "beta-web"]
    assert [s.agent_id for s in load_config(Path(env["OBELISK_SESSION_EVIDENCE_CONFIG"])).scopes] == \
        ["codex-agent"]


def test_source_is_checked_against_the_index(demo: tuple[Path, dict[str, Any]], env: dict[str, str],
                                             tmp_path: Path) -> None:
    db, manifest = demo
    root = manifest["repos"]["alpha-svc"]
    code, doc = enable(env, db, "alpha-svc", root, source="claud")
    assert code == 2
    assert doc["error"]["code"] == "unknown_source"
    assert "known: claude, codex" in doc["error"]["detail"]
    assert not Path(env["OBELISK_SESSION_EVIDENCE_CONFIG"]).exists()
    code, doc = enable(env, db, "alpha-svc", root, "--allow-unknown-source", source="kimi")
    assert code == 0 and doc["sources_checked"] is True and doc["unknown_sources_allowed"] == ["kimi"]
    # No index yet: the sources cannot be checked; enable goes ahead and says so.
    code, doc = enable(env, tmp_path / "no-index.sqlite", "beta-web", manifest["repos"]["beta-web"])
    assert code == 0
    assert doc["sources_checked"] is False and doc["sources_not_checked_because"] == "index_missing"
