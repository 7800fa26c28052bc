"""The fixture builder writes Obelisk-shaped databases: schema generations, FTS, ids, cursors, manifest."""

from __future__ import annotations

import base64
import collections
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from obelisk_session_evidence.fixtures.builder import (
    COLUMNS,
    GENERATIONS,
    MIGRATED_COLUMNS,
    FixtureInfo,
    Generation,
    build_fixture,
    cursor_for,
)

from tests.realobelisk import real_dir
from tools.devkit.large import build_large

REPO = Path(__file__).resolve().parents[2]
NOW_MS = 1_795_986_324_950
EVIDENCE_TYPES = {"prior_failure", "decision", "file_history", "tool_outcome", "summary"}
MIGRATED = {(t, c) for t, c, _ in MIGRATED_COLUMNS}


def _ro(path: Path) -> sqlite3.Connection:
    """Read a closed fixture without creating -wal/-shm next to it."""
    conn = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    conn.row_factory = sqlite3.Row
    return conn


def _columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]


def _manifest(info: FixtureInfo) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(info.manifest_path.read_text(encoding="utf-8"))
    return data


def _fts_sql(conn: sqlite3.Connection, name: str) -> str:
    row = conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (name,)).fetchone()
    return str(row[0])


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, FixtureInfo]:
    root = tmp_path_factory.mktemp("fixtures")
    return {g: build_fixture(root / g, generation=cast(Generation, g), extra_sessions=3, now_ms=NOW_MS)
            for g in GENERATIONS}


@pytest.fixture(scope="module")
def current(built: dict[str, FixtureInfo]) -> FixtureInfo:
    return built["current"]


@pytest.fixture
def conn(current: FixtureInfo) -> Iterator[sqlite3.Connection]:
    connection = _ro(current.db_path)
    yield connection
    connection.close()


# ------------------------------------------------------------------------------------------------ schema


def test_current_has_every_declared_column_in_order(current: FixtureInfo, conn: sqlite3.Connection) -> None:
    for table, declared in COLUMNS.items():
        assert tuple(_columns(conn, table)) == declared, table
    indexes = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='index' AND sql IS NOT NULL")}
    assert {"idx_messages_main_timeline", "idx_messages_usage_day", "idx_messages_turn_duration"} <= indexes
    assert _manifest(current)["schema"]["missing_columns"] == []


@pytest.mark.real_obelisk
def test_current_matches_the_real_obelisk_schema(conn: sqlite3.Connection) -> None:
    real = _ro(real_dir() / "fresh.sqlite")
    try:
        real_tables = [r[0] for r in real.execute(
            "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE '%fts%'")]
        for table in real_tables:
            mine = [tuple(r) for r in conn.execute(f"PRAGMA table_info({table})")]
            theirs = [tuple(r) for r in real.execute(f"PRAGMA table_info({table})")]
            assert mine == theirs, table
        same_text = "SELECT name, sql FROM sqlite_master WHERE type IN ('table', 'trigger') ORDER BY name"
        assert dict(conn.execute(same_text).fetchall()) == dict(real.execute(same_text).fetchall())
        index_sql = "SELECT name, sql FROM sqlite_master WHERE type='index' AND sql IS NOT NULL"
        real_indexes, my_indexes = dict(real.execute(index_sql).fetchall()), dict(conn.execute(index_sql).fetchall())
        assert {k: my_indexes[k] for k in real_indexes} == real_indexes
        assert set(my_indexes) - set(real_indexes) == {
            "idx_messages_main_timeline", "idx_messages_usage_day", "idx_messages_turn_duration"}
    finally:
        real.close()


def test_legacy_lacks_the_fourteen_migrated_columns(built: dict[str, FixtureInfo]) -> None:
    db = _ro(built["legacy"].db_path)
    for table, declared in COLUMNS.items():
        expected = tuple(c for c in declared if (table, c) not in MIGRATED)
        assert tuple(_columns(db, table)) == expected, table
    assert "cursor" not in _columns(db, "index_state")
    indexes = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='index' AND sql IS NOT NULL")}
    assert not indexes & {"idx_sessions_source", "idx_messages_source", "idx_messages_main_timeline",
                          "idx_messages_usage_day", "idx_messages_turn_duration"}
    markers = {r[0] for r in db.execute("SELECT jsonl_path FROM index_state WHERE jsonl_path LIKE '\\_\\_%' "
                                        "ESCAPE '\\'")}
    assert markers == {"__last_build__", "__claude_canonical_transcript_v2__",
                       "__codex_canonical_transcript_v2__"}
    assert len(_manifest(built["legacy"])["schema"]["missing_columns"]) == 14
    db.close()


