"""The index's observable state, read inside the snapshot: index revision, index_state rows, markers."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..digest import content_digest
from .connection import FileIdentity, ReadSnapshot

#: Longest cursor read per row (Codex v4 cursors carry Bloom filters and are tens of KB). Tighter than the
#: parser's own bound (provider.index.cursors.MAX_CURSOR_CHARS): a longer one parses as an unknown cursor.
CURSOR_READ_CHARS = 262_144

IndexRow = tuple[str, float | None, int | None, str | None]


@dataclass(frozen=True)
class IndexState:
    rows: tuple[IndexRow, ...]
    revision: str  # "obx1-" + digest of the observable state; two index states give two revisions


def read_index_state(snap: ReadSnapshot, *, has_cursor: bool, schema_cookie: int,
                     identity: FileIdentity | None) -> IndexState:
    if has_cursor:
        sql = "SELECT jsonl_path, mtime, lines_processed, substr(cursor, 1, :n) FROM index_state"
    else:
        sql = "SELECT jsonl_path, mtime, lines_processed, NULL FROM index_state"
    raw = snap.rows(sql, {"n": CURSOR_READ_CHARS})
    rows: list[IndexRow] = []
    for path, mtime, lines, cursor in raw:
        rows.append((str(path), _num(mtime), _int(lines), cursor if isinstance(cursor, str) else None))
    # Aggregates computed by SQLite rather than a digest of every row in Python: any unit an indexer
    # touches changes its mtime and line count, any appended evidence moves a rowid top.
    tops = snap.one("SELECT (SELECT max(rowid) FROM messages), (SELECT max(rowid) FROM tool_results), "
                    "(SELECT max(rowid) FROM sessions), sum(mtime), sum(lines_processed), max(mtime), count(*) "
                    "FROM index_state")
    basis: dict[str, Any] = {
        "schema_cookie": schema_cookie,
        "file": [identity.ino, identity.size, identity.mtime_ns] if identity else None,
        "aggregates": list(tops or ()),
    }
    return IndexState(tuple(rows), "obx1-" + content_digest(basis).removeprefix("sha256:")[:32])


def _num(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) else None


def _int(value: object) -> int | None:
    return int(value) if isinstance(value, (int, float)) else None


def transcript_homes_from(rows: Sequence[IndexRow]) -> tuple[str, ...]:
    """The HOME-like directories the indexer read from, inferred from the indexed transcript paths."""
    homes: set[str] = set()
    for path, *_ in rows:
        for marker in ("/.claude/", "/.codex/", "/.kimi-code/", "/.pi/"):
            at = path.find(marker)
            if at > 0:
                homes.add(path[:at])
                break
    return tuple(sorted(homes))
