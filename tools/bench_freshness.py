#!/usr/bin/env python3
"""Benchmark ``assess_freshness`` over 10,000 synthetic transcripts.

Builds a temporary HOME with Claude and Codex transcripts (70/30) whose cwd lies in one repository root,
plus matching ``index_state`` rows, then times ``assess_freshness`` (median of 5 runs, warm page cache):

* ``signature, unchanged``  five-part cursors, nothing changed: the stat-only common case;
* ``signature, 1% appended``  1% of files gained a line (mtime restored, so only the size tells);
* ``legacy, unchanged``  two-part cursors: every file needs a line count (the real-Obelisk shape);
* ``signature, 1 of 20 repos``  the same 10,000 files spread over 20 repositories, scope = one of them.

Issue 13 (cost follows the scope): 10,000 files over 100 repositories (100 in scope), indexed in a real SQLite
database (``index_state`` and ``sessions``), Codex rollouts in 84 day directories of 2025, every directory
unchanged since ``__last_build__``:

* ``full walk, 1 of 100 repos``  ``assess_freshness`` as before issue 13 (every head read);
* ``scoped, 1 of 100 repos``  what a request does now, its index reads included: the scope template, the
  marker rows, the homes and the row lookups in one read snapshot, then ``assess_scoped_freshness``.
  ``of which freshness`` times what freshness adds to a request: the homes skip-scan, the archive probe, the
  row lookups, the listings, the stats, the judging and the report. Not timed there: the open, the scope set
  and the marker rows, which every request reads whether or not it judges freshness (``service._read`` reads
  the markers for the index revision, then hands the same rows to freshness).
* ``hand-written floor``  ``floor_request``: the least a judgement of the scope under the same rules can do,
  the same reads and system calls written out by hand. It does the work the rules require of any reader,
  so it moves with them: since the Codex walk judges every date directory by its mtime and ctime, the floor
  lists every Codex year and month directory and stats every day directory as the provider does.
  **Target: freshness <= 1.5 x the floor**, both timed side by side in the same rounds.
* ``stat all files``  ``os.stat`` of every transcript, printed as information (freshness / stat all was the
  target before the floor was written; it says how far the scoped walk is from looking at every file).

* ``before``  with ``--before PYTHON``: the freshness a request paid before issue 13, run by that install:
  every ``index_state`` row read, then its ``assess_freshness``.

Usage: ``tools/bench_freshness.py [--files N] [--runs R] [--only-issue13] [--before PYTHON] [--json FILE]``
(``--only-issue13``: only the scoped comparison above).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from obelisk_session_evidence.index.freshness import FreshnessReport, assess_freshness, assess_scoped_freshness

Row = tuple[str, float | None, int | None, str | None]
MARKERS: list[Row] = [
    ("__last_build__", 0.0, 0, None),
    ("__claude_canonical_transcript_v3__", 0.0, 0, None),
    ("__codex_canonical_transcript_v3__", 0.0, 0, None),
]


def _records(cwd: str, n: int, codex: bool) -> list[dict[str, object]]:
    if codex:
        meta: dict[str, object] = {"type": "session_meta", "payload": {"id": "t", "cwd": cwd}}
        body: list[dict[str, object]] = [
            {"type": "event_msg", "payload": {"type": "user_message", "message": "word " * 30}}
        ] * n
        return [meta, *body]
    text = "word " * 30
    return [{"type": "user", "uuid": f"u{i}", "cwd": cwd, "message": {"content": text}} for i in range(n)]


def _write(path: Path, records: Sequence[object]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def build(top: Path, files: int, repos: int) -> tuple[Path, list[str], list[Path]]:
    """Create HOME and repos under ``top``; return (home, repo roots, transcript paths)."""
    home = top / "home"
    roots = [top / "src" / f"repo{r:02d}" for r in range(repos)]
    for root in roots:
        root.mkdir(parents=True)
    paths: list[Path] = []
    for i in range(files):
        cwd = str(roots[i % repos])
        if i % 10 < 7:
            slug = cwd.replace("/", "-")
            path = home / ".claude" / "projects" / slug / f"{i:08d}-session.jsonl"
            _write(path, _records(cwd, 10, codex=False))
        else:
            path = home / ".codex" / "sessions" / "2026" / f"{i % 12 + 1:02d}" / f"{i % 28 + 1:02d}"
            path = path / f"rollout-2026-01-01T00-00-00-{i:08d}.jsonl"
            _write(path, _records(cwd, 10, codex=True))
        paths.append(path)
    return home, [str(r) for r in roots], paths


def _ms(ns: int) -> str:
    return repr(ns / 1e6)


def signature_row(path: Path) -> Row:
    st = path.stat()
    lines = path.read_bytes().count(b"\n")
    cursor = f"{_ms(st.st_mtime_ns)}:{lines}:{st.st_size}:{_ms(st.st_ctime_ns)}:{st.st_ino}"
    return (str(path), st.st_mtime_ns / 1e6, lines, cursor)


def legacy_row(path: Path) -> Row:
    st = path.stat()
    lines = path.read_bytes().count(b"\n")
    return (str(path), st.st_mtime_ns / 1e6, lines, f"{_ms(st.st_mtime_ns)}:{lines}")


def append_same_mtime(path: Path) -> None:
    st = path.stat()
    with path.open("a") as fh:
        fh.write(json.dumps({"type": "user", "uuid": "late"}) + "\n")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def measure(label: str, runs: int, files: int, call: Callable[[], FreshnessReport]) -> FreshnessReport:
    timings: list[float] = []
    report = call()  # warm-up (page cache, imports)
    for _ in range(runs):
        start = time.perf_counter()
        report = call()
        timings.append((time.perf_counter() - start) * 1000)
    median = statistics.median(timings)
    print(
        f"{label:<28} median {median:8.1f} ms  ({median * 1000 / files:6.1f} us/file)  "
        f"verdict={report.verdict} in_scope={report.units_in_scope} stale={report.stale} "
        f"lines_counted={report.lines_counted}"
    )
    return report


def build_indexed(top: Path, files: int, repos: int, now_ms: float) -> tuple[Path, Path, list[str], list[Path]]:
    """HOME, repos and a real index database (``index_state`` + ``sessions``) of every transcript."""
    import sqlite3

    home = top / "home"
    roots = [top / "src" / f"repo{r:03d}" for r in range(repos)]
    for root in roots:
        root.mkdir(parents=True)
    paths: list[Path] = []
    sessions: list[tuple[str, str, str, str]] = []
    for i in range(files):
        cwd = str(roots[(i // 10) % repos])  # each repository: blocks of 7 Claude and 3 Codex transcripts
        if i % 10 < 7:
            path = home / ".claude" / "projects" / cwd.replace("/", "-") / f"{i:08d}-session.jsonl"
            _write(path, _records(cwd, 10, codex=False))
            sessions.append((f"{i:08d}-session", "claude", cwd, str(path)))
        else:
            day = home / ".codex" / "sessions" / "2025" / f"{i % 12 + 1:02d}" / f"{i % 28 + 1:02d}"
            path = day / f"rollout-2025-01-01T00-00-00-{i:08d}.jsonl"
            _write(path, _records(cwd, 10, codex=True))
            sessions.append((f"codex:{i:08d}", "codex", cwd, str(path)))
        paths.append(path)
    db = top / "obelisk.sqlite"
    conn = sqlite3.connect(db)
    conn.executescript(
        "CREATE TABLE index_state (jsonl_path TEXT PRIMARY KEY, mtime REAL, lines_processed INTEGER, cursor TEXT);"
        "CREATE TABLE sessions (id TEXT PRIMARY KEY, title TEXT, project TEXT, project_path TEXT, started_at TEXT,"
        " ended_at TEXT, git_branch TEXT, version TEXT, message_count INTEGER DEFAULT 0, jsonl_path TEXT,"
        " source TEXT DEFAULT 'claude');"
        "CREATE INDEX idx_sessions_source ON sessions(source);"
        "CREATE TABLE messages (uuid TEXT PRIMARY KEY); CREATE TABLE tool_results (tool_use_id TEXT PRIMARY KEY);")
    built = max(now_ms, time.time() * 1000)  # the build ends after the last transcript was written
    markers: list[Row] = [(name, built if name == "__last_build__" else 0.0, 0, None) for name, *_ in MARKERS]
    conn.executemany("INSERT INTO index_state VALUES (?,?,?,?)", [signature_row(p) for p in paths] + markers)
    conn.executemany("INSERT INTO sessions (id, source, project_path, jsonl_path, started_at, ended_at) "
                     "VALUES (?,?,?,?,'2025-01-01T00:00:00Z','2025-01-01T00:00:00Z')", sessions)
    conn.commit()
    conn.close()
    return home, db, [str(r) for r in roots], paths


def scoped_request(db: Path, root: str, now_ms: float, timing: list[float] | None = None) -> FreshnessReport:
    """The scoped assessment as a one-shot request runs it, index reads included (one read snapshot), with the
    request's deadline-bounded stat (nothing remembered: a warm ``serve`` may keep the rows and homes).
    ``timing`` receives the ms of the freshness part alone: after the scope set and the marker rows a request
    reads anyway (the markers for its index revision, ``service._read``, which passes them on to freshness)."""
    from obelisk_session_evidence.index.connection import Deadline, ReadSnapshot, read_index
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

    bound = Roots.of([root])  # a request's roots, resolved from the config at admission (``EnabledScope.bound_roots``)

    def work(snap: ReadSnapshot) -> FreshnessReport:
        scope = read_scope_set(snap, scope_template(), sources=["claude", "codex"], roots=bound, since="")
        markers = read_marker_rows(snap)
        started = time.perf_counter()
        seeks: list[Seek] = []  # (as service._freshness: the skip-scan's seeks answer probes)
        report = assess_scoped_freshness(
            scope.files, markers,
            lookup=lambda paths: read_unit_rows(snap, paths, has_cursor=True),
            has_rows_under=lambda prefix: has_rows_under(snap, prefix, seeks),
            roots=[root], real_roots=bound.real_paths, sources=["claude", "codex"],
            transcript_homes=transcript_homes(snap, seeks), now_ms=now_ms,
            stat=snap.deadline.bounded_stat())  # the stat a request judges with (``service._freshness``)
        if timing is not None:
            timing.append((time.perf_counter() - started) * 1000)
        return report

    return read_index(db, work, deadline=Deadline(60_000))[0]


def floor_request(db: Path, root: str, timing: list[float]) -> FreshnessReport:
    """The least a judgement of the scope's 100 files under the verdict rules can do, written by hand in the
    same read snapshot after the same scope set and marker rows: the homes skip-scan, one statement for the
    rows, the listing of the Claude projects directory and of the scope's project directory, the Codex walk
    the rules require (``sessions/`` and every year and month directory listed, every year, month and day
    directory statted and its mtime and ctime compared with the last build; none changed here, so no day is
    listed), and one stat and one cursor match per file (each stat through the request's deadline-bounded
    stat, as the request's). No unit objects, no tally, no checks of malformed input, no archive probe: a
    floor, not an implementation."""
    import re

    from obelisk_session_evidence.index.connection import Deadline, ReadSnapshot, read_index
    from obelisk_session_evidence.index.revision import CURSOR_READ_CHARS
    from obelisk_session_evidence.index.scope_state import (
        UNIT_ROWS_SQL,
        json_text_array,
        read_marker_rows,
        read_scope_set,
        transcript_homes,
    )
    from obelisk_session_evidence.paths import Roots
    from obelisk_session_evidence.templates.catalog import scope_template

    signature = re.compile(r"([0-9]+(?:\.[0-9]*)?):([0-9]+):([0-9]+):([0-9]+(?:\.[0-9]*)?):([0-9]+)")
    slug = "".join(c if c.isascii() and c.isalnum() else "-" for c in root)

    def work(snap: ReadSnapshot) -> FreshnessReport:
        scope = read_scope_set(snap, scope_template(), sources=["claude", "codex"], roots=Roots.of([root]),
                               since="")
        last_build = read_marker_rows(snap)["__last_build__"]
        assert isinstance(last_build, float)
        started = time.perf_counter()
        stat = snap.deadline.bounded_stat()  # the request's stat, as in scoped_request

        def listing(path: str) -> list[os.DirEntry[str]]:
            snap.deadline.check()  # a listing checks the deadline, as the request's (none here holds 256 entries)
            with os.scandir(path) as entries:
                return list(entries)

        home = transcript_homes(snap)[0]
        for entry in listing(os.path.join(home, ".claude", "projects")):
            if entry.name.startswith(slug) and entry.is_dir(follow_symlinks=False):
                for inner in listing(entry.path):
                    inner.is_file()
        for year in listing(os.path.join(home, ".codex", "sessions")):
            stat(year.path)  # (a changed year or month is listed whole: listed here anyway)
            for month in listing(year.path):
                stat(month.path)
                for day in listing(month.path):
                    st = stat(day.path)
                    if max(st.st_mtime_ns, st.st_ctime_ns) / 1e6 > last_build:
                        listing(day.path)
        paths = sorted(path for path, _ in scope.files)
        fresh = 0
        for path, _mtime, _lines, cursor in snap.rows(UNIT_ROWS_SQL, {"paths": json_text_array(paths),
                                                                        "n": CURSOR_READ_CHARS}):
            st = stat(path)
            match = signature.fullmatch(cursor)
            if match is not None and int(match[3]) == st.st_size and \
                    abs(float(match[1]) - st.st_mtime_ns / 1e6) <= 1.0:
                fresh += 1
        timing.append((time.perf_counter() - started) * 1000)
        return FreshnessReport("fresh", fresh, fresh, 0, 0, 0, 0, 0, 0, (), (), None, None, False, (), 0, ())

    return read_index(db, work, deadline=Deadline(60_000))[0]


#: The freshness a request paid before issue 13, run by another install (``--before``): every ``index_state``
#: row read (as that revision did), then ``assess_freshness`` over them (a head read for every Codex file).
BEFORE_SCRIPT = r"""
import json, statistics, sys, time
from pathlib import Path
import apsw
from obelisk_session_evidence.index.freshness import assess_freshness
db, home, root, now, runs = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), int(sys.argv[5])
def once():
    conn = apsw.Connection(f"file:{db}?mode=ro", flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
    try:
        rows = [tuple(r) for r in conn.execute("SELECT jsonl_path, mtime, lines_processed, cursor FROM index_state")]
    finally:
        conn.close()
    return assess_freshness(rows, roots=[root], sources=["claude", "codex"], transcript_homes=[Path(home)],
                            now_ms=now)
report = once()
timings = []
for _ in range(runs):
    started = time.perf_counter()
    report = once()
    timings.append((time.perf_counter() - started) * 1000)
print(json.dumps({"median_ms": statistics.median(timings), "verdict": report.verdict,
                  "in_scope": report.units_in_scope}))
"""


#: Runs of each side in one round of the issue-13 comparison.
BLOCK = 5
#: The target: the scoped freshness of a request at most this many times the hand-written floor.
FLOOR_TARGET = 1.5


def issue13(top: Path, files: int, rounds: int, before: str | None = None) -> dict[str, object]:
    """The issue-13 comparison; ``before``: a Python of another install whose freshness is timed beside."""
    import subprocess

    now = time.time() * 1000
    home, db, roots, paths = build_indexed(top, files, repos=100, now_ms=now)
    rows = [signature_row(p) for p in paths] + [("__last_build__", now, 0, None), *MARKERS[1:]]
    names = [str(p) for p in paths]

    def stat_all() -> FreshnessReport:
        for name in names:
            os.stat(name)
        return FreshnessReport("fresh", files, files, 0, 0, 0, 0, 0, 0, (), (), None, None, False, (), 0, ())

    print(f"\nissue 13: {files} transcripts over 100 repositories, {files // 100} in scope, indexed in SQLite")
    full = measure_ms("full walk, 1 of 100 repos", BLOCK, files,
                      lambda: assess_freshness(rows, roots=roots[:1], sources=["claude", "codex"],
                                               transcript_homes=[home], now_ms=now))
    # Side by side: each round runs five of each (stat every file; the scoped request; the floor) one after the
    # other, so each side is timed in its own steady state and a slow spell of the shared machine weighs on
    # both sides of a ratio alike; the first round only warms up.
    timed: dict[str, list[float]] = {"stat": [], "request": [], "fresh": [], "floor_request": [], "floor": []}
    per_block: list[float] = []
    report = None
    for round_ in range(rounds + 1):
        block: dict[str, list[float]] = {key: [] for key in timed}
        for _ in range(BLOCK):
            started = time.perf_counter()
            stat_all()
            block["stat"].append((time.perf_counter() - started) * 1000)
        for _ in range(BLOCK):
            inner: list[float] = []
            started = time.perf_counter()
            report = scoped_request(db, roots[0], now, inner)
            block["request"].append((time.perf_counter() - started) * 1000)
            block["fresh"].append(inner[0])
        for _ in range(BLOCK):
            least: list[float] = []
            started = time.perf_counter()
            floor_request(db, roots[0], least)
            block["floor_request"].append((time.perf_counter() - started) * 1000)
            block["floor"].append(least[0])
        if round_:
            for key, values in block.items():
                timed[key].extend(values)
            per_block.append(statistics.median(block["fresh"]) / statistics.median(block["floor"]))
    assert report is not None
    stat_ms = statistics.median(timed["stat"])
    request = statistics.median(timed["request"])
    fresh = statistics.median(timed["fresh"])
    floor = statistics.median(timed["floor"])
    per_round = statistics.median(per_block)
    print(f"{'stat all files':<28} median {stat_ms:8.2f} ms  ({stat_ms * 1000 / files:6.2f} us/file)  "
          f"({rounds} rounds of {BLOCK}, side by side with the two below)")
    print(f"{'scoped, 1 of 100 repos':<28} median {request:8.2f} ms  verdict={report.verdict} "
          f"in_scope={report.units_in_scope}")
    print(f"{'  of which freshness':<28} median {fresh:8.2f} ms  (homes, row lookups, walk, stats; the rest is "
          "the open, the scope set and the marker rows every request reads anyway)")
    print(f"{'hand-written floor':<28} median {statistics.median(timed['floor_request']):8.2f} ms")
    print(f"{'  of which the floor':<28} median {floor:8.2f} ms  (the same reads and system calls, no unit "
          "objects, no checks: floor_request)")
    verdict = "PASS" if fresh <= FLOOR_TARGET * floor else "FAIL"
    print(f"freshness / floor = {fresh / floor:.2f} (target <= {FLOOR_TARGET}: {verdict}; per round, median "
          f"{per_round:.2f})")
    print(f"information: freshness / stat all = {fresh / stat_ms:.3f}; floor / stat all = {floor / stat_ms:.3f}; "
          f"with the open, the scope set and the markers {request / stat_ms:.3f}; "
          f"full walk / stat all = {full / stat_ms:.2f}")
    figures: dict[str, object] = {"files": files, "in_scope": files // 100, "stat_all_ms": stat_ms,
                                  "full_walk_ms": full, "scoped_request_ms": request, "scoped_freshness_ms": fresh,
                                  "after_over_floor": fresh / floor, "after_over_floor_per_round": per_round,
                                  "after_over_stat_all": fresh / stat_ms,
                                  "rounds": rounds, "runs_per_round": BLOCK, "floor_ms": floor,
                                  "floor_over_stat_all": floor / stat_ms}
    if before:
        done = subprocess.run([before, "-c", BEFORE_SCRIPT, str(db), str(home), roots[0], repr(now), str(BLOCK * 3)],
                              capture_output=True, text=True, check=True, cwd=top)
        measured = json.loads(done.stdout)
        print(f"{'before (' + before + ')':<28} median {measured['median_ms']:8.2f} ms  (every index_state row "
              f"read, then assess_freshness) verdict={measured['verdict']} in_scope={measured['in_scope']}; "
              f"before / stat all = {measured['median_ms'] / stat_ms:.2f}")
        figures.update({"before_ms": measured["median_ms"], "before_over_stat_all": measured["median_ms"] / stat_ms,
                        "before_verdict": measured["verdict"]})
    return figures


def measure_ms(label: str, runs: int, files: int, call: Callable[[], FreshnessReport]) -> float:
    timings: list[float] = []
    report = call()  # warm-up (page cache, imports)
    for _ in range(runs):
        start = time.perf_counter()
        report = call()
        timings.append((time.perf_counter() - start) * 1000)
    median = statistics.median(timings)
    print(f"{label:<28} median {median:8.2f} ms  ({median * 1000 / files:6.2f} us/file)  "
          f"verdict={report.verdict} in_scope={report.units_in_scope}")
    return median


def main() -> int:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5,
                        help="timed runs per case (the issue-13 comparison: rounds of five runs of each side, "
                             "at least 7)")
    parser.add_argument("--only-issue13", action="store_true", help="only the issue-13 scoped comparison")
    parser.add_argument("--skip-issue13", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--before", default=None, metavar="PYTHON",
                        help="the python of another install (e.g. a checkout's .venv/bin/python) whose pre-scope "
                             "freshness (every index_state row, then assess_freshness) is timed beside")
    parser.add_argument("--json", type=Path, default=None, metavar="FILE",
                        help="write the issue-13 figures as JSON")
    args = parser.parse_args()
    files, runs = args.files, args.runs
    if args.only_issue13:
        with tempfile.TemporaryDirectory(prefix="bench-freshness-") as tmp:
            figures = issue13(Path(tmp) / "hundred", files, max(runs, 7), before=args.before)
        if args.json:
            args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
        return 0
    with tempfile.TemporaryDirectory(prefix="bench-freshness-") as tmp:
        home, roots, paths = build(Path(tmp) / "one", files, repos=1)
        sig_rows = [signature_row(p) for p in paths] + MARKERS
        leg_rows = [legacy_row(p) for p in paths] + MARKERS
        now = time.time() * 1000

        def run(rows: Sequence[Row], scope: Sequence[str], home_: Path) -> FreshnessReport:
            return assess_freshness(
                rows, roots=scope, sources=["claude", "codex"], transcript_homes=[home_], now_ms=now
            )

        print(f"{files} transcripts, {runs} timed runs after one warm-up, python {sys.version.split()[0]}")
        measure("signature, unchanged", runs, files, lambda: run(sig_rows, roots, home))
        measure("legacy, unchanged", runs, files, lambda: run(leg_rows, roots, home))
        for path in paths[::100]:  # 1% of the files
            append_same_mtime(path)
        measure("signature, 1% appended", runs, files, lambda: run(sig_rows, roots, home))
        measure("legacy, 1% appended", runs, files, lambda: run(leg_rows, roots, home))

        home20, roots20, paths20 = build(Path(tmp) / "twenty", files, repos=20)
        rows20 = [signature_row(p) for p in paths20] + MARKERS
        measure("signature, 1 of 20 repos", runs, files, lambda: run(rows20, roots20[:1], home20))
        if not args.skip_issue13:
            issue13(Path(tmp) / "hundred", files, max(runs, 7))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
