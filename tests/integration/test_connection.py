"""Issue 12, items 5 and 10: the open mode follows the journal mode in the file header; a corrupt page seen
while the file moved is retried as a replaced file; whole-read retries go through tenacity's public API."""

from __future__ import annotations

import ast
import os
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import apsw
import pytest
import tenacity
from obelisk_session_evidence.errors import DeadlineExceeded, IndexBusy, IndexUnreadable
from obelisk_session_evidence.index import connection
from obelisk_session_evidence.index.connection import Deadline, ReadSnapshot, read_index

from tests.conftest import REPO


def _db(folder: Path, journal_mode: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    db = folder / "obelisk.sqlite"
    con = sqlite3.connect(db, isolation_level=None)
    assert con.execute(f"PRAGMA journal_mode={journal_mode}").fetchone()[0] == journal_mode.lower()
    con.execute("CREATE TABLE sessions (id TEXT PRIMARY KEY, title TEXT)")
    con.execute("INSERT INTO sessions VALUES ('s1', 'one')")
    con.close()
    return db


def _count(snap: ReadSnapshot) -> int:
    return int(snap.rows("SELECT count(*) FROM sessions")[0][0])


@pytest.mark.parametrize(("journal_mode", "header", "expected"), [
    ("WAL", b"\x02\x02", "immutable_verified"),
    ("DELETE", b"\x01\x01", "ro"),
    ("MEMORY", b"\x01\x01", "ro"),
    ("TRUNCATE", b"\x01\x01", "ro"),
    ("OFF", b"\x01\x01", "ro"),
])
def test_open_mode_follows_the_journal_mode_in_the_header(tmp_path: Path, journal_mode: str, header: bytes,
                                                          expected: str) -> None:
    db = _db(tmp_path / journal_mode, journal_mode)
    assert db.read_bytes()[18:20] == header
    before = sorted(os.listdir(db.parent))
    count, mode = read_index(db, _count, deadline=Deadline(2000))
    assert (count, mode) == (1, expected)
    assert sorted(os.listdir(db.parent)) == before  # mode=ro on a rollback database creates no -wal/-shm


#: A writer process (POSIX locks do not conflict within one process) in MEMORY journal mode: it takes the
#: EXCLUSIVE lock and rewrites every row, so its small page cache spills uncommitted pages over the committed
#: ones in the database file, and holds the transaction open until told to roll back.
_MEMORY_WRITER = """
import sqlite3, sys
con = sqlite3.connect(sys.argv[1], isolation_level=None)
assert con.execute("PRAGMA journal_mode=MEMORY").fetchone()[0] == "memory"
con.execute("PRAGMA cache_size=2")
con.execute("BEGIN EXCLUSIVE")
con.execute("UPDATE sessions SET title = 'uncommitted ' || id")
print("locked", flush=True)
sys.stdin.read()
con.execute("ROLLBACK")
"""


def test_a_memory_journal_writers_uncommitted_pages_are_never_read(tmp_path: Path) -> None:
    """The writer's uncommitted pages are in the file and no -journal file is on disk to warn of them. Read with
    immutable=1 (the old choice for a sidecar-less file), they show; the provider opens mode=ro, which waits for
    the writer's lock: a typed busy or timeout, and after the rollback the committed state."""
    import subprocess
    import sys

    db = _db(tmp_path / "memory", "MEMORY")
    con = sqlite3.connect(db, isolation_level=None)
    con.executemany("INSERT INTO sessions VALUES (?, 'committed')", [(f"s{i}",) for i in range(2, 2001)])
    con.close()

    def uncommitted(snap: ReadSnapshot) -> int:
        return int(snap.rows("SELECT count(*) FROM sessions WHERE title LIKE 'uncommitted%'")[0][0])

    writer = subprocess.Popen([sys.executable, "-c", _MEMORY_WRITER, str(db)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert writer.stdout is not None and writer.stdin is not None
    try:
        assert writer.stdout.readline().strip() == b"locked", writer.stderr.read() if writer.stderr else b""
        assert sorted(os.listdir(db.parent)) == ["obelisk.sqlite"]  # nothing beside it
        raw = apsw.Connection(f"file:{db}?mode=ro&immutable=1", flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
        try:
            seen: object = raw.execute("SELECT count(*) FROM sessions WHERE title LIKE 'uncommitted%'").fetchall()
        except apsw.Error as exc:  # a torn page is as bad
            seen = type(exc).__name__
        finally:
            raw.close()
        assert seen != [(0,)], "immutable=1 should have read the writer's uncommitted pages"
        with pytest.raises((IndexBusy, DeadlineExceeded)):
            read_index(db, uncommitted, deadline=Deadline(300))
    finally:
        writer.communicate(b"", timeout=30)
    assert writer.returncode == 0
    assert read_index(db, uncommitted, deadline=Deadline(2000)) == (0, "ro")
    assert read_index(db, _count, deadline=Deadline(2000)) == (2000, "ro")


def test_a_corrupt_page_while_the_file_moved_is_retried(tmp_path: Path) -> None:
    db = _db(tmp_path / "wal", "WAL")
    attempts: list[str] = []

    def torn_once(snap: ReadSnapshot) -> int:
        attempts.append(snap.mode)
        if len(attempts) == 1:
            st = db.stat()
            os.utime(db, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))  # the file was rewritten
            raise apsw.CorruptError("database disk image is malformed")
        return _count(snap)

    assert read_index(db, torn_once, deadline=Deadline(2000)) == (1, "immutable_verified")
    assert attempts == ["immutable_verified", "immutable_verified"]


def test_an_immutable_read_is_reverified_after_the_read(tmp_path: Path) -> None:
    """The file is rewritten while an immutable_verified read runs (no error seen): the read is discarded and
    retried, because immutability is re-verified after the last statement."""
    db = _db(tmp_path / "wal", "WAL")
    attempts: list[str] = []

    def rewritten_during_read(snap: ReadSnapshot) -> int:
        attempts.append(snap.mode)
        if len(attempts) == 1:
            st = db.stat()
            os.utime(db, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
        return _count(snap)

    assert read_index(db, rewritten_during_read, deadline=Deadline(2000)) == (1, "immutable_verified")
    assert attempts == ["immutable_verified", "immutable_verified"]


def test_a_corrupt_page_in_an_unmoved_file_is_unreadable(tmp_path: Path) -> None:
    db = _db(tmp_path / "wal", "WAL")
    attempts: list[str] = []

    def corrupt(snap: ReadSnapshot) -> int:
        attempts.append(snap.mode)
        raise apsw.CorruptError("database disk image is malformed")

    with pytest.raises(IndexUnreadable):
        read_index(db, corrupt, deadline=Deadline(2000))
    assert attempts == ["immutable_verified"]


def test_a_really_corrupt_file_is_unreadable(tmp_path: Path) -> None:
    db = _db(tmp_path / "wal", "WAL")
    broken = tmp_path / "broken" / "obelisk.sqlite"
    broken.parent.mkdir()
    shutil.copyfile(db, broken)
    data = bytearray(broken.read_bytes())
    data[100:4096] = b"\xff" * (4096 - 100)  # the schema page
    broken.write_bytes(bytes(data))
    with pytest.raises(IndexUnreadable):
        read_index(broken, _count, deadline=Deadline(2000))


# --- retries --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("failures", "max_attempts", "succeeds"), [(0, 4, True), (3, 4, True), (4, 4, False),
                                                                    (1, 1, False), (1, 2, True)])
def test_whole_read_retries_count_every_attempt(tmp_path: Path, failures: int, max_attempts: int,
                                                succeeds: bool) -> None:
    db = _db(tmp_path / "wal", "WAL")
    calls: list[int] = []

    def busy_then_ok(snap: ReadSnapshot) -> int:
        calls.append(1)
        if len(calls) <= failures:
            raise apsw.BusyError("database is locked")
        return _count(snap)

    if succeeds:
        assert read_index(db, busy_then_ok, deadline=Deadline(5000), max_attempts=max_attempts)[0] == 1
        assert len(calls) == failures + 1
    else:
        with pytest.raises(IndexBusy):
            read_index(db, busy_then_ok, deadline=Deadline(5000), max_attempts=max_attempts)
        assert len(calls) == max_attempts


def test_retries_stop_at_the_request_deadline(tmp_path: Path) -> None:
    """A deadline on a clock the work advances: 400 ms per attempt against 1000 ms, so the third attempt ends
    past the deadline and no fourth starts, although max_attempts allows it."""
    db = _db(tmp_path / "wal", "WAL")
    now = [0.0]
    deadline = Deadline(1000, clock=lambda: now[0])
    calls: list[int] = []

    def slow_busy(_snap: ReadSnapshot) -> Any:
        calls.append(1)
        now[0] += 0.4
        raise apsw.BusyError("database is locked")

    with pytest.raises(DeadlineExceeded):
        read_index(db, slow_busy, deadline=deadline, max_attempts=10)
    assert len(calls) == 3


def test_tenacity_is_used_through_its_public_api_only() -> None:
    tree = ast.parse((REPO / "provider" / "index" / "connection.py").read_text(encoding="utf-8"))
    public = set(tenacity.__all__)
    imported: set[str] = set()
    bases: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("tenacity"):
            assert node.module == "tenacity", f"tenacity submodule imported: {node.module}"
            imported |= {alias.name for alias in node.names}
        if isinstance(node, ast.Import):
            assert not any(alias.name.startswith("tenacity") for alias in node.names)
        if isinstance(node, ast.ClassDef):
            bases |= {ast.unparse(base) for base in node.bases}
    assert imported and imported <= public, imported - public
    assert not imported & {"RetryCallState", "stop_base", "wait_base", "retry_base"}, imported
    assert bases <= {"Exception", "NamedTuple"}, bases  # nothing subclasses a tenacity class
    assert connection.__doc__ is not None and "journal" in connection.__doc__


def test_bounded_stat_checks_the_deadline_before_each_stat(tmp_path: Path) -> None:
    """The stat a request judges freshness with: ``os.stat`` while the deadline holds; once it has passed (at the
    deadline itself, as ``Deadline.expired``), DeadlineExceeded before any stat is made (an absent file would
    otherwise raise FileNotFoundError)."""
    now = [0.0]
    deadline = Deadline(1000, clock=lambda: now[0])
    stat = deadline.bounded_stat()
    path = tmp_path / "transcript.jsonl"
    path.write_text("{}\n")
    assert stat(str(path)).st_ino == os.stat(path).st_ino
    now[0] = 0.999
    assert stat(str(path)).st_size == 3
    with pytest.raises(FileNotFoundError):
        stat(str(tmp_path / "absent"))
    now[0] = 1.0
    with pytest.raises(DeadlineExceeded):
        stat(str(tmp_path / "absent"))
    with pytest.raises(DeadlineExceeded):
        stat(str(path))
