"""Issue 6, item 3: bad databases. Every broken, hostile or pathological index file gives a typed failure
envelope (outcome ``failed``, exit 3) or a bounded answer; never a traceback, a hang or partial raw output.

Each case builds its database from a fixture copy, answers in-process (``answer()``: exact code, timing,
bounds) and through the real CLI subprocess (``python -m obelisk_session_evidence query``: exit code, stderr
empty, exactly one JSON document on stdout, subprocess timeout). Every envelope validates against the
response model and carries no private content outside ``result.items``.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from obelisk_session_evidence.contract.models import HistoricalEvidenceResponseV0
from obelisk_session_evidence.digest import key_path
from obelisk_session_evidence.fixtures.builder import FixtureInfo, build_fixture
from obelisk_session_evidence.service import answer

from tests.conftest import CliResult, make_request, run_cli, scope_entry, write_config

#: A query term nothing but the request carries: it must never appear outside result.items.
PRIVATE_TERM = "ZQprivatequerytermZQ"
TERMS = ["stripe", "ModuleNotFoundError", PRIVATE_TERM]
ALL_TYPES = ["prior_failure", "decision", "file_history", "tool_outcome", "summary"]
LIMITS = {"max_sessions": 10, "max_items": 20, "max_snippet_chars": 500, "max_total_chars": 6000}
EXIT = {"ok": 0, "rejected": 2, "failed": 3}
CLI_TIMEOUT_S = 60
PAGE = 4096

#: Typed failures a corrupt file may produce (what SQLite detects depends on which page it reads first).
CORRUPT_CODES = {"index_unreadable", "malformed_data", "schema_incompatible"}


@dataclass(frozen=True)
class Fx:
    info: FixtureInfo
    manifest: dict[str, Any]
    dir: Path
    config: Path

    @property
    def db(self) -> Path:
        return self.info.db_path

    def session(self, fact_id: str = "claude-stripe-failure") -> str:
        return str(next(f["session_id"] for f in self.manifest["facts"] if f["id"] == fact_id))


@pytest.fixture(scope="module", autouse=True)
def _private_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """In-process answers write the template-verdict cache: keep it out of the real home."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg-cache")))
        yield


@pytest.fixture(scope="module")
def fx(tmp_path_factory: pytest.TempPathFactory) -> Fx:
    out = tmp_path_factory.mktemp("bad-db-fx")
    info = build_fixture(out / "current", generation="current")
    manifest = json.loads(info.manifest_path.read_text(encoding="utf-8"))
    config = _config(out / "config.json", manifest, info)
    return Fx(info, manifest, out, config)


def _config(path: Path, manifest: dict[str, Any], info: FixtureInfo, **extra: Any) -> Path:
    scope = scope_entry("claude-agent", "demo", "alpha-svc", manifest["agents"]["claude-agent"],
                        [manifest["repos"]["alpha-svc"]])
    return write_config(path, [scope], transcript_homes=[str(info.home)], **extra)


def _request(limits: dict[str, int] | None = None, terms: list[str] | None = None) -> bytes:
    request = make_request(scope={"agent_id": "claude-agent", "project_id": "demo", "repository_id": "alpha-svc",
                                  "allow_cross_agent": False, "allow_cross_project": False},
                           evidence_types=ALL_TYPES, query_terms=terms or TERMS, limits=limits or LIMITS)
    return json.dumps(request).encode()


def _private_strings(fx: Fx) -> list[str]:
    """Everything that may appear only inside result.items: terms, paths, session and message refs."""
    manifest = fx.manifest
    private = [PRIVATE_TERM, "ModuleNotFoundError", str(fx.info.home), str(fx.dir)]
    private += [str(root) for root in manifest["repos"].values()]
    private += [s["id"] for s in manifest["sessions"]]
    for group in (manifest["facts"], manifest["canaries"]):
        for entry in group:
            private += [str(ref) for ref in entry["refs"]]
    return private


