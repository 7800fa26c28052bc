"""Schema snapshots, live verdicts and ``check-schema`` (issue 3, items 3-6).

Hand-broken databases are made with stdlib sqlite3 on *copies* of a fixture built once per session; the
real-Obelisk databases are copied out of ``shared/real-obelisk`` and the originals are checked byte-identical.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
from obelisk_session_evidence.commands.check_schema import (
    SchemaVerdict,
    check_schema_command,
    schema_verdict,
)
from obelisk_session_evidence.fixtures.builder import build_fixture
from obelisk_session_evidence.index.connection import Deadline, read_index
from obelisk_session_evidence.index.schema_verdict import VerdictCache
from obelisk_session_evidence.index.snapshots import (
    SNAPSHOT_DIR,
    Difference,
    capture_file,
    compute_digest,
    render,
)

from tests.conftest import CLI
from tests.realobelisk import real_dir, shared_dir

REPO = Path(__file__).resolve().parents[2]
REAL_DBS = ("fresh", "stale", "reindexed")
GENERATIONS = ("current", "legacy", "migrated", "trigram")


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def verdict_of(db: Path) -> SchemaVerdict:
    result, _mode = read_index(db, schema_verdict, deadline=Deadline(10_000))
    return result


def kinds(verdict: SchemaVerdict) -> set[str]:
    return {d.kind for d in verdict.differences}


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One built fixture per generation (never modified: tests copy them)."""
    base = tmp_path_factory.mktemp("schema-fixtures")
    return {g: build_fixture(base / g, generation=g, write_transcripts=False).db_path  # type: ignore[arg-type]
            for g in GENERATIONS}


@pytest.fixture
def current_copy(built: dict[str, Path], tmp_path: Path) -> Path:
    dest = tmp_path / "obelisk.sqlite"
    shutil.copyfile(built["current"], dest)
    return dest


# --- hand-breaking helpers (stdlib sqlite3, on copies only) ---------------------------------------------


def _connect(db: Path) -> sqlite3.Connection:
    return sqlite3.connect(db, isolation_level=None)


def execute(db: Path, *statements: str) -> None:
    con = _connect(db)
    try:
        for statement in statements:
            con.execute(statement)
    finally:
        con.close()


def rebuild_table(db: Path, table: str, *, drop: Sequence[str] = (), reverse: bool = False) -> None:
    """Rebuild ``table`` without the ``drop`` columns (or in reversed column order), keeping its rows,
    and recreate its indexes and triggers except those that mention a dropped column."""
    con = _connect(db)
    try:
        info = [row for row in con.execute(f"PRAGMA table_info({table})") if row[1] not in drop]
        if reverse:
            info.reverse()
        decls = []
        for _cid, name, ctype, notnull, default, pk in info:
            decl = f"{name} {ctype}"
            decl += " NOT NULL" if notnull else ""
            decl += f" DEFAULT {default}" if default is not None else ""
            decl += " PRIMARY KEY" if pk else ""
            decls.append(decl)
        names = ", ".join(row[1] for row in info)
        dependents = [sql for (sql,) in con.execute(
            "SELECT sql FROM sqlite_master WHERE tbl_name = ? AND type IN ('index', 'trigger') "
            "AND sql IS NOT NULL", (table,))]
        con.execute("BEGIN")
        con.execute(f"CREATE TABLE {table}__rebuilt ({', '.join(decls)})")
        con.execute(f"INSERT INTO {table}__rebuilt ({names}) SELECT {names} FROM {table}")
        con.execute(f"DROP TABLE {table}")
        con.execute(f"ALTER TABLE {table}__rebuilt RENAME TO {table}")
        for sql in dependents:
            if not any(re.search(rf"\b{re.escape(c)}\b", sql) for c in drop):
                con.execute(sql)
        con.execute("COMMIT")
    finally:
        con.close()


_FTS_COLUMNS = "uuid UNINDEXED, session_id UNINDEXED, text"


def recreate_messages_fts(db: Path, options: str) -> None:
    execute(db, "DROP TABLE messages_fts",
            f"CREATE VIRTUAL TABLE messages_fts USING fts5({_FTS_COLUMNS}, {options})",
            "INSERT INTO messages_fts(messages_fts) VALUES ('rebuild')")


