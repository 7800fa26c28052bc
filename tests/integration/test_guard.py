"""Write and escape attempts through the provider's own connection: each is refused, typed, and changes nothing.

Two layers are exercised:

* the real path (``read_index`` with a ``work`` that runs the statement inside the request's read
  transaction), which must raise a typed :class:`ProviderError` and leave every file as it was;
* the allow-list authorizer itself, on a hardened connection in autocommit (outside the read transaction, so
  a refusal cannot be credited to "cannot VACUUM within a transaction" or to ``mode=ro``); as a plain
  function fed the action codes of facts §2.5: tests/unit/test_authorizer.py.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

import apsw
import pytest
from obelisk_session_evidence.errors import MalformedIndexData, ProviderError
from obelisk_session_evidence.index import guard
from obelisk_session_evidence.index.connection import Deadline, ReadSnapshot, read_index
from obelisk_session_evidence.index.guard import authorizer, harden

from tests.conftest import make_request, scope_entry, write_config

OK = apsw.SQLITE_OK

# --------------------------------------------------------------------------------------------------------
# fixtures and helpers
# --------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    from obelisk_session_evidence.fixtures.builder import build_fixture

    info = build_fixture(tmp_path_factory.mktemp("guard-fx"), generation="current")
    return info.db_path, json.loads(info.manifest_path.read_text(encoding="utf-8"))


@pytest.fixture
def db(built: tuple[Path, dict[str, Any]], tmp_path: Path) -> Path:
    """A private copy of the fixture DB (cleanly closed WAL: no -wal/-shm), with Obelisk's lock file beside it."""
    folder = tmp_path / "obelisk"
    folder.mkdir()
    copy = folder / "obelisk.sqlite"
    shutil.copy2(built[0], copy)
    (folder / "writer.lock.sqlite").write_bytes(b"")
    return copy


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A writable directory where an escaping statement would leave its file."""
    target = tmp_path / "outside"
    target.mkdir()
    return target


def tree_state(*folders: Path) -> dict[str, tuple[int, int, str]]:
    """Every file under the folders: size, mtime (ns) and sha256."""
    state: dict[str, tuple[int, int, str]] = {}
    for folder in folders:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                st_ = path.stat()
                state[str(path)] = (st_.st_size, st_.st_mtime_ns, hashlib.sha256(path.read_bytes()).hexdigest())
            else:
                state[str(path)] = (-1, 0, "dir")
    return state


def refused(db: Path, sql: str) -> tuple[ProviderError, BaseException | None]:
    """Run ``sql`` through the provider's read path; return the typed error and the SQLite error behind it."""
    def work(snap: ReadSnapshot) -> list[tuple[Any, ...]]:
        return snap.rows(sql)

    with pytest.raises(ProviderError) as info:
        read_index(db, work, deadline=Deadline(2000))
    err = info.value
    return err, err.__context__