def test_migrated_appends_columns_in_migration_order(built: dict[str, FixtureInfo],
                                                     conn: sqlite3.Connection) -> None:
    db = _ro(built["migrated"].db_path)
    for table, declared in COLUMNS.items():
        base = [c for c in declared if (table, c) not in MIGRATED]
        added = [c for t, c, _ in MIGRATED_COLUMNS if t == table]
        assert _columns(db, table) == base + added, table
        by_name = {r[1]: tuple(r)[2:] for r in db.execute(f"PRAGMA table_info({table})")}
        assert by_name == {r[1]: tuple(r)[2:] for r in conn.execute(f"PRAGMA table_info({table})")}
    markers = {r[0] for r in db.execute("SELECT jsonl_path FROM index_state WHERE cursor IS NULL")}
    assert {"__claude_canonical_transcript_v2__", "__claude_canonical_transcript_v3__"} <= markers
    db.close()


@pytest.mark.parametrize("generation", GENERATIONS)
def test_tokenizer_is_visible_in_sqlite_master(built: dict[str, FixtureInfo], generation: str) -> None:
    db = _ro(built[generation].db_path)
    messages, memories = _fts_sql(db, "messages_fts"), _fts_sql(db, "memories_fts")
    if generation == "trigram":
        assert "tokenize='trigram'" in messages and "tokenize='trigram'" in memories
    else:
        assert "tokenize" not in messages
        assert "tokenize='unicode61 remove_diacritics 1'" in memories
    assert _manifest(built[generation])["schema"]["tokenizer"] == ("trigram" if generation == "trigram"
                                                                   else "unicode61")
    db.close()


# ------------------------------------------------------------------------------------------------ FTS


@pytest.mark.parametrize("generation", GENERATIONS)
def test_fts_agrees_with_content(built: dict[str, FixtureInfo], generation: str, tmp_path: Path) -> None:
    copy = tmp_path / "copy.sqlite"
    shutil.copyfile(built[generation].db_path, copy)
    db = sqlite3.connect(copy)
    db.execute("INSERT INTO messages_fts(messages_fts, rank) VALUES('integrity-check', 1)")
    db.execute("INSERT INTO memories_fts(memories_fts, rank) VALUES('integrity-check', 1)")
    texts = [r[0] for r in db.execute("SELECT text FROM messages WHERE text IS NOT NULL")]
    for term in ("CANARYTERM", "stripe", "hiddenaardvark", "nightlyworkerlog", "Celery"):
        (hits,) = db.execute("SELECT count(*) FROM messages_fts WHERE messages_fts MATCH ?", (f'"{term}"',)).fetchone()
        if generation == "trigram":
            expected = sum(term.lower() in t.lower() for t in texts)
        else:
            expected = sum(term.lower() in re.findall(r"\w+", t.lower()) for t in texts)
        assert hits == expected > 0, term
    db.close()


def test_cjk_and_truncation_behave_like_obelisk(built: dict[str, FixtureInfo]) -> None:
    for generation, substring_hits in (("current", 0), ("trigram", 1)):
        db = _ro(built[generation].db_path)
        manifest = _manifest(built[generation])
        whole = db.execute("SELECT uuid FROM messages_fts WHERE messages_fts MATCH ?", ('"数据库连接错误"',)).fetchall()
        assert [r[0] for r in whole] == [manifest["cjk"]["uuid"]]
        part = db.execute("SELECT count(*) FROM messages_fts WHERE messages_fts MATCH ?", ('"连接错误"',)).fetchone()
        assert part[0] == substring_hits
        long = manifest["long_message"]
        (text,) = db.execute("SELECT text FROM messages WHERE uuid = ?", (long["uuid"],)).fetchone()
        assert len(text) == long["stored_chars"] == 10_000 < long["full_chars"]
        tail = db.execute("SELECT count(*) FROM messages_fts WHERE messages_fts MATCH ?", (long["tail_term"],))
        assert tail.fetchone()[0] == 0
        db.close()


# ------------------------------------------------------------------------------------------------ determinism