def write_schema_sql(db: Path, name: str, old: str, new: str) -> None:
    """Edit one object's SQL text in sqlite_master (the ``writable_schema`` hack) and bump the cookie."""
    con = _connect(db)
    try:
        cookie = con.execute("PRAGMA schema_version").fetchone()[0]
        con.execute("PRAGMA writable_schema = ON")
        changed = con.execute("UPDATE sqlite_master SET sql = replace(sql, ?, ?) WHERE name = ?",
                              (old, new, name)).rowcount
        assert changed == 1
        con.execute(f"PRAGMA schema_version = {cookie + 1}")
        con.execute("PRAGMA writable_schema = OFF")
    finally:
        con.close()


# --- pinned snapshots (as committed, diff and nearest: tests/unit/test_snapshots.py) -----------------


@pytest.mark.parametrize("generation", GENERATIONS)
def test_fixture_snapshots_reproduce(built: dict[str, Path], generation: str) -> None:
    committed = (SNAPSHOT_DIR / f"fixture-{generation}.json").read_text(encoding="utf-8")
    meta = json.loads(committed)
    again = capture_file(built[generation], snapshot_id=meta["id"], captured_from=meta["captured_from"])
    assert render(again) == committed


@pytest.mark.real_obelisk
def test_real_snapshot_reproduces_from_every_real_db(tmp_path: Path) -> None:
    source = real_dir()
    committed = (SNAPSHOT_DIR / "obelisk-real-036ff1c.json").read_text(encoding="utf-8")
    meta = json.loads(committed)
    for name in REAL_DBS:
        copy = tmp_path / f"{name}.sqlite"
        shutil.copyfile(source / f"{name}.sqlite", copy)
        again = capture_file(copy, snapshot_id=meta["id"], captured_from=meta["captured_from"])
        assert render(again) == committed, name


def test_capture_tool_check_mode_reproduces_committed_files() -> None:
    args = [sys.executable, str(REPO / "tools" / "capture-snapshots"), "--check"]
    real_dir()  # the real databases are part of the check: their absence fails (or, opted out, skips) the test
    env = {**os.environ, "OBELISK_SHARED_DIR": str(shared_dir())}
    proc = subprocess.run(args, capture_output=True, text=True, timeout=120, check=False, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "snapshots reproduce" in proc.stdout


# --- verdicts on every fixture generation ----------------------------------------------------------------


def test_current_and_migrated_are_exact(built: dict[str, Path]) -> None:
    for generation in ("current", "migrated"):
        verdict = verdict_of(built[generation])
        assert verdict.verdict == "exact", generation
        assert verdict.nearest == f"fixture-{generation}"
        assert verdict.tokenizer == "unicode61"
        assert verdict.tokenizer_spec is None
        assert all(t.runnable for t in verdict.templates)


def test_trigram_is_exact_with_trigram_tokenizer(built: dict[str, Path]) -> None:
    verdict = verdict_of(built["trigram"])
    assert (verdict.verdict, verdict.nearest, verdict.tokenizer) == ("exact", "fixture-trigram", "trigram")


def test_legacy_is_degraded_and_names_what_is_skipped(built: dict[str, Path]) -> None:
    verdict = verdict_of(built["legacy"])
    assert verdict.verdict == "degraded"
    assert verdict.nearest == "fixture-legacy"
    assert verdict.differences == ()
    assert verdict.exit_code == 1
    # Every template reads sessions.source, a migrated column the legacy generation lacks.
    for template in verdict.templates:
        assert "sessions.source" in template.missing, template.template
    assert set(verdict.skipped_evidence_types) == {t.evidence_type for t in verdict.templates} - {"scope"}
    assert not verdict.problems


# --- hand-broken copies ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("table", "column"), [("tool_results", "content"), ("sessions", "project_path"),
                                               ("messages", "role")])
def test_dropped_core_column_is_incompatible(current_copy: Path, table: str, column: str) -> None:
    rebuild_table(current_copy, table, drop=[column])
    verdict = verdict_of(current_copy)
    assert verdict.verdict == "incompatible"
    assert f"missing column {table}.{column}" in verdict.problems
    assert Difference("missing_column", f"{table}.{column}", "TEXT") in verdict.differences
    assert verdict.exit_code == 2


