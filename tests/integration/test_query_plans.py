"""Query plans (issue 13.2): no template, and no read of the scope's index state, walks a whole big table.

``EXPLAIN QUERY PLAN`` of every SQL template and of the scope-state reads (``index.scope_state``), on
databases of every fixture generation, a larger generated index and the database the real Obelisk indexer
built. A ``SCAN`` of ``messages``, ``tool_calls`` or ``tool_results`` (under any alias, with or without an
index: a full index scan is still the whole table) fails, as does a ``SCAN`` of ``index_state``. The scope
is two sessions, so no scan is justified by a scope that is the whole table. ``sessions`` may be scanned by
the scope template only (Obelisk has no index on ``project_path`` and a reader cannot add one).
"""

from __future__ import annotations

import contextlib
import json
import re
from pathlib import Path

import apsw
import pytest
import realobelisk as ro
import sqlglot
from obelisk_session_evidence.index.live_schema import LiveSchema, read_live_schema, unmet_needs
from obelisk_session_evidence.templates.catalog import SCOPE_KIND, Template, load_templates
from sqlglot import exp

BIG_TABLES = frozenset({"messages", "tool_calls", "tool_results", "index_state"})
#: Templates whose plan is known to scan a big table today, with the reason (strict: fixed plans must
#: leave this list). Empty: every current template reads the scope through an index.
KNOWN_SCANS: dict[str, str] = {}

_SCAN = re.compile(r"^SCAN (\S+)")
_PARAMS = {"sources": json.dumps(["claude", "codex"]), "roots": json.dumps(["/nowhere/repo"]), "since": "",
           "until": "\U0010ffff", "scope_ids": json.dumps(["s-a", "s-b"]), "terms": json.dumps(["needle"]),
           "head": 4000, "tail": 1500, "pre": 100, "window": 300, "limit": 20, "fts": "needle",
           "cues": json.dumps(["because", "decided"]), "failures": json.dumps(["s-a\x1f2026-01-01T00:00:00Z"]),
           "rows": json.dumps([1, 2]), "cap": 12000, "search": 65536,
           "after_ts": "", "after_key": "", "after_rowid": -(2**63)}


def _aliases(sql: str) -> dict[str, str]:
    """Every name a plan line can use for a table of ``sql`` (its alias, else its name) -> the table."""
    out: dict[str, str] = {}
    for table in sqlglot.parse_one(sql, read="sqlite").find_all(exp.Table):
        out[table.alias_or_name.lower()] = table.name.lower()
        out[table.name.lower()] = table.name.lower()
    return out


def plan(conn: apsw.Connection, sql: str, params: dict[str, object]) -> list[str]:
    return [str(row[3]) for row in conn.execute("EXPLAIN QUERY PLAN " + sql, params)]


def scanned_tables(lines: list[str], sql: str) -> set[str]:
    aliases = _aliases(sql)
    found = set()
    for line in lines:
        match = _SCAN.match(line)
        if match and "VIRTUAL TABLE" not in line:
            found.add(aliases.get(match.group(1).lower(), match.group(1).lower()))
    return found


def _databases(tmp: Path) -> dict[str, Path]:
    from obelisk_session_evidence.fixtures.builder import build_fixture

    from tools.devkit.large import build_large

    dbs = {g: build_fixture(tmp / g, generation=g).db_path  # type: ignore[arg-type]
           for g in ("current", "migrated", "trigram", "legacy")}
    (tmp / "large").mkdir()
    dbs["large-20k"] = build_large(tmp / "large" / "obelisk.sqlite", messages=20_000).db_path
    with contextlib.suppress(pytest.skip.Exception):
        dbs["real-fresh"] = ro.db_copy("fresh", tmp)
    return dbs


@pytest.fixture(scope="module")
def databases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return _databases(tmp_path_factory.mktemp("plans"))


def _open(path: Path) -> apsw.Connection:
    return apsw.Connection(f"file:{path}?mode=ro&immutable=1", flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)