def hardened_autocommit(db: Path) -> apsw.Connection:
    """The provider's open flags and hardening, but no read transaction: only the authorizer stands in the way."""
    conn = apsw.Connection(f"file:{db}?mode=ro&immutable=1",
                           flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
    harden(conn)
    return conn


# --------------------------------------------------------------------------------------------------------
# refused through the provider's connection
# --------------------------------------------------------------------------------------------------------

#: (case id, SQL with {out} for a path in the outside dir, files that must not appear in it)
ATTEMPTS: list[tuple[str, str, tuple[str, ...]]] = [
    ("vacuum-into", "VACUUM INTO '{out}/copy.sqlite'", ("copy.sqlite",)),
    ("attach-memory", "ATTACH ':memory:' AS scratch", ()),
    ("attach-file", "ATTACH '{out}/attached.sqlite' AS aux", ("attached.sqlite",)),
    ("attach-uri", "ATTACH 'file:{out}/attached2.sqlite?mode=rwc' AS aux", ("attached2.sqlite",)),
    ("temp-table", "CREATE TEMP TABLE scratch(x)", ()),
    ("temp-table-as", "CREATE TEMP TABLE scratch AS SELECT * FROM sessions", ()),
    ("temp-view", "CREATE TEMP VIEW scratch AS SELECT 1", ()),
    ("temp-trigger", "CREATE TEMP TRIGGER scratch AFTER INSERT ON sessions BEGIN SELECT 1; END", ()),
    ("insert", "INSERT INTO sessions(id) VALUES ('planted')", ()),
    ("update", "UPDATE sessions SET title = 'changed'", ()),
    ("delete", "DELETE FROM index_state", ()),
    ("replace", "REPLACE INTO sessions(id) VALUES ('planted')", ()),
    ("create-table", "CREATE TABLE scratch(x)", ()),
    ("drop-table", "DROP TABLE sessions", ()),
    ("writable-schema", "PRAGMA writable_schema = ON", ()),
    ("checkpoint-truncate", "PRAGMA wal_checkpoint(TRUNCATE)", ()),
    ("checkpoint-passive", "PRAGMA wal_checkpoint(PASSIVE)", ()),
    ("journal-mode", "PRAGMA journal_mode = DELETE", ()),
    ("query-only-off", "PRAGMA query_only = OFF", ()),
    ("temp-store-file", "PRAGMA temp_store = FILE", ()),
    ("user-version", "PRAGMA user_version = 5", ()),
    ("load-extension", "SELECT load_extension('x')", ()),
    ("fts5-function", "SELECT fts5(NULL)", ()),
    ("dbstat", "SELECT count(*) FROM dbstat", ()),
    ("fts-rebuild", "INSERT INTO messages_fts(messages_fts) VALUES('rebuild')", ()),
    ("fts-optimize", "INSERT INTO messages_fts(messages_fts) VALUES('optimize')", ()),
    ("reindex", "REINDEX", ()),
    ("analyze", "ANALYZE", ()),
    ("savepoint", "SAVEPOINT s1", ()),
]


def _is_refusal(cause: BaseException | None) -> bool:
    """The SQLite error behind the typed failure is a refusal, not an accident (corruption, I/O...)."""
    if isinstance(cause, (apsw.AuthError, apsw.ExecTraceAbort)):
        return True
    text = str(cause)
    return isinstance(cause, apsw.SQLError) and ("not authorized" in text or "cannot VACUUM" in text)


@pytest.mark.parametrize(("case", "sql", "must_not_exist"), ATTEMPTS, ids=[a[0] for a in ATTEMPTS])
def test_refused_through_provider_connection(db: Path, outside: Path, case: str, sql: str,
                                             must_not_exist: tuple[str, ...]) -> None:
    before = tree_state(db.parent, outside)
    err, cause = refused(db, sql.format(out=outside))
    assert err.code in {"index_unreadable", "malformed_data"}, (case, err.code)
    assert err.outcome == "failed"
    assert _is_refusal(cause), (case, repr(cause))
    assert tree_state(db.parent, outside) == before, case
    for name in must_not_exist:
        assert not (outside / name).exists(), (case, name)
    assert not Path(f"{db}-wal").exists() and not Path(f"{db}-shm").exists()


@pytest.mark.parametrize(("case", "sql", "must_not_exist"), ATTEMPTS, ids=[a[0] for a in ATTEMPTS])
def test_authorizer_alone_refuses_outside_a_transaction(db: Path, outside: Path, case: str, sql: str,
                                                        must_not_exist: tuple[str, ...]) -> None:
    """Same statements in autocommit: the authorizer (not transaction state, not mode=ro) refuses each."""
    before = tree_state(db.parent, outside)
    conn = hardened_autocommit(db)
    try:
        with pytest.raises((apsw.AuthError, apsw.SQLError)) as info:
            conn.execute(sql.format(out=outside)).fetchall()
        assert "not authorized" in str(info.value) or isinstance(info.value, apsw.AuthError), case
        assert conn.db_names() == ["main", "temp"]  # nothing attached
    finally:
        conn.close()
    assert tree_state(db.parent, outside) == before, case
    for name in must_not_exist:
        assert not (outside / name).exists(), (case, name)


def test_vacuum_into_creates_no_file(db: Path, outside: Path) -> None:
    target = outside / "copy.sqlite"
    err, _ = refused(db, f"VACUUM INTO '{target}'")
    assert err.code == "index_unreadable"
    conn = hardened_autocommit(db)
    try:
        with pytest.raises(apsw.AuthError):
            conn.execute(f"VACUUM INTO '{target}'")
    finally:
        conn.close()
    assert not target.exists()
    assert os.listdir(outside) == []


def _recording(snap: ReadSnapshot) -> tuple[list[tuple[Any, ...]], list[str]]:
    """Wrap the snapshot connection's authorizer and trace every statement that starts."""
    conn = snap._conn  # the test reaches inside on purpose: it must observe what SQLite prepared and ran
    actions: list[tuple[Any, ...]] = []
    started: list[str] = []
    inner = conn.authorizer
    assert inner is not None

    def wrapped(*args: Any) -> int:
        actions.append(args)
        result: int = inner(*args)
        return result

    conn.authorizer = wrapped
    conn.trace_v2(apsw.SQLITE_TRACE_STMT, lambda event: started.append(str(event.get("sql"))), id="guard-test")
    return actions, started


@pytest.mark.parametrize("second", ["SELECT 2", "ATTACH '{out}/second.sqlite' AS aux", "ATTACH ':memory:' AS aux"])
def test_multi_statement_text_is_refused_before_anything_runs(db: Path, outside: Path, second: str) -> None:
    sql = f"SELECT 1; {second.format(out=outside)}"
    seen: dict[str, Any] = {}

    def work(snap: ReadSnapshot) -> None:
        actions, started = _recording(snap)
        seen["actions"], seen["started"] = actions, started
        try:
            snap.rows(sql)
        except MalformedIndexData:
            seen["refused"] = True
        seen["db_names"] = snap._conn.db_names()
        seen["after"] = snap.rows("SELECT 42")  # the snapshot stays usable after the refusal

    before = tree_state(db.parent, outside)
    read_index(db, work, deadline=Deadline(2000))
    assert seen.get("refused") is True
    # The second statement was never prepared (no ATTACH reached the authorizer), never ran, attached nothing.
    assert not any(a[0] in (apsw.SQLITE_ATTACH, apsw.SQLITE_DETACH) for a in seen["actions"])
    assert all("ATTACH" not in s and "SELECT 2" not in s for s in seen["started"]), seen["started"]
    assert seen["db_names"] == ["main", "temp"]
    assert seen["after"] == [(42,)]
    assert not (outside / "second.sqlite").exists()
    assert tree_state(db.parent, outside) == before


def test_multi_statement_text_is_typed_end_to_end(db: Path) -> None:
    err, cause = refused(db, "SELECT 1; SELECT 2")
    assert err.code == "malformed_data"
    assert isinstance(cause, apsw.ExecTraceAbort)


def test_hardening_is_in_force(db: Path) -> None:
    """Connection-level settings the authorizer relies on (read through the unrestricted config API)."""
    conn = hardened_autocommit(db)
    try:
        assert conn.config(apsw.SQLITE_DBCONFIG_DEFENSIVE, -1) == 1
        assert conn.config(apsw.SQLITE_DBCONFIG_TRUSTED_SCHEMA, -1) == 0
        assert conn.config(apsw.SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, -1) == 1
        assert conn.limit(apsw.SQLITE_LIMIT_ATTACHED, -1) == 0
        assert conn.config(apsw.SQLITE_DBCONFIG_ENABLE_TRIGGER, -1) == 0
        assert conn.config(apsw.SQLITE_DBCONFIG_ENABLE_VIEW, -1) == 0
        assert conn.config(apsw.SQLITE_DBCONFIG_DQS_DML, -1) == 0
        assert conn.config(apsw.SQLITE_DBCONFIG_DQS_DDL, -1) == 0
        assert conn.limit(apsw.SQLITE_LIMIT_SQL_LENGTH, -1) == 64 * 1024
        assert conn.readonly("main")
        # Extension loading off (the C API and the SQL function): read back, since a load of a missing file
        # fails whether loading is on or off.
        assert conn.config(apsw.SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, -1) == 0
        with pytest.raises(apsw.Error):
            conn.load_extension("/nonexistent/ext")
        # The pragmas, read back with the authorizer lifted (it denies reading them, as it denies setting them).
        conn.authorizer = None
        assert conn.execute("PRAGMA query_only").fetchall() == [(1,)]
        assert conn.execute("PRAGMA temp_store").fetchall() == [(2,)]  # 2 = MEMORY
    finally:
        conn.close()


def test_double_quoted_strings_are_identifiers(db: Path) -> None:
    """DQS off: "x" is a column name (as sqlglot reads it), never a string literal standing in for one."""
    def work(snap: ReadSnapshot) -> object:
        return snap.rows('SELECT "no_such_column" FROM sessions LIMIT 1')

    with pytest.raises(ProviderError) as info:
        read_index(db, work, deadline=Deadline(2000))
    assert isinstance(info.value.__context__, apsw.SQLError)
    assert "no such column" in str(info.value.__context__)
    # A double-quoted identifier still names a column.
    found, _mode = read_index(db, lambda snap: snap.rows('SELECT count("id") FROM "sessions"'),
                              deadline=Deadline(2000))
    assert found[0][0] > 0


# --------------------------------------------------------------------------------------------------------
# the authorizer on real queries (the function alone: tests/unit/test_authorizer.py)
# --------------------------------------------------------------------------------------------------------


REFERENCE_SQL = (
    "SELECT m.uuid, s.project_path, bm25(messages_fts) AS score, "
    "snippet(messages_fts, 2, '[', ']', '...', 12), highlight(messages_fts, 2, '<', '>') "
    "FROM messages_fts JOIN messages AS m ON m.rowid = messages_fts.rowid "
    "JOIN sessions AS s ON s.id = m.session_id "
    "WHERE messages_fts MATCH 'billing' AND s.source IN ('claude', 'codex') "
    "ORDER BY messages_fts.rank LIMIT 20"
)


def test_reference_query_runs_and_every_action_it_makes_is_ok(db: Path) -> None:
    """Record the callbacks of the real query on a hardened connection: all OK, and §2.5's list is covered."""
    conn = hardened_autocommit(db)
    calls: list[tuple[Any, ...]] = []
    verdicts: list[int] = []

    def recording(*args: Any) -> int:
        calls.append(args)
        verdict = authorizer(*args)
        verdicts.append(verdict)
        return verdict

    conn.authorizer = recording
    try:
        rows = conn.execute(REFERENCE_SQL).fetchall()
    finally:
        conn.close()
    assert rows
    assert set(verdicts) == {OK}
    seen = {(a[0], a[1], a[2]) for a in calls}
    for needed in [(apsw.SQLITE_FUNCTION, None, "match"), (apsw.SQLITE_FUNCTION, None, "bm25"),
                   (apsw.SQLITE_FUNCTION, None, "snippet"), (apsw.SQLITE_PRAGMA, "data_version", None),
                   (apsw.SQLITE_READ, "messages_fts_idx", "term"), (apsw.SQLITE_READ, "messages_fts_config", "k"),
                   (apsw.SQLITE_READ, "messages_fts_docsize", "sz"), (apsw.SQLITE_READ, "messages", "text")]:
        assert needed in seen, needed


def test_every_template_runs_under_the_authorizer(built: tuple[Path, dict[str, Any]], tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A real answer over every evidence type: every callback the templates cause is OK, none IGNORE."""
    from obelisk_session_evidence.service import answer

    db, manifest = built
    verdicts: list[tuple[int, tuple[Any, ...]]] = []

    def recording(*args: Any) -> int:
        verdict = authorizer(*args)
        verdicts.append((verdict, args))
        return verdict

    monkeypatch.setattr(guard, "authorizer", recording)
    config = write_config(tmp_path / "c.json", [scope_entry("claude-main", "acme", "acme-api", ["claude", "codex"],
                                                            [str(manifest["repos"]["alpha-svc"])])])
    request = make_request(evidence_types=["prior_failure", "tool_outcome", "decision", "file_history", "summary"],
                           query_terms=["billing", "ModuleNotFoundError"])
    response = answer(json.dumps(request).encode(), db_path=db, config_path=config)
    assert response.envelope["outcome"] == "ok", response.envelope["error"]
    assert verdicts
    denied = [args for verdict, args in verdicts if verdict != OK]
    assert denied == []