def test_dropped_visibility_is_degraded(current_copy: Path) -> None:
    rebuild_table(current_copy, "messages", drop=["visibility"])
    verdict = verdict_of(current_copy)
    assert verdict.verdict == "degraded"
    assert verdict.nearest == "fixture-current"
    assert ("missing_column", "messages.visibility") in {(d.kind, d.object) for d in verdict.differences}
    skipped = set(verdict.skipped_evidence_types)
    assert skipped == {"decision", "file_history", "prior_failure", "tool_outcome"}
    runnable = {t.template for t in verdict.templates if t.runnable}
    assert runnable == {"scope.sessions.v1", "summary.summaries.v2", "summary.titles.v1"}
    for template in verdict.templates:
        assert template.missing in ((), ("messages.visibility",))


@pytest.mark.parametrize("change", [
    "ALTER TABLE messages ADD COLUMN extra_note TEXT DEFAULT 'x'",
    "CREATE TABLE extra_table (a INTEGER PRIMARY KEY, b TEXT)",
    "CREATE INDEX idx_extra_role ON messages(role) WHERE role IS NOT NULL",
    "CREATE TRIGGER extra_trigger AFTER DELETE ON sessions BEGIN SELECT 1; END",
])
def test_additive_drift_is_compatible(current_copy: Path, change: str) -> None:
    execute(current_copy, change)
    verdict = verdict_of(current_copy)
    assert verdict.verdict == "compatible"
    assert verdict.nearest == "fixture-current"
    assert len(verdict.differences) == 1
    assert verdict.differences[0].additive
    assert verdict.differences[0].kind in {"added_column", "added_table", "added_index", "added_trigger"}


def test_column_order_is_compatible(current_copy: Path) -> None:
    rebuild_table(current_copy, "sessions", reverse=True)
    verdict = verdict_of(current_copy)
    assert verdict.verdict == "compatible"
    assert [(d.kind, d.object) for d in verdict.differences] == [("column_order", "sessions")]


def test_porter_tokenizer_is_compatible_and_reported(current_copy: Path) -> None:
    recreate_messages_fts(current_copy, "content=messages, content_rowid=rowid, tokenize='porter unicode61'")
    verdict = verdict_of(current_copy)
    assert verdict.verdict == "compatible"
    assert (verdict.tokenizer, verdict.tokenizer_wraps, verdict.tokenizer_spec) == \
        ("porter", "unicode61", "porter unicode61")
    assert [(d.kind, d.object) for d in verdict.differences] == [("tokenizer_changed", "messages_fts")]


def test_ascii_tokenizer_is_compatible(current_copy: Path) -> None:
    recreate_messages_fts(current_copy, "content=messages, content_rowid=rowid, tokenize=ascii")
    verdict = verdict_of(current_copy)
    assert (verdict.verdict, verdict.tokenizer) == ("compatible", "ascii")


@pytest.mark.parametrize("tokenize", ["nosuch_tokenizer", "porter nosuch_tokenizer"])
def test_unknown_tokenizer_is_incompatible(current_copy: Path, tokenize: str) -> None:
    write_schema_sql(current_copy, "messages_fts", "content_rowid=rowid)",
                     f"content_rowid=rowid, tokenize='{tokenize}')")
    verdict = verdict_of(current_copy)
    assert verdict.verdict == "incompatible"
    assert verdict.tokenizer is None
    assert verdict.tokenizer_spec == tokenize
    assert "unknown FTS tokenizer" in verdict.problems
    assert ("tokenizer_changed", "messages_fts") in {(d.kind, d.object) for d in verdict.differences}


def test_custom_content_table_is_incompatible(current_copy: Path) -> None:
    execute(current_copy, "CREATE TABLE messages_copy AS SELECT rowid AS rowid_copy, * FROM messages")
    recreate_messages_fts(current_copy, "content=messages_copy, content_rowid=rowid_copy")
    verdict = verdict_of(current_copy)
    assert verdict.verdict == "incompatible"
    assert "messages_fts content table changed" in verdict.problems
    assert "fts_content_changed" in kinds(verdict)