def check_envelope(envelope: dict[str, Any], exit_code: int, fx: Fx, *,
                   limits: dict[str, int] | None = None) -> dict[str, Any]:
    """Shape, exit-code mapping, fail-open shape, bounds and privacy of one envelope."""
    text = json.dumps(envelope, ensure_ascii=False)
    HistoricalEvidenceResponseV0.model_validate_json(text)
    outcome = envelope["outcome"]
    assert exit_code == EXIT[outcome], (exit_code, envelope["error"])
    assert (envelope["error"] is None) == (outcome == "ok")
    if outcome == "failed":
        assert envelope["error"]["code"] != "internal_error"
        assert envelope["result"]["items"] == []
        assert envelope["receipt"]["result_count"] == 0
    if outcome == "ok":
        limits = limits or LIMITS
        items = envelope["result"]["items"]
        assert len(items) <= limits["max_items"]
        assert len({i["session_ref"] for i in items}) <= limits["max_sessions"]
        assert all(len(i["snippet"]) <= limits["max_snippet_chars"] for i in items)
        assert sum(len(i["snippet"]) for i in items) <= limits["max_total_chars"]
        assert envelope["receipt"]["result_count"] == len(items)
    # No private content outside result.items (the snippets, refs and timestamps the caller asked for).
    public = json.loads(text)
    if public["result"] is not None:
        public["result"]["items"] = []
    public_text = json.dumps(public, ensure_ascii=False)
    for private in _private_strings(fx):
        assert private not in public_text, private
    assert len(text) < 128 * 1024, "answer is not bounded"
    return envelope


def ask(fx: Fx, db: Path, *, config: Path | None = None, limits: dict[str, int] | None = None,
        terms: list[str] | None = None) -> tuple[dict[str, Any], float]:
    started = time.monotonic()
    response = answer(_request(limits, terms), db_path=db, config_path=config or fx.config)
    elapsed = time.monotonic() - started
    return check_envelope(response.envelope, response.exit_code, fx, limits=limits), elapsed


def ask_cli(fx: Fx, db: Path, env: dict[str, str], *, config: Path | None = None,
            limits: dict[str, int] | None = None) -> tuple[dict[str, Any], CliResult]:
    result = run_cli("query", "--db", str(db), "--config", str(config or fx.config),
                     stdin=_request(limits), env=env, timeout=CLI_TIMEOUT_S)
    return check_cli(result, fx, limits=limits), result


def check_cli(result: CliResult, fx: Fx, *, limits: dict[str, int] | None = None) -> dict[str, Any]:
    assert result.stderr == "", result.stderr[-2000:]
    assert result.stdout.endswith("\n") and result.stdout.count("\n") == 1, "not exactly one JSON line"
    document: dict[str, Any] = json.loads(result.stdout)
    return check_envelope(document, result.code, fx, limits=limits)


def _copy(fx: Fx, tmp_path: Path, name: str) -> Path:
    target = tmp_path / name
    shutil.copyfile(fx.db, target)
    return target


def _edit(db: Path, *statements: str | tuple[str, Any]) -> None:
    con = sqlite3.connect(db)
    with con:
        for statement in statements:
            if isinstance(statement, tuple):
                con.execute(*statement)
            else:
                con.execute(statement)
    con.close()


def _pages_of(db: Path, *names: str) -> list[int]:
    """Page numbers of the b-trees of the named tables/indexes (through the dbstat virtual table)."""
    con = sqlite3.connect(db)
    try:
        marks = ",".join("?" * len(names))
        rows = con.execute(f"SELECT pageno FROM dbstat WHERE name IN ({marks}) ORDER BY pageno", names)
        pages = [int(r[0]) for r in rows]
    except sqlite3.OperationalError:
        pytest.skip("the stdlib sqlite3 lacks dbstat: cannot locate table pages")
    finally:
        con.close()
    assert pages, names
    return pages


def _garble(db: Path, pages: list[int], seed: int) -> None:
    rng = random.Random(seed)
    data = bytearray(db.read_bytes())
    for page in pages:
        start = (page - 1) * PAGE
        data[start:start + PAGE] = rng.randbytes(PAGE)
    db.write_bytes(bytes(data))


# --- the cases ------------------------------------------------------------------------------------------


def _missing(fx: Fx, tmp: Path) -> Path:
    return tmp / "nowhere" / "obelisk.sqlite"


def _empty(fx: Fx, tmp: Path) -> Path:
    path = tmp / "empty.sqlite"
    path.write_bytes(b"")
    return path


