"""Lifecycle (enable / disable), repository identity and ``status``: through the real CLI and direct calls.

Default-off: nothing is readable until ``enable``; ``enable`` replaces only its own (agent, project) entry;
``disable`` touches nothing but the config; ``status --format json`` carries digests and counts, never a
local path or a query term; the text view names the stale units for the local operator.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import stat
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from obelisk_session_evidence.admission.config import load_config
from obelisk_session_evidence.commands.identity import (
    remote_digest,
    repository_identity,
)
from obelisk_session_evidence.commands.lifecycle import disable_scope, enable_scope
from obelisk_session_evidence.commands.status import status_command
from obelisk_session_evidence.digest import DigestKey, load_key

from tests import realobelisk as ro
from tests.conftest import CLI

REPO_DIR = Path(__file__).resolve().parents[2]
AGENT, PROJECT, REPOSITORY = "claude-main", "acme", "acme-api"
QUERY_CANARY = "ZZQUERYCANARYZZ"
#: A fixed digest key for the identity tests that call ``repository_identity`` directly.
KEY = DigestKey(bytes(range(32)))


# ------------------------------------------------------------------------------------------------ helpers


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """CLI environment: HOME, config and platform dirs inside tmp_path; no OBELISK_* from the caller."""
    home = tmp_path / "home"
    home.mkdir()
    base = {k: v for k, v in os.environ.items() if not k.startswith(("OBELISK", "GIT_"))}
    # The config is found at its default (platform) path: a named config that does not exist is config_invalid.
    base.update({"HOME": str(home),
                 "XDG_CONFIG_HOME": str(tmp_path / "xdg"), "XDG_CACHE_HOME": str(tmp_path / "xdg-cache"),
                 "OBELISK_DB": str(tmp_path / "no-such-obelisk.sqlite")})
    return base


def cli(env: dict[str, str], *args: str, stdin: bytes = b"") -> tuple[int, dict[str, Any], str]:
    proc = subprocess.run([*CLI, *args], input=stdin, capture_output=True,
                          env=env, cwd=REPO_DIR, timeout=120, check=False)
    stdout = proc.stdout.decode("utf-8")
    assert proc.stderr == b"", proc.stderr.decode("utf-8", "replace")
    lines = [line for line in stdout.splitlines() if line.strip()]
    assert len(lines) == 1, stdout
    return proc.returncode, json.loads(lines[0]), stdout


def cli_text(env: dict[str, str], *args: str) -> tuple[int, str]:
    proc = subprocess.run([*CLI, *args], capture_output=True, env=env,
                          cwd=REPO_DIR, timeout=120, check=False)
    assert proc.stderr == b"", proc.stderr.decode("utf-8", "replace")
    return proc.returncode, proc.stdout.decode("utf-8")


def config_file(env: dict[str, str]) -> Path:
    return Path(env["XDG_CONFIG_HOME"]) / "obelisk-session-evidence" / "config.json"


def _key(env: dict[str, str]) -> DigestKey:
    """The install's digest key, made by ``enable`` beside the config."""
    return load_key(config_file(env))


def enable_args(*roots: Path | str, agent: str = AGENT, project: str = PROJECT, repository: str = REPOSITORY,
                sources: tuple[str, ...] = ("claude",), extra: tuple[str, ...] = ()) -> list[str]:
    args = ["enable", "--agent-id", agent, "--project-id", project, "--repository-id", repository]
    for source in sources:
        args += ["--source", source]
    for root in roots:
        args += ["--root", str(root)]
    return args + list(extra)


def request(agent: str = AGENT, project: str = PROJECT, repository: str = REPOSITORY,
            terms: list[str] | None = None) -> bytes:
    return json.dumps({
        "schema_version": "historical_evidence_request_v0",
        "request_id": "req-lifecycle",
        "situation_id": "sit-lifecycle",
        "trigger": "operator_requested_history",
        "scope": {"agent_id": agent, "project_id": project, "repository_id": repository,
                  "allow_cross_agent": False, "allow_cross_project": False},
        "evidence_types": ["prior_failure"],
        "query_terms": terms or ["ModuleNotFoundError", "jwt"],
        "limits": {"max_sessions": 5, "max_items": 8, "max_snippet_chars": 300, "max_total_chars": 3000},
    }).encode()