def test_missing_messages_fts_is_incompatible(current_copy: Path) -> None:
    execute(current_copy, "DROP TABLE messages_fts")
    verdict = verdict_of(current_copy)
    assert verdict.verdict == "incompatible"
    assert "missing table messages_fts" in verdict.problems
    assert Difference("missing_table", "messages_fts", "fts5") in verdict.differences


# --- the in-process cache ------------------------------------------------------------------------------


def test_verdict_is_cached_by_identity_and_cookie(current_copy: Path) -> None:
    cache = VerdictCache()

    def cached() -> SchemaVerdict:
        result, _mode = read_index(current_copy, lambda snap: schema_verdict(snap, cache=cache),
                                   deadline=Deadline(10_000))
        return result

    first = cached()
    assert cached() is first
    assert verdict_of(current_copy) is not first  # no cache given: judged again
    execute(current_copy, "ALTER TABLE sessions ADD COLUMN later TEXT")  # same file, new schema cookie
    second = cached()
    assert second is not first
    assert second.schema_cookie != first.schema_cookie
    assert second.verdict == "compatible"
    assert "added_column" in kinds(second)


# --- check-schema: the real-Obelisk databases --------------------------------------------------------------


@pytest.mark.real_obelisk
@pytest.mark.parametrize("name", REAL_DBS)
def test_real_obelisk_databases_are_exact_and_untouched(tmp_path: Path, name: str) -> None:
    original = real_dir() / f"{name}.sqlite"
    before = sha256(original)
    copy = tmp_path / f"{name}.sqlite"
    shutil.copyfile(original, copy)
    copy_before = sha256(copy)
    out = io.StringIO()
    code = check_schema_command(db_path=copy, fmt="json", snapshot_out=None, out=out)
    document = json.loads(out.getvalue())
    assert code == 0
    assert document["verdict"] in ("exact", "compatible")
    assert document["verdict"] == "exact"
    assert document["nearest_snapshot"] == "obelisk-real-036ff1c"
    assert document["tokenizer"]["name"] == "unicode61"
    markers = document["freshness_markers"]
    assert markers["last_build"]["present"] is True
    assert markers["provider_markers"]
    assert sha256(original) == before
    assert sha256(copy) == copy_before
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{name}.sqlite"]


# --- check-schema: the command, in-process and through subprocesses ------------------------------------


def run(*args: str, tool: bool = False) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, str(REPO / "tools" / "check-schema")] if tool else \
        [*CLI, "check-schema"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("OBELISK")}
    return subprocess.run([*command, *args], capture_output=True, text=True, timeout=60, check=False,
                          cwd=REPO, env=env)


def test_cli_exit_codes_and_json_shape(built: dict[str, Path], current_copy: Path) -> None:
    execute(current_copy, "DROP TABLE messages_fts")
    expected = {built["current"]: (0, "exact"), built["legacy"]: (1, "degraded"),
                current_copy: (2, "incompatible")}
    for db, (code, verdict) in expected.items():
        for tool in (False, True):
            proc = run("--db", str(db), "--format", "json", tool=tool)
            assert proc.returncode == code, proc.stderr
            assert proc.stderr == ""
            document = json.loads(proc.stdout)
            assert document["verdict"] == verdict
            assert document["exit_code"] == code
            assert {"command", "db_digest", "open_mode", "nearest_snapshot", "exact", "live_digest",
                    "schema_cookie", "differences", "problems", "problems_explained", "likely_renames", "tokenizer",
                    "templates", "skipped_templates", "skipped_evidence_types", "freshness_markers",
                    "snapshot_out", "error", "next_step"} <= set(document)
            assert str(db) not in proc.stdout
            assert (document["next_step"] is None) == (verdict == "exact")
            for difference in document["differences"]:
                assert set(difference) == {"kind", "object", "detail", "additive"}
            for template in document["templates"]:
                assert set(template) == {"template", "evidence_type", "runnable", "missing", "state"}
                if verdict == "incompatible":  # the table agrees with the verdict: nothing runs
                    assert template["runnable"] is False and template["state"] == "not run: schema incompatible"