def _normalise(text: str, root: Path) -> str:
    """Replace the build directory, and the project slugs derived from it, by a placeholder."""
    claude_slug = re.sub(r"[^A-Za-z0-9]", "-", str(root))
    codex_slug = "-" + str(root).lstrip("/").replace("/", "-")
    return text.replace(str(root), "<ROOT>").replace(claude_slug, "<SLUG>").replace(codex_slug, "<SLUG>")


def _dump(db_path: Path, root: Path) -> dict[str, list[tuple[Any, ...]]]:
    db = _ro(db_path)
    out: dict[str, list[tuple[Any, ...]]] = {}
    for table in COLUMNS:
        rows = []
        for row in db.execute(f"SELECT * FROM {table}"):
            values = [_normalise(v, root) if isinstance(v, str) else v for v in row]
            if table == "index_state" and isinstance(values[-1], str):
                values[-1] = ":".join(values[-1].split(":")[:3])  # ctime and inode come from the OS
            rows.append(tuple(values))
        out[table] = sorted(rows, key=repr)
    db.close()
    return out


def test_same_seed_same_fixture(tmp_path: Path) -> None:
    a = build_fixture(tmp_path / "a", seed=11, extra_sessions=4, now_ms=NOW_MS)
    b = build_fixture(tmp_path / "b", seed=11, extra_sessions=4, now_ms=NOW_MS)
    text_a = _normalise(a.manifest_path.read_text(), tmp_path / "a")
    text_b = _normalise(b.manifest_path.read_text(), tmp_path / "b")
    assert text_a == text_b
    assert _dump(a.db_path, tmp_path / "a") == _dump(b.db_path, tmp_path / "b")
    c = build_fixture(tmp_path / "c", seed=12, extra_sessions=4, now_ms=NOW_MS)
    ids = {s["id"] for s in _manifest(c)["sessions"]}
    assert ids.isdisjoint({s["id"] for s in _manifest(a)["sessions"]})


def test_rebuild_replaces_a_previous_fixture_only(tmp_path: Path) -> None:
    first = build_fixture(tmp_path / "fx", now_ms=NOW_MS, write_transcripts=False)
    again = build_fixture(tmp_path / "fx", now_ms=NOW_MS, extra_sessions=1)
    assert again.sessions == first.sessions + 1
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "obelisk.sqlite").write_bytes(b"not mine")
    with pytest.raises(FileExistsError):
        build_fixture(foreign)
    assert (foreign / "obelisk.sqlite").read_bytes() == b"not mine"


# ------------------------------------------------------------------------------------------------ files


def test_wal_mode_and_clean_close(built: dict[str, FixtureInfo]) -> None:
    for info in built.values():
        header = info.db_path.read_bytes()[:20]
        assert header[18:20] == b"\x02\x02", "WAL read/write version bytes"
        assert not Path(f"{info.db_path}-wal").exists() and not Path(f"{info.db_path}-shm").exists()


@pytest.mark.parametrize("generation", ["current", "legacy", "migrated"])
def test_transcripts_match_index_state(built: dict[str, FixtureInfo], generation: str) -> None:
    info = built[generation]
    db = _ro(info.db_path)
    units = db.execute("SELECT * FROM index_state WHERE jsonl_path NOT LIKE '\\_\\_%' ESCAPE '\\'").fetchall()
    assert len(units) == _manifest(info)["counts"]["index_state_units"] > 0
    for row in units:
        path = Path(row["jsonl_path"])
        assert path.is_file() and path.is_relative_to(info.home)
        data, st = path.read_bytes(), path.stat()
        assert data.endswith(b"\n") and all(json.loads(line) for line in data.splitlines())
        assert row["lines_processed"] == data.count(b"\n")
        assert abs(row["mtime"] - st.st_mtime_ns / 1e6) < 1e-3
        if generation == "legacy":
            assert "cursor" not in _columns(db, "index_state")
            continue
        provider = "codex" if "/.codex/" in str(path) else "claude"
        assert row["cursor"] == cursor_for(path, provider, "current")
        mtime, lines, size, ctime, ino = row["cursor"].split(":")
        assert abs(float(mtime) - st.st_mtime_ns / 1e6) < 1e-3 and float(mtime) == row["mtime"]
        assert (int(lines), int(size), int(ino)) == (row["lines_processed"], st.st_size, st.st_ino)
        assert abs(float(ctime) - st.st_ctime_ns / 1e6) < 1e-3
    db.close()


