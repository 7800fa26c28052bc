"""The index's observable state, read inside the snapshot: index revision, index_state rows, markers."""

from collections.abc import Mapping, Sequence
from typing import Any, Final, NamedTuple

from ..digest import content_digest
from .connection import FileIdentity, ReadSnapshot

#: Longest cursor read per row (Codex v4 cursors carry Bloom filters and are tens of KB). Tighter than the
#: parser's own bound (provider.index.cursors.MAX_CURSOR_CHARS): a longer one parses as an unknown cursor.
CURSOR_READ_CHARS = 262_144

IndexRow = tuple[str, float | None, int | None, str | None]

#: The top rowid of each table an indexer appends to: one b-tree seek each.
TOPS_SQL: Final = ("SELECT (SELECT max(rowid) FROM messages), (SELECT max(rowid) FROM tool_results), "
                   "(SELECT max(rowid) FROM sessions), (SELECT max(rowid) FROM index_state)")
#: Marker rows that say nothing about the index's content (a live daemon's pulse): not part of the revision.
_VOLATILE_MARKERS: Final = frozenset({"__app_heartbeat__"})


#: Every ``index_state`` row (``status``), its columns typed as ``IndexRow`` holds them: the mtime a REAL when
#: it is a number; the line count an INTEGER when it is a number (a REAL cut toward zero, as ``int()`` does,
#: and held to 64 bits, where ``int()`` of an infinite one raises); the cursor cut to ``:n`` characters when it
#: is text. Anything else (text, a blob, NULL) is NULL: a crafted database's values reach Python only as the
#: types the judges take. ``scope_state.UNIT_ROWS_SQL`` reads the same columns the same way.
STATE_ROWS_SQL: Final = (
    "SELECT jsonl_path, "
    "CASE WHEN typeof(mtime) IN ('integer', 'real') THEN CAST(mtime AS REAL) END, "
    "CASE WHEN typeof(lines_processed) IN ('integer', 'real') THEN CAST(lines_processed AS INTEGER) END, "
    "CASE WHEN typeof(cursor) = 'text' THEN substr(cursor, 1, :n) END "
    "FROM index_state")
STATE_ROWS_NO_CURSOR_SQL: Final = (
    "SELECT jsonl_path, "
    "CASE WHEN typeof(mtime) IN ('integer', 'real') THEN CAST(mtime AS REAL) END, "
    "CASE WHEN typeof(lines_processed) IN ('integer', 'real') THEN CAST(lines_processed AS INTEGER) END, "
    "NULL "
    "FROM index_state")


class IndexState(NamedTuple):
    rows: tuple[IndexRow, ...]
    revision: str  # "obx1-" + digest of the observable state; two index states give two revisions


def read_index_state(snap: ReadSnapshot, *, has_cursor: bool, schema_cookie: int,
                     identity: FileIdentity | None) -> IndexState:
    """Every ``index_state`` row (the operator's ``status`` view; a request reads its scope's rows only,
    ``scope_state.read_unit_rows``) and the same revision a request reports."""
    sql = STATE_ROWS_SQL if has_cursor else STATE_ROWS_NO_CURSOR_SQL
    raw = snap.rows(sql, {"n": CURSOR_READ_CHARS} if has_cursor else {})
    rows = [(str(path), mtime, lines, cursor) for path, mtime, lines, cursor in raw]  # typed by the statement
    markers = {path: mtime for path, mtime, _, _ in rows
               if len(path) >= 4 and path.startswith("__") and path.endswith("__")}
    return IndexState(tuple(rows), index_revision(snap, schema_cookie=schema_cookie, identity=identity,
                                                  markers=markers))


def index_revision(snap: ReadSnapshot, *, schema_cookie: int, identity: FileIdentity | None,
                   markers: Mapping[str, object]) -> str:
    """``obx1-`` + a digest of cheap aggregates: the top rowid of each growing table (a seek each), the marker
    rows but the heartbeat (every build moves ``__last_build__``), the schema cookie and the file identity."""
    tops = snap.one(TOPS_SQL)
    basis: dict[str, Any] = {
        "schema_cookie": schema_cookie,
        "file": [identity.ino, identity.size, identity.mtime_ns] if identity else None,
        "tops": list(tops or ()),
        "markers": sorted([name, _num(value)] for name, value in markers.items() if name not in _VOLATILE_MARKERS),
    }
    return "obx1-" + content_digest(basis).removeprefix("sha256:")[:32]


def _num(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) else None


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