def test_db_digest_is_keyed_with_the_install_key_and_null_without_one(built: dict[str, Path],
                                                                      tmp_path: Path) -> None:
    """Issue 12 item 7: the JSON form's ``db_digest`` is the path's HMAC under the install's key (an unkeyed
    digest would confirm a guessed path); check-schema needs no config, and without a key it is null."""
    from obelisk_session_evidence.digest import ensure_key

    db = built["current"]
    config = tmp_path / "cfg" / "config.json"
    for tool in (False, True):
        proc = run("--db", str(db), "--format", "json", "--config", str(config), tool=tool)
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)["db_digest"] is None
    assert not config.parent.exists()  # check-schema makes no key
    key = ensure_key(config)
    for tool in (False, True):
        for target in (db, tmp_path / "missing.sqlite"):  # the unreadable answer is keyed the same way
            proc = run("--db", str(target), "--format", "json", "--config", str(config), tool=tool)
            digest = json.loads(proc.stdout)["db_digest"]
            assert digest == key.of_text(str(target)), proc.stdout
            assert hashlib.sha256(str(target).encode()).hexdigest() not in proc.stdout


def test_text_report_names_everything(built: dict[str, Path]) -> None:
    proc = run("--db", str(built["legacy"]))
    assert proc.returncode == 1
    text = proc.stdout
    for needle in ("check-schema: degraded", "nearest snapshot", "fixture-legacy", "FTS tokenizer",
                   "unicode61", "Templates:", "skipped: missing", "sessions.source",
                   "Skipped evidence types:", "Freshness markers:", "__last_build__", "__app_heartbeat__",
                   "provider markers"):
        assert needle in text, needle


def test_missing_database_exits_2_without_traceback(tmp_path: Path) -> None:
    for tool in (False, True):
        for fmt in ("text", "json"):
            proc = run("--db", str(tmp_path / "absent.sqlite"), "--format", fmt, tool=tool)
            assert proc.returncode == 2
            assert "Traceback" not in proc.stderr
            assert "Traceback" not in proc.stdout
            assert "does not exist" in proc.stdout
            if fmt == "json":
                document = json.loads(proc.stdout)
                assert document["verdict"] == "unreadable"
                assert document["error"]["code"] == "index_missing"
    assert list(tmp_path.iterdir()) == []


def test_unreadable_database_exits_2(tmp_path: Path) -> None:
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"not a database" * 100)
    proc = run("--db", str(junk), "--format", "json")
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert json.loads(proc.stdout)["verdict"] == "unreadable"


def test_snapshot_out_captures_a_committable_snapshot(current_copy: Path, tmp_path: Path) -> None:
    execute(current_copy, "ALTER TABLE messages ADD COLUMN new_in_obelisk TEXT")
    target = tmp_path / "new.json"
    proc = run("--db", str(current_copy), "--snapshot-out", str(target), tool=True)
    assert proc.returncode == 0, proc.stdout
    snapshot = json.loads(target.read_text(encoding="utf-8"))
    assert target.read_text(encoding="utf-8") == render(snapshot)
    assert snapshot["digest"] == compute_digest(snapshot)
    assert str(tmp_path) not in snapshot["captured_from"]
    assert "new_in_obelisk" in {c["name"] for t in snapshot["tables"] for c in t["columns"]}
    # Pinning it makes the same database an exact match.
    pinned_dir = tmp_path / "pinned"
    pinned_dir.mkdir()
    shutil.copyfile(target, pinned_dir / f"{snapshot['id']}.json")
    result, _mode = read_index(current_copy, lambda s: schema_verdict(s, snapshot_dir=pinned_dir),
                               deadline=Deadline(10_000))
    assert (result.verdict, result.nearest) == ("exact", snapshot["id"])


def test_heartbeat_and_marker_ages(current_copy: Path) -> None:
    execute(current_copy, "DELETE FROM index_state WHERE jsonl_path = '__app_heartbeat__'",
            "INSERT INTO index_state (jsonl_path, mtime, lines_processed) "
            "VALUES ('__app_heartbeat__', 1000, 0)")
    out = io.StringIO()
    code = check_schema_command(db_path=current_copy, fmt="json", snapshot_out=None, out=out, now_ms=31_000)
    markers = json.loads(out.getvalue())["freshness_markers"]
    assert code == 0
    assert markers["app_heartbeat"] == {"present": True, "age_ms": 30_000.0, "fresh": True}


# --- check-schema is consistent and actionable (issue 10.9) ---------------------------------------------