def test_home_layout_and_repositories(current: FixtureInfo) -> None:
    manifest = _manifest(current)
    home = current.home
    assert sorted(p.name for p in (home / "src").iterdir()) == sorted(manifest["repos"])
    assert all(Path(root).is_dir() and any(Path(root).iterdir()) for root in manifest["repos"].values())
    assert list((home / ".claude" / "projects").glob("*/*/subagents/agent-*.jsonl"))
    assert list((home / ".claude" / "projects").glob("*/*/subagents/agent-*.meta.json"))
    rollouts = list((home / ".codex" / "sessions").glob("????/??/??/rollout-*.jsonl"))
    assert len(rollouts) == sum(s["source"] == "codex" for s in manifest["sessions"])
    assert (home / ".codex" / "session_index.jsonl").is_file()
    assert manifest["worktrees"] == {"alpha-svc-wt": "alpha-svc"}


@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
def test_alpha_svc_is_a_deterministic_git_repository(current: FixtureInfo, tmp_path: Path) -> None:
    alpha = current.home / "src" / "alpha-svc"
    git = ["git", "-c", f"safe.directory={alpha}", "-C", str(alpha)]
    log = subprocess.run([*git, "log", "--format=%H|%an|%aI"], capture_output=True, text=True, check=True)
    commits = log.stdout.strip().splitlines()
    assert len(commits) == 1
    head, author, stamp = commits[0].split("|")
    assert (author, stamp) == ("Fixture Builder", "2026-09-14T07:00:00+00:00")
    manifest = _manifest(current)
    assert manifest["git"]["alpha-svc"]["head"] == head
    assert manifest["git"]["alpha-svc-wt"]["worktree_of"] == "alpha-svc"
    assert (current.home / "src" / "alpha-svc-wt" / ".git").is_file()
    other = build_fixture(tmp_path / "again", now_ms=NOW_MS, write_transcripts=False)
    assert _manifest(other)["git"]["alpha-svc"]["head"] == head


def test_without_transcripts_the_index_still_describes_them(tmp_path: Path) -> None:
    info = build_fixture(tmp_path / "fx", write_transcripts=False, now_ms=NOW_MS)
    assert not (info.home / ".claude").exists() and not (info.home / ".codex").exists()
    assert (info.home / "src" / "alpha-svc").is_dir()
    db = _ro(info.db_path)
    (units,) = db.execute("SELECT count(*) FROM index_state WHERE cursor IS NOT NULL").fetchone()
    assert units == _manifest(info)["counts"]["index_state_units"]
    db.close()


# ------------------------------------------------------------------------------------------------ manifest


def _ref_texts(db: sqlite3.Connection, fact: dict[str, Any]) -> list[str]:
    texts: list[str] = []
    for uid in fact["message_uuids"]:
        row = db.execute("SELECT session_id, text FROM messages WHERE uuid = ?", (uid,)).fetchone()
        assert row is not None, uid
        assert row["session_id"] in fact.get("session_ids", [fact["session_id"]])
        texts.append(row["text"] or "")
    for tool_id in fact["tool_ids"]:
        call = db.execute("SELECT input_json, file_path FROM tool_calls WHERE id = ?", (tool_id,)).fetchone()
        result = db.execute("SELECT content FROM tool_results WHERE tool_use_id = ?", (tool_id,)).fetchone()
        assert call is not None and result is not None, tool_id
        texts += [call["input_json"], call["file_path"] or "", result["content"]]
    for sid in fact["summary_ids"]:
        (content,) = db.execute("SELECT content FROM summaries WHERE id = ?", (sid,)).fetchone()
        texts.append(content)
    return texts


@pytest.mark.parametrize("generation", GENERATIONS)
def test_every_manifest_fact_exists_in_the_db(built: dict[str, FixtureInfo], generation: str) -> None:
    info = built[generation]
    manifest = _manifest(info)
    db = _ro(info.db_path)
    assert manifest["generation"] == generation and manifest["agents"] == {
        "claude-agent": ["claude"], "codex-agent": ["codex"]}
    assert {"alpha-svc", "alpha-svc-wt", "beta-web"} <= set(manifest["repos"])
    types = collections.Counter(f["evidence_type"] for f in manifest["facts"])
    assert set(types) == EVIDENCE_TYPES
    for fact in [*manifest["facts"], *manifest["canaries"]]:
        assert fact["refs"] and fact["terms"]
        assert db.execute("SELECT 1 FROM sessions WHERE id = ?", (fact["session_id"],)).fetchone()
        assert any(fact["must_contain"] in text for text in _ref_texts(db, fact)), fact["id"]
    for canary in manifest["canaries"]:
        assert any("CANARYTERM" in t for t in _ref_texts(db, canary))
    counts = manifest["counts"]
    for table in ("sessions", "messages", "tool_calls", "tool_results", "summaries", "subagents"):
        assert db.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == counts[table], table
    assert counts["messages"] == info.messages and counts["sessions"] == info.sessions
    db.close()


