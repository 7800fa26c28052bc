"""Access to the real-Obelisk test data in ``shared/real-obelisk`` (see its README).

The databases store absolute paths under ``/tmp/obelisk-home``, so the transcript trees must be extracted
exactly there. The "fresh" and "stale" trees share that home; ``materialize(tree)`` extracts the requested
one (and ``repos.tar.gz`` once) under an exclusive file lock and records which tree is there in a marker
file, re-extracting only when another tree (or changed tarballs) is requested. Tar member mtimes survive
extraction, which the freshness checks rely on.

``materialized(tree)`` is the same as a context manager that also holds a *shared* lock while the caller
reads the tree, so another process (another test session, xdist worker) cannot switch trees underneath it.

Locating the data: ``$OBELISK_SHARED_DIR`` if set, else ``<repo>/../shared``. When it is absent, every entry
point FAILS the calling test with a message saying where it looked and how to point at the data: a CI
machine without the data must not pass by skipping. A developer opts out explicitly with
``OBELISK_ALLOW_MISSING_SHARED=1`` (the tests are then skipped, with the same message). Never write into
``shared/``: copy databases with ``db_copy``.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import sqlite3
import tarfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Literal

import pytest

Tree = Literal["fresh", "stale"]
Db = Literal["fresh", "stale", "reindexed"]

HOME = Path("/tmp/obelisk-home")
LOCK_PATH = Path("/tmp/obelisk-home.lock")
MARKER_NAME = ".materialized.json"
_TRANSCRIPT_DIRS = (".claude", ".codex")


def shared_dir() -> Path:
    override = os.environ.get("OBELISK_SHARED_DIR")
    if override:
        return Path(override)
    return Path(__file__).resolve().parents[2] / "shared"


#: Set to 1 to skip, rather than fail, the tests that need ``shared/`` when it is absent.
ALLOW_MISSING_ENV = "OBELISK_ALLOW_MISSING_SHARED"


def require_shared(path: Path, what: str) -> Path:
    """``path`` when it exists; else fail the calling test (skip only under the explicit opt-out)."""
    if path.exists():
        return path
    message = (f"{what} not found at {path}: set OBELISK_SHARED_DIR to the shared/ folder, or set "
               f"{ALLOW_MISSING_ENV}=1 to skip the tests that need it")
    if os.environ.get(ALLOW_MISSING_ENV) == "1":
        pytest.skip(message)
    pytest.fail(message, pytrace=False)


def real_dir() -> Path:
    """``shared/real-obelisk``; the calling test fails when it is absent (see :func:`require_shared`)."""
    path = shared_dir() / "real-obelisk"
    require_shared(path / "fresh.sqlite", "real-Obelisk data")
    return path


def _tar_stamp(path: Path) -> list[int]:
    st = path.stat()
    return [st.st_size, st.st_mtime_ns]


def _wanted_marker(data: Path, tree: Tree) -> dict[str, object]:
    return {
        "tree": tree,
        "transcripts": _tar_stamp(data / f"transcripts-{tree}.tar.gz"),
        "repos": _tar_stamp(data / "repos.tar.gz"),
    }


def _read_marker() -> object:
    try:
        return json.loads((HOME / MARKER_NAME).read_text())
    except (OSError, ValueError):
        return None


def _extract(archive: Path, dest: Path) -> None:
    with tarfile.open(archive, "r:gz") as tar:
        tar.extractall(dest, filter="tar")  # keeps member mtimes


def _switch(data: Path, tree: Tree, wanted: dict[str, object]) -> None:
    """Re-extract under the exclusive lock; the marker is written last so a crash leaves no false marker."""
    previous = _read_marker()
    HOME.mkdir(parents=True, exist_ok=True)
    (HOME / MARKER_NAME).unlink(missing_ok=True)
    for name in _TRANSCRIPT_DIRS:
        shutil.rmtree(HOME / name, ignore_errors=True)
    _extract(data / f"transcripts-{tree}.tar.gz", HOME)
    repos_ok = isinstance(previous, dict) and previous.get("repos") == wanted["repos"]
    if not (repos_ok and (HOME / "src").is_dir()):
        shutil.rmtree(HOME / "src", ignore_errors=True)
        _extract(data / "repos.tar.gz", HOME)
    (HOME / MARKER_NAME).write_text(json.dumps(wanted))


def _lock(fh: IO[str], mode: int) -> None:
    fcntl.flock(fh.fileno(), mode)


def materialize(tree: Tree) -> Path:
    """Make ``/tmp/obelisk-home`` hold the ``tree`` transcripts plus ``src/`` repos; return the home."""
    data = real_dir()
    wanted = _wanted_marker(data, tree)
    with open(LOCK_PATH, "a+") as fh:
        _lock(fh, fcntl.LOCK_EX)
        try:
            if _read_marker() != wanted:
                _switch(data, tree, wanted)
        finally:
            _lock(fh, fcntl.LOCK_UN)
    return HOME


@contextmanager
def materialized(tree: Tree) -> Iterator[Path]:
    """``materialize(tree)`` and hold a shared lock on it until the block ends. Do not nest."""
    data = real_dir()
    wanted = _wanted_marker(data, tree)
    with open(LOCK_PATH, "a+") as fh:
        while True:
            _lock(fh, fcntl.LOCK_SH)
            if _read_marker() == wanted:
                break
            _lock(fh, fcntl.LOCK_UN)
            _lock(fh, fcntl.LOCK_EX)
            try:
                if _read_marker() != wanted:
                    _switch(data, tree, wanted)
            finally:
                _lock(fh, fcntl.LOCK_UN)
        try:
            yield HOME
        finally:
            _lock(fh, fcntl.LOCK_UN)


def db_copy(db: Db, dest_dir: Path) -> Path:
    """Copy ``<db>.sqlite`` into ``dest_dir`` (the shared originals stay untouched) and return the copy."""
    dest = dest_dir / f"{db}.sqlite"
    shutil.copyfile(real_dir() / f"{db}.sqlite", dest)
    return dest


def open_ro(path: Path) -> sqlite3.Connection:
    """stdlib read-only, immutable connection to a *copied* database."""
    return sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)


def index_state_rows(db: Db, dest_dir: Path) -> list[tuple[str, float | None, int | None, str | None]]:
    """All ``index_state`` rows of a copy of ``<db>.sqlite`` placed in ``dest_dir``."""
    conn = open_ro(db_copy(db, dest_dir))
    try:
        return list(conn.execute("SELECT jsonl_path, mtime, lines_processed, cursor FROM index_state"))
    finally:
        conn.close()


def staleness(name: Literal["stale", "reindexed"]) -> dict[str, object]:
    """The ``staleness-<name>.json`` expectations."""
    loaded: dict[str, object] = json.loads((real_dir() / f"staleness-{name}.json").read_text())
    return loaded
