"""The scope-state reads (issue 13.2): homes by skip-scan, rows by key, markers, and the cheap revision."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest
from obelisk_session_evidence.index.connection import Deadline, ReadSnapshot, read_index
from obelisk_session_evidence.index.revision import index_revision, read_index_state
from obelisk_session_evidence.index.scope_state import (
    has_rows_under,
    read_marker_rows,
    read_unit_rows,
    transcript_homes,
)


def _db(path: Path, paths: list[str]) -> Path:
    conn = sqlite3.connect(path)
    conn.executescript(
        "CREATE TABLE index_state (jsonl_path TEXT PRIMARY KEY, mtime REAL, lines_processed INTEGER, cursor TEXT);"
        "CREATE TABLE messages (uuid TEXT PRIMARY KEY, text TEXT); CREATE TABLE tool_results (tool_use_id TEXT);"
        "CREATE TABLE sessions (id TEXT PRIMARY KEY);")
    conn.executemany("INSERT INTO index_state VALUES (?, 1.0, 2, 'c')", [(p,) for p in paths])
    conn.execute("INSERT INTO messages VALUES ('m1', 'x')")
    conn.commit()
    conn.close()
    return path


def _read(path: Path, work):  # type: ignore[no-untyped-def]
    return read_index(path, work, deadline=Deadline(10_000))[0]


class Counting:
    def __init__(self, snap: ReadSnapshot) -> None:
        self.snap = snap
        self.statements = 0

    def one(self, sql: str, params: object = ()) -> object:
        self.statements += 1
        return self.snap.one(sql, params)  # type: ignore[arg-type]


def test_homes_by_skip_scan_cost_one_seek_per_home_and_tool(tmp_path: Path) -> None:
    paths = [f"/h/a/.claude/projects/p{i}/s{k}.jsonl" for i in range(30) for k in range(20)]
    paths += [f"/h/a/.codex/sessions/2026/01/{d:02d}/r{k}.jsonl" for d in range(1, 20) for k in range(20)]
    paths += [f"/h/b/.claude/projects/q/s{k}.jsonl" for k in range(50)]
    paths += ["/odd/path.jsonl", "__last_build__", "__claude_canonical_transcript_v3__"]
    db = _db(tmp_path / "i.sqlite", paths)

    def work(snap: ReadSnapshot) -> tuple[tuple[str, ...], int]:
        counting = Counting(snap)
        return transcript_homes(counting), counting.statements  # type: ignore[arg-type]

    homes, statements = _read(db, work)
    assert homes == ("/h/a", "/h/b")
    assert statements <= 8  # 3 (home, tool) pairs + the odd path + the markers + the end, never ~1,000 rows


def test_unit_rows_markers_and_prefix_probe(tmp_path: Path) -> None:
    db = _db(tmp_path / "i.sqlite", ["/h/.codex/archived_sessions/x.jsonl", "/h/.claude/projects/p/a.jsonl",
                                     "__last_build__", "__x__", "_not_marker_"])

    def work(snap: ReadSnapshot) -> tuple[object, ...]:
        return (read_unit_rows(snap, ["/h/.claude/projects/p/a.jsonl", "/nope"], has_cursor=True),
                read_marker_rows(snap), has_rows_under(snap, "/h/.codex/archived_sessions/"),
                has_rows_under(snap, "/h/.codex/sessions/"))

    rows, markers, archived, sessions = _read(db, work)
    assert rows == {"/h/.claude/projects/p/a.jsonl": ("/h/.claude/projects/p/a.jsonl", 1.0, 2, "c")}
    assert markers == {"__last_build__": 1.0, "__x__": 1.0}
    assert archived is True and sessions is False


def _revision(db: Path) -> str:
    def work(snap: ReadSnapshot) -> tuple[str, str]:
        cookie = int(snap.one("PRAGMA schema_version")[0])  # type: ignore[index]
        mine = index_revision(snap, schema_cookie=cookie, identity=snap.identity, markers=read_marker_rows(snap))
        status = read_index_state(snap, has_cursor=True, schema_cookie=cookie, identity=snap.identity).revision
        assert mine == status  # status and a request report the same revision
        return mine, status

    return str(_read(db, work)[0])


@pytest.mark.parametrize(("change", "moves"), [
    ("INSERT INTO messages VALUES ('m2', 'y')", True),
    ("UPDATE index_state SET mtime = 9 WHERE jsonl_path = '__last_build__'", True),
    ("INSERT INTO index_state VALUES ('/h/.claude/projects/p/new.jsonl', 1, 1, 'c')", True),
    ("UPDATE index_state SET mtime = 9 WHERE jsonl_path = '__app_heartbeat__'", False),
])
def test_revision_moves_with_the_index_not_with_the_heartbeat(tmp_path: Path, change: str, moves: bool) -> None:
    db = _db(tmp_path / "i.sqlite", ["/h/.claude/projects/p/a.jsonl", "__last_build__", "__app_heartbeat__"])
    assert _revision(db).startswith("obx1-")
    changed = tmp_path / "changed.sqlite"
    shutil.copy(db, changed)
    conn = sqlite3.connect(changed)
    conn.execute(change)
    conn.commit()
    conn.close()
    # The copy has another inode and size: compare the content part of the revision (no file identity).
    assert (_content_revision(changed) != _content_revision(db)) is moves


def _content_revision(db: Path) -> str:
    def work(snap: ReadSnapshot) -> str:
        return index_revision(snap, schema_cookie=0, identity=None, markers=read_marker_rows(snap))

    return str(_read(db, work))


# ------------------------------------------------------------------- the scope template's range prefilter

from hypothesis import example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from obelisk_session_evidence.index.scope_state import read_scope_set  # noqa: E402
from obelisk_session_evidence.paths import Roots  # noqa: E402
from obelisk_session_evidence.templates.catalog import scope_template  # noqa: E402

_SEGMENTS = st.sampled_from(["a", "b", "b-c", "b.c", "b0", "b/", "é", "\U0010ffff", "-", ".", "0", "z"])
_PATHS = st.lists(_SEGMENTS, min_size=1, max_size=4).map(lambda parts: "/" + "/".join(parts))


def _sessions_db(path: Path, project_paths: list[str]) -> Path:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE sessions (id TEXT PRIMARY KEY, title TEXT, project TEXT, project_path TEXT, "
                 "started_at TEXT, ended_at TEXT, git_branch TEXT, version TEXT, message_count INTEGER, "
                 "jsonl_path TEXT, source TEXT DEFAULT 'claude')")
    conn.executemany("INSERT INTO sessions (id, project_path, started_at, source) VALUES (?, ?, '2026', ?)",
                     [(f"s{i}", p, "claude" if i % 3 else None) for i, p in enumerate(project_paths)])
    conn.commit()
    conn.close()
    return path


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root + "/")


@settings(max_examples=60, deadline=None)
@example(paths=["/b/x", "/b-c", "/b.c/y", "/b0", "/b", "/b/\U0010ffff/z"], roots=["/b", "/b-c"])
@example(paths=["/b/\U0010ffff/z", "/b/\U0010ffff"], roots=["/b"])
@given(paths=st.lists(_PATHS, min_size=1, max_size=25), roots=st.lists(_PATHS, min_size=1, max_size=3))
def test_scope_template_selects_exactly_the_sessions_under_a_root(tmp_path_factory: pytest.TempPathFactory,
                                                                   paths: list[str], roots: list[str]) -> None:
    """The range prefilter never drops a session the EXISTS accepts (roots prefixes of one another, '-', '.',
    '0' and the highest code point next to the root included)."""
    db = _sessions_db(tmp_path_factory.mktemp("scope") / "s.sqlite", paths)

    bound = Roots.of(roots)

    def work(snap: ReadSnapshot) -> frozenset[str]:
        return read_scope_set(snap, scope_template(), sources=["claude"], roots=bound, since="").ids

    found = _read(db, work)
    # Without the prefilter: the EXISTS over every bound spelling, then the real-path decision.
    expected = {f"s{i}" for i, p in enumerate(paths)
                if any(_under(p, r) for r in bound.spellings) and Roots.of(roots).contains(p)}
    assert found == expected


# ----------------------------------------------------- the archive probe's seek (has_rows_under)

_PROBE_PARTS = st.sampled_from(["a", "a/", "a.", "a-", "a0", "a.\U0010ffff\U0010ffff\U0010ffff\U0010ffff\U0010ffff",
                                "\U0010ffff", "/", ".", "-", "0", "b", "é", "\x01"])
_PROBE_PATHS = st.lists(_PROBE_PARTS, min_size=1, max_size=4).map("".join)


@settings(max_examples=80, deadline=None)
@example(paths=["a.\U0010ffff\U0010ffff\U0010ffff\U0010ffff\U0010ffff", "a/x"], prefix="a/")  # between: range probe
@example(paths=["a.\U0010ffff\U0010ffff\U0010ffff\U0010ffff\U0010ffff"], prefix="a/")
@example(paths=["a-", "a0"], prefix="a/")  # the first path after is past the prefix
@example(paths=["a/", "__last_build__"], prefix="a/")
@example(paths=["a\x01"], prefix="a\x01")  # a prefix whose last character is the lowest above NUL
@given(paths=st.lists(_PROBE_PATHS, min_size=0, max_size=12),
       prefix=_PROBE_PATHS.filter(lambda p: not p.endswith("\U0010ffff")))  # the range needs a character above
def test_prefix_probe_answers_as_the_range_does(tmp_path_factory: pytest.TempPathFactory, paths: list[str],
                                                 prefix: str) -> None:
    """``has_rows_under`` (a seek with the skip-scan's statement, a range probe only when the seek cannot tell;
    first what the homes skip-scan's own seeks tell, when given) says exactly whether some path starts with the
    prefix, as the range ``PREFIX_SQL`` and Python do."""
    from obelisk_session_evidence.index.scope_state import PREFIX_SQL, Seek

    db = _db(tmp_path_factory.mktemp("probe") / "i.sqlite", sorted(set(paths)))
    upper = prefix[:-1] + chr(ord(prefix[-1]) + 1)

    def work(snap: ReadSnapshot) -> tuple[bool, bool, bool]:
        seeks: list[Seek] = []
        transcript_homes(snap, seeks)
        return (has_rows_under(snap, prefix), has_rows_under(snap, prefix, seeks),
                snap.one(PREFIX_SQL, {"lo": prefix, "hi": upper}) is not None)

    mine, told, ranged = _read(db, work)
    assert mine == told == ranged == any(p.startswith(prefix) for p in paths)


@pytest.mark.parametrize("archived", [False, True])
def test_the_skip_scan_answers_the_archive_probe_without_a_statement(tmp_path: Path, archived: bool) -> None:
    """In a home's usual layout the homes skip-scan has already seen the first Codex path, which tells whether
    any path lies under ``archived_sessions/`` (it sorts before ``sessions/``): the probe runs no statement."""
    from obelisk_session_evidence.index.scope_state import Seek

    paths = ["/h/.claude/projects/p/a.jsonl", "/h/.codex/sessions/2026/01/02/r.jsonl", "__last_build__"]
    paths += ["/h/.codex/archived_sessions/r0.jsonl"] if archived else []
    db = _db(tmp_path / "i.sqlite", paths)

    def work(snap: ReadSnapshot) -> tuple[bool, int]:
        seeks: list[Seek] = []
        transcript_homes(snap, seeks)
        counting = Counting(snap)
        return has_rows_under(counting, "/h/.codex/archived_sessions/", seeks), counting.statements  # type: ignore[arg-type]

    found, statements = _read(db, work)
    assert found is archived and statements == 0


@pytest.mark.parametrize(("prefix", "expected"), [("/h/.claude/projects/q/", True), ("/h/.claude/projects/r/", False),
                                                  ("/h/.codex/archived_sessions/", False), ("/h/.kimi-code/", False)])
def test_a_prefix_in_a_range_the_skip_scan_jumped_is_asked_of_the_index(tmp_path: Path, prefix: str,
                                                                         expected: bool) -> None:
    """The skip-scan jumps over a home's tool folder: its seeks say nothing of a prefix inside it."""
    from obelisk_session_evidence.index.scope_state import Seek

    db = _db(tmp_path / "i.sqlite", ["/h/.claude/projects/p/a.jsonl", "/h/.claude/projects/q/b.jsonl",
                                     "/h/.codex/sessions/2026/01/02/r.jsonl"])

    def work(snap: ReadSnapshot) -> bool:
        seeks: list[Seek] = []
        transcript_homes(snap, seeks)
        return has_rows_under(snap, prefix, seeks)

    assert _read(db, work) is expected


def test_unit_rows_are_exactly_the_rows_of_the_given_paths(tmp_path: Path) -> None:
    """One row per given path that has one (duplicates, absent paths, a path that is a prefix of another and
    the markers' neighbours included), whatever the order the paths come in."""
    stored = ["/h/a.jsonl", "/h/a.jsonl.bak", "/h/a", "/h/b/c.jsonl", "__last_build__", "/h/é.jsonl"]
    db = _db(tmp_path / "i.sqlite", stored)
    asked = ["/h/b/c.jsonl", "/h/a.jsonl", "/nope", "/h/a.jsonl", "/h/é.jsonl", "/h/a.json", "/h/"]

    def work(snap: ReadSnapshot) -> tuple[object, object]:
        return (read_unit_rows(snap, asked, has_cursor=True), read_unit_rows(snap, asked, has_cursor=False))

    with_cursor, without = _read(db, work)
    found = {"/h/a.jsonl", "/h/b/c.jsonl", "/h/é.jsonl"}
    assert with_cursor == {p: (p, 1.0, 2, "c") for p in found}
    assert without == {p: (p, 1.0, 2, None) for p in found}


def test_rows_of_crafted_values_reach_python_as_index_rows(tmp_path: Path) -> None:
    """A crafted ``index_state`` (values no indexer writes) is read, by a request and by ``status``, as the
    ``IndexRow`` types: a number mtime as a float, a number line count as an int (a REAL cut toward zero, an
    infinite one held to 64 bits: ``int()`` of it raised), a text cursor as text, anything else as None."""
    db = _db(tmp_path / "i.sqlite", [])
    conn = sqlite3.connect(db)
    conn.executemany("INSERT INTO index_state VALUES (?, ?, ?, ?)", [
        ("/h/inf", 9e999, 9e999, "c"),
        ("/h/neg", -9e999, -7.9, b"blob"),
        ("/h/int", 5, 7.9, 12),
        ("/h/text", "soon", "many", None),
        ("/h/blob", b"\x01", b"\x02", "x" * 10),
    ])
    conn.commit()
    conn.close()
    expected = {
        "/h/inf": ("/h/inf", float("inf"), 2**63 - 1, "c"),
        "/h/neg": ("/h/neg", float("-inf"), -7, None),
        "/h/int": ("/h/int", 5.0, 7, "12"),  # (the cursor column's TEXT affinity stored 12 as text)
        "/h/text": ("/h/text", None, None, None),
        "/h/blob": ("/h/blob", None, None, "x" * 10),
    }

    def work(snap: ReadSnapshot) -> list[tuple[object, object]]:
        return [(read_unit_rows(snap, sorted(expected), has_cursor=has_cursor),
                 read_index_state(snap, has_cursor=has_cursor, schema_cookie=0, identity=None).rows)
                for has_cursor in (True, False)]

    (rows, status_rows), (rows_no_cursor, status_no_cursor) = _read(db, work)
    assert rows == expected
    assert {row[0]: row for row in status_rows} == expected  # type: ignore[index]
    for row in rows.values():  # type: ignore[attr-defined]
        assert [type(value) for value in row] == [str, *(type(e) for e in expected[row[0]][1:])]
    # A database without the cursor column: the same typed columns, the cursor None (both readers alike).
    without = {path: (*row[:3], None) for path, row in expected.items()}
    assert rows_no_cursor == without
    assert {row[0]: row for row in status_no_cursor} == without  # type: ignore[index]