def direct_enable(config: Path, roots: list[str], **overrides: Any) -> tuple[int, dict[str, Any]]:
    kwargs: dict[str, Any] = {"config_path": config, "agent_id": AGENT, "project_id": PROJECT,
                              "repository_id": REPOSITORY, "sources": ["claude"], "roots": roots,
                              "stage": 1, "include_worktrees": False, "qualification_report": None}
    kwargs.update(overrides)
    out = io.StringIO()
    code = enable_scope(out=out, **kwargs)
    lines = out.getvalue().splitlines()
    assert len(lines) == 1
    return code, json.loads(lines[0])


def sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ------------------------------------------------------------------------------------------------ git


GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test Author", "GIT_AUTHOR_EMAIL": "author@example.invalid",
    "GIT_AUTHOR_DATE": "2026-01-02T03:04:05Z",
    "GIT_COMMITTER_NAME": "Test Committer", "GIT_COMMITTER_EMAIL": "committer@example.invalid",
    "GIT_COMMITTER_DATE": "2026-01-02T03:04:05Z",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(cwd: Path, *args: str, home: Path) -> str:
    genv = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    genv.update(GIT_ENV)
    genv.update({"HOME": str(home), "GIT_CONFIG_GLOBAL": os.devnull})
    proc = subprocess.run(["git", *args], cwd=cwd, env=genv, capture_output=True, timeout=30, check=True)
    return proc.stdout.decode("utf-8")


