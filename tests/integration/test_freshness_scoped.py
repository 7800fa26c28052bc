"""Freshness from what the index already knows (issue 13.1): same verdicts as the full walk, cost of the scope.

Real SQLite databases (``index_state`` and ``sessions`` tables), real transcript files, real stats; stats and
file opens are counted (a counting ``stat`` and an audit hook), never timed.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
import realobelisk as ro
from obelisk_session_evidence.errors import DeadlineExceeded
from obelisk_session_evidence.index.connection import Deadline, ReadSnapshot, read_index
from obelisk_session_evidence.index.freshness import (
    FreshnessReport,
    TranscriptMemo,
    assess_freshness,
    assess_scoped_freshness,
)
from obelisk_session_evidence.index.freshness.candidates import cutoff_day
from obelisk_session_evidence.index.freshness.walks import ENTRIES_PER_CHECK, claude_slug
from obelisk_session_evidence.index.scope_state import (
    Seek,
    has_rows_under,
    read_marker_rows,
    read_scope_set,
    read_unit_rows,
    transcript_homes,
)
from obelisk_session_evidence.paths import Roots
from obelisk_session_evidence.templates.catalog import scope_template

from tests.integration.test_freshness import NOW_MS, REAL_ROOTS, _append, claude_session, codex_session, legacy, sig5

# ------------------------------------------------------------------------------------------- counting


_OPENS: list[str] = []
_LISTED: list[str] = []
_COUNTING = {"on": False}


def _audit(event: str, args: tuple[object, ...]) -> None:
    if not _COUNTING["on"]:
        return
    if event == "open" and isinstance(args[0], str) and args[0].endswith((".jsonl", ".json")):
        _OPENS.append(args[0])
    elif event == "os.scandir":
        _LISTED.append(os.fsdecode(args[0]) if isinstance(args[0], str | bytes) else repr(args[0]))


sys.addaudithook(_audit)


class Counted:
    """A real ``os.stat`` that counts its calls, and the transcript files opened and the directories listed
    meanwhile (audit events)."""

    def __init__(self) -> None:
        self.stats = 0
        self.opens = 0
        self.listed: list[str] = []

    def stat(self, path: str) -> os.stat_result:
        self.stats += 1
        return os.stat(path)

    def __enter__(self) -> Counted:
        _OPENS.clear()
        _LISTED.clear()
        _COUNTING["on"] = True
        return self

    def __exit__(self, *_: object) -> None:
        _COUNTING["on"] = False
        self.opens = len(_OPENS)
        self.listed = sorted(_LISTED)

    def listed_under(self, top: Path) -> list[str]:
        """The directories listed at or below ``top`` (not the package's own, e.g. its SQL templates)."""
        return [d for d in self.listed if d == str(top) or d.startswith(str(top) + os.sep)]


# ---------------------------------------------------------------------------------- a real index


def build_index(db: Path, rows: Sequence[tuple[str, float | None, int | None, str | None]],
                sessions: Sequence[tuple[str, str, str, str]]) -> Path:
    """A database with ``index_state`` rows and ``sessions`` (id, source, project_path, jsonl_path)."""
    conn = sqlite3.connect(db)
    conn.executescript(
        "CREATE TABLE index_state (jsonl_path TEXT PRIMARY KEY, mtime REAL, lines_processed INTEGER, cursor TEXT);"
        "CREATE TABLE sessions (id TEXT PRIMARY KEY, title TEXT, project TEXT, project_path TEXT, started_at TEXT,"
        " ended_at TEXT, git_branch TEXT, version TEXT, message_count INTEGER DEFAULT 0, jsonl_path TEXT,"
        " source TEXT DEFAULT 'claude');"
        "CREATE TABLE messages (uuid TEXT PRIMARY KEY); CREATE TABLE tool_results (tool_use_id TEXT PRIMARY KEY);"
        "CREATE INDEX idx_sessions_source ON sessions(source);")
    conn.executemany("INSERT INTO index_state VALUES (?,?,?,?)", rows)
    conn.executemany("INSERT INTO sessions (id, source, project_path, jsonl_path, started_at, ended_at) "
                     "VALUES (?,?,?,?,'2026-01-01T00:00:00Z','2026-01-01T00:00:00Z')", sessions)
    conn.commit()
    conn.close()
    return db


def scoped(db: Path, *, roots: Sequence[str], sources: Sequence[str], homes: Sequence[Path] | None = None,
           stat: object = os.stat, now_ms: float = NOW_MS,
           deadline_check: Callable[[], object] | None = None) -> FreshnessReport:
    """The scoped assessment exactly as a request runs it: every index read inside one snapshot."""

    def work(snap: ReadSnapshot) -> FreshnessReport:
        scope = read_scope_set(snap, scope_template(), sources=sources, roots=Roots.of(roots), since="")
        has_cursor = any(r[0] == "cursor" for r in snap.rows("SELECT name FROM pragma_table_info('index_state')"))
        seeks: list[Seek] = []  # (as service._freshness: what the skip-scan saw answers the archive probe)
        found_homes = [Path(h) for h in transcript_homes(snap, seeks)] if homes is None else homes
        return assess_scoped_freshness(
            scope.files, read_marker_rows(snap),
            lookup=lambda paths: read_unit_rows(snap, paths, has_cursor=has_cursor),
            has_rows_under=lambda prefix: has_rows_under(snap, prefix, seeks),
            roots=roots, sources=sources, transcript_homes=found_homes, now_ms=now_ms,
            stat=stat, deadline_check=deadline_check)  # type: ignore[arg-type]

    report, _mode = read_index(db, work, deadline=Deadline(60_000))
    return report


def full(db: Path, *, roots: Sequence[str], sources: Sequence[str], homes: Sequence[Path],
         now_ms: float = NOW_MS) -> FreshnessReport:
    conn = sqlite3.connect(f"file:{db}?mode=ro&immutable=1", uri=True)
    try:
        rows = list(conn.execute("SELECT jsonl_path, mtime, lines_processed, cursor FROM index_state"))
    finally:
        conn.close()
    return assess_freshness(rows, roots=roots, sources=sources, transcript_homes=homes, now_ms=now_ms)


# ------------------------------------------------------------------------------ real Obelisk data


@pytest.mark.real_obelisk
@pytest.mark.parametrize(("db", "tree"), [("fresh", "fresh"), ("stale", "stale"), ("reindexed", "stale")])
@pytest.mark.parametrize("roots", [REAL_ROOTS, ["/tmp/obelisk-home/src/acme-web"],
                                   ["/tmp/obelisk-home/src/acme-api-wt-auth"]])
def test_real_index_same_verdict_and_stale_units_as_the_full_walk(tmp_path: Path, db: str, tree: str,
                                                                   roots: list[str]) -> None:
    copy = ro.db_copy(db, tmp_path)  # type: ignore[arg-type]
    with ro.materialized(tree) as home:  # type: ignore[arg-type]
        now = time.time() * 1000
        walked = full(copy, roots=roots, sources=["claude", "codex"], homes=[home], now_ms=now)
        mine = scoped(copy, roots=roots, sources=["claude", "codex"], now_ms=now)
    assert mine.verdict == walked.verdict, (mine.to_public(), walked.to_public())
    assert mine.stale_units == walked.stale_units
    assert mine.unindexed_units == walked.unindexed_units
    assert mine.up_to_date <= walked.up_to_date


# ------------------------------------------------------------------------------- synthetic homes


class Home:
    """``n_projects`` repositories, each with Claude and Codex sessions, all indexed; one root is the scope."""

    def __init__(self, tmp: Path, n_projects: int, per_project: int) -> None:
        self.tmp = tmp
        self.home = tmp / "home"
        self.rows: list[tuple[str, float | None, int | None, str | None]] = [
            ("__last_build__", NOW_MS - 60_000, 0, None),
            ("__claude_canonical_transcript_v3__", NOW_MS - 60_000, 0, None),
            ("__codex_canonical_transcript_v3__", NOW_MS - 60_000, 0, None),
        ]
        self.sessions: list[tuple[str, str, str, str]] = []
        self.repos = [tmp / "src" / f"repo{i:03d}" for i in range(n_projects)]
        for i, repo in enumerate(self.repos):
            repo.mkdir(parents=True)
            for k in range(per_project):
                if k % 2 == 0:
                    path = claude_session(self.home, repo, f"c{i:03d}-{k:03d}")
                    self.add(path, "claude", repo, f"c{i:03d}-{k:03d}")
                else:
                    path = codex_session(self.home, repo, f"x{i:03d}-{k:03d}")
                    self.add(path, "codex", repo, f"codex:x{i:03d}-{k:03d}")

    def add(self, path: Path, source: str, repo: Path, sid: str) -> None:
        cursor = sig5(path)
        self.rows.append((str(path), float(cursor.split(":")[0]), int(cursor.split(":")[1]), cursor))
        self.sessions.append((sid, source, str(repo), str(path)))

    def db(self) -> Path:
        return build_index(self.tmp / f"idx-{len(list(self.tmp.glob('idx-*')))}.sqlite", self.rows, self.sessions)


def test_cost_follows_the_scope(tmp_path: Path) -> None:
    """400 transcripts, 10 in scope: the scoped walk stats and opens only the scope's files."""
    h = Home(tmp_path, n_projects=40, per_project=10)
    db = h.db()
    root = [str(h.repos[7])]
    with Counted() as all_files:
        walked = assess_freshness(
            [tuple(r) for r in h.rows], roots=root, sources=["claude", "codex"], transcript_homes=[h.home],
            now_ms=NOW_MS, stat=all_files.stat)
    with Counted() as counted:
        mine = scoped(db, roots=root, sources=["claude", "codex"], stat=counted.stat)
    assert walked.verdict == mine.verdict == "fresh"
    assert walked.units_in_scope == mine.units_in_scope == 10
    assert all_files.opens >= 400  # the full walk reads every head
    assert counted.opens == 0  # every in-scope file is attributed by the index: no head read
    # one stat per in-scope file, each Codex year, month and day directory (one of each here), root and home
    assert counted.stats <= 10 + 3 + 2, counted.stats
    # listed: the Claude projects directory and the scope's project, the Codex sessions and its year and month
    # directories (unchanged since the last build: listed for their directories only); no day directory (before
    # the last build and unchanged since) and no other project
    claude = h.home / ".claude" / "projects"
    sessions = h.home / ".codex" / "sessions"
    assert counted.listed_under(h.home) == sorted([str(claude), str(claude / claude_slug(root[0])), str(sessions),
                                                 str(sessions / "2026"), str(sessions / "2026" / "01")]), \
        counted.listed


def test_scoped_verdicts_follow_changes_like_the_full_walk(tmp_path: Path) -> None:
    h = Home(tmp_path, n_projects=6, per_project=4)
    repo = h.repos[2]
    sibling = tmp_path / "src" / "repo002-evil"  # a textual prefix sibling, never in scope
    sibling.mkdir()
    root = [str(repo)]

    def both() -> tuple[FreshnessReport, FreshnessReport]:
        db = h.db()
        return (scoped(db, roots=root, sources=["claude", "codex"]),
                full(db, roots=root, sources=["claude", "codex"], homes=[h.home]))

    mine, walked = both()
    assert mine.verdict == walked.verdict == "fresh"
    # an out-of-scope session (the sibling) grows and a new one appears: still fresh
    claude_session(h.home, sibling, "evil-new")
    codex_session(h.home, sibling, "evil-new-x")
    _append(Path(h.sessions[0][3]), {"type": "user", "cwd": str(h.repos[0])})
    mine, walked = both()
    assert mine.verdict == walked.verdict == "fresh"
    # an in-scope Claude transcript grows: stale, the same unit named
    grown = Path(next(s[3] for s in h.sessions if s[2] == str(repo) and s[1] == "claude"))
    _append(grown, {"type": "user", "cwd": str(repo)})
    mine, walked = both()
    assert mine.verdict == walked.verdict == "stale"
    assert mine.stale_units == walked.stale_units == (str(grown),)
    # a new, unindexed in-scope Codex rollout in a day directory holding the scope's sessions: incomplete
    new = codex_session(h.home, repo / "sub", "brand-new")
    os.utime(new.parent, ns=(int(NOW_MS * 1e6), int(NOW_MS * 1e6)))  # the directory changed after the build
    mine, walked = both()
    assert mine.verdict == walked.verdict == "incomplete"
    assert mine.unindexed_units == walked.unindexed_units == (str(new),)


def test_old_unchanged_codex_day_directory_is_not_listed_but_its_scope_files_are_judged(tmp_path: Path) -> None:
    """An older day directory unchanged since the last build (mtime and ctime before it) is not listed (no file of
    another project is looked at), yet an in-scope rollout in it that grew is stale."""
    h = Home(tmp_path, n_projects=8, per_project=4)
    repo = h.repos[3]
    grown = Path(next(s[3] for s in h.sessions if s[2] == str(repo) and s[1] == "codex"))
    _append(grown, {"type": "event_msg", "payload": {"type": "user_message", "message": "late"}})
    day = grown.parent
    os.utime(day, ns=(int((NOW_MS - 120_000) * 1e6),) * 2)  # no entry added since the build
    with Counted() as counted:
        mine = scoped(h.db(), roots=[str(repo)], sources=["codex"], homes=[h.home], stat=counted.stat)
    assert mine.verdict == "stale" and mine.stale_units == (str(grown),)
    assert counted.opens == 0
    in_scope_codex = sum(1 for s in h.sessions if s[2] == str(repo) and s[1] == "codex")
    # the scope's files, the year, month and day directories, root and home
    assert counted.stats <= in_scope_codex + 3 + 3
    sessions = h.home / ".codex" / "sessions"  # the year and the month are listed for their directories, no day
    assert counted.listed_under(h.home) == [str(sessions), str(sessions / "2026"), str(sessions / "2026" / "01")]


def test_a_known_transcript_named_through_a_link_is_judged_by_its_resolved_row(tmp_path: Path) -> None:
    """The index names a session's transcript through a symbolic link to its directory and holds its row under
    the resolved path: the row is found under that form, so the transcript is judged, not unindexed."""
    repo = tmp_path / "src" / "repo"
    repo.mkdir(parents=True)
    home = tmp_path / "home"
    transcript = claude_session(home, repo, "linked")
    elsewhere = home / ".claude" / "projects" / "kept-elsewhere"  # a name no root's encoding matches
    transcript.parent.rename(elsewhere)
    real = elsewhere / transcript.name
    link = tmp_path / "link"
    link.symlink_to(elsewhere, target_is_directory=True)
    cursor = sig5(real)
    rows = [("__last_build__", NOW_MS - 60_000, 0, None), ("__claude_canonical_transcript_v3__", NOW_MS, 0, None),
            (str(real), float(cursor.split(":")[0]), int(cursor.split(":")[1]), cursor)]
    db = build_index(tmp_path / "i.sqlite", rows, [("linked", "claude", str(repo), str(link / real.name))])
    report = scoped(db, roots=[str(repo)], sources=["claude"], homes=[home])
    assert (report.verdict, report.units_in_scope, report.up_to_date) == ("fresh", 1, 1)


def test_deleted_in_scope_transcript_is_missing_on_disk(tmp_path: Path) -> None:
    h = Home(tmp_path, n_projects=3, per_project=4)
    repo = h.repos[1]
    gone = Path(next(s[3] for s in h.sessions if s[2] == str(repo) and s[1] == "codex"))
    gone.unlink()
    report = scoped(h.db(), roots=[str(repo)], sources=["claude", "codex"], homes=[h.home])
    assert report.missing_on_disk == 1
    assert report.verdict == "fresh"


def _day_dir(home: Path, day: tuple[int, int, int]) -> Path:
    return home / ".codex" / "sessions" / f"{day[0]:04d}" / f"{day[1]:02d}" / f"{day[2]:02d}"


def test_codex_old_day_directories_without_scope_files_are_not_listed(tmp_path: Path) -> None:
    """An unindexed in-scope rollout in an old day directory unchanged since the last build (mtime and ctime
    before it) was there when the build ran: not listed. One in a day directory from the cutoff on is listed."""
    h = Home(tmp_path, n_projects=2, per_project=2)
    repo = h.repos[0]
    old = _day_dir(h.home, (2020, 1, 1)) / "rollout-2020-01-01T00-00-00-old.jsonl"
    old.parent.mkdir(parents=True)
    old.write_text(json.dumps({"type": "session_meta", "payload": {"id": "old", "cwd": str(repo)}}) + "\n")
    build_day = cutoff_day(NOW_MS)
    assert build_day is not None
    recent = _day_dir(h.home, build_day) / "rollout-recent.jsonl"
    recent.parent.mkdir(parents=True, exist_ok=True)
    recent.write_text(json.dumps({"type": "session_meta", "payload": {"id": "new", "cwd": str(repo)}}) + "\n")
    report = scoped(h.db(), roots=[str(repo)], sources=["codex"], homes=[h.home])
    assert report.unindexed_units == (str(recent),)


def test_codex_month_directory_is_listed_whole_only_when_it_changed_since_the_build(tmp_path: Path) -> None:
    """A month directory before the cutoff, unchanged since the last build, is listed for its directories only:
    its day directories are judged by their own times (05 and 12/01, unchanged: not listed), a directory that is
    not a date is walked whole (an unindexed in-scope rollout there is found), its own loose rollout is not
    collected (it was there when the build ran). Changed since the build (its mtime later), the month is listed
    whole: the loose rollout is found too."""
    h = Home(tmp_path, n_projects=2, per_project=2)
    repo = h.repos[0]
    month = _day_dir(h.home, (2026, 1, 2)).parent  # holds the scope's Codex session (codex_session's day)
    meta = json.dumps({"type": "session_meta", "payload": {"id": "n", "cwd": str(repo)}}) + "\n"
    loose = month / "rollout-2026-01-03T00-00-00-loose.jsonl"
    nested = month / "misc" / "deeper" / "rollout-nested.jsonl"
    other_day = month / "05" / "rollout-2026-01-05T00-00-00-other.jsonl"  # no session in scope: not listed
    other_month = month.parent / "12" / "01" / "rollout-2026-12-01T00-00-00-late.jsonl"
    dated_file = month / "07"  # a date-named file, never a unit
    for path in (loose, nested, other_day, other_month, dated_file):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(meta)
    db = h.db()
    before_build = int((NOW_MS - 120_000) * 1e6)
    for directory in (month.parent, month):
        os.utime(directory, ns=(before_build, before_build))
    sessions = h.home / ".codex" / "sessions"
    listed = sorted(str(d) for d in (sessions, month.parent, month, month / "misc", month / "misc" / "deeper",
                                     month.parent / "12"))  # not 05, not 12/01: unchanged day directories
    with Counted() as counted:
        unchanged = scoped(db, roots=[str(repo)], sources=["codex"], homes=[h.home], stat=counted.stat)
    assert unchanged.unindexed_units == (str(nested),)
    assert unchanged.verdict == "incomplete"
    assert counted.listed_under(h.home) == listed
    after_build = int(NOW_MS * 1e6)
    os.utime(month, ns=(after_build, after_build))  # an entry added or removed after the build
    with Counted() as counted:
        report = scoped(db, roots=[str(repo)], sources=["codex"], homes=[h.home], stat=counted.stat)
    assert report.unindexed_units == tuple(sorted((str(loose), str(nested))))
    assert report.verdict == "incomplete"
    assert counted.listed_under(h.home) == listed


def test_codex_directory_that_is_not_a_date_below_an_unchanged_month_is_walked_whole(tmp_path: Path) -> None:
    """A rollout of a session in scope under a directory that is not a date (``2026/01/misc/``): the month,
    unchanged since the build, is listed for its directories only, and that directory is walked whole, so an
    unindexed in-scope rollout added beside the known one is found."""
    h = Home(tmp_path, n_projects=2, per_project=2)
    repo = h.repos[0]
    month = _day_dir(h.home, (2026, 1, 2)).parent
    meta = {"type": "session_meta", "payload": {"id": "m", "cwd": str(repo)}}
    known = month / "misc" / "rollout-2026-01-03T00-00-00-known.jsonl"
    known.parent.mkdir()
    known.write_text(json.dumps(meta) + "\n")
    h.add(known, "codex", repo, "codex:misc-known")
    added = known.parent / "rollout-2026-01-04T00-00-00-added.jsonl"
    added.write_text(json.dumps(meta) + "\n")
    before_build = int((NOW_MS - 120_000) * 1e6)
    for directory in (month.parent, month):
        os.utime(directory, ns=(before_build, before_build))
    with Counted() as counted:
        report = scoped(h.db(), roots=[str(repo)], sources=["codex"], homes=[h.home], stat=counted.stat)
    assert report.unindexed_units == (str(added),)
    assert report.verdict == "incomplete"
    sessions = h.home / ".codex" / "sessions"
    assert counted.listed_under(h.home) == sorted(str(d) for d in (sessions, month.parent, month, known.parent))


def test_a_huge_directory_is_listed_under_the_deadline(tmp_path: Path) -> None:
    """The scope's Claude project directory holds 3,000 more indexed sessions: nothing needs reading and the stat
    here checks no deadline, so only the listings can end the assessment. A deadline that has passed ends it
    with ``DeadlineExceeded`` (a request then answers freshness ``unknown``, ``freshness_deadline_exceeded``);
    a deadline still ahead is checked between the entries of that one directory, every ``ENTRIES_PER_CHECK``."""
    h = Home(tmp_path, n_projects=2, per_project=2)
    repo = h.repos[0]
    project = Path(next(s[3] for s in h.sessions if s[2] == str(repo) and s[1] == "claude")).parent
    for k in range(3_000):
        path = project / f"bulk-{k:05d}.jsonl"
        path.write_text(json.dumps({"type": "user", "uuid": f"b{k}", "cwd": str(repo)}) + "\n")
        h.add(path, "claude", repo, f"bulk-{k:05d}")
    db = h.db()
    assert scoped(db, roots=[str(repo)], sources=["claude"], homes=[h.home]).verdict == "fresh"
    with pytest.raises(DeadlineExceeded):
        scoped(db, roots=[str(repo)], sources=["claude"], homes=[h.home], deadline_check=Deadline(0).check)
    checks: list[int] = []
    report = scoped(db, roots=[str(repo)], sources=["claude"], homes=[h.home],
                    deadline_check=lambda: checks.append(1))
    assert report.verdict == "fresh" and report.units_in_scope == 3_001
    assert len(checks) >= 3_000 // ENTRIES_PER_CHECK


def test_warm_assessment_rereads_only_changed_files(tmp_path: Path) -> None:
    """With a ``TranscriptMemo`` (a warm ``serve`` holds one), line counts are reused under the same stat and
    read again when a file changed (here a same-mtime append: its size and ctime move)."""
    memo = TranscriptMemo()
    home = tmp_path / "home"
    repo = tmp_path / "src" / "repo"
    repo.mkdir(parents=True)
    files = [claude_session(home, repo, f"s{k}") for k in range(5)]
    rows = [("__last_build__", NOW_MS, 0, None), ("__claude_canonical_transcript_v3__", NOW_MS, 0, None)]
    rows += [(str(p), float(legacy(p).split(":")[0]), int(legacy(p).split(":")[1]), legacy(p)) for p in files]
    db = build_index(tmp_path / "i.sqlite", rows, [(f"s{k}", "claude", str(repo), str(p))
                                                   for k, p in enumerate(files)])

    def assess() -> tuple[FreshnessReport, int]:
        def work(snap: ReadSnapshot) -> FreshnessReport:
            scope = read_scope_set(snap, scope_template(), sources=["claude"], roots=Roots.of([str(repo)]), since="")
            return assess_scoped_freshness(
                scope.files, read_marker_rows(snap), lookup=lambda p: read_unit_rows(snap, p, has_cursor=True),
                has_rows_under=lambda p: has_rows_under(snap, p), roots=[str(repo)], sources=["claude"],
                transcript_homes=[home], now_ms=NOW_MS, memo=memo)

        with Counted() as counted:
            report = read_index(db, work, deadline=Deadline(60_000))[0]
        return report, counted.opens

    first, first_opens = assess()
    assert first.verdict == "fresh" and first.lines_counted == 5 and first_opens == 5  # legacy: counted
    second, second_opens = assess()
    assert second.verdict == "fresh" and second.lines_counted == 0 and second_opens == 0
    _append(files[2], {"type": "user", "cwd": str(repo)}, keep_mtime=True)  # same mtime, new ctime
    third, _ = assess()
    assert third.verdict == "stale" and third.stale_units == (str(files[2]),)
    assert third.lines_counted == 1
    memo = TranscriptMemo()  # another owner's memo remembers nothing of this one's (no state in the package)
    fourth, fourth_opens = assess()
    assert fourth.lines_counted == 5 and fourth_opens == 5
