"""The per-request deadline is a correctness bound: a typed ``timeout`` (or ``index_busy``), never an overrun.

* Common terms over every evidence type on a 200,000-message index (built once, cached under
  ``/tmp/ose-bench-cache`` keyed by size, seed and the builder's source digest) with ``deadline_ms`` 100:
  typed ``timeout``; the wall time of ``answer()``, measured in-process, is printed.
* A CJK term no message holds, on the same index with every project in scope: the substring scan of all
  200,000 messages (seconds unbounded) ends at ``deadline_ms`` 100 with a typed ``timeout`` that still
  discloses ``cjk_substring_match``.
* A rollback-journal copy with an EXCLUSIVE lock held by another process: typed ``index_busy`` or
  ``timeout``, in-process and through the CLI; never a hang.

The tests assert typed outcomes, never wall-clock margins; how far past its deadline a request ends is measured
by ``tools/bench_deadline.py``, side by side in one run.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from obelisk_session_evidence.service import answer

from tests.conftest import make_request, run_cli, scope_entry, write_config

CACHE = Path("/tmp/ose-bench-cache")
#: 200,000 in CI; OSE_DEADLINE_MESSAGES=1000000 runs the same checks on the issue's 1,000,000-message index.
LARGE_MESSAGES = int(os.environ.get("OSE_DEADLINE_MESSAGES", "200000"))
LARGE_SEED = 7
DEADLINE_MS = 100
ALL_TYPES = ["prior_failure", "tool_outcome", "decision", "file_history", "summary"]


def common_terms(common: str) -> list[str]:
    """The planted common term plus the corpus's most frequent words: about 2x the deadline unbounded."""
    return [common, "the", "error", "build"]


def _builder_digest() -> str:
    import obelisk_session_evidence.fixtures as fixtures

    import tools.devkit.large as large

    digest = hashlib.sha256()
    for source in [Path(large.__file__), *sorted(Path(fixtures.__file__).parent.glob("*.py"))]:
        digest.update(source.name.encode() + b"\0" + source.read_bytes())
    return digest.hexdigest()[:12]