def test_secrets_are_planted_where_the_manifest_says(conn: sqlite3.Connection, current: FixtureInfo) -> None:
    secrets = {s["kind"]: s for s in _manifest(current)["secrets"]}
    assert set(secrets) == {"aws_access_key_id", "github_token", "url_credentials", "private_key", "jwt"}
    assert re.fullmatch(r"AKIA[A-Z0-9]{16}", secrets["aws_access_key_id"]["value"])
    assert re.fullmatch(r"ghp_[A-Za-z0-9]{36}", secrets["github_token"]["value"])
    assert secrets["url_credentials"]["value"] == "https://user:pa55word@example.com/x"
    assert "-----BEGIN RSA PRIVATE KEY-----" in secrets["private_key"]["value"]
    assert secrets["jwt"]["value"].count(".") == 2
    for secret in secrets.values():
        for where in secret["locations"]:
            if where["table"] == "messages":
                (text,) = conn.execute("SELECT text FROM messages WHERE uuid = ?", (where["id"],)).fetchone()
            else:
                (text,) = conn.execute("SELECT content FROM tool_results WHERE tool_use_id = ?",
                                       (where["id"],)).fetchone()
            assert secret["value"] in text


@pytest.mark.parametrize("generation", GENERATIONS)
def test_hidden_terms_live_only_in_hidden_rows(built: dict[str, FixtureInfo], generation: str) -> None:
    manifest = _manifest(built[generation])
    db = _ro(built[generation].db_path)
    hidden = {h["uuid"]: h for h in manifest["hidden"]}
    assert {h["reason"] for h in hidden.values()} == {"hidden", "is_meta", "inactive"}
    assert (manifest["hidden_terms"] == []) is (generation == "legacy")
    for term in [h["terms"][0] for h in hidden.values()]:
        rows = db.execute("SELECT uuid FROM messages_fts WHERE messages_fts MATCH ?", (term,)).fetchall()
        assert {r[0] for r in rows} <= set(hidden) and rows
    if generation != "legacy":
        for uid, entry in hidden.items():
            row = db.execute("SELECT visibility, is_meta FROM messages WHERE uuid = ?", (uid,)).fetchone()
            assert (row["visibility"], row["is_meta"]) == (entry["visibility"], entry["is_meta"])
            assert row["visibility"] != "visible" or row["is_meta"] == 1
    db.close()


# ------------------------------------------------------------------------------------------------ ids


def test_claude_ids_and_shapes(conn: sqlite3.Connection) -> None:
    for row in conn.execute("SELECT * FROM sessions WHERE source = 'claude'"):
        assert Path(row["jsonl_path"]).stem == row["id"]
        assert row["project"] == re.sub(r"[^A-Za-z0-9]", "-", row["project_path"])
    failures = conn.execute("SELECT tr.content, tc.input_json FROM tool_results tr JOIN tool_calls tc "
                            "ON tc.id = tr.tool_use_id WHERE tr.is_error = 1").fetchall()
    assert failures and all(r["content"].startswith("Exit code ") for r in failures)
    for row in conn.execute("SELECT * FROM tool_calls WHERE session_id NOT LIKE 'codex:%'"):
        assert row["id"].startswith("toolu_")
        if row["name"] in ("Read", "Edit", "Write"):
            assert row["file_path"] == json.loads(row["input_json"])["file_path"]
            assert Path(row["file_path"]).is_absolute()
        else:
            assert row["file_path"] is None
    sidechain = conn.execute("SELECT DISTINCT session_id, agent_id FROM messages WHERE is_sidechain = 1").fetchall()
    assert len(sidechain) == 1 and sidechain[0]["agent_id"].startswith("agent-")
    sub = conn.execute("SELECT * FROM subagents").fetchone()
    assert (sub["agent_id"], sub["session_id"]) == (sidechain[0]["agent_id"], sidechain[0]["session_id"])
    assert conn.execute("SELECT 1 FROM sessions WHERE id = ?", (sub["agent_id"],)).fetchone() is None
    sources = {r[0] for r in conn.execute("SELECT source FROM summaries")}
    assert sources == {"away_summary"}