def redeclare(db: Path, table: str, old: str, new: str) -> None:
    """Rewrite one table's declaration in place (a copy only): type, NOT NULL or COLLATE of a column."""
    con = _connect(db)
    try:
        cookie = con.execute("PRAGMA schema_version").fetchone()[0]
        con.execute("PRAGMA writable_schema=ON")
        changed = con.execute("UPDATE sqlite_schema SET sql = replace(sql, ?, ?) WHERE name = ? AND type = 'table'",
                              (old, new, table)).rowcount
        con.execute(f"PRAGMA schema_version={cookie + 1}")
        con.execute("PRAGMA writable_schema=OFF")
    finally:
        con.close()
    assert changed == 1
    assert _connect(db).execute("PRAGMA integrity_check").fetchone()[0] == "ok"


@pytest.mark.parametrize(("old", "new", "detail"), [
    ("title TEXT,", "title VARCHAR(200),", "TEXT -> VARCHAR(200)"),
    ("title TEXT,", "title TEXT NOT NULL DEFAULT '',", "TEXT -> TEXT NOT NULL DEFAULT ''"),
    ("title TEXT,", "title TEXT COLLATE NOCASE,", "TEXT -> TEXT COLLATE NOCASE"),
])
def test_changed_type_notnull_or_collation_is_a_difference(current_copy: Path, old: str, new: str,
                                                           detail: str) -> None:
    redeclare(current_copy, "sessions", old, new)
    verdict = verdict_of(current_copy)
    assert verdict.verdict == "compatible"
    assert Difference("retyped_column", "sessions.title", detail) in verdict.differences


@pytest.mark.parametrize("column", ["project_path", "source"])
def test_collation_change_on_a_scope_column_is_incompatible(current_copy: Path, column: str) -> None:
    old = {"project_path": "project_path TEXT,", "source": "source TEXT DEFAULT 'claude'"}[column]
    new = old.replace(" TEXT", " TEXT COLLATE NOCASE")
    redeclare(current_copy, "sessions", old, new)
    verdict = verdict_of(current_copy)
    assert verdict.verdict == "incompatible"
    assert any(p.startswith(f"scope column sessions.{column} has collation NOCASE") for p in verdict.problems)
    proc = run("--db", str(current_copy))
    assert proc.returncode == 2 and "not run: schema incompatible" in proc.stdout
    assert "runnable" not in proc.stdout.split("Templates:")[1].split("Skipped")[0]


def test_likely_rename_core_reason_and_next_step(current_copy: Path) -> None:
    execute(current_copy, "ALTER TABLE sessions RENAME COLUMN project_path TO project_dir")
    proc = run("--db", str(current_copy))
    assert proc.returncode == 2
    assert "Likely renamed" in proc.stdout
    assert "sessions.project_path -> sessions.project_dir (TEXT)" in proc.stdout
    assert "missing column sessions.project_path (core: the scope check compares it with the enabled roots)" \
        in proc.stdout
    assert proc.stdout.rstrip().splitlines()[-1].startswith("Next step: ")
    assert "--snapshot-out" in proc.stdout.rstrip().splitlines()[-1]
    document = json.loads(run("--db", str(current_copy), "--format", "json").stdout)
    assert document["likely_renames"] == [{"table": "sessions", "from": "sessions.project_path",
                                           "to": "sessions.project_dir", "type": "TEXT"}]
    assert "pin the Obelisk version" in document["next_step"]


def test_every_non_exact_verdict_ends_with_a_next_step(built: dict[str, Path], current_copy: Path,
                                                       tmp_path: Path) -> None:
    execute(current_copy, "CREATE TABLE extra_table (x TEXT)")
    for db, verdict in ((built["current"], "exact"), (built["legacy"], "degraded"), (current_copy, "compatible"),
                        (tmp_path / "none.sqlite", "unreadable")):
        proc = run("--db", str(db))
        assert proc.stdout.startswith(f"check-schema: {verdict}"), proc.stdout[:200]
        last = proc.stdout.rstrip().splitlines()[-1]
        assert last.startswith("Next step: ") == (verdict != "exact"), (verdict, last)
        document = json.loads(run("--db", str(db), "--format", "json").stdout)
        assert (document["next_step"] is None) == (verdict == "exact")
        assert str(db) not in json.dumps(document)
