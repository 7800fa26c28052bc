"""Freshness of the Obelisk index for a scope: real-Obelisk data and synthetic fixtures."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import sqlite3
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

import pytest
import realobelisk as ro
from obelisk_session_evidence.index.freshness import FreshnessReport, assess_freshness

Row = tuple[str, float | None, int | None, str | None]

NOW_MS = 1_800_000_000_000.0
ALL_MARKERS: list[Row] = [
    ("__last_build__", NOW_MS - 120_000, 0, None),
    ("__claude_canonical_transcript_v3__", NOW_MS - 120_000, 0, None),
    ("__codex_canonical_transcript_v3__", NOW_MS - 120_000, 0, None),
    ("__kimi_canonical_transcript_v4__", NOW_MS - 120_000, 0, None),
    ("__pi_canonical_transcript_v9__", NOW_MS - 120_000, 0, None),
]


# ======================================================== real Obelisk (shared/real-obelisk)

REAL_ROOTS = [
    "/tmp/obelisk-home/src/acme-api",
    "/tmp/obelisk-home/src/acme-web",
    "/tmp/obelisk-home/src/acme-api-wt-auth",
]


def _real(rows: Sequence[Row], home: Path, roots: Sequence[str], sources: Sequence[str]) -> FreshnessReport:
    return assess_freshness(
        rows, roots=roots, sources=sources, transcript_homes=[home], now_ms=time.time() * 1000
    )


@pytest.mark.real_obelisk
def test_real_fresh_index_is_fresh(tmp_path: Path) -> None:
    with ro.materialized("fresh") as home:
        report = _real(ro.index_state_rows("fresh", tmp_path), home, REAL_ROOTS, ["claude", "codex"])
    assert report.verdict == "fresh", report.to_public()
    assert (report.units_in_scope, report.up_to_date, report.stale, report.unindexed) == (41, 41, 0, 0)
    assert report.missing_provider_markers == ()
    assert report.app_build_partial is False
    assert report.heartbeat_fresh is None


@pytest.mark.real_obelisk
def test_real_stale_index_names_exactly_the_changed_units(tmp_path: Path) -> None:
    expected = ro.staleness("stale")
    with ro.materialized("stale") as home:
        report = _real(ro.index_state_rows("stale", tmp_path), home, REAL_ROOTS, ["claude", "codex"])
    stale_items = expected["stale"]
    assert isinstance(stale_items, list)
    stale_paths = {str(item["path"]) for item in stale_items}
    assert report.verdict == "stale", report.to_public()
    assert set(report.stale_units) == stale_paths
    assert report.units_in_scope == expected["indexed_units"]
    assert report.up_to_date == expected["up_to_date_units"]
    assert report.unindexed == 0


@pytest.mark.real_obelisk
def test_real_reindexed_index_is_fresh_on_the_stale_tree(tmp_path: Path) -> None:
    expected = ro.staleness("reindexed")
    with ro.materialized("stale") as home:
        report = _real(ro.index_state_rows("reindexed", tmp_path), home, REAL_ROOTS, ["claude", "codex"])
    assert report.verdict == "fresh", report.to_public()
    assert report.up_to_date == expected["up_to_date_units"]


@pytest.mark.real_obelisk
def test_real_scope_narrowing(tmp_path: Path) -> None:
    with ro.materialized("stale") as home:
        rows = ro.index_state_rows("stale", tmp_path)
        web = _real(rows, home, ["/tmp/obelisk-home/src/acme-web"], ["claude"])
        wt_auth = _real(rows, home, ["/tmp/obelisk-home/src/acme-api-wt-auth"], ["claude", "codex"])
    assert web.verdict == "stale"
    assert web.stale == 1
    assert web.stale_units[0].endswith("eb92661b-84ed-4423-a0d4-3d2eb2974ae5.jsonl")
    assert wt_auth.verdict == "fresh", wt_auth.to_public()
    # acme-api-wt-auth is a sibling of acme-api with acme-api as a textual prefix: it must not leak in.
    assert wt_auth.units_in_scope < 41


@pytest.mark.real_obelisk
def test_real_databases_stay_byte_identical(tmp_path: Path) -> None:
    data = ro.real_dir()
    with ro.materialized("fresh") as home:
        _real(ro.index_state_rows("fresh", tmp_path), home, REAL_ROOTS, ["claude", "codex"])
    sums: dict[str, str] = {}
    for line in (data / "SHA256SUMS").read_text().splitlines():
        if line.strip():
            digest, name = line.split()
            sums[name.lstrip("*")] = digest
    for name in ("fresh.sqlite", "stale.sqlite", "reindexed.sqlite"):
        assert hashlib.sha256((data / name).read_bytes()).hexdigest() == sums[name]


# ============================================================================ synthetic fixtures
# Cursor parsing alone: tests/unit/test_cursors.py.


def _b64(obj: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")


def _ms(ns: int) -> str:
    return repr(ns / 1e6)


def _lines(path: Path) -> int:
    return path.read_bytes().count(b"\n")


def legacy(path: Path) -> str:
    return f"{_ms(path.stat().st_mtime_ns)}:{_lines(path)}"


def sig5(path: Path) -> str:
    s = path.stat()
    return f"{_ms(s.st_mtime_ns)}:{_lines(path)}:{s.st_size}:{_ms(s.st_ctime_ns)}:{s.st_ino}"


def codex_v4(path: Path, *, state: str | None = None) -> str:
    s = path.stat()
    blob = state if state is not None else _b64({"sourceSize": s.st_size, "bloomA": "A" * 64, "chunks": []})
    return f"{_ms(s.st_mtime_ns)}:{_lines(path)}:{s.st_size}:{_ms(s.st_ctime_ns)}:{s.st_ino}:{blob}"


def pi_cursor(path: Path) -> str:
    s = path.stat()
    return f"{_ms(s.st_mtime_ns)}:0:pi-snapshot-v1:{_ms(s.st_ctime_ns)}:{s.st_size}:{s.st_ino}"


def kimi_cursor(session: Path) -> str:
    files = [session / "state.json", *sorted(session.glob("agents/*/wire.jsonl"))]
    top = session / "wire.jsonl"
    if top.exists():
        files.append(top)
    newest = max(p.stat().st_mtime_ns for p in files)
    total = sum(_lines(p) for p in files if p.name == "wire.jsonl")
    return f"{_ms(newest)}:{total}"


def _write_jsonl(path: Path, records: Iterable[object]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _append(path: Path, record: object, *, keep_mtime: bool = False) -> None:
    before = path.stat()
    with path.open("a") as fh:
        fh.write(json.dumps(record) + "\n")
    if keep_mtime:
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


def claude_session(home: Path, cwd: Path, sid: str, n: int = 3) -> Path:
    slug = str(cwd).replace("/", "-").replace(".", "-").replace("_", "-")
    records: list[object] = [{"type": "file-history-snapshot", "messageId": "m0", "snapshot": {}}]
    for i in range(n):
        records.append(
            {"type": "user" if i % 2 == 0 else "assistant", "uuid": f"{sid}-{i}", "cwd": str(cwd),
             "timestamp": f"2026-01-01T00:00:{i:02d}Z", "message": {"role": "user", "content": f"line {i}"}}
        )
    return _write_jsonl(home / ".claude" / "projects" / slug / f"{sid}.jsonl", records)


def codex_session(home: Path, cwd: Path, thread: str, n: int = 3) -> Path:
    meta = {"timestamp": "2026-01-02T00:00:00Z", "type": "session_meta",
            "payload": {"id": thread, "cwd": str(cwd), "cli_version": "0.46.0"}}
    events = [{"timestamp": "2026-01-02T00:00:01Z", "type": "event_msg",
               "payload": {"type": "user_message", "message": f"m{i}"}} for i in range(n)]
    path = home / ".codex" / "sessions" / "2026" / "01" / "02" / f"rollout-2026-01-02T00-00-00-{thread}.jsonl"
    return _write_jsonl(path, [meta, *events])


def kimi_session(home: Path, cwd: Path, sid: str) -> Path:
    session = home / ".kimi-code" / "sessions" / "ws1" / sid
    session.mkdir(parents=True)
    (session / "state.json").write_text(json.dumps({"cwd": str(cwd), "title": "t"}))
    _write_jsonl(session / "agents" / "main" / "wire.jsonl", [{"type": "turn", "n": i} for i in range(3)])
    _write_jsonl(session / "agents" / "sub1" / "wire.jsonl", [{"type": "turn", "n": i} for i in range(2)])
    return session


def pi_session(home: Path, cwd: Path, name: str) -> Path:
    header = {"type": "session", "id": name, "cwd": str(cwd), "timestamp": "2026-01-03T00:00:00Z"}
    body = [{"type": "message", "id": f"e{i}", "message": {"role": "user", "content": "x"}} for i in range(2)]
    return _write_jsonl(home / ".pi" / "agent" / "sessions" / "--enc--" / f"{name}.jsonl", [header, *body])


def db_rows(tmp_path: Path, rows: Sequence[Row]) -> list[Row]:
    """Round-trip the rows through a real ``index_state`` table, read back read-only as the caller would."""
    db = tmp_path / f"idx-{len(list(tmp_path.glob('idx-*.sqlite')))}.sqlite"
    conn = sqlite3.connect(db)
    conn.execute(
        "CREATE TABLE index_state"
        " (jsonl_path TEXT PRIMARY KEY, mtime REAL, lines_processed INTEGER, cursor TEXT)"
    )
    conn.executemany("INSERT INTO index_state VALUES (?,?,?,?)", rows)
    conn.commit()
    conn.close()
    ro_conn = sqlite3.connect(f"file:{db}?mode=ro&immutable=1", uri=True)
    try:
        return list(ro_conn.execute("SELECT jsonl_path, mtime, lines_processed, cursor FROM index_state"))
    finally:
        ro_conn.close()


def unit_row(path: Path, cursor: str | None, *, mtime: float | None = None, lines: int | None = None) -> Row:
    head = (cursor or "").split(":")
    try:
        mtime = float(head[0]) if mtime is None else mtime
        lines = int(float(head[1])) if lines is None else lines
    except (ValueError, IndexError):
        pass  # a deliberately malformed cursor: columns stay as given
    return (str(path), mtime, lines, cursor)


class Env:
    def __init__(self, tmp_path: Path) -> None:
        self.tmp = tmp_path
        self.home = tmp_path / "home"
        self.home.mkdir()
        self.alpha = tmp_path / "x" / "alpha"
        self.evil = tmp_path / "x" / "alpha-evil"
        self.alpha.mkdir(parents=True)
        self.evil.mkdir(parents=True)

    def assess(
        self,
        rows: Sequence[Row],
        *,
        sources: Sequence[str] = ("claude", "codex", "kimi", "pi"),
        roots: Sequence[str] | None = None,
        markers: Sequence[Row] = tuple(ALL_MARKERS),
        homes: Sequence[Path] | None = None,
        **kw: object,
    ) -> FreshnessReport:
        return assess_freshness(
            db_rows(self.tmp, [*rows, *markers]),
            roots=[str(self.alpha)] if roots is None else roots,
            sources=sources,
            transcript_homes=[self.home] if homes is None else homes,
            now_ms=NOW_MS,
            **kw,  # type: ignore[arg-type]
        )


@pytest.fixture
def env(tmp_path: Path) -> Env:
    return Env(tmp_path)


def test_signature_cursor_stat_only_when_unchanged(env: Env) -> None:
    a = claude_session(env.home, env.alpha, "s1")
    b = codex_session(env.home, env.alpha, "t1")
    report = env.assess([unit_row(a, sig5(a)), unit_row(b, sig5(b))])
    assert report.verdict == "fresh", report.to_public()
    assert (report.units_in_scope, report.up_to_date, report.lines_counted) == (2, 2, 0)


def test_signature_cursor_append_is_stale(env: Env) -> None:
    a = claude_session(env.home, env.alpha, "s1")
    row = unit_row(a, sig5(a))
    _append(a, {"type": "user", "cwd": str(env.alpha), "uuid": "new"}, keep_mtime=True)
    report = env.assess([row])
    assert report.verdict == "stale"
    assert report.stale_units == (str(a),)
    assert report.lines_counted == 0  # the size alone decides


def test_signature_cursor_inode_change_with_same_content_is_up_to_date(env: Env) -> None:
    a = claude_session(env.home, env.alpha, "s1")
    row = unit_row(a, sig5(a))
    copy = a.with_suffix(".tmp")
    shutil.copy2(a, copy)  # new inode and ctime, same bytes and mtime
    copy.replace(a)
    report = env.assess([row])
    assert report.verdict == "fresh", report.to_public()
    assert report.lines_counted == 1


def test_signature_cursor_inode_change_with_other_line_count_is_stale(env: Env) -> None:
    a = claude_session(env.home, env.alpha, "s1")
    s = a.stat()
    row = unit_row(a, f"{_ms(s.st_mtime_ns)}:2:{s.st_size}:{_ms(s.st_ctime_ns)}:{s.st_ino + 1}")
    assert env.assess([row]).verdict == "stale"


def test_legacy_cursor_same_mtime_append_caught_by_line_count(env: Env) -> None:
    b = codex_session(env.home, env.alpha, "t1")
    row = unit_row(b, legacy(b))
    assert env.assess([row]).verdict == "fresh"
    late = {"type": "event_msg", "payload": {"type": "agent_message", "message": "late"}}
    _append(b, late, keep_mtime=True)
    report = env.assess([row])
    assert report.verdict == "stale"
    assert report.stale == 1
    assert report.lines_counted == 1


def test_legacy_cursor_newer_mtime_is_stale_without_counting(env: Env) -> None:
    b = codex_session(env.home, env.alpha, "t1")
    row = unit_row(b, legacy(b))
    later = b.stat().st_mtime_ns + 5_000_000_000
    os.utime(b, ns=(later, later))
    report = env.assess([row])
    assert report.verdict == "stale"
    assert report.lines_counted == 0


def test_legacy_cursor_counts_a_torn_tail(env: Env) -> None:
    a = claude_session(env.home, env.alpha, "s1", n=2)
    with a.open("a") as fh:
        fh.write('{"type":"user","cwd":"' + str(env.alpha) + '"}')  # unterminated but parseable
    terminated = _lines(a)
    mtime = _ms(a.stat().st_mtime_ns)
    assert env.assess([unit_row(a, f"{mtime}:{terminated}")]).verdict == "fresh"
    assert env.assess([unit_row(a, f"{mtime}:{terminated + 1}")]).verdict == "fresh"
    assert env.assess([unit_row(a, f"{mtime}:{terminated + 2}")]).verdict == "stale"


def test_null_cursor_is_rebuilt_as_legacy(env: Env) -> None:
    a = claude_session(env.home, env.alpha, "s1")
    row = (str(a), a.stat().st_mtime_ns / 1e6, _lines(a), None)
    assert env.assess([row]).verdict == "fresh"
    stale_row = (str(a), a.stat().st_mtime_ns / 1e6, _lines(a) - 1, None)
    assert env.assess([stale_row]).verdict == "stale"


def test_codex_v4_uses_source_size(env: Env) -> None:
    b = codex_session(env.home, env.alpha, "t1")
    row = unit_row(b, codex_v4(b))
    assert env.assess([row]).verdict == "fresh"
    assert env.assess([row]).lines_counted == 0
    _append(b, {"type": "event_msg", "payload": {"type": "agent_message", "message": "x"}}, keep_mtime=True)
    assert env.assess([row]).verdict == "stale"


def test_codex_v4_offset_is_not_the_size(env: Env) -> None:
    b = codex_session(env.home, env.alpha, "t1")
    s = b.stat()
    state = _b64({"sourceSize": s.st_size})
    # completeLineOffset smaller than the file (a torn tail at index time) must not read as "size changed".
    cursor = f"{_ms(s.st_mtime_ns)}:{_lines(b)}:{s.st_size - 10}:{_ms(s.st_ctime_ns)}:{s.st_ino}:{state}"
    assert env.assess([unit_row(b, cursor)]).verdict == "fresh"


def test_codex_v4_bad_state_is_unknown(env: Env) -> None:
    b = codex_session(env.home, env.alpha, "t1")
    report = env.assess([unit_row(b, codex_v4(b, state="%%%"))])
    assert report.verdict == "unknown"
    assert report.unknown_cursor == 1
    assert "unknown_cursor" in report.unknown_reasons


def test_kimi_directory_aggregate(env: Env) -> None:
    session = kimi_session(env.home, env.alpha, "k1")
    row = unit_row(session, kimi_cursor(session))
    report = env.assess([row])
    assert report.verdict == "fresh", report.to_public()
    assert report.lines_counted == 3  # state.json + two wires
    wire = session / "agents" / "sub1" / "wire.jsonl"
    _append(wire, {"type": "turn", "n": 9}, keep_mtime=True)
    assert env.assess([row]).verdict == "stale"


def test_kimi_newer_wire_is_stale(env: Env) -> None:
    session = kimi_session(env.home, env.alpha, "k1")
    row = unit_row(session, kimi_cursor(session))
    wire = session / "agents" / "main" / "wire.jsonl"
    later = wire.stat().st_mtime_ns + 3_000_000_000
    os.utime(wire, ns=(later, later))
    assert env.assess([row]).verdict == "stale"


def test_kimi_with_a_file_cursor_is_unknown(env: Env) -> None:
    session = kimi_session(env.home, env.alpha, "k1")
    assert env.assess([unit_row(session, "1:2:3:4:5")]).verdict == "unknown"


def test_pi_snapshot_and_tombstone(env: Env) -> None:
    p = pi_session(env.home, env.alpha, "p1")
    row = unit_row(p, pi_cursor(p))
    assert env.assess([row]).verdict == "fresh"
    _append(p, {"type": "message", "id": "late"})
    assert env.assess([row]).verdict == "stale"
    assert env.assess([unit_row(p, "0:0")]).verdict == "stale"


def test_claude_workflow_json_is_mtime_only(env: Env) -> None:
    a = claude_session(env.home, env.alpha, "s1")
    run = a.parent / "s1" / "workflows" / "run1.json"
    run.parent.mkdir(parents=True)
    run.write_text(json.dumps({"runId": "run1", "script": "x"}))
    rows = [unit_row(a, sig5(a)), unit_row(run, f"{_ms(run.stat().st_mtime_ns)}:1")]
    report = env.assess(rows)
    assert report.verdict == "fresh", report.to_public()
    assert report.units_in_scope == 2
    later = run.stat().st_mtime_ns + 2_000_000_000
    os.utime(run, ns=(later, later))
    assert env.assess(rows).stale_units == (str(run),)


def test_claude_subagent_inherits_parent_cwd(env: Env) -> None:
    a = claude_session(env.home, env.alpha, "s1")
    sub = _write_jsonl(a.parent / "s1" / "subagents" / "agent-1.jsonl", [{"type": "user", "uuid": "u"}])
    report = env.assess([unit_row(a, sig5(a))])
    assert report.verdict == "incomplete"
    assert report.unindexed_units == (str(sub),)


def test_unindexed_file_makes_incomplete(env: Env) -> None:
    a = claude_session(env.home, env.alpha, "s1")
    b = codex_session(env.home, env.alpha, "t1")
    report = env.assess([unit_row(a, sig5(a))])
    assert report.verdict == "incomplete"
    assert (report.unindexed, report.unindexed_units) == (1, (str(b),))


def test_incomplete_outranks_stale_and_unknown(env: Env) -> None:
    a = claude_session(env.home, env.alpha, "s1")
    claude_session(env.home, env.alpha, "s2")
    b = codex_session(env.home, env.alpha, "t1")
    row_a = unit_row(a, sig5(a))
    _append(a, {"type": "user", "cwd": str(env.alpha)})
    report = env.assess([row_a, unit_row(b, "garbage")])
    assert (report.stale, report.unindexed, report.unknown_cursor) == (1, 1, 1)
    assert report.verdict == "incomplete"


def test_live_heartbeat_is_reported_but_does_not_hide_staleness(env: Env) -> None:
    a = claude_session(env.home, env.alpha, "s1")
    row = unit_row(a, sig5(a))
    heartbeat: Row = ("__app_heartbeat__", NOW_MS - 5_000, 0, None)
    fresh = env.assess([row], markers=[*ALL_MARKERS, heartbeat])
    assert (fresh.verdict, fresh.heartbeat_fresh) == ("fresh", True)
    _append(a, {"type": "user", "cwd": str(env.alpha)})
    stale = env.assess([row], markers=[*ALL_MARKERS, heartbeat])
    assert (stale.verdict, stale.heartbeat_fresh) == ("stale", True)
    old = env.assess([row], markers=[*ALL_MARKERS, ("__app_heartbeat__", NOW_MS - 61_000, 0, None)])
    assert old.heartbeat_fresh is False


def test_partial_app_build_is_stale(env: Env) -> None:
    a = claude_session(env.home, env.alpha, "s1")
    markers = [*ALL_MARKERS, ("__app_last_successful_build__", NOW_MS - 3_600_000, 0, None)]
    report = env.assess([unit_row(a, sig5(a))], markers=markers)
    assert report.app_build_partial is True
    assert report.verdict == "stale"
    complete = [*ALL_MARKERS, ("__app_last_successful_build__", NOW_MS - 120_000, 0, None)]
    assert env.assess([unit_row(a, sig5(a))], markers=complete).verdict == "fresh"


def test_missing_provider_marker_is_stale(env: Env) -> None:
    a = claude_session(env.home, env.alpha, "s1")
    markers = [m for m in ALL_MARKERS if not m[0].startswith("__codex_")]
    report = env.assess([unit_row(a, sig5(a))], markers=markers)
    assert report.missing_provider_markers == ("codex",)
    assert report.verdict == "stale"
    only_claude = env.assess([unit_row(a, sig5(a))], markers=markers, sources=["claude"])
    assert only_claude.verdict == "fresh"


def test_last_build_age(env: Env) -> None:
    report = env.assess([])
    assert report.last_build_age_ms == pytest.approx(120_000)
    assert env.assess([], markers=ALL_MARKERS[1:]).last_build_age_ms is None


def test_unknown_cursor_is_unknown(env: Env) -> None:
    a = claude_session(env.home, env.alpha, "s1")
    report = env.assess([unit_row(a, "1:2:3")])
    assert report.verdict == "unknown"
    assert report.unknown_cursor == 1


def test_path_boundary(env: Env) -> None:
    inside = claude_session(env.home, env.alpha, "s1")
    nested = claude_session(env.home, env.alpha / "pkg", "s2")
    evil = claude_session(env.home, env.evil, "s3")
    report = env.assess([unit_row(inside, sig5(inside)), unit_row(nested, sig5(nested))])
    assert report.verdict == "fresh", report.to_public()
    assert report.units_in_scope == 2
    evil_only = env.assess([], roots=[str(env.evil)])
    assert evil_only.unindexed_units == (str(evil),)


def test_head_bounded_read_of_a_huge_first_line(env: Env, tmp_path: Path) -> None:
    meta = {"timestamp": "t", "type": "session_meta",
            "payload": {"id": "t9", "cwd": str(env.alpha), "instructions": "x" * (1024 * 1024)}}
    big = _write_jsonl(
        env.home / ".codex" / "sessions" / "2026" / "01" / "03" / "rollout-2026-01-03T00-00-00-t9.jsonl",
        [meta, {"type": "event_msg", "payload": {"type": "user_message", "message": "hi"}}],
    )
    no_cwd = _write_jsonl(
        env.home / ".claude" / "projects" / "-elsewhere" / "s9.jsonl",
        [{"type": "file-history-snapshot", "snapshot": {"blob": "y" * (1024 * 1024)}},
         {"type": "user", "cwd": str(env.alpha)}],
    )
    rows = [unit_row(big, sig5(big))]
    io_path = Path("/proc/self/io")
    before = _rchar(io_path)
    report = env.assess(rows)
    after = _rchar(io_path)
    assert report.verdict == "fresh", report.to_public()
    assert report.units_in_scope == 1
    assert report.unattributed_files == 1  # no_cwd: its cwd lies beyond the head
    assert report.lines_counted == 0
    assert no_cwd.stat().st_size > 1024 * 1024
    if before is not None and after is not None:
        assert after - before < 512 * 1024, "a transcript was read whole"


def _rchar(io_path: Path) -> int | None:
    try:
        for line in io_path.read_text().splitlines():
            if line.startswith("rchar:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def test_tiny_head_limit_leaves_files_unattributed(env: Env) -> None:
    a = claude_session(env.home, env.alpha, "s1")
    report = env.assess([unit_row(a, sig5(a))], max_head_bytes=16)
    # 16 bytes never hold a whole record: the cwd is not found and the file is left unattributed.
    assert report.unattributed_files == 1
    assert report.units_in_scope == 0


def test_missing_on_disk_is_not_stale(env: Env) -> None:
    a = claude_session(env.home, env.alpha, "s1")
    gone = a.parent / "deleted.jsonl"
    other = env.home / ".claude" / "projects" / "-somewhere-else" / "gone.jsonl"
    rows = [unit_row(a, sig5(a)), (str(gone), 1.0, 3, "1:3"), (str(other), 1.0, 3, "1:3")]
    report = env.assess(rows)
    assert report.verdict == "fresh", report.to_public()
    assert report.missing_on_disk == 1


def test_unreadable_home_and_unsupported_source(env: Env, tmp_path: Path) -> None:
    a = claude_session(env.home, env.alpha, "s1")
    rows = [unit_row(a, sig5(a))]
    no_home = env.assess(rows, homes=[tmp_path / "nope"])
    assert no_home.verdict == "unknown"
    partly = env.assess(rows, homes=[env.home, tmp_path / "nope"])
    assert partly.verdict == "unknown"
    assert "unreadable_home" in partly.unknown_reasons
    omp_marker: Row = ("__omp_canonical_transcript_v1__", 1.0, 0, None)
    odd = env.assess(rows, sources=["claude", "omp"], markers=[*ALL_MARKERS, omp_marker])
    assert (odd.verdict, odd.unknown_reasons) == ("unknown", ("unsupported_source",))
    assert env.assess(rows, homes=[]).verdict == "unknown"
    assert env.assess(rows, roots=[]).verdict == "unknown"
    assert env.assess(rows, roots=["relative/path"]).verdict == "unknown"


def test_unreadable_root_is_unknown_unless_worse_is_known(env: Env, tmp_path: Path) -> None:
    a = claude_session(env.home, env.alpha, "s1")
    roots = [str(env.alpha), str(tmp_path / "missing-root")]
    assert env.assess([unit_row(a, sig5(a))], roots=roots).verdict == "unknown"
    assert env.assess([], roots=roots).verdict == "incomplete"


def test_vanishing_file_is_unreadable(env: Env) -> None:
    a = claude_session(env.home, env.alpha, "s1")

    def failing_stat(path: str) -> os.stat_result:
        if path == str(a):
            raise PermissionError(path)
        return os.stat(path)

    report = env.assess([unit_row(a, sig5(a))], stat=failing_stat)
    assert (report.verdict, report.unreadable_units) == ("unknown", 1)


def test_malformed_rows_never_raise(env: Env) -> None:
    a = claude_session(env.home, env.alpha, "s1")
    junk: list[object] = [None, (1, 2), ("x",), (None, 1, 2, "1:2"), (b"bytes", 1, 1, None), 42]
    report = assess_freshness(
        [*junk, (str(a), "text", "text", None), *ALL_MARKERS],  # type: ignore[list-item]
        roots=[str(env.alpha)],
        sources=["claude"],
        transcript_homes=[env.home],
        now_ms=NOW_MS,
    )
    assert report.verdict == "unknown"
    assert report.unknown_cursor == 1
    assert assess_freshness(
        None,  # type: ignore[arg-type]
        roots=None,  # type: ignore[arg-type]
        sources=None,  # type: ignore[arg-type]
        transcript_homes=None,  # type: ignore[arg-type]
        now_ms=float("nan"),
    ).verdict == "unknown"


def test_garbage_transcripts_never_raise(env: Env) -> None:
    bad = env.home / ".claude" / "projects" / "-x" / "bad.jsonl"
    bad.parent.mkdir(parents=True)
    bad.write_bytes(b"\xff\xfe{not json\n[1,2,3]\n\"cwd\"\n" + b"{" * 100_000 + b"\n")
    deep = env.home / ".claude" / "projects" / "-x" / "deep.jsonl"
    deep.write_bytes(b"[" * 50_000 + b"\n")
    report = env.assess([])
    assert report.unattributed_files == 2
    assert (report.verdict, report.unknown_reasons) == ("unknown", ("no_transcript_in_scope",))  # nothing in scope


def test_public_projection_has_no_paths(env: Env) -> None:
    a = claude_session(env.home, env.alpha, "s1")
    codex_session(env.home, env.alpha, "t1")
    row = unit_row(a, sig5(a))
    _append(a, {"type": "user", "cwd": str(env.alpha)})
    report = env.assess([row])
    public = report.to_public()
    text = json.dumps(public)
    assert str(env.tmp) not in text
    assert "/" not in text
    assert set(public) == {
        "verdict", "units_in_scope", "up_to_date", "stale", "unindexed", "missing_on_disk", "unknown_cursor",
        "unreadable_units", "unattributed_files", "last_build_age_ms", "heartbeat_fresh", "app_build_partial",
        "missing_provider_markers", "lines_counted", "unknown_reasons",
    }
    assert public["verdict"] == "incomplete"
