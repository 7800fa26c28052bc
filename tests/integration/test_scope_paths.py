"""Issue 12, items 1 and 2, end to end on crafted copies of a fixture database.

Item 1: scope compares normalised paths. A session recorded under ``ROOT/../other`` or ``ROOT//../other`` is not
in ROOT's scope; one recorded under ROOT through a symlink is, as recorded, wherever the link points today (issue
30; ``tests/integration/test_recorded_paths.py``); a root given through a symlink finds sessions recorded under its real
path and under the symlink's spelling. Item 2: a joined row (message, tool result) whose session
id is NULL or another session's fails the whole result with ``scope_violation``. The row re-check itself is
also tested directly, one promise at a time.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from obelisk_session_evidence.fixtures.builder import FixtureInfo, build_fixture
from obelisk_session_evidence.service import answer

from tests.conftest import make_request, write_config

MARKER = "qzscopemarkerqz"
LIMITS = {"max_sessions": 20, "max_items": 20, "max_snippet_chars": 600, "max_total_chars": 12000}


@pytest.fixture(scope="module")
def base_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    info: FixtureInfo = build_fixture(tmp_path_factory.mktemp("fx") / "current", generation="current")
    return info.db_path


def _plant(db: Path, session: str, project_path: str, *, cwd: str | None = None, detail: str = "") -> None:
    """One recent claude session at ``project_path`` with one failed Bash call mentioning MARKER."""
    con = sqlite3.connect(db)
    with con:
        con.execute("INSERT INTO sessions (id, project_path, started_at, ended_at, source) "
                    "VALUES (?, ?, '2026-10-30T09:00:00.000Z', '2026-10-30T11:00:00.000Z', 'claude')",
                    (session, project_path))
        con.execute("INSERT INTO messages (uuid, session_id, type, timestamp, role, content_type, cwd, source) "
                    "VALUES (?, ?, 'assistant', '2026-10-30T10:00:00.000Z', 'assistant', 'tool_use', ?, 'claude')",
                    (f"{session}-call", session, project_path if cwd is None else cwd))
        con.execute("INSERT INTO tool_calls (id, message_uuid, session_id, name, input_json) "
                    "VALUES (?, ?, ?, 'Bash', ?)",
                    (f"toolu_{session}", f"{session}-call", session,
                     json.dumps({"command": f"make {MARKER} {session}"})))
        con.execute("INSERT INTO tool_results (tool_use_id, message_uuid, session_id, content, is_error) "
                    "VALUES (?, ?, ?, ?, 1)",
                    (f"toolu_{session}", f"{session}-call", session,
                     f"Exit code 2\nmake: *** No rule to make target {MARKER} in {session}{detail}"))
    con.close()


def _ask(db: Path, tmp: Path, roots: list[str], real_roots: list[str] | None = None,
         types: tuple[str, ...] = ("prior_failure", "tool_outcome")) -> dict[str, Any]:
    scope: dict[str, Any] = {"agent_id": "agent", "project_id": "p", "repository_id": "r", "sources": ["claude"],
                             "roots": roots, "stage": 1}
    if real_roots is not None:
        scope["real_roots"] = real_roots
    config = write_config(tmp / "config.json", [scope])
    request = make_request(scope={"agent_id": "agent", "project_id": "p", "repository_id": "r",
                                  "allow_cross_agent": False, "allow_cross_project": False},
                           evidence_types=list(types), query_terms=[MARKER], limits=LIMITS)
    return answer(json.dumps(request).encode(), db_path=db, config_path=config).envelope


def _sessions(envelope: dict[str, Any]) -> set[str]:
    assert envelope["outcome"] == "ok", envelope["error"]
    return {item["session_ref"] for item in envelope["result"]["items"]}


@pytest.fixture
def world(base_db: Path, tmp_path: Path) -> tuple[Path, Path]:
    """A database copy and an existing repository directory ``repo`` (with an ``outside`` sibling)."""
    db = tmp_path / "crafted.sqlite"
    shutil.copyfile(base_db, db)
    (tmp_path / "repo" / "src").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    return db, Path(os.path.realpath(tmp_path / "repo"))


def test_sessions_outside_the_root_by_real_path_are_not_in_scope(world: tuple[Path, Path], tmp_path: Path) -> None:
    db, repo = world
    (repo / "escape").symlink_to(tmp_path / "outside")
    _plant(db, "s-inside", str(repo))
    _plant(db, "s-sub", f"{repo}/src")
    _plant(db, "s-dotdot", f"{repo}/../outside")
    _plant(db, "s-slashes", f"{repo}//../outside")
    _plant(db, "s-dot-slashes", f"{repo}/./src/../../outside")
    _plant(db, "s-symlink-dotdot", f"{repo}/escape/../outside")  # the kernel's ``..``: after the link's target
    _plant(db, "s-climbs", f"{repo}/{'../' * 40}etc")
    assert _sessions(_ask(db, tmp_path, [str(repo)])) == {"s-inside", "s-sub"}


def test_a_root_given_through_a_symlink_finds_both_spellings(world: tuple[Path, Path], tmp_path: Path) -> None:
    db, repo = world
    alias = tmp_path / "alias"
    alias.symlink_to(repo)
    _plant(db, "s-real", str(repo))
    _plant(db, "s-spelled", f"{alias}/src")
    _plant(db, "s-dotdot", f"{alias}/../outside")
    # A config written before real roots were recorded: the given root is resolved at query time.
    assert _sessions(_ask(db, tmp_path, [str(alias)])) == {"s-real", "s-spelled"}
    # A config that recorded the real root at enable.
    assert _sessions(_ask(db, tmp_path, [str(alias)], [str(repo)])) == {"s-real", "s-spelled"}


def test_paths_under_either_spelling_of_a_root_are_shown_repository_relative(world: tuple[Path, Path],
                                                                             tmp_path: Path) -> None:
    """Issue 12 item 1: ``strip_roots`` gets every spelling of the root (the operator's and the real path)."""
    db, repo = world
    alias = tmp_path / "alias"
    alias.symlink_to(repo)
    _plant(db, "s-real", str(repo), detail=f"\nsee {repo}/src/real_side.py and {alias}/src/alias_side.py, "
                                           f"not {repo}/../outside/kept.py")
    envelope = _ask(db, tmp_path, [str(alias)], [str(repo)])
    texts = [item["snippet"] for item in envelope["result"]["items"] if item["session_ref"] == "s-real"]
    assert texts and any("src/real_side.py" in t for t in texts), envelope["result"]["items"]
    for text in texts:
        assert f"{repo}/src" not in text and f"{alias}/src" not in text, text
        if "kept.py" in text:
            assert f"{repo}/../outside/kept.py" in text, text  # outside the root: left as it is


def test_enable_records_the_real_root_beside_the_given_spelling(tmp_path: Path) -> None:
    from obelisk_session_evidence.admission.config import load_config
    from obelisk_session_evidence.commands.lifecycle import enable_scope

    repo = tmp_path / "repo"
    repo.mkdir()
    alias = tmp_path / "alias"
    alias.symlink_to(repo)
    config = tmp_path / "cfg" / "config.json"
    out = (tmp_path / "out.txt").open("w")
    code = enable_scope(config_path=config, agent_id="agent", project_id="p", repository_id="r",
                        sources=["claude"], roots=[str(alias)], stage=1, include_worktrees=False,
                        qualification_report=None, out=out)
    out.close()
    assert code == 0, (tmp_path / "out.txt").read_text()
    scope = load_config(config).scopes[0]
    assert scope.roots == (str(alias),)
    assert scope.real_roots == (os.path.realpath(repo),)


def test_a_message_whose_cwd_lies_outside_fails_the_whole_result(world: tuple[Path, Path], tmp_path: Path) -> None:
    db, repo = world
    _plant(db, "s-inside", str(repo))
    _plant(db, "s-cwd-out", str(repo), cwd=f"{repo}/../outside")
    envelope = _ask(db, tmp_path, [str(repo)])
    assert envelope["outcome"] == "failed" and envelope["error"]["code"] == "scope_violation"
    assert envelope["result"]["items"] == []


@pytest.mark.parametrize("crafted", [
    "UPDATE tool_results SET session_id = NULL WHERE tool_use_id = 'toolu_s-inside'",
    "UPDATE tool_results SET session_id = 's-other' WHERE tool_use_id = 'toolu_s-inside'",
    "UPDATE messages SET session_id = NULL WHERE uuid = 's-inside-call'",
    "UPDATE messages SET session_id = 's-other' WHERE uuid = 's-inside-call'",
])
def test_a_joined_row_with_a_null_or_other_session_id_fails(world: tuple[Path, Path], tmp_path: Path,
                                                           crafted: str) -> None:
    db, repo = world
    _plant(db, "s-inside", str(repo))
    _plant(db, "s-other", str(repo))
    assert _sessions(_ask(db, tmp_path, [str(repo)])) == {"s-inside", "s-other"}
    con = sqlite3.connect(db)
    with con:
        con.execute(crafted)
    con.close()
    envelope = _ask(db, tmp_path, [str(repo)])
    assert envelope["outcome"] == "failed" and envelope["error"]["code"] == "scope_violation"
    assert envelope["result"]["items"] == [] and envelope["receipt"]["result_count"] == 0


# The row re-check, one promise at a time: tests/unit/test_scope_check.py.


@pytest.mark.parametrize(("ceiling", "truncated"), [(2, True), (3, False)])
def test_reaching_the_scope_ceiling_marks_the_result_truncated(world: tuple[Path, Path], tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch, ceiling: int,
                                                               truncated: bool) -> None:
    """Two sessions in scope: a ceiling of two is reached (the scope list may be cut short), three is not."""
    from obelisk_session_evidence.index import scope_state

    db, repo = world
    _plant(db, "s-one", str(repo))
    _plant(db, "s-two", f"{repo}/src")
    monkeypatch.setattr(scope_state, "SCOPE_SESSION_CEILING", ceiling)
    envelope = _ask(db, tmp_path, [str(repo)])
    assert _sessions(envelope) == {"s-one", "s-two"}
    assert envelope["result"]["truncated"] is truncated
    assert envelope["provider_meta"]["fetch_ceiling_reached"] is truncated
