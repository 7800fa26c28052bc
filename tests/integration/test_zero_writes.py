"""Zero writes, proven with real files and real processes.

* A recording apsw VFS interposed through ``answer(vfs=...)`` lists every file SQLite opens for the provider:
  only the database (always ``SQLITE_OPEN_READONLY``) and, when a writer is live, its existing ``-wal``; never
  ``writer.lock.sqlite``, never a temp file.
* inotify on the database folder sees every open, create, modify, attribute change and rename by any process
  (the provider runs in-process and as ``python -m obelisk_session_evidence`` subprocesses): no write event, ever.
* Byte identity: sha256 and listing (names, sizes, mtimes) of the folder before and after 50 mixed requests.
* A read-only directory and a read-only copy, with the provider running as the unprivileged user ``nobody``
  (root ignores permission bits, so a root-run test would prove nothing).
* strace of whole ``query``, ``serve --stdio`` and ``status`` processes (children included): no syscall that
  creates, writes, removes, renames or re-modes any file, anywhere.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import hashlib
import json
import os
import shutil
import stat
import struct
import subprocess
import sys
import sysconfig
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apsw
import pytest
from obelisk_session_evidence.digest import key_path
from obelisk_session_evidence.service import answer

from tests.conftest import REPO, make_request, scope_entry, write_config

NOBODY = 65534

# --------------------------------------------------------------------------------------------------------
# observation tools: a recording VFS and an inotify watch
# --------------------------------------------------------------------------------------------------------

_TEMP_FLAGS = (apsw.SQLITE_OPEN_TEMP_DB | apsw.SQLITE_OPEN_TEMP_JOURNAL | apsw.SQLITE_OPEN_TRANSIENT_DB
               | apsw.SQLITE_OPEN_SUBJOURNAL | apsw.SQLITE_OPEN_DELETEONCLOSE | apsw.SQLITE_OPEN_MAIN_JOURNAL
               | apsw.SQLITE_OPEN_SUPER_JOURNAL)


@dataclass(frozen=True)
class Opened:
    name: str | None  # None: SQLite asked for an anonymous temp file
    flags: int

    def describe(self) -> str:
        names = [k for k, v in apsw.mapping_open_flags.items() if isinstance(k, str) and v & self.flags]
        return f"{self.name} [{'|'.join(sorted(names))}]"


class RecordingVFS(apsw.VFS):
    """Inherits the default VFS; records the name and flags of every xOpen."""

    def __init__(self) -> None:
        self.vfs_name = f"ose-recording-{uuid.uuid4().hex[:12]}"
        self.opened: list[Opened] = []
        super().__init__(self.vfs_name, "")

    def xOpen(self, name: str | apsw.URIFilename | None, flags: list[int]) -> apsw.VFSFile:
        filename = name.filename() if isinstance(name, apsw.URIFilename) else name
        self.opened.append(Opened(filename, flags[0]))
        return apsw.VFSFile("", name, flags)


@pytest.fixture
def recording_vfs() -> Iterator[RecordingVFS]:
    vfs = RecordingVFS()
    try:
        yield vfs
    finally:
        vfs.unregister()


IN_MODIFY, IN_ATTRIB, IN_CLOSE_WRITE, IN_OPEN = 0x2, 0x4, 0x8, 0x20
IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE = 0x40, 0x80, 0x100, 0x200
WRITE_EVENTS = IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE


class DirWatch:
    """inotify on one directory: which names were opened, and any write-side event, by any process."""

    def __init__(self, folder: Path) -> None:
        self._libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        self.fd = self._libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")
        wd = self._libc.inotify_add_watch(self.fd, os.fsencode(folder), ctypes.c_uint32(WRITE_EVENTS | IN_OPEN))
        if wd < 0:
            raise OSError(ctypes.get_errno(), "inotify_add_watch")
        self.events: list[tuple[int, str]] = []
        self.stopped = False

    def stop(self) -> None:
        """Freeze the record (call before the test itself reads the folder)."""
        self.drain()
        self.stopped = True

    def drain(self) -> list[tuple[int, str]]:
        while not self.stopped:
            try:
                data = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                break
            offset = 0
            while offset < len(data):
                _wd, mask, _cookie, length = struct.unpack_from("iIII", data, offset)
                name = data[offset + 16: offset + 16 + length].rstrip(b"\0").decode()
                self.events.append((mask, name))
                offset += 16 + length
        return self.events

    def opened_names(self) -> set[str]:
        return {name for mask, name in self.drain() if mask & IN_OPEN and name}

    def writes(self) -> list[tuple[int, str]]:
        return [(mask, name) for mask, name in self.drain() if mask & WRITE_EVENTS]

    def close(self) -> None:
        os.close(self.fd)


@pytest.fixture
def watch_factory() -> Iterator[Any]:
    watches: list[DirWatch] = []

    def make(folder: Path) -> DirWatch:
        watch = DirWatch(folder)
        watches.append(watch)
        return watch

    yield make
    for watch in watches:
        watch.close()


# --------------------------------------------------------------------------------------------------------
# fixture DB, requests, folder snapshots
# --------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def public_root() -> Iterator[Path]:
    """A /tmp directory every user can traverse (pytest's tmp dirs are 0700, closed to ``nobody``)."""
    root = Path(tempfile.mkdtemp(prefix="ose-zero-writes-", dir="/tmp"))
    root.chmod(0o755)
    try:
        yield root
    finally:
        for path in [root, *root.rglob("*")]:
            if path.is_dir() and not path.is_symlink():
                path.chmod(0o755)
        shutil.rmtree(root, ignore_errors=True)


@dataclass(frozen=True)
class Built:
    db: Path
    manifest: dict[str, Any]
    config: Path


@pytest.fixture(scope="module")
def built(public_root: Path) -> Built:
    from obelisk_session_evidence.fixtures.builder import build_fixture

    info = build_fixture(public_root / "fx", generation="current")
    manifest = json.loads(info.manifest_path.read_text(encoding="utf-8"))
    for path in [public_root / "fx", *(public_root / "fx").rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    config = write_config(public_root / "config.json", _scopes(manifest))
    config.chmod(0o644)  # the provider runs as another uid here too (its private key: _for_nobody)
    return Built(info.db_path, manifest, config)


def _scopes(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    roots: dict[str, set[str]] = {"claude": set(), "codex": set()}
    for fact in manifest["facts"]:
        roots[fact["source"]].add(fact["repo_root"])
    return [scope_entry("claude-main", "acme", "acme-api", ["claude"], sorted(roots["claude"])),
            scope_entry("codex-main", "acme", "acme-web", ["codex"], sorted(roots["codex"]))]


def mixed_requests(manifest: dict[str, Any], count: int) -> list[bytes]:
    """Requests over every planted fact (both agents, every evidence type), plus rejections and misses."""
    base: list[dict[str, Any]] = []
    for fact in manifest["facts"]:
        scope = ({"agent_id": "claude-main", "project_id": "acme", "repository_id": "acme-api"}
                 if fact["source"] == "claude" else
                 {"agent_id": "codex-main", "project_id": "acme", "repository_id": "acme-web"})
        base.append(make_request(request_id=f"r-{fact['id']}", evidence_types=[fact["evidence_type"]],
                                 query_terms=list(fact["terms"]),
                                 scope={**scope, "allow_cross_agent": False, "allow_cross_project": False}))
    base.append(make_request(evidence_types=["prior_failure", "tool_outcome", "decision", "file_history",
                                             "summary"], query_terms=["the", "error", "test"]))
    base.append(make_request(query_terms=["no-such-term-anywhere-zz"]))
    base.append(make_request(query_terms=[manifest["canary_term"], "NEAR(a b)", "col:x", '"quoted"']))
    base.append(make_request(unexpected=True))  # rejected: unknown field
    base.append(make_request(scope={"agent_id": "stranger", "project_id": "acme", "repository_id": "acme-api",
                                    "allow_cross_agent": False, "allow_cross_project": False}))
    encoded = [json.dumps(request).encode() for request in base] + [b"{not json"]
    return [encoded[i % len(encoded)] for i in range(count)]


def folder_state(folder: Path) -> dict[str, tuple[int, int, int, str]]:
    """Names, sizes, mtimes, modes and sha256 of every entry in the folder (not recursive)."""
    state: dict[str, tuple[int, int, int, str]] = {}
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        st_ = entry.stat(follow_symlinks=False)
        digest = hashlib.sha256(Path(entry.path).read_bytes()).hexdigest() if entry.is_file() else "-"
        state[entry.name] = (st_.st_size, st_.st_mtime_ns, stat.S_IMODE(st_.st_mode), digest)
    return state


def _copy_db(src: Path, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o755)
    dst = folder / "obelisk.sqlite"
    shutil.copy2(src, dst)
    lock = folder / "writer.lock.sqlite"  # what a real Obelisk install has beside the index
    lock.write_bytes(b"")
    return dst


# --------------------------------------------------------------------------------------------------------
# a live writer in another process (stdlib sqlite3: a different SQLite library, as Obelisk would be)
# --------------------------------------------------------------------------------------------------------

_WRITER = r"""
import os, sqlite3, sys
db, mode = sys.argv[1], sys.argv[2]
conn = sqlite3.connect(db, isolation_level=None)
conn.execute("PRAGMA journal_mode=WAL")
conn.execute("PRAGMA wal_autocheckpoint=0")
for i in range(3):
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("UPDATE sessions SET title = COALESCE(title, '') || ' *'")
    conn.execute("INSERT OR REPLACE INTO index_state(jsonl_path, mtime, lines_processed) VALUES (?, ?, 0)",
                 (f"/writer/unit-{i}", float(i)))
    conn.execute("COMMIT")
print("ready", flush=True)
if mode == "crash":
    os._exit(0)  # no close, no checkpoint: a hot -wal (and -shm) stays behind
sys.stdin.readline()
conn.close()
"""


class LiveWriter:
    def __init__(self, db: Path, mode: str = "hold") -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", _WRITER, str(db), mode], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line.strip() == b"ready", self.proc.stderr.read() if self.proc.stderr else line

    def stop(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.write(b"\n")
            self.proc.stdin.flush()
        self.proc.wait(timeout=30)
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


# --------------------------------------------------------------------------------------------------------
# 1. the recording VFS
# --------------------------------------------------------------------------------------------------------


def _check_opens(vfs: RecordingVFS, db: Path, *, wal_allowed: bool) -> dict[str, int]:
    counts = {"db": 0, "wal": 0}
    for opened in vfs.opened:
        assert opened.name is not None, f"temp file opened: {opened.describe()}"
        assert not opened.flags & _TEMP_FLAGS, f"temp/journal open: {opened.describe()}"
        assert Path(opened.name).name != "writer.lock.sqlite", opened.describe()
        if opened.name == str(db):
            assert opened.flags & apsw.SQLITE_OPEN_READONLY, opened.describe()
            assert not opened.flags & (apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE), opened.describe()
            assert opened.flags & apsw.SQLITE_OPEN_MAIN_DB, opened.describe()
            counts["db"] += 1
        elif opened.name == f"{db}-wal":
            assert wal_allowed, f"-wal opened with no live writer: {opened.describe()}"
            assert opened.flags & apsw.SQLITE_OPEN_WAL, opened.describe()
            counts["wal"] += 1
        else:
            pytest.fail(f"unexpected file opened: {opened.describe()}")
    return counts


def test_recording_vfs_clean_database(built: Built, tmp_path: Path, recording_vfs: RecordingVFS,
                                      watch_factory: Any) -> None:
    db = _copy_db(built.db, tmp_path / "clean")
    before = folder_state(db.parent)
    watch = watch_factory(db.parent)
    outcomes: list[str] = []
    for raw in mixed_requests(built.manifest, 25):
        response = answer(raw, db_path=db, config_path=built.config, vfs=recording_vfs.vfs_name)
        outcomes.append(response.envelope["outcome"])
    watch.stop()
    assert outcomes.count("ok") >= 15, outcomes
    counts = _check_opens(recording_vfs, db, wal_allowed=False)
    assert counts["db"] >= outcomes.count("ok")
    assert counts["wal"] == 0
    assert folder_state(db.parent) == before
    assert watch.writes() == []
    assert watch.opened_names() <= {"obelisk.sqlite"}
    print(f"\nZERO-WRITES vfs clean: requests={len(outcomes)} ok={outcomes.count('ok')} opens={counts} "
          f"files_opened={sorted({o.name for o in recording_vfs.opened if o.name})}")


def test_recording_vfs_live_writer(built: Built, tmp_path: Path, recording_vfs: RecordingVFS,
                                   watch_factory: Any) -> None:
    db = _copy_db(built.db, tmp_path / "live")
    writer = LiveWriter(db)
    try:
        assert Path(f"{db}-wal").exists() and Path(f"{db}-shm").exists()
        before = folder_state(db.parent)
        owners = {p.name: (p.stat().st_uid, p.stat().st_gid) for p in db.parent.iterdir()}
        watch = watch_factory(db.parent)
        outcomes = []
        for raw in mixed_requests(built.manifest, 25):
            response = answer(raw, db_path=db, config_path=built.config, vfs=recording_vfs.vfs_name)
            outcomes.append(response.envelope["outcome"])
            if response.envelope["outcome"] == "ok":
                assert response.envelope["provider_meta"]["open_mode"] == "ro"
        watch.stop()
        assert outcomes.count("ok") >= 15, outcomes
        counts = _check_opens(recording_vfs, db, wal_allowed=True)
        assert counts["wal"] >= 1  # the committed frames were read through the existing -wal
        after = folder_state(db.parent)
        assert set(after) == set(before)
        # Database, -wal and lock file byte-identical (size, mtime, sha256): the reader never checkpointed,
        # never wrote a frame. The -shm is shared memory: WAL readers take read marks in it (SQLite's design).
        for name in ("obelisk.sqlite", "obelisk.sqlite-wal", "writer.lock.sqlite"):
            assert after[name] == before[name], name
        assert {p.name: (p.stat().st_uid, p.stat().st_gid) for p in db.parent.iterdir()} == owners
        events = watch.writes()
        content = [(hex(m), n) for m, n in events
                   if m & (IN_MODIFY | IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO)]
        assert content == []
        # What remains is SQLite's own reader behaviour: it opens the existing -wal read-write and, running
        # as root, fchown()s -wal/-shm to the database owner (a no-op here): IN_CLOSE_WRITE and IN_ATTRIB.
        assert {n for _, n in events} <= {"obelisk.sqlite-wal", "obelisk.sqlite-shm"}, events
        assert "writer.lock.sqlite" not in watch.opened_names()
    finally:
        writer.stop()
    print(f"\nZERO-WRITES vfs live-writer: requests={len(outcomes)} ok={outcomes.count('ok')} opens={counts}")


class SwappingVFS(RecordingVFS):
    """Performs the Obelisk app's file swap at the worst moment: right after the provider opened the database.

    The provider has already looked at the sidecars (present: a writer is live) and chosen ``mode=ro``; its
    connection holds the old inode. The app now deletes the live -wal and -shm and renames a new file over
    the database. SQLite would create -wal/-shm beside the new file at the first read; the provider must
    notice the swap first, retry on the new file and create nothing.
    """

    def __init__(self, db: Path, replacement: Path) -> None:
        super().__init__()
        self.db, self.replacement, self.swapped = db, replacement, False

    def xOpen(self, name: str | apsw.URIFilename | None, flags: list[int]) -> apsw.VFSFile:
        opened = super().xOpen(name, flags)
        if not self.swapped and isinstance(name, apsw.URIFilename) and name.filename() == str(self.db):
            self.swapped = True
            for suffix in ("-wal", "-shm"):
                os.unlink(f"{self.db}{suffix}")
            os.rename(self.replacement, self.db)
        return opened


def test_swap_between_open_and_first_read_creates_nothing(built: Built, tmp_path: Path) -> None:
    db = _copy_db(built.db, tmp_path / "swap")
    replacement = db.with_name(f"{db.name}.rebuild-{os.getpid()}-1.tmp")
    shutil.copy2(built.db, replacement)
    writer = LiveWriter(db)  # the old file has live -wal/-shm
    vfs = SwappingVFS(db, replacement)
    try:
        response = answer(_ok_request(built), db_path=db, config_path=built.config, vfs=vfs.vfs_name)
        assert vfs.swapped
        envelope = response.envelope
        assert envelope["outcome"] == "ok", envelope["error"]
        assert envelope["provider_meta"]["open_mode"] == "immutable_verified"  # retried on the new file
        assert envelope["result"]["items"]
        assert not Path(f"{db}-wal").exists() and not Path(f"{db}-shm").exists()
        assert sorted(os.listdir(db.parent)) == ["obelisk.sqlite", "writer.lock.sqlite"]
    finally:
        vfs.unregister()
        writer.stop()
    print(f"\nZERO-WRITES swap between open and first read: outcome=ok opens={len(vfs.opened)} created=none")


# --------------------------------------------------------------------------------------------------------
# 2. byte identity after 50 mixed requests (in-process and real CLI processes)
# --------------------------------------------------------------------------------------------------------


def _cli(args: list[str], stdin: bytes, *, python: list[str] | None = None, env: dict[str, str] | None = None,
         as_nobody: bool = False, cwd: Path = REPO) -> subprocess.CompletedProcess[bytes]:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("OBELISK")}
    full_env.update(env or {})
    return subprocess.run([*(python or [sys.executable]), "-m", "obelisk_session_evidence", *args], input=stdin,
                          capture_output=True, env=full_env, cwd=cwd, timeout=120, check=False,
                          preexec_fn=_drop_to_nobody if as_nobody else None)


def _one_document(proc: subprocess.CompletedProcess[bytes]) -> dict[str, Any]:
    assert b"Traceback" not in proc.stderr, proc.stderr.decode(errors="replace")
    lines = [ln for ln in proc.stdout.decode().splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stdout
    doc: dict[str, Any] = json.loads(lines[0])
    return doc


def test_byte_identity_after_50_mixed_requests(built: Built, tmp_path: Path, watch_factory: Any) -> None:
    db = _copy_db(built.db, tmp_path / "identity")
    before = folder_state(db.parent)
    watch = watch_factory(db.parent)
    outcomes: dict[str, int] = {}
    requests = mixed_requests(built.manifest, 50)
    for index, raw in enumerate(requests):
        if index % 10 == 0:  # every tenth request is a real `python -m obelisk_session_evidence query` process
            proc = _cli(["query", "--db", str(db), "--config", str(built.config)], raw,
                        env={"HOME": str(tmp_path)})
            outcome = _one_document(proc)["outcome"]
        else:
            outcome = answer(raw, db_path=db, config_path=built.config).envelope["outcome"]
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    watch.stop()
    after = folder_state(db.parent)
    assert after == before
    assert not Path(f"{db}-wal").exists() and not Path(f"{db}-shm").exists()
    assert watch.writes() == []
    assert watch.opened_names() <= {"obelisk.sqlite"}
    assert outcomes.get("ok", 0) >= 30, outcomes
    print(f"\nZERO-WRITES identity: requests=50 outcomes={outcomes} files={sorted(after)} "
          f"sha256={after['obelisk.sqlite'][3][:16]} identical=True")


# --------------------------------------------------------------------------------------------------------
# 3. read-only directory and read-only copy, as the unprivileged user
# --------------------------------------------------------------------------------------------------------


def _drop_to_nobody() -> None:
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)


_PROBE = "import apsw, obelisk_session_evidence.service, obelisk_session_evidence.cli"


@pytest.fixture(scope="module")
def nobody_python(public_root: Path, public_package_dir: Path) -> tuple[list[str], dict[str, str]]:
    """An interpreter command ``nobody`` can run with the provider importable, or skip saying why."""
    if os.geteuid() != 0:
        pytest.skip("needs root to drop to uid/gid 65534 (nobody); as a normal user permissions are real "
                    "but the read-only directory scenario cannot be staged")
    home = public_root / "nobody-home"
    home.mkdir(exist_ok=True)
    base_env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1",
                "XDG_CONFIG_HOME": str(home / "cfg"), "XDG_CACHE_HOME": str(home / "cache")}
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    site = sysconfig.get_paths()["purelib"]
    candidates: list[tuple[list[str], dict[str, str]]] = [([sys.executable], {})]
    system = Path(f"/usr/bin/python{version}")
    if system.exists():
        # The venv's interpreter may live under a directory closed to nobody (e.g. /root/.pyenv); the same
        # CPython minor version from the system runs the same code with the venv's packages on the path.
        candidates.append(([str(system)], {"PYTHONPATH": f"{public_package_dir}{os.pathsep}{site}"}))
    reasons = []
    for command, extra in candidates:
        env = {**base_env, **extra}
        try:
            probe = subprocess.run([*command, "-c", _PROBE], env=env, cwd=REPO, capture_output=True, timeout=60,
                                   check=False, preexec_fn=_drop_to_nobody)
        except OSError as exc:
            reasons.append(f"{command[0]}: {exc.strerror}")
            continue
        if probe.returncode == 0:
            return command, env
        reasons.append(f"{command[0]}: {probe.stderr.decode(errors='replace').strip().splitlines()[-1:]}")
    pytest.skip("no interpreter that can import the provider is runnable by nobody (repo/venv not readable "
                f"by uid 65534): {reasons}")


def _for_nobody(config: Path) -> Path:
    """The config beside a copy of its digest key that uid 65534 owns (a key must be private to the user who
    runs the provider: mode 0600, its own), in a folder of its own; made once."""
    folder = config.parent / "nobody-config"
    if not folder.exists():
        folder.mkdir(mode=0o755)
        shutil.copyfile(config, folder / "config.json")
        (folder / "config.json").chmod(0o644)
        key = key_path(folder / "config.json")
        shutil.copyfile(key_path(config), key)
        os.chown(key, NOBODY, NOBODY)
        key.chmod(0o600)
    return folder / "config.json"


def _as_nobody(python: tuple[list[str], dict[str, str]], db: Path, config: Path, raw: bytes) -> dict[str, Any]:
    command, env = python
    config = _for_nobody(config)
    proc = _cli(["query", "--db", str(db), "--config", str(config)], raw, python=command, env=env, as_nobody=True)
    doc = _one_document(proc)
    assert proc.stderr == b"", proc.stderr.decode(errors="replace")
    return doc


def _lock_down(folder: Path, *, dir_mode: int = 0o555) -> None:
    for path in folder.iterdir():
        path.chmod(0o444)
    folder.chmod(dir_mode)


def _ok_request(built: Built) -> bytes:
    fact = next(f for f in built.manifest["facts"] if f["source"] == "claude" and f["evidence_type"] ==
                "prior_failure")
    return json.dumps(make_request(query_terms=list(fact["terms"]))).encode()


def test_read_only_directory_as_nobody_answers_and_creates_nothing(
        built: Built, public_root: Path, nobody_python: tuple[list[str], dict[str, str]],
        watch_factory: Any) -> None:
    folder = public_root / "ro-clean"
    db = _copy_db(built.db, folder)
    _lock_down(folder)
    before = folder_state(folder)
    watch = watch_factory(folder)
    docs = [_as_nobody(nobody_python, db, built.config, raw)
            for raw in [_ok_request(built), *mixed_requests(built.manifest, 6)]]
    watch.stop()
    assert docs[0]["outcome"] == "ok", docs[0]["error"]
    assert docs[0]["result"]["items"]
    assert docs[0]["provider_meta"]["open_mode"] == "immutable_verified"
    assert all(d["outcome"] in ("ok", "rejected") for d in docs), [d["error"] for d in docs]
    assert folder_state(folder) == before
    assert sorted(os.listdir(folder)) == ["obelisk.sqlite", "writer.lock.sqlite"]
    assert watch.writes() == []
    assert watch.opened_names() <= {"obelisk.sqlite"}
    print(f"\nZERO-WRITES ro-dir as nobody: outcomes={[d['outcome'] for d in docs]} created=none")


def _hot_wal_copy(src: Path, staging: Path, folder: Path, *, keep_shm: bool) -> Path:
    """A writer killed after committing: its -wal holds committed frames; copy it (and maybe -shm)."""
    staged = _copy_db(src, staging)
    LiveWriter(staged, mode="crash").stop()
    assert Path(f"{staged}-wal").stat().st_size > 0
    db = _copy_db(src, folder)
    shutil.copy2(staged, db)
    shutil.copy2(f"{staged}-wal", f"{db}-wal")
    if keep_shm:
        shutil.copy2(f"{staged}-shm", f"{db}-shm")
    return db


def test_hot_wal_without_shm_in_read_only_directory_fails_typed(
        built: Built, public_root: Path, nobody_python: tuple[list[str], dict[str, str]],
        watch_factory: Any) -> None:
    folder = public_root / "ro-hot-wal"
    db = _hot_wal_copy(built.db, public_root / "staging-hot", folder, keep_shm=False)
    _lock_down(folder)
    before = folder_state(folder)
    watch = watch_factory(folder)
    doc = _as_nobody(nobody_python, db, built.config, _ok_request(built))
    watch.stop()
    assert doc["outcome"] == "failed"
    assert doc["error"]["code"] == "index_unreadable", doc["error"]
    assert doc["result"]["items"] == [] and doc["receipt"]["result_count"] == 0
    assert folder_state(folder) == before
    assert not Path(f"{db}-shm").exists()
    assert watch.writes() == []
    print(f"\nZERO-WRITES ro-dir hot -wal, no -shm, as nobody: {doc['error']['code']} created=none")


def test_live_writer_in_read_only_directory_as_nobody_answers(
        built: Built, public_root: Path, nobody_python: tuple[list[str], dict[str, str]]) -> None:
    folder = public_root / "ro-live"
    db = _copy_db(built.db, folder)
    _lock_down(folder)  # 0555 dir, 0444 files: only root (the writer) can create -wal/-shm here
    writer = LiveWriter(db)
    try:
        assert Path(f"{db}-wal").exists() and Path(f"{db}-shm").exists()
        names = set(os.listdir(folder))
        docs = [_as_nobody(nobody_python, db, built.config, _ok_request(built)) for _ in range(3)]
        assert [d["outcome"] for d in docs] == ["ok"] * 3, [d["error"] for d in docs]
        assert all(d["provider_meta"]["open_mode"] == "ro" for d in docs)
        assert docs[0]["result"]["items"]
        assert set(os.listdir(folder)) == names
    finally:
        writer.stop()
    print("\nZERO-WRITES ro-dir live writer (root) + reader (nobody): ok=3")


def _ro_copy(built: Built, folder: Path) -> Path:
    db = _copy_db(built.db, folder)
    for path in folder.iterdir():
        path.chmod(0o444)
    folder.chmod(0o1777)  # writable by anyone: nothing but the provider itself stops it creating files here
    return db


def test_read_only_copy_answers_and_is_unchanged(built: Built, public_root: Path, watch_factory: Any) -> None:
    """A 0444 copy in a writable directory, read in-process."""
    folder = public_root / "ro-copy"
    db = _ro_copy(built, folder)
    before = folder_state(folder)
    watch = watch_factory(folder)
    outcomes = [answer(raw, db_path=db, config_path=built.config).envelope["outcome"]
                for raw in [_ok_request(built), *mixed_requests(built.manifest, 10)]]
    watch.stop()
    assert outcomes[0] == "ok"
    assert folder_state(folder) == before
    assert watch.writes() == []
    assert watch.opened_names() <= {"obelisk.sqlite"}
    print(f"\nZERO-WRITES ro-copy (0444) in-process: ok={outcomes.count('ok')}/{len(outcomes)} unchanged=True")


def test_read_only_copy_as_nobody_answers_and_is_unchanged(
        built: Built, public_root: Path, nobody_python: tuple[list[str], dict[str, str]],
        watch_factory: Any) -> None:
    folder = public_root / "ro-copy-nobody"
    db = _ro_copy(built, folder)
    before = folder_state(folder)
    watch = watch_factory(folder)
    doc = _as_nobody(nobody_python, db, built.config, _ok_request(built))
    watch.stop()
    assert doc["outcome"] == "ok", doc["error"]
    assert doc["result"]["items"]
    assert folder_state(folder) == before
    assert watch.writes() == []
    print("\nZERO-WRITES ro-copy (0444) as nobody: ok unchanged=True")


# --------------------------------------------------------------------------------------------------------
# 4. strace: no file created or written by query, serve or status (issue 10, done-when)
# --------------------------------------------------------------------------------------------------------

#: Syscalls that create, write, remove, rename or re-mode a file. ``openat`` is judged by its flags.
_WRITING_CALLS = ("creat", "mkdir", "mkdirat", "unlink", "unlinkat", "rename", "renameat", "renameat2", "link",
                  "linkat", "symlink", "symlinkat", "truncate", "ftruncate", "chmod", "fchmod", "fchmodat",
                  "chown", "fchown", "fchownat", "lchown", "utime", "utimes", "utimensat", "futimesat", "mknod",
                  "mknodat")
_WRITE_FLAGS = ("O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_APPEND")
#: Device files a process may open read-write without writing a file (subprocess stdin=DEVNULL, ...).
_DEVICES = ("/dev/null", "/dev/tty", "/dev/urandom")


def _file_writes(trace: Path) -> list[str]:
    found: list[str] = []
    for line in trace.read_text(encoding="utf-8", errors="replace").splitlines():
        call = line.split(" ", 1)[-1].split("(", 1)[0].strip()
        if "= -1 " in line:  # refused by the kernel: nothing happened
            continue
        if call in ("open", "openat", "openat2"):
            quoted = line.split('"')[1] if '"' in line else ""
            if any(flag in line for flag in _WRITE_FLAGS) and quoted not in _DEVICES:
                found.append(line[:240])
        elif call in _WRITING_CALLS:
            found.append(line[:240])
    return found


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace not installed (.ci/run installs it)")
def test_strace_sees_no_file_written_by_query_serve_or_status(built: Built, tmp_path: Path) -> None:
    db = _copy_db(built.db, tmp_path / "strace")
    requests = mixed_requests(built.manifest, 12)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("OBELISK")}, "HOME": str(tmp_path),
           # the interpreter's own bytecode cache is not the provider's (the wheel install precompiles it)
           "PYTHONDONTWRITEBYTECODE": "1"}
    runs = {
        "query": (["query", "--db", str(db), "--config", str(built.config)], requests[0]),
        "query-revision": (["query", "--db", str(db), "--config", str(built.config)],
                           json.dumps(make_request(revision={"current": "HEAD~1"})).encode()),
        "serve": (["serve", "--stdio", "--db", str(db), "--config", str(built.config)], b"\n".join(requests)),
        "status-json": (["status", "--format", "json", "--db", str(db), "--config", str(built.config)], b""),
        "status-text": (["status", "--db", str(db), "--config", str(built.config)], b""),
    }
    syscalls = 0
    before = folder_state(db.parent)
    for name, (args, stdin) in runs.items():
        trace = tmp_path / f"{name}.trace"
        proc = subprocess.run(["strace", "-f", "-qq", "-s", "512", "-o", str(trace),
                               "-e", "trace=%file,%desc,%process", sys.executable, "-m", "obelisk_session_evidence",
                               *args], input=stdin, capture_output=True, env=env, cwd=tmp_path, timeout=300,
                              check=False)
        assert b"Traceback" not in proc.stderr, proc.stderr[-2000:]
        assert proc.stdout.strip(), name
        writes = _file_writes(trace)
        assert writes == [], (name, writes[:10])
        syscalls += len(trace.read_text(errors="replace").splitlines())
    assert folder_state(db.parent) == before
    print(f"\nZERO-WRITES strace: commands={sorted(runs)} syscalls_seen={syscalls} file_writes=0")
