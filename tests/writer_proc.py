"""An Obelisk-style writer process for the live-writer test (stdlib sqlite3 only, as a separate process).

It writes the way Obelisk's indexer and app do (obelisk-db-interface.md §7):

* one ``BEGIN IMMEDIATE`` transaction per transcript unit: the unit's old rows are deleted (the FTS delete
  trigger fires) and its session, messages (through the FTS insert trigger), tool calls and tool results are
  re-inserted with fresh ids, some of them failures; ``index_state`` gets the unit row and ``__last_build__``;
* ``PRAGMA wal_checkpoint(PASSIVE)`` every few transactions and ``wal_checkpoint(TRUNCATE)`` now and then;
* a force rebuild inside ONE transaction: triggers dropped, every row of the evidence tables and
  ``index_state`` deleted, everything re-inserted, ``INSERT INTO messages_fts(messages_fts) VALUES('rebuild')``,
  triggers re-created, COMMIT;
* an app-style file swap: a new database built at ``obelisk.sqlite.rebuild-<pid>-<ms>.tmp`` and closed, the
  live connection closed, the live ``-wal`` and ``-shm`` deleted, the temp file renamed over ``obelisk.sqlite``.

Only units under the in-scope root from the in-scope agent (source ``claude``) are evidence the provider may
return. Other units carry the same terms but live in another repository, in a sibling directory whose name
extends the in-scope root (a prefix trap), or belong to the other agent (source ``codex``).

After every COMMIT (or rename) the writer appends one JSON line to the side log: the generation number, the
event, and the exact set of refs a ``prior_failure`` request for ``zorblax`` must return in that state (failed
tool-call ids and the assistant narration uuids of in-scope units). The log is written only after the commit,
so every state a reader can see is in the log by the time the writer exits.

``--journal-mode`` picks the writer's journal: ``wal`` (Obelisk's own), or ``delete`` / ``memory`` (rollback
journals: the reader must honour the writer's locks; a MEMORY journal leaves no ``-journal`` file on disk).

Usage: writer_proc.py --db PATH --log PATH --roots-json JSON --stop PATH [--rebuild-at S] [--swap-at S ...]
       [--journal-mode wal|delete|memory]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from obelisk_session_evidence.fixtures.builder import schema_statements  # noqa: E402 - path set up just above

TERM = "zorblax"
EVIDENCE_TABLES = ("sessions", "messages", "tool_calls", "tool_results", "subagents", "workflows",
                   "workflow_agents", "index_state", "summaries")
MARKERS = ("__last_build__", "__claude_canonical_transcript_v3__", "__codex_canonical_transcript_v3__")
IN_SCOPE_UNITS = 4


class Unit:
    def __init__(self, label: str, source: str, root: str, in_scope: bool, home: str) -> None:
        self.label = label
        self.source = source
        self.root = root
        self.in_scope = in_scope
        self.session_id = f"codex:live-{label}" if source == "codex" else f"live-{label}"
        slug = root.replace("/", "-")
        self.jsonl = (f"{home}/.codex/sessions/2026/live-{label}.jsonl" if source == "codex"
                      else f"{home}/.claude/projects/{slug}/live-{label}.jsonl")


def iso(ms: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms / 1000)) + f".{int(ms) % 1000:03d}Z"


def unit_rows(unit: Unit, gen: int, rng: random.Random) -> tuple[list[tuple[str, dict[str, Any]]], list[str]]:
    """Rows for one transcript unit at generation ``gen``, and the refs a reader must see for it."""
    now = time.time() * 1000
    rows: list[tuple[str, dict[str, Any]]] = []
    expected: list[str] = []
    sid = unit.session_id
    base = {"session_id": sid, "cwd": unit.root, "source": unit.source, "is_meta": 0, "visibility": "visible",
            "is_sidechain": 0}

    def message(uuid: str, role: str, text: str | None, content_type: str, **extra: Any) -> None:
        rows.append(("messages", {**base, "uuid": uuid, "type": role, "role": role, "text": text,
                                  "content_type": content_type, "timestamp": iso(now + len(rows)), **extra}))

    message(f"m-{unit.label}-g{gen}-user", "user", f"Please run the {TERM} checks; last time they failed.", "text")
    # Hidden and meta narration of a failure: the provider must never return these.
    message(f"m-{unit.label}-g{gen}-hidden", "assistant", f"{TERM} failed (hidden reasoning)", "text",
            visibility="hidden")
    message(f"m-{unit.label}-g{gen}-meta", "assistant", f"{TERM} error in a meta row", "text", is_meta=1)
    failures = rng.randint(0, 2)
    for j in range(failures + 1):
        failed = j < failures
        fid = f"g{gen}{unit.label}f{j}"
        call_uuid, result_uuid = f"m-{fid}-call", f"m-{fid}-result"
        tool_id = f"toolu-{fid}"
        message(call_uuid, "assistant", None, "tool_use")
        message(result_uuid, "user", None, "tool_result")
        command = f"make {TERM}-check-{fid}"
        rows.append(("tool_calls", {"id": tool_id, "message_uuid": call_uuid, "session_id": sid, "name": "Bash",
                                    "presentation": "default", "input_json": json.dumps({"command": command}),
                                    "file_path": None}))
        content = (f"Exit code 1\nZorblaxError: {TERM} check {fid} broke" if failed
                   else f"{TERM} check {fid}: 12 passed")
        rows.append(("tool_results", {"tool_use_id": tool_id, "message_uuid": result_uuid, "session_id": sid,
                                      "content": content, "file_path": None, "is_error": int(failed)}))
        if failed:
            narration = f"m-{fid}-narration"
            message(narration, "assistant", f"The {TERM} check {fid} failed with ZorblaxError.", "text")
            if unit.in_scope:
                expected += [tool_id, narration]
    rows.append(("sessions", {"id": sid, "title": f"{TERM} session {unit.label} gen {gen}",
                              "project": unit.root.replace("/", "-"), "project_path": unit.root,
                              "started_at": iso(now - 60_000), "ended_at": iso(now), "git_branch": "main",
                              "version": "2.1.0", "message_count": sum(1 for t, _ in rows if t == "messages"),
                              "jsonl_path": unit.jsonl, "source": unit.source}))
    lines = len(rows)
    rows.append(("index_state", {"jsonl_path": unit.jsonl, "mtime": now, "lines_processed": lines,
                                 "cursor": f"{now:.0f}:{lines}:{lines * 300}:{now:.0f}:{abs(hash(sid)) % 10**9}"}))
    return rows, expected


def insert(conn: sqlite3.Connection, table: str, row: dict[str, Any], *, replace: bool = False) -> None:
    cols = list(row)
    verb = "INSERT OR REPLACE" if replace else "INSERT"
    conn.execute(f"{verb} INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                 [row[c] for c in cols])


def delete_unit(conn: sqlite3.Connection, unit: Unit) -> None:
    sid = unit.session_id
    conn.execute("DELETE FROM tool_results WHERE session_id = ?", (sid,))
    conn.execute("DELETE FROM tool_calls WHERE session_id = ?", (sid,))
    conn.execute("DELETE FROM messages WHERE session_id = ?", (sid,))  # fires messages_fts_ad
    conn.execute("DELETE FROM sessions WHERE id = ?", (sid,))


def write_markers(conn: sqlite3.Connection, gen: int) -> None:
    now = time.time() * 1000
    for name in MARKERS:
        insert(conn, "index_state", {"jsonl_path": name, "mtime": now, "lines_processed": gen, "cursor": None},
               replace=True)


JOURNAL_MODE = "wal"


def open_live(db: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(db, isolation_level=None, timeout=5)
    assert conn.execute(f"PRAGMA journal_mode={JOURNAL_MODE}").fetchone()[0] == JOURNAL_MODE
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA busy_timeout=5000")
    return conn


class Writer:
    def __init__(self, args: argparse.Namespace) -> None:
        self.db = Path(args.db)
        self.log = open(args.log, "a", encoding="utf-8")  # noqa: SIM115 - lives as long as the process
        roots = json.loads(args.roots_json)
        home = roots["home"]
        self.rng = random.Random(args.seed)
        self.units = [Unit(f"in{k}", "claude", roots["in"], True, home) for k in range(IN_SCOPE_UNITS)]
        self.units += [Unit(f"other{k}", "claude", roots["other"], False, home) for k in range(2)]
        self.units += [Unit(f"evil{k}", "claude", roots["evil"], False, home) for k in range(2)]
        self.units += [Unit(f"codex{k}", "codex", roots["in"], False, home) for k in range(2)]
        self.expected: dict[str, list[str]] = {u.label: [] for u in self.units}
        self.gen = 0
        self.counts = {"unit": 0, "rebuild": 0, "swap": 0, "passive": 0, "truncate": 0, "busy": 0}

    def record(self, event: str) -> None:
        refs = sorted(r for u in self.units if u.in_scope for r in self.expected[u.label])
        self.log.write(json.dumps({"gen": self.gen, "event": event, "expected": refs, "t": time.time()}) + "\n")
        self.log.flush()

    def fill_all(self, conn: sqlite3.Connection) -> None:
        for unit in self.units:
            rows, expected = unit_rows(unit, self.gen, self.rng)
            for table, row in rows:
                insert(conn, table, row, replace=table == "index_state")
            self.expected[unit.label] = expected
        write_markers(conn, self.gen)

    def create(self, path: Path) -> None:
        conn = open_live(path)
        for statement in schema_statements("current"):
            conn.execute(statement)
        conn.execute("BEGIN IMMEDIATE")
        self.fill_all(conn)
        conn.execute("COMMIT")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()

    def unit_transaction(self, conn: sqlite3.Connection) -> None:
        unit = self.rng.choice(self.units)
        self.gen += 1
        conn.execute("BEGIN IMMEDIATE")
        try:
            delete_unit(conn, unit)
            rows, expected = unit_rows(unit, self.gen, self.rng)
            for table, row in rows:
                insert(conn, table, row, replace=table == "index_state")
            write_markers(conn, self.gen)
        except BaseException:
            conn.execute("ROLLBACK")
            self.gen -= 1
            raise
        conn.execute("COMMIT")
        self.expected[unit.label] = expected
        self.counts["unit"] += 1
        self.record(f"unit:{unit.label}")

    def force_rebuild(self, conn: sqlite3.Connection) -> None:
        """Obelisk's force rebuild: everything in ONE transaction, FTS rebuilt, triggers re-created."""
        self.gen += 1
        triggers = [r[0] for r in conn.execute(
            "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'messages_fts_%' ORDER BY name")]
        conn.execute("BEGIN IMMEDIATE")
        for name in ("messages_fts_ai", "messages_fts_ad", "messages_fts_au"):
            conn.execute(f"DROP TRIGGER IF EXISTS {name}")
        for table in EVIDENCE_TABLES:
            conn.execute(f"DELETE FROM {table}")
        self.fill_all(conn)
        conn.execute("INSERT INTO messages_fts(messages_fts) VALUES('rebuild')")
        for sql in triggers:
            conn.execute(sql)
        conn.execute("COMMIT")
        self.counts["rebuild"] += 1
        self.record("rebuild")

    def swap(self, conn: sqlite3.Connection) -> sqlite3.Connection:
        """The app's manual rebuild: new file, close, delete live -wal/-shm, rename over the database."""
        self.gen += 1
        tmp = self.db.with_name(f"{self.db.name}.rebuild-{os.getpid()}-{int(time.time() * 1000)}.tmp")
        saved = dict(self.expected)
        try:
            self.create(tmp)
        except BaseException:
            self.expected = saved
            raise
        conn.close()
        for suffix in ("-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f"{self.db}{suffix}")
        os.rename(tmp, self.db)
        self.counts["swap"] += 1
        self.record("swap")
        return open_live(self.db)

    def checkpoint(self, conn: sqlite3.Connection, mode: str) -> None:
        busy, _log, _done = conn.execute(f"PRAGMA wal_checkpoint({mode})").fetchone()
        self.counts[mode.lower()] += 1
        self.counts["busy"] += int(bool(busy))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--roots-json", required=True)
    parser.add_argument("--stop", required=True, help="the writer stops once this file exists")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--rebuild-at", type=float, default=3.0)
    parser.add_argument("--swap-at", type=float, action="append", default=[])
    parser.add_argument("--pause-ms", type=float, default=8.0)
    parser.add_argument("--max-seconds", type=float, default=90.0)
    parser.add_argument("--journal-mode", choices=("wal", "delete", "memory"), default="wal")
    args = parser.parse_args()
    global JOURNAL_MODE  # noqa: PLW0603 - one setting for the whole writer process
    JOURNAL_MODE = args.journal_mode
    writer = Writer(args)
    writer.create(writer.db)
    writer.record("init")
    print("ready", flush=True)
    conn = open_live(writer.db)
    started = time.monotonic()
    rebuild_done = False
    swaps = sorted(args.swap_at or [6.0])
    stop = Path(args.stop)
    tx = 0
    while not stop.exists() and time.monotonic() - started < args.max_seconds:
        elapsed = time.monotonic() - started
        if not rebuild_done and elapsed >= args.rebuild_at:
            writer.force_rebuild(conn)
            rebuild_done = True
        elif swaps and elapsed >= swaps[0]:
            swaps.pop(0)
            conn = writer.swap(conn)
        else:
            writer.unit_transaction(conn)
        tx += 1
        if tx % 5 == 0:
            writer.checkpoint(conn, "PASSIVE")
        if tx % 23 == 0:
            writer.checkpoint(conn, "TRUNCATE")
        time.sleep(writer.rng.uniform(0, 2 * args.pause_ms) / 1000)
    conn.close()
    writer.log.close()
    print(json.dumps({"generations": writer.gen, **writer.counts,
                      "pending_events": len(swaps) + (0 if rebuild_done else 1)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
