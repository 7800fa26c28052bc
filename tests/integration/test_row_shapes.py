"""Issue 30 item 1: no row the index can hold makes the provider answer ``internal_error``.

* A session that holds only the user's prompt (Claude Code and Codex write it before any answer exists), asked
  for ``prior_failure`` through the CLI: ``query`` and ``serve --stdio``.
* A tool cell nested thousands of levels deep, and a ``BLOB`` tool input that is not UTF-8: answered.
* Hypothesis over Obelisk rows: the cells of a small home's rows (tool calls and results, messages, summaries,
  sessions; every one a scope's request reaches) replaced by generated values: NULL, empty, text, numbers,
  ``BLOB`` (UTF-8 or not), huge, JSON nested thousands of levels deep, escapes of lone surrogates. Every request
  of both agents, one-shot and warm, gets a typed answer; none is ``internal_error``.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from obelisk_session_evidence.fixtures.encoding import uuid4
from obelisk_session_evidence.fixtures.transcripts import ClaudeTranscript, CodexTranscript
from obelisk_session_evidence.service import WarmState, answer

from tests.conftest import CLI, make_request, run_cli, scope_entry, write_config
from tests.evidence_home import AGENTS, ALL_TYPES, LIMITS, START_MS, EvidenceHome, build_home
from tools.devkit.home_db import write_home_db

PROMPT = "pytest fails with ModuleNotFoundError: No module named 'jwt' in tests/test_auth.py, can you fix it?"
TERMS = ["ModuleNotFoundError", "pytest"]


def _request(source: str, types: Sequence[str] = ("prior_failure",), terms: Sequence[str] = TERMS) -> bytes:
    request = make_request(
        scope={"agent_id": AGENTS[source], "project_id": "demo", "repository_id": "web",
               "allow_cross_agent": False, "allow_cross_project": False},
        evidence_types=list(types), query_terms=list(terms), limits=LIMITS)
    return json.dumps(request).encode()


def _not_internal(envelope: dict[str, Any], exit_code: int) -> None:
    error = envelope.get("error") or {}
    assert error.get("code") != "internal_error" and exit_code != 1, (exit_code, error)


# --- a session that holds only the user's prompt ----------------------------------------------------------


def _prompt_only_home(tmp: Path) -> EvidenceHome:
    """A Claude Code session and a Codex rollout, each as its CLI writes it when the user has sent the first
    prompt and nothing has answered yet: Claude one ``user`` record; Codex ``session_meta``, the AGENTS.md and
    environment blocks, ``turn_context`` and the prompt (its ``response_item`` and ``user_message`` event)."""
    home = tmp / "home"
    repo = home / "src" / "web"
    repo.mkdir(parents=True)
    rng = random.Random("prompt-only")
    claude = ClaudeTranscript(rng=rng, home=home, session_id=uuid4(rng), cwd=repo, branch="main", start_ms=START_MS)
    claude.user(PROMPT)
    claude.rows.insert(0, ("sessions", claude.session_row()))
    codex = CodexTranscript(rng=rng, home=home, thread_id=uuid4(rng), cwd=repo, branch="main",
                            start_ms=START_MS + 3_600_000)
    codex.env_context()
    codex.turn_context()
    codex.user(PROMPT)
    codex.rows.insert(0, ("sessions", codex.session_row(None)))
    db = tmp / "obelisk.sqlite"
    write_home_db(db, home, [claude.to_unit(), codex.to_unit()], now_ms=codex.clock + 60_000)
    config = write_config(tmp / "config.json", [
        scope_entry(AGENTS["claude"], "demo", "web", ["claude"], [str(repo)]),
        scope_entry(AGENTS["codex"], "demo", "web", ["codex"], [str(repo)]),
    ], transcript_homes=[str(home)])
    return EvidenceHome(db=db, home=home, repo=repo, config=config,
                        sessions={"claude": [claude.session_id], "codex": [codex.session_id]})


@pytest.fixture(scope="module")
def prompt_only(tmp_path_factory: pytest.TempPathFactory) -> EvidenceHome:
    return _prompt_only_home(tmp_path_factory.mktemp("prompt-only"))


@pytest.mark.parametrize("source", ["claude", "codex"])
def test_a_prompt_only_session_is_answered_by_query(prompt_only: EvidenceHome, source: str,
                                                   isolated_env: dict[str, str]) -> None:
    """The scope's only session holds the user's prompt and no assistant message: nothing failed yet, so
    ``prior_failure`` answers ``ok`` with no item (main answered ``internal_error``)."""
    for types in (["prior_failure"], ALL_TYPES):
        result = run_cli("query", "--db", str(prompt_only.db), "--config", str(prompt_only.config),
                         stdin=_request(source, types), env=isolated_env)
        document = result.document()
        assert result.code == 0 and document["outcome"] == "ok", (result.code, document["error"])
        assert result.stderr == ""
        items = document["result"]["items"]
        assert all(item["evidence_type"] != "prior_failure" for item in items), items


def test_a_prompt_only_session_is_answered_by_serve(prompt_only: EvidenceHome, isolated_env: dict[str, str]) -> None:
    """``serve --stdio`` answers the same requests line by line (its warm path remembers the scope's reads),
    twice each: every answer ``ok``."""
    lines = [_request(source, types) for source in ("claude", "codex") for types in (["prior_failure"], ALL_TYPES)]
    proc = subprocess.run([*CLI, "serve", "--stdio", "--db", str(prompt_only.db), "--config",
                           str(prompt_only.config)], input=b"\n".join(lines * 2) + b"\n", capture_output=True,
                          env={**{k: v for k, v in os.environ.items() if not k.startswith("OBELISK")},
                               **isolated_env}, timeout=120, check=False)
    envelopes = [json.loads(line) for line in proc.stdout.decode().splitlines() if line.strip()]
    assert len(envelopes) == 2 * len(lines), proc.stderr.decode(errors="replace")[-2000:]
    assert [e["outcome"] for e in envelopes] == ["ok"] * len(envelopes), [e["error"] for e in envelopes]
    assert proc.returncode == 0 and proc.stderr == b""


# --- hostile cells: deep nesting, bytes ---------------------------------------------------------------------


def _nested_call(t: ClaudeTranscript, repo: Path) -> None:
    """An MCP tool whose input holds an array nested 3,000 levels deep (JSON.stringify writes it as is; Obelisk
    cuts string leaves only), then a failing pytest run whose command names the same terms."""
    t.user("Query the fixtures table, then run the auth tests.")
    deep: Any = ["pytest ModuleNotFoundError"]
    for _ in range(3000):
        deep = [deep]
    t.tool("mcp__fixtures__query", {"filter": deep}, "Exit code 1\nModuleNotFoundError: No module named 'jwt'",
           is_error=True)
    t.bash("pytest -q tests/test_auth.py", "Run pytest",
           "E   ModuleNotFoundError: No module named 'jwt'\n1 failed", exit_code=1)
    t.say("The test fails because jwt is not installed.")


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> EvidenceHome:
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(20_000)  # the fixture writer is Python: its json.dumps recurses as JavaScript's does not
    try:
        return build_home(tmp_path_factory.mktemp("hostile-cells"), claude=[_nested_call])
    finally:
        sys.setrecursionlimit(limit)


def test_a_tool_cell_nested_thousands_deep_is_read_as_text(hostile: EvidenceHome) -> None:
    for one_shot in (True, False):
        for types in (["prior_failure"], ["tool_outcome"], ALL_TYPES):
            response = answer(_request("claude", types), db_path=hostile.db, config_path=hostile.config,
                              warm=None if one_shot else WarmState())
            _not_internal(response.envelope, response.exit_code)
            assert response.envelope["outcome"] == "ok"
            snippets = [i["snippet"] for i in response.envelope["result"]["items"]]
            assert any("mcp__fixtures__query" in s for s in snippets), snippets


def test_a_blob_tool_input_that_is_not_utf8_is_data(hostile: EvidenceHome, tmp_path: Path) -> None:
    """A database written by another tool may hold a tool input as a BLOB, even one that is not UTF-8: its
    bytes are data (shown decoded, invalid bytes replaced), never a crash."""
    db = tmp_path / "blob.sqlite"
    shutil.copyfile(hostile.db, db)
    con = sqlite3.connect(db)
    with con:
        con.execute("UPDATE tool_calls SET input_json = ? WHERE name = 'Bash'",
                    (b'{"command":"pytest -q tests/test_auth.py \xff\xfe\x80 ModuleNotFoundError"}',))
    con.close()
    for one_shot in (True, False):
        response = answer(_request("claude", ALL_TYPES), db_path=db, config_path=hostile.config,
                          warm=None if one_shot else WarmState())
        _not_internal(response.envelope, response.exit_code)
        assert response.envelope["outcome"] == "ok"
        snippets = [i["snippet"] for i in response.envelope["result"]["items"]]
        assert any("pytest -q tests/test_auth.py" in s for s in snippets), snippets


# --- any row shape ----------------------------------------------------------------------------------------


def _claude_all(t: ClaudeTranscript, repo: Path) -> None:
    t.user("Fix the auth tests; we decided to keep PyJWT rather than switch to authlib.")
    t.think("pytest first; the ModuleNotFoundError is probably the missing jwt package.")
    t.bash("pytest -q tests/test_auth.py", "Run pytest",
           "E   ModuleNotFoundError: No module named 'jwt'\n1 failed in 0.2s", exit_code=1)
    t.say("pytest fails with ModuleNotFoundError because PyJWT is not installed; I'll add it.")
    t.edit(repo / "requirements.txt", "requests==2.32.0", "requests==2.32.0\nPyJWT==2.9.0  # pytest needs it")
    t.multi_edit(repo / "tests" / "test_auth.py", [("import jwt", "import jwt  # pytest"), ("a = 1", "a = 2")])
    t.bash("pytest -q tests/test_auth.py", "Run pytest again", "3 passed in 0.3s")
    t.user("The root cause was the missing PyJWT package for pytest, thanks.")
    t.compaction("Fixed the pytest ModuleNotFoundError by adding PyJWT; decided to keep PyJWT.")
    t.away_summary("pytest passes again after adding PyJWT (ModuleNotFoundError fixed).")
    t.ai_title("Fix pytest ModuleNotFoundError")


def _codex_all(x: CodexTranscript, repo: Path) -> None:
    x.user("Run pytest and fix the ModuleNotFoundError.")
    x.reason("pytest fails on import; ModuleNotFoundError means a dependency is missing.")
    x.shell(["pytest", "-q"], "E   ModuleNotFoundError: No module named 'jwt'\n1 failed", exit_code=1)
    x.exec_command("pytest -q tests/test_auth.py", "ModuleNotFoundError: No module named 'jwt'", exit_code=1)
    x.apply_patch("requirements.txt", "requests==2.32.0", "PyJWT==2.9.0  # pytest")
    x.shell("pytest -q", "3 passed", form="text")
    x.say("Because PyJWT was missing, pytest raised ModuleNotFoundError; I added it and pytest passes now.")


#: (table, column) pairs whose cells the requests read (evidence, scope checks, joins).
CELLS = [
    ("tool_calls", "name"), ("tool_calls", "input_json"), ("tool_calls", "file_path"),
    ("tool_results", "content"), ("tool_results", "is_error"), ("tool_results", "session_id"),
    ("tool_results", "file_path"),
    ("messages", "text"), ("messages", "role"), ("messages", "timestamp"), ("messages", "cwd"),
    ("messages", "is_sidechain"), ("messages", "is_meta"), ("messages", "visibility"), ("messages", "type"),
    ("summaries", "content"), ("summaries", "source"), ("summaries", "timestamp"),
    ("sessions", "title"), ("sessions", "git_branch"), ("sessions", "ended_at"),
]


def _nested(depth: int, closed: bool, inner: str) -> str:
    opening = "".join(itertools.islice(itertools.cycle(['{"command":', "[", '{"output":', "["]), depth))
    closing = "".join("}" if part.startswith("{") else "]"
                      for part in reversed(list(itertools.islice(
                          itertools.cycle(['{"command":', "[", '{"output":', "["]), depth))))
    return opening + json.dumps(inner) + (closing if closed else "")


_WORDS = st.sampled_from(["pytest", "ModuleNotFoundError", "Exit code 1", "Exit code: 2", '"exit_code":1',
                          "Traceback (most recent call last)", "because", "decided", "root cause", "*** Begin Patch",
                          "*** Update File: a.py", "\n", " ", "\\u", "\\ud800", "\\", '"', "{", "[", "é", "数据库"])
VALUES = st.one_of(
    st.none(),
    st.just(""),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False),
    st.text(st.characters(blacklist_categories=("Cs",)), max_size=40),
    st.lists(_WORDS, max_size=12).map("".join),
    st.binary(max_size=40),
    st.lists(_WORDS, max_size=12).map(lambda words: "".join(words).encode() + b"\xff\x80"),
    st.lists(_WORDS, max_size=12).map(lambda words: "".join(words).encode()),
    st.builds(_nested, st.sampled_from([1200, 3000, 6000]), st.booleans(), st.sampled_from(["pytest", "x"])),
    st.builds(lambda n, tail: "Exit code 1\npytest " + "x" * n + tail,
              st.sampled_from([20_000, 300_000]), st.sampled_from([" ModuleNotFoundError", "", "\\ud800"])),
    st.sampled_from(['{"command":"pytest \\ud800 ModuleNotFoundError"}', '{"output":"pytest \\udc00",'
                     '"metadata":{"exit_code":1}}', '"\\ud800"', '{"command":["bash","-lc",["pytest"]]}',
                     '{"command":[null,1,{"a":[]}]}', '{"file_path":["x"],"edits":{"a":1}}', "[]", "{}", "null",
                     '{"output":"', '{"edits":[null,"x",{"old_string":1,"new_string":["pytest"]}]}']),
)
MUTATION = st.tuples(st.sampled_from(CELLS), st.integers(min_value=0, max_value=40) | st.none(), VALUES)


@pytest.fixture(scope="module")
def shapes_home(tmp_path_factory: pytest.TempPathFactory) -> EvidenceHome:
    return build_home(tmp_path_factory.mktemp("row-shapes"), claude=[_claude_all], codex=[_codex_all])


_COPIES = itertools.count()


def _mutated(base: EvidenceHome, mutations: Sequence[tuple[tuple[str, str], int | None, object]]) -> Path:
    """A copy of the home's index with each mutation applied: every row of the table (index None) or the
    index-th one (modulo the count) gets the value in that column (the FTS triggers keep messages_fts in step)."""
    db = base.db.parent / f"shape-{next(_COPIES)}.sqlite"
    shutil.copyfile(base.db, db)
    con = sqlite3.connect(db)
    try:
        with con:
            for (table, column), index, value in mutations:
                if index is None:
                    con.execute(f"UPDATE {table} SET {column} = ?", (value,))
                else:
                    count = con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
                    if count:
                        con.execute(f"UPDATE {table} SET {column} = ? WHERE rowid = "
                                    f"(SELECT rowid FROM {table} ORDER BY rowid LIMIT 1 OFFSET ?)",
                                    (value, index % count))
    finally:
        con.close()
    return db


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                     HealthCheck.too_slow,
                                                                     HealthCheck.data_too_large])
@given(mutations=st.lists(MUTATION, min_size=1, max_size=4))
def test_no_row_shape_gives_internal_error(shapes_home: EvidenceHome,
                                           mutations: list[tuple[tuple[str, str], int | None, object]]) -> None:
    db = _mutated(shapes_home, mutations)
    try:
        for source in ("claude", "codex"):
            for one_shot in (True, False):
                response = answer(_request(source, ALL_TYPES), db_path=db, config_path=shapes_home.config,
                                  warm=None if one_shot else WarmState())
                _not_internal(response.envelope, response.exit_code)
    finally:
        db.unlink()