class _Snap:
    """Just enough of a ReadSnapshot for ``read_live_schema``."""

    def __init__(self, conn: apsw.Connection) -> None:
        self.conn = conn

    def rows(self, sql: str, params: object = ()) -> list[tuple[object, ...]]:
        return [tuple(r) for r in self.conn.execute(sql, params)]  # type: ignore[arg-type]

    def one(self, sql: str, params: object = ()) -> tuple[object, ...] | None:
        found = self.rows(sql, params)
        return found[0] if found else None


def _live(conn: apsw.Connection) -> LiveSchema:
    return read_live_schema(_Snap(conn))  # type: ignore[arg-type]


@pytest.mark.parametrize("template", load_templates(), ids=lambda t: t.key)
def test_no_template_scans_a_big_table(databases: dict[str, Path], template: Template) -> None:
    checked = 0
    for name, path in databases.items():
        conn = _open(path)
        try:
            if unmet_needs(_live(conn), template.needs):
                continue  # the provider skips this template on this schema
            lines = plan(conn, template.sql, {p: _PARAMS[p] for p in template.params})
        finally:
            conn.close()
        checked += 1
        scans = scanned_tables(lines, template.sql) & BIG_TABLES
        if template.key in KNOWN_SCANS:
            continue
        assert not scans, f"{template.key} on {name}: {scans}\n" + "\n".join(lines)
        if template.evidence_type != SCOPE_KIND:
            assert "sessions" not in scanned_tables(lines, template.sql), f"{template.key} on {name}"
    assert checked >= 4


def test_scope_state_reads_use_keys(databases: dict[str, Path]) -> None:
    """The scope-state statements: index_state by primary key (lookups, a range, seeks), max(rowid) seeks."""
    from obelisk_session_evidence.index.revision import TOPS_SQL
    from obelisk_session_evidence.index.scope_state import STATEMENTS

    statements = [*STATEMENTS, TOPS_SQL]
    params = {"paths": json.dumps(["/a.jsonl", "/b.jsonl"]), "n": 10, "lo": "/a/", "hi": "/a0", "after": "",
              "limit": 20}
    for path in databases.values():
        conn = _open(path)
        try:
            has_cursor = _live(conn).has("index_state", "cursor")
            for sql in statements:
                if "cursor" in sql and not has_cursor:
                    continue  # the provider reads the NULL-cursor form on this schema
                wanted = {k: v for k, v in params.items() if f":{k}" in sql}
                lines = plan(conn, sql, wanted)
                assert not scanned_tables(lines, sql) & (BIG_TABLES | {"sessions"}), (sql, lines)
        finally:
            conn.close()


def test_the_check_catches_a_scan(databases: dict[str, Path]) -> None:
    """The detector itself: an unindexed predicate on messages under an alias is a scan of messages."""
    sql = "SELECT m.uuid FROM messages AS m WHERE m.text = :t LIMIT 1"
    conn = _open(databases["current"])
    try:
        assert scanned_tables(plan(conn, sql, {"t": "x"}), sql) == {"messages"}
    finally:
        conn.close()


#: Templates that test a call's result before its message: the plan must look ``tool_results`` up before
#: ``messages`` (issue 13: a large scope's calls each paid a message lookup before the result filters ran).
RESULT_BEFORE_MESSAGE = ("prior_failure.tool_results", "tool_outcome.tool_calls")


@pytest.mark.parametrize("template_id", RESULT_BEFORE_MESSAGE)
def test_a_calls_result_is_tested_before_its_message_is_looked_up(databases: dict[str, Path],
                                                                     template_id: str) -> None:
    template = next(t for t in load_templates() if t.id == template_id)
    checked = 0
    for name, path in databases.items():
        conn = _open(path)
        try:
            if unmet_needs(_live(conn), template.needs):
                continue
            lines = plan(conn, template.sql, {p: _PARAMS[p] for p in template.params})
        finally:
            conn.close()
        order = [line.split()[1] for line in lines if line.startswith("SEARCH ") and line.split()[1] in ("tr", "m")]
        assert order[:2] == ["tr", "m"], f"{template.key} on {name}:\n" + "\n".join(lines)
        checked += 1
    assert checked >= 4
