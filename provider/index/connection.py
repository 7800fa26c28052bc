"""The one way the provider reads an Obelisk database: read-only, hardened, one snapshot, bounded in time.

Opening strategy (the choice this module exists to make):

* ``-wal`` or ``-shm`` present: a WAL connection is or was live. Open ``file:…?mode=ro`` with
  ``SQLITE_OPEN_READONLY | SQLITE_OPEN_URI``. SQLite then reads committed WAL frames through the existing
  ``-shm``; in a directory the provider cannot write, it uses the ``-shm`` read-only.
* neither present (a cleanly closed database, the common case for a user's index between builds): opening
  ``mode=ro`` would *create* ``-wal`` and ``-shm`` beside the database (and leave them behind)
  in a writable directory, and fail every read with ``SQLITE_READONLY_DIRECTORY`` in an unwritable one. The
  provider instead opens ``mode=ro&immutable=1``, which creates nothing, and *verifies* the premise of
  immutability around the read: the database file's identity (device, inode, size, mtime and ctime in ns) is
  the same before the open and after the last statement, and no ``-wal`` or ``-journal`` appeared meanwhile.
  A writer that started during the read either wrote only to a new ``-wal`` (the snapshot read is then the
  last checkpointed state, which was committed) or changed the main file (identity differs): the read is then
  discarded and retried on the live file. ``immutable=1`` is never used while a WAL is live, because under a
  live writer it returns corrupt or stale data.
* ``-journal`` present (rollback mode, a write in progress): ``mode=ro`` and a busy timeout.
* The open mode follows the journal mode in the file header (bytes 18 and 19: 2 for WAL, 1 for a rollback
  journal). Only a WAL database is ever opened ``immutable=1``. A rollback-journal database is always opened
  ``mode=ro``: without WAL, SQLite creates no ``-wal``/``-shm`` for it, and the reader takes the shared lock,
  so a writer's uncommitted pages are never read (a ``journal_mode=MEMORY`` or ``OFF`` writer leaves no
  ``-journal`` file to warn of it, and ``immutable=1`` would ignore its locks). A header that cannot be read
  also gives ``mode=ro``.
* A corrupt page seen during an ``immutable_verified`` read is first checked against the file identity: when
  the identity (or the sidecars) moved, the file was rewritten or replaced under the read, and the read is
  retried as for a replaced file; only when nothing moved is it ``index_unreadable``.

Every statement of one request runs inside one read transaction (one snapshot). Each request gets a fresh
connection; the file identity is checked before and after, and a replaced file (the Obelisk app's rebuild
renames a new file over the database) triggers a retry on the new file. A per-request deadline is enforced
inside SQLite by a progress handler; BUSY/BUSY_SNAPSHOT/SCHEMA and replacement retry the whole read with
tenacity, within the same deadline. The provider never opens Obelisk's ``writer.lock.sqlite``.
"""

from __future__ import annotations

import os
import time
import urllib.parse
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

import apsw

from ..contract.meta import OpenMode
from ..errors import (
    DeadlineExceeded,
    IndexBusy,
    IndexMissing,
    IndexUnreadable,
    MalformedIndexData,
    ProviderError,
)
from .guard import harden

T = TypeVar("T")

#: VM steps between two deadline checks. A row of a tool template takes a few hundred steps, one of which
#: may load a huge cell whole (SQLite reads a value whole): every 100 steps, no more than one such load runs
#: between two checks (tools/bench_deadline.py measures the overrun; the checks cost no measurable time).
_PROGRESS_STEPS = 100
_BUSY_TIMEOUT_MS = 250