@pytest.fixture
def git_repo(tmp_path: Path) -> tuple[Path, Path, str]:
    """A repository with one commit, an origin remote and a linked worktree: (repo, worktree, root commit)."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    home = tmp_path / "git-home"
    home.mkdir()
    repo = tmp_path / "acme-api"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main", home=home)
    (repo / "README").write_text("acme api\n")
    git(repo, "add", "README", home=home)
    git(repo, "commit", "-q", "-m", "initial", home=home)
    git(repo, "remote", "add", "origin", "git@github.com:acme/acme-api.git", home=home)
    worktree = tmp_path / "acme-api-wt-auth"
    git(repo, "worktree", "add", "-q", "-b", "feat/jwt-auth", str(worktree), home=home)
    root_commit = git(repo, "rev-list", "--max-parents=0", "HEAD", home=home).strip()
    return repo, worktree, root_commit


# ================================================================================== repository identity


def test_identity_of_a_git_repository_and_its_worktree(git_repo: tuple[Path, Path, str]) -> None:
    repo, worktree, root_commit = git_repo
    identity, extra = repository_identity(str(repo), include_worktrees=False, key=KEY)
    assert identity.kind == "git"
    assert identity.root_commit == root_commit
    assert identity.remote_digests == (remote_digest("github.com/acme/acme-api", KEY),)
    assert identity.worktrees == (str(worktree),)
    assert extra == []
    _, extra = repository_identity(str(repo), include_worktrees=True, key=KEY)
    assert extra == [str(worktree)]
    # Seen from the linked worktree, the main checkout is the other worktree; the root commit is the same.
    from_wt, extra_wt = repository_identity(str(worktree), include_worktrees=True, key=KEY)
    assert from_wt.root_commit == root_commit
    assert from_wt.worktrees == (str(repo),)
    assert extra_wt == [str(repo)]
    assert from_wt.remote_digests == identity.remote_digests


def test_remote_digests_are_keyed(git_repo: tuple[Path, Path, str]) -> None:
    """Issue 12 item 7: a remote's digest is an HMAC under the install's key, so it cannot confirm a guessed
    remote; the same key gives the same digest (dedupe across roots and worktrees still works)."""
    repo, _worktree, _root_commit = git_repo
    identity, _ = repository_identity(str(repo), include_worktrees=False, key=KEY)
    other, _ = repository_identity(str(repo), include_worktrees=False, key=DigestKey(b"\xff" * 32))
    (digest,) = identity.remote_digests
    guess = hashlib.sha256(b"github.com/acme/acme-api").hexdigest()
    assert digest.startswith("hmac-sha256:") and guess not in digest
    assert digest == KEY.of_text("github.com/acme/acme-api")
    assert other.remote_digests != identity.remote_digests


def test_identity_ignores_git_dir_overrides(git_repo: tuple[Path, Path, str], tmp_path: Path) -> None:
    repo, _worktree, root_commit = git_repo
    other = tmp_path / "other"
    other.mkdir()
    hostile = {**os.environ, "GIT_DIR": str(other / ".git"), "GIT_WORK_TREE": str(other)}
    identity, _ = repository_identity(str(repo), include_worktrees=False, key=KEY, env=hostile)
    assert identity.kind == "git"
    assert identity.root_commit == root_commit


def test_identity_of_a_subdirectory_excludes_the_whole_checkout(git_repo: tuple[Path, Path, str]) -> None:
    repo, worktree, root_commit = git_repo
    sub = repo / "pkg"
    sub.mkdir()
    identity, extra = repository_identity(str(sub), include_worktrees=True, key=KEY)
    assert identity.root_commit == root_commit
    assert identity.worktrees == (str(worktree),)
    assert extra == [str(worktree)]


def test_plain_directory_and_missing_git(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    identity, extra = repository_identity(str(plain), include_worktrees=True, key=KEY)
    if identity.kind == "git":
        pytest.skip("tmp_path lies inside a git repository on this machine")
    assert identity.kind == "directory"
    assert identity.root_commit is None
    assert extra == []
    empty_path = tmp_path / "empty-bin"
    empty_path.mkdir()
    no_git, _ = repository_identity(str(plain), include_worktrees=True, key=KEY, env={"PATH": str(empty_path)})
    assert no_git.kind == "directory"
    gone, _ = repository_identity(str(tmp_path / "does-not-exist"), include_worktrees=True, key=KEY)
    assert gone.kind == "directory"


def test_empty_git_repository_has_no_root_commit(tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "empty-repo"
    repo.mkdir()
    git(repo, "init", "-q", home=tmp_path)
    identity, _ = repository_identity(str(repo), include_worktrees=False, key=KEY)
    assert identity.kind == "git"
    assert identity.root_commit is None
    assert identity.remote_digests == ()


# ================================================================================== enable / disable


def test_enable_writes_an_owner_only_config(tmp_path: Path, env: dict[str, str]) -> None:
    root = tmp_path / "project"
    root.mkdir()
    code, doc, stdout = cli(env, *enable_args(str(root) + "/", sources=("claude", "codex")))
    assert code == 0, doc
    assert doc["ok"] is True
    assert doc["action"] == "enabled"
    scope = doc["scope"]
    assert (scope["agent_id"], scope["project_id"], scope["repository_id"]) == (AGENT, PROJECT, REPOSITORY)
    assert scope["sources"] == ["claude", "codex"]
    assert scope["stage"] == 1
    assert scope["roots"] == 1
    assert scope["root_digests"] == [_key(env).of_text(str(root))]
    assert str(root) not in stdout
    assert str(tmp_path) not in stdout
    path = config_file(env)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    # No temp file left behind; the install's digest key beside the config, owner-only.
    assert sorted(p.name for p in path.parent.iterdir()) == ["config.json", "digest.key"]
    assert stat.S_IMODE((path.parent / "digest.key").stat().st_mode) == 0o600
    config = load_config(path)
    (entry,) = config.scopes
    assert entry.roots == (str(root),)  # abspath, trailing slash removed
    assert entry.sources == ("claude", "codex")
    assert entry.stage == 1
    assert entry.qualification is None
    assert entry.repository_identity is not None
    assert datetime.fromisoformat(entry.enabled_at.replace("Z", "+00:00")).utcoffset() is not None


def test_relative_root_is_made_absolute(tmp_path: Path) -> None:
    (tmp_path / "rel").mkdir()
    cwd = os.getcwd()
    try:
        os.chdir(tmp_path)
        code, _ = direct_enable(tmp_path / "c.json", ["rel/./"])
    finally:
        os.chdir(cwd)
    assert code == 0
    assert load_config(tmp_path / "c.json").scopes[0].roots == (str(tmp_path / "rel"),)


def test_config_lives_in_the_platform_config_dir(tmp_path: Path, env: dict[str, str]) -> None:
    if sys.platform != "linux":
        pytest.skip("XDG layout is the Linux platform config dir")
    root = tmp_path / "project"
    root.mkdir()
    env.pop("OBELISK_SESSION_EVIDENCE_CONFIG", None)
    code, _, _ = cli(env, *enable_args(root))
    assert code == 0
    expected = Path(env["XDG_CONFIG_HOME"]) / "obelisk-session-evidence" / "config.json"
    assert stat.S_IMODE(expected.stat().st_mode) == 0o600
    assert load_config(expected).scopes[0].agent_id == AGENT


def test_reenable_replaces_only_its_own_entry(tmp_path: Path, env: dict[str, str]) -> None:
    first, second, third = (tmp_path / name for name in ("first", "second", "third"))
    for root in (first, second, third):
        root.mkdir()
    assert cli(env, *enable_args(first, sources=("claude",)))[0] == 0
    assert cli(env, *enable_args(second, agent="codex-main", sources=("codex",)))[0] == 0
    code, doc, _ = cli(env, *enable_args(third, sources=("claude", "codex"), extra=("--replace",)))
    assert code == 0
    assert doc["action"] == "replaced"
    scopes = load_config(config_file(env)).scopes
    assert [(s.agent_id, s.project_id) for s in scopes] == [(AGENT, PROJECT), ("codex-main", PROJECT)]
    mine, other = scopes
    assert mine.roots == (str(third),)
    assert mine.sources == ("claude", "codex")
    assert mine.repository_id == REPOSITORY
    assert other.roots == (str(second),)
    assert other.sources == ("codex",)
    # Another repository of the same agent and project is added beside it, not replacing it.
    code, doc, _ = cli(env, *enable_args(first, repository="acme-api-v2"))
    assert (code, doc["action"]) == (0, "enabled")
    assert [s.repository_id for s in load_config(config_file(env)).scopes] == [REPOSITORY, REPOSITORY,
                                                                               "acme-api-v2"]


def test_disable_removes_and_touches_nothing_else(tmp_path: Path, env: dict[str, str]) -> None:
    root = tmp_path / "project"
    root.mkdir()
    db = tmp_path / "obelisk.sqlite"
    db.write_bytes(b"not really a database, and it must stay exactly like this")
    env["OBELISK_DB"] = str(db)
    before = (db.read_bytes(), db.stat().st_mtime_ns)
    assert cli(env, *enable_args(root))[0] == 0
    assert cli(env, *enable_args(root, agent="codex-main", sources=("codex",)))[0] == 0
    code, doc, _ = cli(env, "disable", "--agent-id", AGENT, "--project-id", PROJECT)
    assert code == 0
    assert doc == {"ok": True, "action": "disabled",
                   "removed": [{"agent_id": AGENT, "project_id": PROJECT, "repository_id": REPOSITORY}],
                   "remaining_scopes": 1}
    assert [s.agent_id for s in load_config(config_file(env)).scopes] == ["codex-main"]
    assert stat.S_IMODE(config_file(env).stat().st_mode) == 0o600
    assert (db.read_bytes(), db.stat().st_mtime_ns) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home", "obelisk.sqlite", "project", "xdg"]


def test_disable_unknown_scope_exits_2(tmp_path: Path, env: dict[str, str]) -> None:
    code, doc, _ = cli(env, "disable", "--agent-id", AGENT, "--project-id", PROJECT)
    assert code == 2
    assert doc["ok"] is False
    assert doc["error"]["code"] == "not_enabled"
    assert not config_file(env).exists()  # disabling nothing writes nothing
    root = tmp_path / "project"
    root.mkdir()
    assert cli(env, *enable_args(root))[0] == 0
    code, doc, _ = cli(env, "disable", "--agent-id", AGENT, "--project-id", "other-project")
    assert code == 2
    assert doc["error"]["code"] == "not_enabled"
    assert len(load_config(config_file(env)).scopes) == 1


@pytest.mark.parametrize("kind", ["missing", "file"])
def test_root_that_is_not_a_directory_exits_2(tmp_path: Path, env: dict[str, str], kind: str) -> None:
    good = tmp_path / "good"
    good.mkdir()
    bad = tmp_path / "secret-project-name"
    if kind == "file":
        bad.write_text("x")
    code, doc, stdout = cli(env, *enable_args(good, bad))
    assert code == 2
    assert doc == {"ok": False, "error": {"code": "root_not_directory",
                                          "detail": "--root #2 is not an existing directory"}}
    assert "secret-project-name" not in stdout
    assert not config_file(env).exists()


@pytest.mark.parametrize(("overrides", "detail_part"), [
    ({"agent_id": ""}, "--agent-id"),
    ({"project_id": " acme"}, "--project-id"),
    ({"repository_id": "a\nb"}, "--repository-id"),
    ({"sources": []}, "--source"),
    ({"sources": ["Claude"]}, "--source #1"),
    ({"sources": ["claude", "co dex"]}, "--source #2"),
    ({"roots": []}, "--root"),
    ({"stage": 3}, "--stage"),
])
def test_bad_arguments_exit_2(tmp_path: Path, overrides: dict[str, Any], detail_part: str) -> None:
    config = tmp_path / "c.json"
    roots = overrides.pop("roots", [str(tmp_path)])
    code, doc = direct_enable(config, roots, **overrides)
    assert code == 2
    assert doc["ok"] is False
    assert doc["error"]["code"] == "invalid_argument"
    assert detail_part in doc["error"]["detail"]
    assert not config.exists()
    assert not (tmp_path / "digest.key").exists()  # a refused enable makes no key either


def test_unreadable_config_is_left_alone(tmp_path: Path) -> None:
    config = tmp_path / "c.json"
    config.write_text("{not json")
    code, doc = direct_enable(config, [str(tmp_path)])
    assert code == 1
    assert doc["error"]["code"] == "config_invalid"
    assert config.read_text() == "{not json"
    out = io.StringIO()
    assert disable_scope(config_path=config, agent_id=AGENT, project_id=PROJECT, out=out) == 1
    assert config.read_text() == "{not json"


# ---------------------------------------------------------------------------------- stage 2 qualification


def _report(tmp_path: Path, name: str, **overrides: Any) -> Path:
    report: dict[str, Any] = {
        "schema_version": "qualification_report_v0",
        "passed": True,
        "generated_at": "2026-11-01T10:00:00Z",
        "scope": {"agent_id": AGENT, "project_id": PROJECT, "repository_id": REPOSITORY,
                  "sources": ["claude"]},
        "checks": [{"name": "recall", "passed": True}],
    }
    report.update(overrides)
    path = tmp_path / name
    path.write_text(json.dumps(report))
    return path


def test_stage_2_requires_a_qualification_report(tmp_path: Path, env: dict[str, str]) -> None:
    root = tmp_path / "project"
    root.mkdir()
    code, doc, _ = cli(env, *enable_args(root, extra=("--stage", "2")))
    assert code == 2
    assert doc["error"]["code"] == "qualification_required"
    assert not config_file(env).exists()


@pytest.mark.parametrize(("name", "overrides"), [
    ("failed", {"passed": False}),
    ("passed-string", {"passed": "true"}),
    ("other-agent", {"scope": {"agent_id": "codex-main", "project_id": PROJECT,
                               "repository_id": REPOSITORY}}),
    ("other-repo", {"scope": {"agent_id": AGENT, "project_id": PROJECT, "repository_id": "acme-web"}}),
    ("other-sources", {"scope": {"agent_id": AGENT, "project_id": PROJECT, "repository_id": REPOSITORY,
                                 "sources": ["claude", "codex"]}}),
    ("top-level-sources", {"sources": ["codex"]}),
    ("no-scope", {"scope": None}),
    ("no-generated-at", {"generated_at": None}),
])
def test_stage_2_refuses_a_report_that_does_not_qualify_this_scope(
        tmp_path: Path, env: dict[str, str], name: str, overrides: dict[str, Any]) -> None:
    root = tmp_path / "project"
    root.mkdir()
    report = _report(tmp_path, f"{name}.json", **overrides)
    code, doc, _ = cli(env, *enable_args(root, extra=("--stage", "2", "--qualification-report", str(report))))
    assert code == 2, doc
    assert doc["error"]["code"] == "qualification_required", doc
    assert not config_file(env).exists()


@pytest.mark.parametrize("content", [b"", b"not json", b"[true]", b"\xff\xfe"])
def test_stage_2_refuses_an_unparseable_report(tmp_path: Path, content: bytes) -> None:
    report = tmp_path / "report.json"
    report.write_bytes(content)
    code, doc = direct_enable(tmp_path / "c.json", [str(tmp_path)], stage=2,
                              qualification_report=str(report))
    assert code == 2
    assert doc["error"]["code"] == "qualification_required"
    code, doc = direct_enable(tmp_path / "c.json", [str(tmp_path)], stage=2,
                              qualification_report=str(tmp_path / "missing.json"))
    assert code == 2
    assert doc["error"]["code"] == "qualification_required"


def test_stage_2_with_a_passing_matching_report(tmp_path: Path, env: dict[str, str]) -> None:
    root = tmp_path / "project"
    root.mkdir()
    report = _report(tmp_path, "passing.json")
    # A generated-corpus report (no "kind": "replay") needs the explicit synthetic acceptance (issue 14).
    code, doc, _ = cli(env, *enable_args(root, extra=("--stage", "2", "--qualification-report", str(report),
                                                      "--accept-synthetic-qualification",
                                                      "--max-report-age-days", "36500")))
    assert code == 0, doc
    assert doc["scope"]["stage"] == 2
    assert doc["scope"]["qualified"] is True
    assert doc["scope"]["synthetic_qualification_accepted"] is True
    (entry,) = load_config(config_file(env)).scopes
    assert entry.stage == 2
    assert entry.qualification is not None
    assert entry.qualification.passed is True
    assert entry.qualification.report_digest == "sha256:" + sha256_file(report)
    assert entry.qualification.generated_at == "2026-11-01T10:00:00Z"


# ---------------------------------------------------------------------------------- worktrees through enable


def test_worktrees_are_listed_and_bound_only_on_request(git_repo: tuple[Path, Path, str], tmp_path: Path,
                                                        env: dict[str, str]) -> None:
    repo, worktree, root_commit = git_repo
    code, doc, stdout = cli(env, *enable_args(repo))
    assert code == 0, doc
    assert doc["scope"]["worktrees_found"] == 1
    assert doc["scope"]["worktrees_bound"] == 0
    assert doc["scope"]["root_commit"] == root_commit
    assert str(worktree) not in stdout
    (entry,) = load_config(config_file(env)).scopes
    assert entry.roots == (str(repo),)
    assert entry.repository_identity is not None
    assert entry.repository_identity.kind == "git"
    assert entry.repository_identity.root_commit == root_commit
    assert entry.repository_identity.worktrees == (str(worktree),)
    assert entry.repository_identity.remote_digests == (remote_digest("github.com/acme/acme-api", _key(env)),)
    assert doc["scope"]["remote_digests"] == list(entry.repository_identity.remote_digests)

    code, doc, _ = cli(env, *enable_args(repo, extra=("--include-worktrees", "--replace")))
    assert code == 0
    assert doc["action"] == "replaced"
    assert doc["scope"]["roots"] == 2
    assert doc["scope"]["worktrees_bound"] == 1
    (entry,) = load_config(config_file(env)).scopes
    assert entry.roots == (str(repo), str(worktree))

    # Naming the worktree as a root as well never duplicates it.
    code, doc, _ = cli(env, *enable_args(repo, worktree, extra=("--include-worktrees", "--replace")))
    assert code == 0
    assert doc["scope"]["roots"] == 2


# ================================================================================== default-off, status


def test_default_off_query_is_rejected_not_enabled(env: dict[str, str]) -> None:
    assert not config_file(env).exists()
    code, doc, _ = cli(env, "query", stdin=request())
    assert code == 2
    assert doc["outcome"] == "rejected"
    assert doc["error"]["code"] == "not_enabled"


def test_status_on_a_missing_database(tmp_path: Path, env: dict[str, str]) -> None:
    missing = tmp_path / "nowhere" / "obelisk.sqlite"
    code, doc, _ = cli(env, "status", "--db", str(missing), "--format", "json")
    assert code == 0
    assert doc["database_present"] is False
    assert doc["config_present"] is False
    assert doc["schema_verdict"] == "unknown"
    assert doc["scopes"] == []
    assert doc["freshness"] is None
    assert doc["provider_version"]
    assert doc["contract_version"] == "v0"
    code, text = cli_text(env, "status", "--db", str(missing))
    assert code == 0
    assert "absent" in text
    assert not missing.parent.exists()


def test_status_with_a_scope_on_a_missing_database(tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    config = tmp_path / "c.json"
    assert direct_enable(config, [str(root)])[0] == 0
    out = io.StringIO()
    assert status_command(db_path=tmp_path / "none.sqlite", config_path=config, fmt="json", out=out) == 0
    doc = json.loads(out.getvalue())
    assert doc["database_present"] is False
    assert doc["freshness"] == "unknown"
    assert doc["scopes"][0]["freshness"] is None
    assert str(root) not in out.getvalue()


def test_status_never_shows_an_unkeyed_remote_digest(tmp_path: Path) -> None:
    """A config written before remote digests were keyed holds plain sha256 digests of remotes: status shows
    none of them (a plain digest confirms a guessed remote); the keyed ones it shows."""
    from tests.conftest import scope_entry, write_config

    root = tmp_path / "project"
    root.mkdir()
    plain = "sha256:" + hashlib.sha256(b"github.com/acme/acme-api").hexdigest()
    config = tmp_path / "c.json"
    entry = scope_entry(AGENT, PROJECT, REPOSITORY, ["claude"], [str(root)])
    write_config(config, [{**entry, "repository_identity": {"kind": "git", "remote_digests": [plain]}}])
    keyed = load_key(config).of_text("github.com/acme/other")
    out = io.StringIO()
    assert status_command(db_path=tmp_path / "none.sqlite", config_path=config, fmt="json", out=out) == 0
    assert json.loads(out.getvalue())["scopes"][0]["remote_digests"] == []
    assert plain.split(":")[1] not in out.getvalue()
    write_config(config, [{**entry, "repository_identity": {"kind": "git", "remote_digests": [plain, keyed]}}])
    out = io.StringIO()
    assert status_command(db_path=tmp_path / "none.sqlite", config_path=config, fmt="json", out=out) == 0
    assert json.loads(out.getvalue())["scopes"][0]["remote_digests"] == [keyed]


def test_status_on_an_unreadable_config_exits_1(tmp_path: Path) -> None:
    config = tmp_path / "c.json"
    config.write_text('{"scopes": "nope"}')
    out = io.StringIO()
    assert status_command(db_path=tmp_path / "none.sqlite", config_path=config, fmt="json", out=out) == 1
    doc = json.loads(out.getvalue())
    assert doc["config_present"] is True
    assert doc["config_valid"] is False
    out = io.StringIO()
    assert status_command(db_path=tmp_path / "none.sqlite", config_path=config, fmt="text", out=out) == 1
    assert "INVALID" in out.getvalue()


def test_status_on_a_file_that_is_not_a_database(tmp_path: Path) -> None:
    db = tmp_path / "obelisk.sqlite"
    db.write_bytes(b"garbage" * 100)
    out = io.StringIO()
    assert status_command(db_path=db, config_path=tmp_path / "c.json", fmt="json", out=out) == 0
    doc = json.loads(out.getvalue())
    assert doc["database_present"] is True
    assert doc["database_error"] == "index_unreadable"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["obelisk.sqlite"]


# ================================================================================== real Obelisk


STALE_SCOPE_ROOTS = (f"{ro.HOME}/src/acme-web", f"{ro.HOME}/src/acme-api")


def _copy_db(name: ro.Db, dest: Path) -> tuple[Path, str]:
    original = ro.real_dir() / f"{name}.sqlite"
    digest = sha256_file(original)
    dest.mkdir(parents=True, exist_ok=True)
    return ro.db_copy(name, dest), digest


@pytest.mark.real_obelisk
def test_newcomer_flow_enable_query_status_disable(tmp_path: Path, env: dict[str, str]) -> None:
    db, original_digest = _copy_db("fresh", tmp_path / "db")
    env["OBELISK_DB"] = str(db)
    with ro.materialized("fresh"):
        # 1. default-off
        code, doc, _ = cli(env, "query", stdin=request(terms=["ModuleNotFoundError", QUERY_CANARY]))
        assert code == 2
        assert doc["error"]["code"] == "not_enabled"
        # 2. enable
        code, doc, _ = cli(env, *enable_args(f"{ro.HOME}/src/acme-api"))
        assert code == 0, doc
        # 3. query: admitted now, answered from the copied index
        code, doc, _ = cli(env, "query", stdin=request(terms=["ModuleNotFoundError", QUERY_CANARY]))
        assert doc["outcome"] != "rejected", doc["error"]
        assert code == 0, doc["error"]
        assert doc["outcome"] == "ok", doc["error"]
        assert doc["result"]["freshness"] == "fresh"
        # 4. status json: what LoopX may log
        code, status, stdout = cli(env, "status", "--format", "json")
        assert code == 0
        assert status["database_present"] is True
        assert status["schema_verdict"] in ("exact", "compatible")
        assert status["enabled_scopes"] == 1
        assert status["freshness"] == "fresh"
        (scope,) = status["scopes"]
        assert scope["agent_id"] == AGENT
        assert (scope["project_id"], scope["repository_id"]) == (PROJECT, REPOSITORY)
        assert scope["root_digests"] == [_key(env).of_text(f"{ro.HOME}/src/acme-api")]
        assert str(ro.HOME) not in stdout
        assert "/tmp/" not in stdout
        assert QUERY_CANARY not in stdout
        assert "ModuleNotFoundError" not in stdout
        # 5. disable, and the scope is closed again
        code, doc, _ = cli(env, "disable", "--agent-id", AGENT, "--project-id", PROJECT)
        assert code == 0
        code, doc, _ = cli(env, "query", stdin=request())
        assert code == 2
        assert doc["error"]["code"] == "not_enabled"
    assert sha256_file(ro.real_dir() / "fresh.sqlite") == original_digest
    assert sorted(p.name for p in db.parent.iterdir()) == ["fresh.sqlite"]


@pytest.mark.real_obelisk
def test_status_json_on_the_stale_index(tmp_path: Path, env: dict[str, str]) -> None:
    db, original_digest = _copy_db("stale", tmp_path / "db")
    copy_digest = sha256_file(db)
    with ro.materialized("stale"):
        code, doc, _ = cli(env, *enable_args(*STALE_SCOPE_ROOTS, sources=("claude", "codex")))
        assert code == 0, doc
        code, status, stdout = cli(env, "status", "--db", str(db), "--format", "json")
    assert code == 0
    assert status["database_present"] is True
    assert status["database_error"] is None
    assert status["open_mode"] == "immutable_verified"
    assert status["tokenizer"] == "unicode61"
    assert status["freshness"] == "stale"
    (scope,) = status["scopes"]
    assert scope["sources"] == ["claude", "codex"]
    assert scope["stage"] == 1
    assert scope["roots"] == 2
    assert scope["root_digests"] == [_key(env).of_text(root) for root in STALE_SCOPE_ROOTS]
    assert scope["freshness"]["verdict"] == "stale"
    assert scope["freshness"]["stale"] == 2
    assert scope["freshness"]["unindexed"] == 0
    writer = status["writer_activity"]
    assert writer["heartbeat_fresh"] is None
    assert writer["wal_present"] is False
    assert isinstance(writer["last_build_age_ms"], float)
    assert "/tmp/" not in stdout
    assert ".jsonl" not in stdout
    assert sha256_file(ro.real_dir() / "stale.sqlite") == original_digest
    assert sha256_file(db) == copy_digest
    assert sorted(p.name for p in db.parent.iterdir()) == ["stale.sqlite"]


@pytest.mark.real_obelisk
def test_status_text_names_exactly_the_two_stale_units(tmp_path: Path) -> None:
    db, original_digest = _copy_db("stale", tmp_path / "db")
    config = tmp_path / "c.json"
    expected = ro.staleness("stale")["stale"]
    assert isinstance(expected, list)
    with ro.materialized("stale"):
        code, _ = direct_enable(config, list(STALE_SCOPE_ROOTS), sources=["claude", "codex"])
        assert code == 0
        out = io.StringIO()
        assert status_command(db_path=db, config_path=config, fmt="text", out=out) == 0
    text = out.getvalue()
    named = re.findall(r"^\s+stale\s+(\S.*)$", text, flags=re.MULTILINE)
    assert sorted(named) == sorted(str(item["path"]) for item in expected), text
    for root in STALE_SCOPE_ROOTS:  # the local operator sees the plain roots
        assert f"root       {root}" in text
    assert "freshness  stale" in text
    assert "unindexed  " not in text
    assert sha256_file(ro.real_dir() / "stale.sqlite") == original_digest