def test_codex_ids_point_at_transcript_lines(conn: sqlite3.Connection) -> None:
    sessions = conn.execute("SELECT id, jsonl_path FROM sessions WHERE source = 'codex'").fetchall()
    assert sessions
    for session in sessions:
        thread = session["id"].removeprefix("codex:")
        assert session["jsonl_path"].endswith(f"-{thread}.jsonl")
        lines = Path(session["jsonl_path"]).read_text(encoding="utf-8").splitlines()
        assert json.loads(lines[0])["payload"]["id"] == thread
        for msg in conn.execute("SELECT * FROM messages WHERE session_id = ?", (session["id"],)):
            match = re.fullmatch(rf"codex:{re.escape(thread)}:(\d{{6}})", msg["uuid"])
            assert match
            record = json.loads(lines[int(match.group(1)) - 1])
            payload = record["payload"]
            assert record["timestamp"] == msg["timestamp"]
            if msg["text"] is not None:
                assert msg["text"] == _payload_text(payload)
            else:
                assert payload["type"] in ("function_call", "custom_tool_call")
            if msg["text"] and msg["text"].startswith("<environment_context>"):
                assert (msg["visibility"], msg["is_meta"]) == ("hidden", 1)
    calls = conn.execute("SELECT tc.*, tr.message_uuid AS result_message, tr.is_error, tr.content "
                         "FROM tool_calls tc JOIN tool_results tr ON tr.tool_use_id = tc.id "
                         "WHERE tc.session_id LIKE 'codex:%'").fetchall()
    for call in calls:
        assert re.fullmatch(r"codex:[0-9a-f-]{36}:call_\w+", call["id"])
        assert call["file_path"] is None and call["is_error"] == 0
        assert call["result_message"] == call["message_uuid"]
        assert "exit_code" in json.loads(call["content"])["metadata"]
        if call["name"] == "apply_patch":
            assert "*** Update File: " in json.loads(call["input_json"])
    exit_codes = {json.loads(c["content"])["metadata"]["exit_code"] for c in calls}
    assert {0, 1, 2} <= exit_codes


def _payload_text(payload: dict[str, Any]) -> str:
    if payload["type"] == "message":
        return str(payload["content"][0]["text"])
    return str(payload.get("message", payload.get("text")))


def test_project_path_is_the_most_common_cwd(conn: sqlite3.Connection) -> None:
    for session in conn.execute("SELECT id, project_path FROM sessions"):
        counts = conn.execute("SELECT cwd, count(*) FROM messages WHERE session_id = ? GROUP BY cwd "
                              "ORDER BY count(*) DESC", (session["id"],)).fetchall()
        assert session["project_path"] == counts[0][0]


# ------------------------------------------------------------------------------------------------ cursors


def test_cursor_formats(tmp_path: Path) -> None:
    claude = tmp_path / "c.jsonl"
    claude.write_bytes(b'{"a":1}\n{"b":2}\n{"c":3}')
    assert cursor_for(claude, "claude", "current").split(":")[1] == "3"
    claude.write_bytes(b'{"a":1}\n{"b":2}\n{"c":')
    fields = cursor_for(claude, "claude", "current").split(":")
    assert fields[1] == "2" and fields[2] == str(claude.stat().st_size)
    assert cursor_for(claude, "claude", "legacy").count(":") == 1

    codex = tmp_path / "x.jsonl"
    codex.write_bytes(b'{"a":1}\n{"b":2}\n{"partial"')
    v4 = cursor_for(codex, "codex", "cooperative").split(":")
    assert len(v4) == 6 and v4[1] == "2" and v4[2] == str(len(b'{"a":1}\n{"b":2}\n'))
    state = json.loads(base64.urlsafe_b64decode(v4[5] + "=" * (-len(v4[5]) % 4)))
    assert state["sourceSize"] == codex.stat().st_size and len(v4[5]) > 40_000

    kimi = tmp_path / "kimi-session"
    (kimi / "agents" / "main").mkdir(parents=True)
    (kimi / "state.json").write_text('{"cwd": "/x"}\n')
    (kimi / "agents" / "main" / "wire.jsonl").write_text('{"a":1}\n{"b":2}\n')
    os.utime(kimi / "state.json", ns=(1, 1_700_000_000_123_456_789))
    newest = max(p.stat().st_mtime_ns for p in (kimi / "state.json", kimi / "agents" / "main" / "wire.jsonl"))
    mtime, total = cursor_for(kimi, "kimi", "aggregate").split(":")
    assert float(mtime) == newest / 1e6 and total == "3"

    pi = cursor_for(codex, "pi", "snapshot").split(":")
    assert pi[1:3] == ["0", "pi-snapshot-v1"] and pi[4:] == [str(codex.stat().st_size), str(codex.stat().st_ino)]
    with pytest.raises(ValueError, match="no 'cooperative' cursor"):
        cursor_for(claude, "claude", "cooperative")
    with pytest.raises(ValueError, match="unknown provider"):
        cursor_for(claude, "omp", "current")


