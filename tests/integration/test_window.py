"""The searched time window: the revision's merge-base time (minus slack) when resolvable, else recency."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from obelisk_session_evidence.admission.admit import AdmittedRequest, admit
from obelisk_session_evidence.admission.config import EnabledScope, ProviderConfig
from obelisk_session_evidence.admission.window import commit_time, since_for
from obelisk_session_evidence.contract.parse import parse_request
from obelisk_session_evidence.fixtures.builder import build_fixture
from obelisk_session_evidence.service import answer

from tests.conftest import make_request, scope_entry, write_config

GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.invalid", "GIT_AUTHOR_DATE": "2026-10-10T12:00:00+00:00",
           "GIT_COMMITTER_DATE": "2026-10-10T12:00:00+00:00"}


@pytest.fixture(scope="module")
def repo_fixture(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, dict[str, Any], str]:
    info = build_fixture(tmp_path_factory.mktemp("win") / "fx")
    manifest = json.loads(info.manifest_path.read_text(encoding="utf-8"))
    root = manifest["repos"]["alpha-svc"]
    if not (Path(root) / ".git").exists():
        pytest.skip("git is not available: the fixture repository was not created")
    env = {**os.environ, **GIT_ENV}
    subprocess.run(["git", "-C", root, "commit", "--allow-empty", "-qm", "mid-October"], env=env, check=True)
    head = subprocess.run(["git", "-C", root, "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()
    return info, manifest, head


def _ask(info: Any, manifest: dict[str, Any], tmp: Path, revision: dict[str, str] | None) -> dict[str, Any]:
    config = write_config(tmp / "c.json", [scope_entry("claude-agent", "demo", "alpha-svc", ["claude"],
                                                       [manifest["repos"]["alpha-svc"]])],
                          transcript_homes=[str(info.home)])
    extra = {"revision": revision} if revision else {}
    request = make_request(scope={"agent_id": "claude-agent", "project_id": "demo", "repository_id": "alpha-svc",
                                  "allow_cross_agent": False, "allow_cross_project": False},
                           evidence_types=["prior_failure", "tool_outcome"],
                           query_terms=["ModuleNotFoundError", "stripe", "billing"], **extra)
    envelope = answer(json.dumps(request).encode(), db_path=info.db_path, config_path=config).envelope
    assert envelope["outcome"] == "ok", envelope["error"]
    return envelope


def _dates(envelope: dict[str, Any]) -> list[str]:
    return [i["observed_at"] for i in envelope["result"]["items"]]


def test_resolvable_merge_base_narrows_the_window(repo_fixture: tuple[Any, dict[str, Any], str],
                                                  tmp_path: Path) -> None:
    info, manifest, head = repo_fixture
    wide = _ask(info, manifest, tmp_path, None)
    narrow = _ask(info, manifest, tmp_path, {"current": head, "merge_base": head})
    assert min(_dates(wide)) < "2026-10-03"
    assert narrow["result"]["items"]
    assert all(d >= "2026-10-03" for d in _dates(narrow))  # 2026-10-10 minus the 7-day slack
    assert narrow["provider_meta"]["since"] == "2026-10-03"


def test_unresolvable_revision_falls_back_to_recency(repo_fixture: tuple[Any, dict[str, Any], str],
                                                     tmp_path: Path) -> None:
    info, manifest, _head = repo_fixture
    wide = _ask(info, manifest, tmp_path, None)
    unknown = _ask(info, manifest, tmp_path, {"current": "0" * 40})
    assert unknown["result"] == {**wide["result"], "request_id": unknown["result"]["request_id"]}


@pytest.fixture
def git_repo(tmp_path: Path) -> Path:
    """A real repository with one commit: git would act on an option smuggled in as a revision here."""
    repo = tmp_path / "repo"
    repo.mkdir()
    env = {**os.environ, **GIT_ENV}
    subprocess.run(["git", "init", "-q", str(repo)], env=env, check=True)
    subprocess.run(["git", "-C", str(repo), "commit", "--allow-empty", "-qm", "one"], env=env, check=True)
    return repo


@pytest.mark.parametrize("revision", ["--format=1234", "--output={out}", "--output={out} HEAD", "-p", "HEAD;id",
                                      "a..b", "x" * 300, "$(id)", "HEAD\n--all", "--upload-pack=touch {out}"])
def test_hostile_revision_strings_never_reach_git_as_options(revision: str, git_repo: Path, tmp_path: Path) -> None:
    out = tmp_path / "pwned"
    assert commit_time(str(git_repo), "HEAD") == 1791633600.0  # the guard passes a real revision through
    assert commit_time(str(git_repo), revision.format(out=out)) is None
    assert not out.exists()


def test_each_revision_guard_holds_alone(git_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The pattern check and ``--end-of-options`` each stop an option on their own."""
    import re

    from obelisk_session_evidence.admission import window

    out = tmp_path / "pwned"
    monkeypatch.setattr(window, "_rev_pattern", lambda: re.compile(r"^.*$", re.S))  # the pattern check alone gone
    assert commit_time(str(git_repo), "--format=1234") is None
    assert commit_time(str(git_repo), f"--output={out}") is None
    assert not out.exists()


def _admitted(root: str, revision: dict[str, str] | None = None) -> tuple[AdmittedRequest, EnabledScope]:
    scope = EnabledScope(agent_id="claude-main", project_id="acme", repository_id="acme-api", sources=("claude",),
                         roots=(root,))
    extra = {"revision": revision} if revision else {}
    request = parse_request(json.dumps(make_request(**extra)).encode())
    return admit(request, ProviderConfig(scopes=(scope,))), scope


@pytest.mark.parametrize("seconds", ["300000000000", "99999999999999999999999"])
def test_a_commit_dated_past_year_9999_falls_back_to_recency(seconds: str, git_repo: Path) -> None:
    """git resolves a revision whatever date its commit object holds; one no ISO-8601 second can name gives no
    bound (never an error): the recency window applies, as for an unresolvable revision."""
    def git(*args: str, stdin: bytes | None = None) -> str:
        return subprocess.run(["git", "-C", str(git_repo), *args], input=stdin, capture_output=True,
                              check=True).stdout.decode().strip()

    tree = git("hash-object", "-t", "tree", "-w", "--stdin", stdin=b"")
    person = f"t <t@example.invalid> {seconds} +0000"
    body = f"tree {tree}\nauthor {person}\ncommitter {person}\n\nfar\n".encode()
    git("update-ref", "HEAD", git("hash-object", "-t", "commit", "-w", "--literally", "--stdin", stdin=body))
    admitted, scope = _admitted(str(git_repo), {"current": "HEAD"})
    assert commit_time(str(git_repo), "HEAD") == float(seconds)
    assert since_for(admitted, ProviderConfig(recency_days=1, scopes=(scope,)), 86400.0) == "1970-01-01T00:00:00.000Z"