class FileIdentity(NamedTuple):
    dev: int
    ino: int
    size: int
    mtime_ns: int
    ctime_ns: int

    @classmethod
    def of(cls, path: Path) -> FileIdentity:
        st = os.stat(path)
        return cls(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class Deadline:
    """A monotonic deadline shared by every step of one request."""

    def __init__(self, budget_ms: int, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self.budget_ms = budget_ms
        self.expires_at = clock() + budget_ms / 1000.0

    def remaining_ms(self) -> float:
        return max(0.0, (self.expires_at - self._clock()) * 1000.0)

    def expired(self) -> bool:
        return self._clock() >= self.expires_at

    def check(self) -> None:
        if self.expired():
            raise DeadlineExceeded

    def bounded_stat(self) -> Callable[[str], os.stat_result]:
        """``os.stat`` that first checks this deadline (raising :class:`DeadlineExceeded` once it has passed):
        the stat a request judges freshness with, so a huge or slow transcript tree ends the judgement. One
        clock read per call, no method calls: a request stats every file of its scope through it."""
        clock, expires_at, stat = self._clock, self.expires_at, os.stat

        def bounded(path: str) -> os.stat_result:
            if clock() >= expires_at:
                raise DeadlineExceeded
            return stat(path)

        return bounded


class StatementBudgetExceeded(Exception):
    """One statement ran past its own budget (not the request deadline); the caller picks another plan."""


class _Replaced(Exception):
    """The database file changed identity during the read; the snapshot is discarded and retried."""


def _sidecars(path: Path) -> dict[str, bool]:
    return {suffix: os.path.exists(f"{path}{suffix}") for suffix in ("-wal", "-shm", "-journal")}


#: File-format write and read version bytes of the database header: 2 means WAL, 1 a rollback journal.
_HEADER_VERSIONS = slice(18, 20)
_WAL_VERSIONS = b"\x02\x02"


def _wal_header(path: Path, vfs: str | None) -> bool:
    """True only when the file header says WAL (bytes 18-19 are 2); False for rollback or unreadable.

    Read through SQLite's own VFS, read-only: SQLite keeps one descriptor table per file, so closing this
    handle never drops a POSIX lock another connection of this process holds on the same file (a plain
    ``open()``/``close()`` would).
    """
    try:
        handle = apsw.VFSFile(vfs or "", str(path), [apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_MAIN_DB, 0])
    except (apsw.Error, OSError, ValueError):
        return False
    try:
        header = handle.xRead(100, 0)
    except (apsw.Error, OSError):
        return False
    finally:
        handle.xClose()
    return bytes(header[_HEADER_VERSIONS]) == _WAL_VERSIONS


def _uri(path: Path, immutable: bool) -> str:
    quoted = urllib.parse.quote(str(path.resolve()), safe="/")
    return f"file:{quoted}?mode=ro" + ("&immutable=1" if immutable else "")


class ReadSnapshot:
    """One read transaction over a hardened connection. Only this object executes SQL."""

    def __init__(self, conn: apsw.Connection, path: Path, mode: OpenMode, deadline: Deadline,
                 identity: FileIdentity) -> None:
        self._conn = conn
        self.path = path
        self.identity = identity
        self.mode = mode
        self.deadline = deadline
        self.last_columns: tuple[str, ...] = ()

    def rows(self, sql: str, params: dict[str, Any] | Sequence[Any] = (), *,
             budget_ms: float | None = None) -> list[tuple[Any, ...]]:
        """Run exactly one statement and return all rows (callers bound their LIMIT in SQL).

        apsw would run every statement of a multi-statement string; the exec tracer sees the first
        statement's text before it runs and aborts unless that text is the whole string.

        ``budget_ms`` bounds this one statement (inside the request deadline): past it the statement is
        interrupted and :class:`StatementBudgetExceeded` raised; the read transaction, and so the snapshot,
        stays open for the next statement.
        """
        self.deadline.check()
        if budget_ms is not None:
            return self._within_budget(sql, params, budget_ms)
        return self._execute(sql, params)

    def _execute(self, sql: str, params: dict[str, Any] | Sequence[Any]) -> list[tuple[Any, ...]]:
        def single_statement_only(_cursor: apsw.Cursor, statement: str, _bindings: object) -> bool:
            return statement == sql

        cursor = self._conn.cursor()
        cursor.exec_trace = single_statement_only
        try:
            running = cursor.execute(sql, params)
            try:
                self.last_columns = tuple(str(column[0]) for column in running.description)
            except apsw.ExecutionCompleteError:
                self.last_columns = ()
                return []  # no row: the statement already ran to completion
            return list(running)  # apsw gives each row as a tuple (no row tracer is ever set)
        except apsw.ExecTraceAbort:
            raise MalformedIndexData("multi-statement SQL refused before execution") from None
        finally:
            cursor.close()

    def _within_budget(self, sql: str, params: dict[str, Any] | Sequence[Any],
                       budget_ms: float) -> list[tuple[Any, ...]]:
        ends_at = time.monotonic() + budget_ms / 1000.0
        self._conn.set_progress_handler(lambda: self.deadline.expired() or time.monotonic() >= ends_at,
                                        _PROGRESS_STEPS)
        try:
            return self._execute(sql, params)
        except apsw.InterruptError:
            if self.deadline.expired():
                raise
            raise StatementBudgetExceeded from None
        finally:
            self._conn.set_progress_handler(self.deadline.expired, _PROGRESS_STEPS)

    def one(self, sql: str, params: dict[str, Any] | Sequence[Any] = ()) -> tuple[Any, ...] | None:
        found = self.rows(sql, params)
        return found[0] if found else None


def _install_deadline(conn: apsw.Connection, deadline: Deadline) -> None:
    conn.set_progress_handler(deadline.expired, _PROGRESS_STEPS)
    conn.set_busy_timeout(int(min(_BUSY_TIMEOUT_MS, max(1.0, deadline.remaining_ms()))))


@contextmanager
def _connect(path: Path, deadline: Deadline, vfs: str | None) -> Iterator[ReadSnapshot]:
    before = FileIdentity.of(path)
    sidecars = _sidecars(path)
    immutable = not (sidecars["-wal"] or sidecars["-shm"] or sidecars["-journal"]) and _wal_header(path, vfs)
    flags = apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI
    conn = apsw.Connection(_uri(path, immutable), flags=flags, vfs=vfs) if vfs else \
        apsw.Connection(_uri(path, immutable), flags=flags)
    try:
        harden(conn)
        _install_deadline(conn, deadline)
        if not immutable:
            _still_live(path, before, sidecars)
        try:
            conn.execute("BEGIN DEFERRED")
            snap = ReadSnapshot(conn, path, "immutable_verified" if immutable else "ro", deadline, before)
            # The first read pins the snapshot for every later statement of this request.
            snap.rows("SELECT count(*) FROM sqlite_schema")
            yield snap
            conn.execute("COMMIT")
        except (apsw.CorruptError, apsw.NotADBError):
            if immutable and _moved(path, before):
                raise _Replaced from None  # torn by a rewrite or a swap under the read: retry on the new file
            raise
        _verify_unchanged(path, before, immutable)
    finally:
        conn.set_progress_handler(None)
        conn.close()


def _still_live(path: Path, before: FileIdentity, sidecars: dict[str, bool]) -> None:
    """Just before the first read of a ``mode=ro`` connection: same file, and its -wal/-shm still there.

    SQLite opens ``-wal`` and ``-shm`` with O_CREAT at the first read. If the app's swap deleted them and
    renamed a new file over the database after the sidecars were looked at, reading now would create both
    beside the new file. Retrying instead re-chooses the open mode (``immutable`` for the sidecar-less file).
    This narrows the window to the few microseconds between this check and the first read.
    """
    identity = FileIdentity.of(path)
    if (identity.dev, identity.ino) != (before.dev, before.ino):
        raise _Replaced
    if any(sidecars[suffix] and not os.path.exists(f"{path}{suffix}") for suffix in ("-wal", "-shm")):
        raise _Replaced


def _moved(path: Path, before: FileIdentity) -> bool:
    """True when the file is gone, has another identity, or gained a ``-wal``/``-journal`` since ``before``."""
    try:
        identity = FileIdentity.of(path)
    except OSError:
        return True
    sidecars = _sidecars(path)
    return identity != before or sidecars["-wal"] or sidecars["-journal"]


def _verify_unchanged(path: Path, before: FileIdentity, immutable: bool) -> None:
    after = FileIdentity.of(path)
    if (after.dev, after.ino) != (before.dev, before.ino):
        raise _Replaced  # renamed over: the snapshot came from the old file
    if immutable:
        sidecars = _sidecars(path)
        if after != before or sidecars["-wal"] or sidecars["-journal"]:
            raise _Replaced  # the immutability premise did not hold for the whole read


#: Conditions that a whole-read retry can cure: a writer holding a lock, a schema change, a file swap.
_RETRY_ON = (apsw.BusyError, apsw.SchemaChangeError, apsw.LockedError, _Replaced)


def _classify(exc: BaseException, deadline: Deadline) -> ProviderError | None:
    """Map an apsw exception to a typed failure; None means 'retry the whole read'."""
    if isinstance(exc, apsw.InterruptError) or deadline.expired():
        return DeadlineExceeded()
    if isinstance(exc, _RETRY_ON):
        return None
    if isinstance(exc, FileNotFoundError):
        return IndexMissing()
    if isinstance(exc, (apsw.CorruptError, apsw.NotADBError)):
        return IndexUnreadable("the index database file is corrupt or not SQLite")
    if isinstance(exc, UnicodeDecodeError):  # apsw decoding a TEXT cell that is not valid UTF-8
        return MalformedIndexData("the index holds text that is not valid UTF-8")
    if isinstance(exc, (apsw.Error, OSError)):
        return IndexUnreadable()
    raise exc  # a bug, not an index condition: the service reports internal_error


def read_index(db_path: Path, work: Callable[[ReadSnapshot], T], *, deadline: Deadline,
               max_attempts: int = 4, vfs: str | None = None) -> tuple[T, OpenMode]:
    """Run ``work`` inside one verified read snapshot, retrying whole reads on BUSY/SCHEMA/replacement.

    The first attempt runs directly; tenacity is imported only when a retry is actually needed (it costs
    cold start otherwise). Attempts, stop conditions and waits are those of one tenacity loop over all
    ``max_attempts``: stop after ``max_attempts`` or before an attempt that would start within 20 ms of the
    deadline, wait ``min(0.01 * 2**(n-1), 0.2)`` s plus up to 20 ms of jitter after failed attempt ``n``.
    """
    try:
        present, regular = db_path.exists(), db_path.is_file()
    except OSError:  # e.g. EACCES on a parent directory (Path.exists raises it before Python 3.12)
        raise IndexUnreadable("the index path could not be inspected") from None
    if not present:
        raise IndexMissing
    if not regular:
        raise IndexUnreadable("the index path is not a regular file")

    def retryable(exc: BaseException) -> bool:
        return isinstance(exc, _RETRY_ON) and not deadline.expired()

    def attempt() -> tuple[T, OpenMode]:
        deadline.check()
        with _connect(db_path, deadline, vfs) as snap:
            result = work(snap)
            mode = snap.mode
        return result, mode

    try:
        try:
            return attempt()
        except ProviderError:
            raise
        except BaseException as exc:  # classified by the outer handler
            if not retryable(exc) or max_attempts <= 1 or deadline.remaining_ms() < 20:
                raise
            first_failure = exc
        return _retry_attempts(attempt, first_failure, retryable, deadline, max_attempts)
    except ProviderError:
        raise
    except BaseException as exc:  # noqa: BLE001 - every SQLite/OS failure becomes a typed failure
        typed = _classify(exc, deadline)
        if typed is None:
            raise IndexBusy from None
        raise typed from None


def _retry_attempts(attempt: Callable[[], tuple[T, OpenMode]], first_failure: BaseException,
                    retryable: Callable[[BaseException], bool], deadline: Deadline,
                    max_attempts: int) -> tuple[T, OpenMode]:
    """Attempts 2..N after a retryable failure of attempt 1 (tenacity loaded here, on the slow path).

    One tenacity loop over all ``max_attempts``, through its public API only: the loop's first attempt
    re-raises the failure attempt 1 already had, so tenacity's own attempt numbers, stop and wait apply to
    every later one. The deadline-bounded stop is composed of public stops: after ``max_attempts``, or before
    a next attempt would start later than 20 ms before the request deadline (``stop_before_delay`` counts the
    wait it is about to sleep).
    """
    from tenacity import (
        Retrying,
        retry_if_exception,
        stop_after_attempt,
        stop_before_delay,
        wait_exponential,
        wait_random,
    )

    budget_s = max(0.0, deadline.remaining_ms() - 20.0) / 1000.0
    retrying = Retrying(
        retry=retry_if_exception(retryable),
        stop=stop_after_attempt(max_attempts) | stop_before_delay(budget_s),
        wait=wait_exponential(multiplier=0.01, max=0.2) + wait_random(0, 0.02),
        reraise=True,
    )
    pending: BaseException | None = first_failure
    for tenacity_attempt in retrying:
        with tenacity_attempt:
            if pending is not None:
                failure, pending = pending, None
                raise failure
            return attempt()
    raise IndexBusy  # pragma: no cover - tenacity always returns or raises