@pytest.fixture(scope="session")
def large_db() -> tuple[Path, dict[str, Any]]:
    """build_large(messages=200_000), built once and cached across sessions (atomic rename under a lock)."""
    from tools.devkit.large import build_large

    CACHE.mkdir(parents=True, exist_ok=True)
    key = f"large-{LARGE_MESSAGES}-s{LARGE_SEED}-{_builder_digest()}"
    final = CACHE / key
    with open(CACHE / f"{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (final / "obelisk.sqlite").exists():
            staging = CACHE / f"{key}.building"
            shutil.rmtree(staging, ignore_errors=True)
            build_large(staging / "obelisk.sqlite", messages=LARGE_MESSAGES, seed=LARGE_SEED)
            staging.rename(final)
            # Builds of older fixture code (same size and seed) are stale now: drop them (228 MB each).
            for old in CACHE.glob(f"large-{LARGE_MESSAGES}-s{LARGE_SEED}-*"):
                if old.name not in (key, f"{key}.lock"):
                    if old.is_dir():
                        shutil.rmtree(old, ignore_errors=True)
                    else:
                        old.unlink(missing_ok=True)
    db = final / "obelisk.sqlite"
    manifest = json.loads((final / "obelisk.manifest.json").read_text(encoding="utf-8"))
    return db, manifest


#: The warm-up requests only fill caches (a page cache the VM has reclaimed is read from disk again), so they
#: get the config's ceiling; the deadline under test is DEADLINE_MS.
WARM_DEADLINE_MS = 60000


def _big_config(path: Path, manifest: dict[str, Any], deadline_ms: int) -> Path:
    big = manifest["projects"]["big"]["root"]
    return write_config(path, [scope_entry("claude-main", "acme", "acme-api", ["claude", "codex"], [big])],
                        deadline_ms=deadline_ms)


def test_common_terms_on_200k_messages_time_out_typed_and_on_time(large_db: tuple[Path, dict[str, Any]],
                                                                 tmp_path: Path) -> None:
    db, manifest = large_db
    common = manifest["terms"]["common"]["term"]
    config = _big_config(tmp_path / "c.json", manifest, DEADLINE_MS)
    warm = _big_config(tmp_path / "warm.json", manifest, WARM_DEADLINE_MS)
    rare = json.dumps(make_request(query_terms=[manifest["terms"]["rare"]["term"]])).encode()
    # Warm-up: lazy imports (sqlglot, pydantic models, templates) and the OS page cache, as in a served process.
    warmed = answer(rare, db_path=db, config_path=warm).envelope
    assert warmed["outcome"] == "ok", warmed["error"]
    raw = json.dumps(make_request(query_terms=common_terms(common), evidence_types=ALL_TYPES)).encode()
    unbounded = answer(raw, db_path=db, config_path=warm)
    assert unbounded.envelope["outcome"] == "ok"
    unbounded_ms = unbounded.envelope["provider_meta"]["elapsed_ms"]
    assert unbounded_ms > 1.5 * DEADLINE_MS, f"the request must outlast the deadline to test it ({unbounded_ms} ms)"
    walls: list[float] = []
    for _ in range(5):
        started = time.perf_counter()
        response = answer(raw, db_path=db, config_path=config)
        walls.append((time.perf_counter() - started) * 1000.0)
        envelope = response.envelope
        assert envelope["outcome"] == "failed", envelope["error"]
        assert envelope["error"]["code"] == "timeout"
        assert envelope["error"]["retryable"] is True
        assert envelope["result"]["items"] == [] and envelope["receipt"]["result_count"] == 0
        assert response.exit_code == 3
    overshoot = [w - DEADLINE_MS for w in walls]  # printed, not asserted: wall time is the benches' job
    print(f"\nDEADLINE: messages={LARGE_MESSAGES} deadline_ms={DEADLINE_MS} unbounded_ms={unbounded_ms} "
          f"wall_ms={[round(w, 1) for w in walls]} max_overshoot_ms={max(overshoot):.1f}")


def test_timeout_through_the_cli_is_typed(large_db: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    db, manifest = large_db
    config = _big_config(tmp_path / "c.json", manifest, DEADLINE_MS)
    request = make_request(query_terms=common_terms(manifest["terms"]["common"]["term"]), evidence_types=ALL_TYPES)
    result = run_cli("query", "--db", str(db), "--config", str(config), stdin=json.dumps(request).encode(),
                     env={"HOME": str(tmp_path)})
    assert result.code == 3
    assert result.document()["error"]["code"] == "timeout"
    assert "Traceback" not in result.stderr


#: A CJK term no message holds: under unicode61 FTS cannot find it inside a longer run, so the substring plans
#: read every message of the scope (issue 11 item 8), the worst case of the scan.
CJK_TERM = "编码错误"


def test_cjk_substring_scan_of_every_message_ends_at_the_deadline_and_says_so(
        large_db: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    db, manifest = large_db
    everything = str(Path(manifest["projects"]["big"]["root"]).parent)  # every project: all 200,000 messages
    entry = [scope_entry("claude-main", "acme", "acme-api", ["claude", "codex"], [everything])]
    config = write_config(tmp_path / "c.json", entry, deadline_ms=DEADLINE_MS)
    warm = write_config(tmp_path / "warm.json", entry, deadline_ms=60_000)
    raw = json.dumps(make_request(query_terms=[CJK_TERM], evidence_types=["prior_failure", "decision"])).encode()
    unbounded = answer(raw, db_path=db, config_path=warm).envelope  # also the warm-up
    assert unbounded["outcome"] == "ok", unbounded["error"]
    assert unbounded["result"]["items"] == []
    assert "cjk_substring_match" in unbounded["provider_meta"]["degradations"]
    unbounded_ms = unbounded["provider_meta"]["elapsed_ms"]
    assert unbounded_ms > 1.5 * DEADLINE_MS, f"the scan must outlast the deadline to test it ({unbounded_ms} ms)"
    walls: list[float] = []
    for _ in range(3):
        started = time.perf_counter()
        response = answer(raw, db_path=db, config_path=config)
        walls.append((time.perf_counter() - started) * 1000.0)
        envelope = response.envelope
        assert envelope["outcome"] == "failed" and envelope["error"]["code"] == "timeout", envelope["error"]
        assert envelope["result"]["items"] == [] and response.exit_code == 3
        # The scan the deadline ended is disclosed, as on an answer that completes.
        assert "cjk_substring_match" in envelope["provider_meta"]["degradations"], envelope["provider_meta"]
        assert CJK_TERM not in json.dumps(envelope["provider_meta"], ensure_ascii=False)
    print(f"\nCJK-SUBSTRING-DEADLINE: messages_in_scope={manifest['counts']['messages']} "
          f"deadline_ms={DEADLINE_MS} unbounded_ms={unbounded_ms} wall_ms={[round(w, 1) for w in walls]}")


# --------------------------------------------------------------------------------------------------------
# busy: an exclusive lock held by another process on a rollback-journal database
# --------------------------------------------------------------------------------------------------------

_LOCKER = r"""
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN EXCLUSIVE")
conn.execute("UPDATE sessions SET title = COALESCE(title, '') || ' (locked)'")
print("locked", flush=True)
sys.stdin.readline()
conn.execute("ROLLBACK")
conn.close()
"""


@pytest.fixture(scope="module")
def fixture_db(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    from obelisk_session_evidence.fixtures.builder import build_fixture

    info = build_fixture(tmp_path_factory.mktemp("deadline-fx"), generation="current")
    return info.db_path, json.loads(info.manifest_path.read_text(encoding="utf-8"))


@contextlib.contextmanager
def exclusive_lock(db: Path) -> Iterator[None]:
    proc = subprocess.Popen([sys.executable, "-c", _LOCKER, str(db)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stdin is not None
    try:
        line = proc.stdout.readline()
        assert line.strip() == b"locked", proc.stderr.read() if proc.stderr else line
        yield
    finally:
        proc.stdin.write(b"\n")
        proc.stdin.flush()
        proc.communicate(timeout=30)


def _rollback_copy(src: Path, folder: Path) -> Path:
    folder.mkdir()
    db = folder / "obelisk.sqlite"
    shutil.copy2(src, db)
    conn = sqlite3.connect(db, isolation_level=None)
    assert conn.execute("PRAGMA journal_mode=DELETE").fetchone()[0] == "delete"
    conn.close()
    return db


@pytest.mark.parametrize("deadline_ms", [300, 1000])
def test_exclusive_lock_gives_typed_busy_within_the_deadline(fixture_db: tuple[Path, dict[str, Any]],
                                                             tmp_path: Path, deadline_ms: int) -> None:
    src, manifest = fixture_db
    db = _rollback_copy(src, tmp_path / "rollback")
    config = write_config(tmp_path / "c.json", [scope_entry("claude-main", "acme", "acme-api", ["claude"],
                                                            [manifest["repos"]["alpha-svc"]])],
                          deadline_ms=deadline_ms)
    raw = json.dumps(make_request(query_terms=["billing"])).encode()
    assert answer(raw, db_path=db, config_path=config).envelope["outcome"] == "ok"  # warm, and readable
    with exclusive_lock(db):
        assert Path(f"{db}-journal").exists()
        started = time.perf_counter()
        response = answer(raw, db_path=db, config_path=config)
        wall_ms = (time.perf_counter() - started) * 1000.0
        cli_started = time.perf_counter()
        cli = run_cli("query", "--db", str(db), "--config", str(config), stdin=raw, env={"HOME": str(tmp_path)},
                      timeout=30)
        cli_ms = (time.perf_counter() - cli_started) * 1000.0
    envelope = response.envelope
    assert envelope["outcome"] == "failed"
    assert envelope["error"]["code"] in {"index_busy", "timeout"}, envelope["error"]
    assert envelope["error"]["retryable"] is True
    assert cli.code == 3 and cli.document()["error"]["code"] in {"index_busy", "timeout"}
    assert "Traceback" not in cli.stderr
    # Released: the same database answers again, and the provider left nothing behind.
    assert answer(raw, db_path=db, config_path=config).envelope["outcome"] == "ok"
    assert sorted(p.name for p in db.parent.iterdir()) == ["obelisk.sqlite"]
    print(f"\nBUSY: deadline_ms={deadline_ms} code={envelope['error']['code']} wall_ms={wall_ms:.1f} "
          f"cli_code={cli.document()['error']['code']} cli_wall_ms={cli_ms:.0f} (incl. interpreter start)")


#: Issue 12.6: at a 200 ms deadline on 200,000 messages the whole answer, reads and the work after them
#: (folding, bounding, redaction, receipt), ends within deadline + 100 ms.
POST_READ_DEADLINE_MS = 200


def test_deadline_covers_the_work_after_the_reads(large_db: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    db, manifest = large_db
    config = _big_config(tmp_path / "c.json", manifest, POST_READ_DEADLINE_MS)
    warm = _big_config(tmp_path / "warm.json", manifest, WARM_DEADLINE_MS)
    common = manifest["terms"]["common"]["term"]
    asks = [
        make_request(query_terms=common_terms(common), evidence_types=ALL_TYPES,
                     limits={"max_sessions": 50, "max_items": 50, "max_snippet_chars": 2000,
                             "max_total_chars": 32000}),
        make_request(query_terms=[common], evidence_types=["prior_failure", "tool_outcome"]),
        make_request(query_terms=[manifest["terms"]["rare"]["term"]], evidence_types=ALL_TYPES),
    ]
    assert answer(json.dumps(asks[2]).encode(), db_path=db, config_path=warm).envelope["outcome"] == "ok"
    walls: list[float] = []
    outcomes: list[str] = []
    for request in asks:
        raw = json.dumps(request).encode()
        for _ in range(3):
            started = time.monotonic()
            response = answer(raw, db_path=db, config_path=config, started_at=started)
            walls.append((time.monotonic() - started) * 1000.0)
            envelope = response.envelope
            code = envelope["error"]["code"] if envelope["error"] else "ok"
            outcomes.append(code)
            assert code in ("ok", "timeout"), envelope["error"]
    print(f"\nPOST-READ-DEADLINE: messages={LARGE_MESSAGES} deadline_ms={POST_READ_DEADLINE_MS} "
          f"wall_ms={[round(w, 1) for w in walls]} outcomes={outcomes}")