# ------------------------------------------------------------------------------------------------ large


def test_build_large_is_fast_and_true_to_its_manifest(tmp_path: Path) -> None:
    started = time.perf_counter()
    info = build_large(tmp_path / "large.sqlite", messages=20_000, seed=3)
    elapsed = time.perf_counter() - started
    assert elapsed < 15, f"20k messages took {elapsed:.1f}s"
    assert not Path(f"{info.db_path}-wal").exists() and info.db_path.read_bytes()[18:20] == b"\x02\x02"
    manifest = _manifest(info)
    db = _ro(info.db_path)
    assert db.execute("SELECT count(*) FROM messages").fetchone()[0] == info.messages == 20_000
    assert db.execute("SELECT count(*) FROM sessions").fetchone()[0] == info.sessions
    units = db.execute("SELECT count(*) FROM index_state WHERE cursor IS NOT NULL").fetchone()[0]
    assert units == info.sessions
    for kind, entry in manifest["terms"].items():
        (hits,) = db.execute("SELECT count(*) FROM messages_fts WHERE messages_fts MATCH ?",
                             (entry["term"],)).fetchone()
        assert hits == entry["planted_docs"] > 0, kind
    rare, common = manifest["terms"]["rare"]["planted_docs"], manifest["terms"]["common"]["planted_docs"]
    assert rare < manifest["terms"]["medium"]["planted_docs"] < common
    (the,) = db.execute("SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'the'").fetchone()
    (texts,) = db.execute("SELECT count(text) FROM messages").fetchone()
    assert the > 0.8 * texts
    projects = manifest["projects"]
    assert projects["big"]["sessions"] > projects["mid"]["sessions"] >= projects["small"]["sessions"]
    for role in ("big", "mid", "small"):
        (n,) = db.execute("SELECT count(*) FROM messages WHERE cwd = ?", (projects[role]["root"],)).fetchone()
        assert n == projects[role]["messages"]
    db.close()


def test_build_large_legacy_generation(tmp_path: Path) -> None:
    info = build_large(tmp_path / "legacy.sqlite", messages=1_500, generation="legacy")
    db = _ro(info.db_path)
    assert "cursor" not in _columns(db, "index_state") and "source" not in _columns(db, "messages")
    assert db.execute("SELECT count(*) FROM messages").fetchone()[0] == 1_500
    db.close()


# ------------------------------------------------------------------------------------------------ tool


def test_make_fixture_tool(tmp_path: Path) -> None:
    tool = REPO / "tools" / "make-fixture"
    assert os.access(tool, os.X_OK)
    small = subprocess.run([sys.executable, str(tool), str(tmp_path / "s"), "--generation", "trigram",
                            "--seed", "5", "--extra-sessions", "2"], capture_output=True, text=True, check=True,
                           cwd=tmp_path)
    assert small.stdout.count("\n") == 1 and "trigram fixture" in small.stdout
    assert _manifest_at(tmp_path / "s" / "manifest.json")["seed"] == 5
    large = subprocess.run([sys.executable, str(tool), str(tmp_path / "l"), "--large", "2000"],
                           capture_output=True, text=True, check=True, cwd=tmp_path)
    assert "2000 messages" in large.stdout
    assert (tmp_path / "l" / "obelisk.manifest.json").is_file()


def _manifest_at(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data
