"""The searched time window: the revision's merge-base time (minus slack) when resolvable, else recency."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from obelisk_session_evidence.admission.window import commit_time
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


@settings(max_examples=2000, deadline=None)
@given(st.one_of(st.floats(min_value=-3.3e9, max_value=4.2e9, allow_nan=False),
                 st.integers(min_value=-3_300_000_000, max_value=4_200_000_000).flatmap(
                     lambda s: st.sampled_from([s + 0.9999994, s + 0.9999995, s + 0.9999996, s + 5e-7, s - 5e-7,
                                                s + 0.5, float(s)]))))
def test_window_bound_is_the_second_datetime_gives(epoch_s: float) -> None:
    """The lower bound is formatted without ``datetime`` (cold start), to the same second
    ``datetime.fromtimestamp`` rounds to (every recency and slack setting stays inside this range)."""
    from datetime import UTC, datetime

    from obelisk_session_evidence.admission.window import _iso

    assert _iso(epoch_s) == datetime.fromtimestamp(epoch_s, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")