def _random_bytes(fx: Fx, tmp: Path) -> Path:
    path = tmp / "random.sqlite"
    path.write_bytes(random.Random(1).randbytes(64 * 1024))
    return path


def _text_file(fx: Fx, tmp: Path) -> Path:
    path = tmp / "text.sqlite"
    path.write_text("SQLite format 3? no: just a text file\n" * 2000, encoding="utf-8")
    return path


def _sqlite_header_then_garbage(fx: Fx, tmp: Path) -> Path:
    path = tmp / "header.sqlite"
    path.write_bytes(fx.db.read_bytes()[:100] + random.Random(2).randbytes(3 * PAGE))
    return path


def _truncated(fx: Fx, tmp: Path) -> Path:
    path = tmp / "truncated.sqlite"
    data = fx.db.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    return path


def _corrupt_middle_pages(fx: Fx, tmp: Path) -> Path:
    path = _copy(fx, tmp, "corrupt-middle.sqlite")
    count = path.stat().st_size // PAGE
    _garble(path, list(range(count // 3, 2 * count // 3)), seed=3)
    return path


def _corrupt_evidence_tables(fx: Fx, tmp: Path) -> Path:
    path = _copy(fx, tmp, "corrupt-tables.sqlite")
    _garble(path, _pages_of(path, "tool_results", "messages"), seed=4)
    return path


def _corrupt_fts_pages(fx: Fx, tmp: Path) -> Path:
    path = _copy(fx, tmp, "corrupt-fts-pages.sqlite")
    _garble(path, _pages_of(path, "messages_fts_data", "messages_fts_idx"), seed=5)
    return path


def _corrupt_fts_blocks(fx: Fx, tmp: Path) -> Path:
    """Valid SQLite pages, garbage FTS5 segment blocks (what a torn FTS merge would leave)."""
    path = _copy(fx, tmp, "corrupt-fts-blocks.sqlite")
    _edit(path, "UPDATE messages_fts_data SET block = randomblob(length(block)) WHERE id > 10")
    return path


def _fts_missing(fx: Fx, tmp: Path) -> Path:
    path = _copy(fx, tmp, "no-fts.sqlite")
    _edit(path, "DROP TRIGGER messages_fts_ai", "DROP TRIGGER messages_fts_ad", "DROP TRIGGER messages_fts_au",
          "DROP TABLE messages_fts")  # drops the shadow tables (_data, _idx, _docsize, _config) with it
    con = sqlite3.connect(path)
    left = con.execute("SELECT name FROM sqlite_schema WHERE name LIKE 'messages_fts%'").fetchall()
    con.close()
    assert left == []
    return path


def _fts_shadow_missing(fx: Fx, tmp: Path) -> Path:
    """messages_fts declared, but its segment table gone (a half-dropped FTS index)."""
    path = _copy(fx, tmp, "no-fts-data.sqlite")
    con = sqlite3.connect(path)
    with con:
        con.execute("PRAGMA writable_schema = ON")
        con.execute("DELETE FROM sqlite_schema WHERE name = 'messages_fts_data'")
    con.close()
    return path


def _core_column_renamed(fx: Fx, tmp: Path) -> Path:
    path = _copy(fx, tmp, "renamed.sqlite")
    _edit(path, "ALTER TABLE tool_results RENAME COLUMN content TO body")
    return path


def _core_table_renamed(fx: Fx, tmp: Path) -> Path:
    path = _copy(fx, tmp, "renamed-table.sqlite")
    _edit(path, "ALTER TABLE sessions RENAME TO sessions_v9")
    return path


def _invalid_utf8_rows(fx: Fx, tmp: Path) -> Path:
    """TEXT cells that are not UTF-8 (a crafted or damaged database): SQLite stores them as given."""
    path = _copy(fx, tmp, "bad-utf8.sqlite")
    session = fx.session()
    con = sqlite3.connect(path)
    cwd = con.execute("SELECT cwd FROM messages WHERE session_id = ? LIMIT 1", (session,)).fetchone()[0]
    con.close()
    bad = "CAST(X'4578697420636f646520310a4d6f64756c654e6f74466f756e644572726f72207374726970652088ff80c0af' AS TEXT)"
    _edit(path,
          ("INSERT INTO messages (uuid, session_id, type, timestamp, role, content_type, cwd, source) "
           "VALUES ('bad-utf8-call', ?, 'assistant', '2026-10-30T10:00:00.000Z', 'assistant', 'tool_use', ?, "
           "'claude')", (session, cwd)),
          ("INSERT INTO tool_calls (id, message_uuid, session_id, name, input_json) "
           "VALUES ('toolu_bad_utf8', 'bad-utf8-call', ?, 'Bash', '{\"command\":\"pytest -k billing\"}')",
           (session,)),
          (f"INSERT INTO tool_results (tool_use_id, message_uuid, session_id, content, is_error) "
           f"VALUES ('toolu_bad_utf8', 'bad-utf8-call', ?, {bad}, 1)", (session,)))
    return path


def _infinite_index_state_numbers(fx: Fx, tmp: Path) -> Path:
    """``index_state`` numbers no indexer writes: an infinite mtime and line count (SQLite stores 9e999 as Inf)
    on every transcript row, with the cursors gone, so the numbers are all freshness has to judge by."""
    path = _copy(fx, tmp, "infinite-numbers.sqlite")
    _edit(path, "UPDATE index_state SET mtime = 9e999, lines_processed = -9e999, cursor = NULL "
                "WHERE jsonl_path NOT LIKE '\\_\\_%' ESCAPE '\\'")
    return path


Builder = Callable[[Fx, Path], Path]

#: case -> (builder, typed failure codes it may give; "ok" means a bounded answer is acceptable too)
FAILURE_CASES: dict[str, tuple[Builder, set[str]]] = {
    "missing": (_missing, {"index_missing"}),
    # A 0-byte file is, to SQLite, an empty database: it opens, and has none of the core tables.
    "empty": (_empty, {"index_unreadable", "schema_incompatible"}),
    "random_bytes": (_random_bytes, {"index_unreadable"}),
    "text_file": (_text_file, {"index_unreadable"}),
    "sqlite_header_then_garbage": (_sqlite_header_then_garbage, {"index_unreadable"}),
    "truncated_half": (_truncated, {"index_unreadable"}),
    "corrupt_middle_pages": (_corrupt_middle_pages, CORRUPT_CODES | {"ok"}),
    "corrupt_evidence_table_pages": (_corrupt_evidence_tables, {"index_unreadable"}),
    "corrupt_fts_pages": (_corrupt_fts_pages, CORRUPT_CODES | {"ok"}),
    "corrupt_fts_blocks": (_corrupt_fts_blocks, CORRUPT_CODES | {"ok"}),
    "fts_table_missing": (_fts_missing, {"schema_incompatible"}),
    "fts_shadow_table_missing": (_fts_shadow_missing, CORRUPT_CODES),
    "core_column_renamed": (_core_column_renamed, {"schema_incompatible"}),
    "core_table_renamed": (_core_table_renamed, {"schema_incompatible"}),
    "invalid_utf8_text": (_invalid_utf8_rows, {"malformed_data"}),
    "infinite_index_state_numbers": (_infinite_index_state_numbers, {"ok"}),
}


def _code(envelope: dict[str, Any]) -> str:
    return "ok" if envelope["outcome"] == "ok" else str(envelope["error"]["code"])


@pytest.mark.parametrize("case", sorted(FAILURE_CASES))
def test_bad_database_gives_a_typed_failure(case: str, fx: Fx, tmp_path: Path,
                                            isolated_env: dict[str, str]) -> None:
    builder, allowed = FAILURE_CASES[case]
    work = tmp_path / "db"  # the CLI's HOME and XDG dirs live in tmp_path itself
    work.mkdir()
    db = builder(fx, work)
    before = sorted(os.listdir(db.parent)) if db.parent.exists() else None
    envelope, elapsed = ask(fx, db)
    assert _code(envelope) in allowed, (case, envelope["error"])
    assert elapsed < 5, elapsed
    document, result = ask_cli(fx, db, isolated_env)
    assert _code(document) in allowed, (case, document["error"])
    if "ok" not in allowed:
        assert result.code == 3 and document["outcome"] == "failed"
        assert document["error"] == envelope["error"]
    print(f"BADDB: {case} in-process={_code(envelope)} ({elapsed * 1000:.0f} ms) cli={_code(document)} "
          f"exit={result.code}")
    # Nothing was created beside the bad file (no -wal, -shm, -journal, no repaired copy).
    after = sorted(os.listdir(db.parent)) if db.parent.exists() else None
    assert after == before


def test_schema_from_the_future_still_answers(fx: Fx, tmp_path: Path, isolated_env: dict[str, str]) -> None:
    """Unknown extra tables, columns, indexes and views: compatible, answered exactly as before."""
    db = _copy(fx, tmp_path, "future.sqlite")
    _edit(db,
          "CREATE TABLE agent_graph_v9 (id TEXT PRIMARY KEY, payload BLOB, weight REAL)",
          "INSERT INTO agent_graph_v9 VALUES ('n1', x'00ff', 0.5)",
          "ALTER TABLE messages ADD COLUMN embedding_v9 BLOB",
          "ALTER TABLE sessions ADD COLUMN sentiment REAL DEFAULT 0.0",
          "ALTER TABLE tool_results ADD COLUMN exit_signal INTEGER",
          "CREATE INDEX idx_future_sentiment ON sessions(sentiment)",
          "CREATE VIEW future_view AS SELECT id FROM sessions")
    baseline, _ = ask(fx, fx.db)
    envelope, _ = ask(fx, db)
    assert envelope["outcome"] == "ok", envelope["error"]
    assert envelope["result"]["items"] == baseline["result"]["items"]
    document, result = ask_cli(fx, db, isolated_env)
    assert result.code == 0 and document["result"]["items"] == baseline["result"]["items"]
    check = run_cli("check-schema", "--db", str(db), "--format", "json", env=isolated_env)
    assert check.code == 0 and check.stderr == ""
    verdict = json.loads(check.stdout)
    assert verdict["verdict"] == "compatible"
    assert {d["object"] for d in verdict["differences"]} >= {"agent_graph_v9", "messages.embedding_v9"}


def test_exclusively_locked_rollback_database(fx: Fx, tmp_path: Path, isolated_env: dict[str, str]) -> None:
    """Another process holds BEGIN EXCLUSIVE (and has written) on a rollback-journal copy: a typed,
    retryable index_busy/timeout within the deadline, in-process and through the CLI."""
    db = _copy(fx, tmp_path, "locked.sqlite")
    con = sqlite3.connect(db)
    assert con.execute("PRAGMA journal_mode = DELETE").fetchone()[0] == "delete"
    con.close()
    deadline_ms = 1000
    config = _config(tmp_path / "deadline.json", fx.manifest, fx.info, deadline_ms=deadline_ms)
    with _exclusive_holder(db, write=True):
        assert Path(f"{db}-journal").exists()
        envelope, elapsed = ask(fx, db, config=config)
        assert envelope["outcome"] == "failed"
        assert envelope["error"]["code"] in {"index_busy", "timeout"}
        assert envelope["error"]["retryable"] is True
        assert elapsed <= deadline_ms / 1000 + 0.25, elapsed
        started = time.monotonic()
        document, result = ask_cli(fx, db, isolated_env, config=config)
        cli_elapsed = time.monotonic() - started
        assert result.code == 3 and document["error"]["code"] in {"index_busy", "timeout"}
        assert cli_elapsed < deadline_ms / 1000 + 10  # interpreter start-up included
    print(f"BADDB: exclusive_lock in-process={envelope['error']['code']} ({elapsed * 1000:.0f} ms, deadline "
          f"{deadline_ms} ms) cli={document['error']['code']} exit={result.code} ({cli_elapsed:.2f} s)")


def test_exclusive_lock_without_writes_is_answered_or_busy(fx: Fx, tmp_path: Path) -> None:
    """BEGIN EXCLUSIVE before any write leaves no journal: the file is, in fact, unchanged, and the provider's
    verified-immutable read may answer; if it waits for the lock instead, the failure is typed."""
    db = _copy(fx, tmp_path, "locked-idle.sqlite")
    con = sqlite3.connect(db)
    con.execute("PRAGMA journal_mode = DELETE")
    con.close()
    config = _config(tmp_path / "deadline.json", fx.manifest, fx.info, deadline_ms=1000)
    with _exclusive_holder(db, write=False):
        envelope, elapsed = ask(fx, db, config=config)
    assert _code(envelope) in {"ok", "index_busy", "timeout"}
    assert elapsed <= 1.25


_HOLDER = """
import sqlite3, sys
con = sqlite3.connect(sys.argv[1], isolation_level=None)
con.execute("BEGIN EXCLUSIVE")
if sys.argv[2] == "write":
    con.execute("UPDATE sessions SET title = title || ' (edited)'")
print("locked", flush=True)
sys.stdin.read()
con.execute("ROLLBACK")
"""


@contextmanager
def _exclusive_holder(db: Path, *, write: bool) -> Iterator[subprocess.Popen[str]]:
    args = [sys.executable, "-c", _HOLDER, str(db), "write" if write else "idle"]
    proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdin is not None
        assert proc.stdout.readline().strip() == "locked"
        yield proc
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# --- permission denied ------------------------------------------------------------------------------------

NOBODY = 65534


def _drop_to_nobody() -> None:
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)


def _nobody_env(base: Path, package_dir: Path) -> dict[str, str]:
    site = sysconfig.get_paths()["purelib"]
    return {"PATH": "/usr/bin:/bin", "HOME": str(base), "XDG_CACHE_HOME": str(base / "cache"),
            "XDG_CONFIG_HOME": str(base / "config"), "PYTHONPATH": f"{package_dir}{os.pathsep}{site}",
            "PYTHONDONTWRITEBYTECODE": "1"}


def _interpreter_for_nobody(base: Path, package_dir: Path) -> str | None:
    """An interpreter uid 65534 can execute that imports the provider (the venv's may live under /root)."""
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    candidates = [sys.executable, getattr(sys, "_base_executable", ""), shutil.which(f"python{version}"),
                  f"/usr/bin/python{version}", f"/usr/local/bin/python{version}"]
    for exe in dict.fromkeys(c for c in candidates if c):
        try:
            probe = subprocess.run([exe, "-c", "import obelisk_session_evidence.cli, apsw, pydantic_core"],
                                   env=_nobody_env(base, package_dir), preexec_fn=_drop_to_nobody, capture_output=True,
                                   timeout=60, cwd="/", check=False)
        except OSError:
            continue
        if probe.returncode == 0:
            return exe
    return None


@pytest.fixture
def world_readable_dir() -> Iterator[Path]:
    """pytest's tmp_path sits under a 0700 directory: uid 65534 needs a traversable one."""
    base = Path(tempfile.mkdtemp(prefix="obelisk-perm-"))
    base.chmod(0o755)
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _run_denied(fx: Fx, base: Path, db: Path, config: Path, package_dir: Path) -> CliResult:
    args = ["-m", "obelisk_session_evidence", "query", "--db", str(db), "--config", str(config)]
    if os.geteuid() != 0:
        if os.access(db, os.R_OK) and db.exists():
            pytest.skip("this user bypasses file permissions without being root (capabilities)")
        return run_cli(*args[2:], stdin=_request(), env={"HOME": str(base)}, timeout=CLI_TIMEOUT_S)
    exe = _interpreter_for_nobody(base, package_dir)
    if exe is None:
        pytest.skip("running as root, and no interpreter that uid 65534 may execute imports the provider")
    proc = subprocess.run([exe, *args], input=_request(), env=_nobody_env(base, package_dir),
                          preexec_fn=_drop_to_nobody,
                          capture_output=True, timeout=CLI_TIMEOUT_S, cwd="/", check=False)
    return CliResult(proc)


def test_permission_denied_file(fx: Fx, world_readable_dir: Path, public_package_dir: Path) -> None:
    base = world_readable_dir
    db = base / "obelisk.sqlite"
    shutil.copyfile(fx.db, db)
    db.chmod(0o000)
    config = _config(base / "config.json", fx.manifest, fx.info)
    config.chmod(0o644)
    if os.geteuid() == 0:  # the provider runs as uid 65534 here: its key is private to it
        os.chown(key_path(config), NOBODY, NOBODY)
    result = _run_denied(fx, base, db, config, public_package_dir)
    document = check_cli(result, fx)
    assert result.code == 3
    assert document["error"]["code"] == "index_unreadable"
    assert sorted(os.listdir(base)) == ["config.json", "digest.key", "obelisk.sqlite"]
    print(f"BADDB: permission_denied_file (uid {os.geteuid() or NOBODY}) "
          f"cli={document['error']['code']} exit={result.code}")


def test_permission_denied_directory(fx: Fx, world_readable_dir: Path, public_package_dir: Path) -> None:
    """The database sits in a directory the provider may not enter (stat itself fails with EACCES)."""
    base = world_readable_dir
    hidden = base / "private"
    hidden.mkdir()
    db = hidden / "obelisk.sqlite"
    shutil.copyfile(fx.db, db)
    hidden.chmod(0o000)
    config = _config(base / "config.json", fx.manifest, fx.info)
    config.chmod(0o644)
    if os.geteuid() == 0:  # the provider runs as uid 65534 here: its key is private to it
        os.chown(key_path(config), NOBODY, NOBODY)
    try:
        result = _run_denied(fx, base, db, config, public_package_dir)
    finally:
        hidden.chmod(0o755)
    document = check_cli(result, fx)
    assert result.code == 3
    assert document["error"]["code"] == "index_unreadable"


# --- pathological content ---------------------------------------------------------------------------------


def _cwd_of(db: Path, session: str) -> str:
    con = sqlite3.connect(db)
    try:
        return str(con.execute("SELECT cwd FROM messages WHERE session_id = ? AND cwd IS NOT NULL LIMIT 1",
                               (session,)).fetchone()[0])
    finally:
        con.close()


def test_ten_thousand_level_parent_chain_is_never_walked(fx: Fx, tmp_path: Path,
                                                         isolated_env: dict[str, str]) -> None:
    db = _copy(fx, tmp_path, "chain.sqlite")
    session = fx.session()
    cwd = _cwd_of(db, session)
    depth = 10_000
    rows = [(f"chain-{i:05d}", session, f"chain-{i - 1:05d}" if i else "chain-09999",  # closed into a cycle
             f"2026-10-{1 + i // 3600:02d}T{(i // 60) % 24:02d}:{i % 60:02d}:00.000Z",
             f"step {i}: pytest failed again with ModuleNotFoundError for stripe, because of the chain", cwd)
            for i in range(depth)]
    con = sqlite3.connect(db)
    with con:
        con.executemany("INSERT INTO messages (uuid, session_id, type, parent_uuid, timestamp, role, text, "
                        "content_type, cwd, source) VALUES (?, ?, 'assistant', ?, ?, 'assistant', ?, 'text', ?, "
                        "'claude')", rows)
        longest = con.execute(
            "WITH RECURSIVE up(u, n) AS (SELECT 'chain-09998', 0 UNION ALL "
            "SELECT m.parent_uuid, n + 1 FROM messages m JOIN up ON m.uuid = up.u WHERE n < 20000) "
            "SELECT max(n) FROM up").fetchone()[0]
    con.close()
    assert longest >= depth  # the chain really is 10,000 deep (and cyclic)
    envelope, elapsed = ask(fx, db)
    assert envelope["outcome"] == "ok", envelope["error"]
    assert envelope["result"]["items"]
    assert envelope["result"]["truncated"] is True  # far more matches than max_items: said, not hidden
    assert elapsed < 10, elapsed
    document, result = ask_cli(fx, db, isolated_env)
    assert result.code == 0 and document["result"]["items"] == envelope["result"]["items"]
    print(f"BADDB: parent_chain_10000 ok items={len(envelope['result']['items'])} ({elapsed * 1000:.0f} ms)")


def test_rows_far_over_ten_thousand_characters(fx: Fx, tmp_path: Path, isolated_env: dict[str, str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A 5 MB tool result and a 2 MB message with the query term in the middle and at the end: bounded by
    max_snippet_chars and max_total_chars, fast, and read through substr (no template cell reaches Python
    longer than the provider's read window)."""
    from obelisk_session_evidence.index.connection import ReadSnapshot
    from obelisk_session_evidence.retrieval.engine import MESSAGE_CAP, READ_HEAD, READ_TAIL
    from obelisk_session_evidence.templates.catalog import load_templates

    db = _copy(fx, tmp_path, "huge.sqlite")
    session = fx.session()
    cwd = _cwd_of(db, session)
    half = 2_500_000
    content = ("Exit code 1\n" + "x" * half + " ModuleNotFoundError: No module named 'stripe' (middle) "
               + "y" * half + "\nModuleNotFoundError: No module named 'stripe' (end)")
    text = ("w " * 500_000 + "pytest failed: ModuleNotFoundError stripe in the middle " + "v " * 500_000
            + "and the failure ModuleNotFoundError stripe again at the end")
    assert len(content) > 5_000_000 and len(text) > 2_000_000
    _edit(db,
          ("INSERT INTO messages (uuid, session_id, type, timestamp, role, content_type, cwd, source) "
           "VALUES ('huge-call', ?, 'assistant', '2026-10-30T10:00:00.000Z', 'assistant', 'tool_use', ?, "
           "'claude')", (session, cwd)),
          ("INSERT INTO tool_calls (id, message_uuid, session_id, name, input_json) "
           "VALUES ('toolu_huge', 'huge-call', ?, 'Bash', ?)",
           (session, json.dumps({"command": "pytest -k billing " + "z" * 300_000}))),
          ("INSERT INTO tool_results (tool_use_id, message_uuid, session_id, content, is_error) "
           "VALUES ('toolu_huge', 'huge-call', ?, ?, 1)", (session, content)),
          ("INSERT INTO messages (uuid, session_id, type, timestamp, role, text, content_type, cwd, source) "
           "VALUES ('huge-text', ?, 'assistant', '2026-10-30T10:00:01.000Z', 'assistant', ?, 'text', ?, "
           "'claude')", (session, text, cwd)))

    # Every template's cells are cut at the read window; prior_failure.resolution_messages hands Python a
    # message's first MESSAGE_CAP characters (its cue test and window are taken in Python).
    caps = {t.sql: MESSAGE_CAP if t.id == "prior_failure.resolution_messages" else max(READ_HEAD, READ_TAIL)
            for t in load_templates()}
    widest: list[int] = []
    over: list[tuple[int, int]] = []
    original = ReadSnapshot.rows

    def measuring(self: ReadSnapshot, sql: str, params: Any = (), **kwargs: Any) -> list[tuple[Any, ...]]:
        rows = original(self, sql, params, **kwargs)
        if sql in caps:
            width = max((len(v) for row in rows for v in row if isinstance(v, (str, bytes))), default=0)
            widest.append(width)
            if width > caps[sql]:
                over.append((width, caps[sql]))
        return rows

    monkeypatch.setattr(ReadSnapshot, "rows", measuring)
    for limits in (LIMITS, {"max_sessions": 50, "max_items": 50, "max_snippet_chars": 2000,
                            "max_total_chars": 32000}, {**LIMITS, "max_snippet_chars": 40}):
        widest.clear()
        envelope, elapsed = ask(fx, db, limits=limits)
        assert envelope["outcome"] == "ok", envelope["error"]
        items = envelope["result"]["items"]
        assert {"toolu_huge", "huge-text"} <= {i.get("message_ref") for i in items}, items
        assert max(len(i["snippet"]) for i in items) <= limits["max_snippet_chars"]
        assert envelope["provider_meta"]["total_chars"] == sum(len(i["snippet"]) for i in items)
        assert envelope["provider_meta"]["total_chars"] <= limits["max_total_chars"]
        assert elapsed < 5, elapsed
        assert widest and not over, over
        print(f"BADDB: huge_rows max_snippet_chars={limits['max_snippet_chars']} items={len(items)} "
              f"longest_snippet={max(len(i['snippet']) for i in items)} "
              f"total_chars={envelope['provider_meta']['total_chars']} widest_cell={max(widest)} "
              f"({elapsed * 1000:.0f} ms)")
    monkeypatch.undo()
    started = time.monotonic()
    document, result = ask_cli(fx, db, isolated_env)
    assert result.code == 0 and document["outcome"] == "ok"
    assert len(result.stdout) < 64 * 1024
    assert "x" * 5000 not in result.stdout and "w w w w w" * 500 not in result.stdout
    assert time.monotonic() - started < 30
