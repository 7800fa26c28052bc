"""What a request reads about its scope inside its snapshot, beside the evidence: the scope set, the
``index_state`` rows of given transcript files, the marker rows and the transcript homes.

Every statement here is proportional to the scope (or constant), never to the whole index: ``index_state``
is read by its primary key (``jsonl_path``), one batch per call; markers are one primary-key range; the
homes come from a bounded skip-scan of that key. The revision (``revision.index_revision``) comes from
``max(rowid)`` seeks and these marker rows.
"""

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, NamedTuple

from ..paths import Roots
from ..templates.catalog import Template
from ..templates.params import NO_UPPER_BOUND, roots_json
from .connection import ReadSnapshot
from .memo import RequestMemo
from .revision import CURSOR_READ_CHARS, IndexRow, index_revision

#: Sessions in one scope at most (the scope template's LIMIT); reaching it marks the result truncated.
SCOPE_SESSION_CEILING = 200_000
#: Homes looked for at most (each step of the skip-scan is one primary-key seek).
MAX_HOME_STEPS: Final = 64
#: Marker rows read at most.
MAX_MARKERS: Final = 200
#: ``index_state`` lookups of more paths than this are not remembered (bounds a warm process's memory).
REMEMBERED_PATHS_MAX: Final = 5_000
_HOME_MARKERS: Final = ("/.claude/", "/.codex/", "/.kimi-code/", "/.pi/")
_TOP: Final = "\U0010ffff"
#: The characters a JSON string cannot hold as they are: control characters, the quote and the backslash.
_JSON_ESCAPED: Final = (*map(chr, range(0x20)), '"', "\\")

#: Every statement of this module (fixed text; tests/integration/test_query_plans.py checks each one's plan).
#: The rows of given paths: one primary-key lookup per element of the JSON array, in its order (``CROSS JOIN``
#: keeps the array the outer loop whatever the statistics; a join, not ``IN (SELECT ...)``, which first builds
#: a temporary index of the array: cheaper per request).
#: The columns come typed as ``IndexRow`` (as ``revision.STATE_ROWS_SQL`` reads them), so rows are kept as read.
UNIT_ROWS_SQL: Final = (
    "SELECT s.jsonl_path, "
    "CASE WHEN typeof(s.mtime) IN ('integer', 'real') THEN CAST(s.mtime AS REAL) END, "
    "CASE WHEN typeof(s.lines_processed) IN ('integer', 'real') THEN CAST(s.lines_processed AS INTEGER) END, "
    "CASE WHEN typeof(s.cursor) = 'text' THEN substr(s.cursor, 1, :n) END "
    "FROM json_each(:paths) AS p CROSS JOIN index_state AS s ON s.jsonl_path = p.value")
UNIT_ROWS_NO_CURSOR_SQL: Final = (
    "SELECT s.jsonl_path, "
    "CASE WHEN typeof(s.mtime) IN ('integer', 'real') THEN CAST(s.mtime AS REAL) END, "
    "CASE WHEN typeof(s.lines_processed) IN ('integer', 'real') THEN CAST(s.lines_processed AS INTEGER) END, "
    "NULL "
    "FROM json_each(:paths) AS p CROSS JOIN index_state AS s ON s.jsonl_path = p.value")
PREFIX_SQL: Final = "SELECT 1 FROM index_state WHERE jsonl_path >= :lo AND jsonl_path < :hi LIMIT 1"
MARKERS_SQL: Final = ("SELECT jsonl_path, mtime FROM index_state WHERE jsonl_path >= '__' AND jsonl_path < '_`' "
                      "ORDER BY jsonl_path LIMIT :n")
NEXT_PATH_SQL: Final = "SELECT jsonl_path FROM index_state WHERE jsonl_path > :after ORDER BY jsonl_path LIMIT 1"
STATEMENTS: Final = (UNIT_ROWS_SQL, UNIT_ROWS_NO_CURSOR_SQL, PREFIX_SQL, MARKERS_SQL, NEXT_PATH_SQL)


class ScopeSet(NamedTuple):
    """The sessions in scope, computed once per request by the scope template."""

    ids: frozenset[str]
    files: tuple[tuple[str, str], ...]  # (transcript path, source) of the sessions in scope (private)
    ceiling_reached: bool


class ScopeRows(NamedTuple):
    """The scope template's rows for a lower bound ``since`` (``(id, source, path, active_at)``)."""

    since: str
    rows: tuple[tuple[str, str, str | None, object], ...]
    ceiling_reached: bool

    def active_since(self, since: str) -> ScopeSet:
        """The scope set for any ``since`` at or after ``self.since``: the template's own ``>= :since`` test,
        applied again to ``active_at`` (SQLite orders every number before every text and every text, by its
        bytes, before every blob; Python's ``str`` order is that byte order for UTF-8)."""
        if since < self.since:
            raise ValueError("a scope read for a later bound cannot answer an earlier one")
        ids: set[str] = set()
        files: list[tuple[str, str]] = []
        for sid, source, path, active in self.rows:
            if isinstance(active, bytes) or (isinstance(active, str) and active >= since):
                ids.add(sid)
                if path:
                    files.append((path, source))
        return ScopeSet(frozenset(ids), tuple(files), self.ceiling_reached)


def since_bucket(since: str) -> str:
    """The start of the hour of an ISO-8601 ``since`` (a lower bound, so the bucket's rows hold the answer)."""
    return since[:13] + ":00:00.000Z" if len(since) >= 13 and since[10:11] == "T" else since


def read_scope_rows(snap: ReadSnapshot, scope: Template, *, sources: Sequence[str], roots: Roots,
                    since: str, until: str = NO_UPPER_BOUND) -> ScopeRows:
    """Run the scope template once for ``since`` (and the upper time bound ``until``, none by default);
    :meth:`ScopeRows.active_since` gives the scope set.

    The template matched every spelling of a root lexically; only the sessions whose recorded project path
    lies inside a root by real path (``..`` applied, symlinks resolved) are kept (``Roots.contains``).
    """
    values: dict[str, Any] = {"sources": json.dumps(list(sources)), "roots": roots_json(roots),
                              "since": since, "until": until, "limit": SCOPE_SESSION_CEILING}
    raw = snap.rows(scope.sql, {name: values[name] for name in scope.params})
    rows = []
    for row in raw:
        if len(row) >= 5 and not roots.contains(row[4]):
            continue
        path = row[2] if len(row) >= 3 and isinstance(row[2], str) and row[2] else None
        active = row[3] if len(row) >= 4 else since  # a template without the column: its own bound holds
        rows.append((str(row[0]), str(row[1]) if len(row) >= 2 else "", path, active))
    return ScopeRows(since, tuple(rows), len(raw) >= SCOPE_SESSION_CEILING)


def read_scope_set(snap: ReadSnapshot, scope: Template, *, sources: Sequence[str], roots: Roots,
                   since: str, until: str = NO_UPPER_BOUND) -> ScopeSet:
    """Run the scope template once: the ids, the transcript files and whether the ceiling was reached
    (``until``: the upper time bound, none by default)."""
    return read_scope_rows(snap, scope, sources=sources, roots=roots, since=since, until=until).active_since(since)


def read_unit_rows(snap: ReadSnapshot, paths: Sequence[str], *, has_cursor: bool) -> dict[str, IndexRow]:
    """The ``index_state`` rows of exactly these paths (primary-key lookups), by path."""
    wanted = sorted(set(paths))
    if not wanted:
        return {}
    sql = UNIT_ROWS_SQL if has_cursor else UNIT_ROWS_NO_CURSOR_SQL
    params: dict[str, Any] = {"paths": json_text_array(wanted)}
    if has_cursor:
        params["n"] = CURSOR_READ_CHARS
    # Every path is text: it equals a text element of the array (the column's TEXT affinity stores a number as
    # text, and a blob never equals text). The other columns are typed by the statement.
    return {row[0]: row for row in snap.rows(sql, params)}


def json_text_array(texts: list[str]) -> str:
    """A JSON array of ``texts`` (for ``json_each``): joined as they are when none holds a character a JSON
    string must escape (a control character, ``"`` or ``\\``) or one UTF-8 cannot encode (a lone surrogate),
    else ``json.dumps``. The same strings either way (``json_each`` reads raw UTF-8 and escapes alike). Each
    escaped character is looked for in the joined text on its own (``memchr`` speed), not per character."""
    joined = "".join(texts)
    if not joined.isascii():
        try:
            joined.encode()
        except UnicodeEncodeError:
            return json.dumps(texts)
    if any(char in joined for char in _JSON_ESCAPED):
        return json.dumps(texts)
    return '["' + '","'.join(texts) + '"]' if texts else "[]"


#: What one seek of ``NEXT_PATH_SQL`` learned, ``(after, found)``: no path sorts strictly between ``after`` and
#: ``found`` (none at all after ``after`` when ``found`` is None), and ``found`` is a path.
Seek = tuple[str, str | None]


def _seek_tells(prefix: str, after: str, found: str | None) -> bool | None:
    """Whether some path starts with ``prefix``, as the seek ``(after, found)`` tells it; None: it cannot tell.

    Every path that starts with ``prefix`` sorts at or after ``prefix``, and before any path that sorts after
    ``prefix`` without starting with it; so when ``after`` sorts below ``prefix``, the first path after
    ``after`` answers unless it sorts between ``after`` and ``prefix``."""
    if not after < prefix:
        return None
    if found is None:
        return False
    if found.startswith(prefix):
        return True
    return False if found > prefix else None


def has_rows_under(snap: ReadSnapshot, prefix: str, seeks: Sequence[Seek] = ()) -> bool:
    """Whether ``index_state`` holds any path starting with ``prefix``: no statement when a seek the homes
    skip-scan made tells (``seeks``, as ``transcript_homes`` recorded them), else one primary-key seek.

    That seek asks ``NEXT_PATH_SQL``, the statement the homes skip-scan already prepared in this snapshot (a
    new statement costs more than the seek): the first path after a string just below ``prefix``. That path
    answers unless it sorts between that string and ``prefix`` (a path of ``prefix`` minus its last character,
    then a lower character, then four U+10FFFF), and then the range probe ``PREFIX_SQL`` does.
    """
    if not prefix:
        return False
    for after, found in seeks:
        told = _seek_tells(prefix, after, found)
        if told is not None:
            return told
    last = ord(prefix[-1])
    if last > 0 and not 0xD800 <= last - 1 <= 0xDFFF:  # a string just below prefix exists and is UTF-8
        below = prefix[:-1] + chr(last - 1) + _TOP * 4
        row = snap.one(NEXT_PATH_SQL, {"after": below})
        if row is None:
            return False  # no path after one below prefix: none at or after prefix either
        if isinstance(row[0], str):
            told = _seek_tells(prefix, below, row[0])
            if told is not None:
                return told
    upper = prefix[:-1] + chr(last + 1)
    return snap.one(PREFIX_SQL, {"lo": prefix, "hi": upper}) is not None


def read_marker_rows(snap: ReadSnapshot) -> dict[str, object]:
    """Marker rows (``__…__``) by name: their ``mtime`` value (one primary-key range, bounded)."""
    rows = snap.rows(MARKERS_SQL, {"n": MAX_MARKERS})
    return {str(name): mtime for name, mtime in rows
            if isinstance(name, str) and len(name) >= 4 and name.endswith("__")}


def transcript_homes(snap: ReadSnapshot, seeks: list[Seek] | None = None) -> tuple[str, ...]:
    """The HOME-like directories the indexer read from, by a skip-scan over ``index_state``'s key.

    Each step seeks the first path after the last home's tool folder, so the cost is one seek per
    (home, tool) pair, not one per row; bounded by ``MAX_HOME_STEPS``. ``seeks`` receives what each step
    learned (``Seek``), for ``has_rows_under`` in the same snapshot.
    """
    homes: set[str] = set()
    after = ""
    for _ in range(MAX_HOME_STEPS):
        row = snap.one(NEXT_PATH_SQL, {"after": after})
        if row is None or not isinstance(row[0], str):
            if row is None and seeks is not None:
                seeks.append((after, None))
            break
        path = row[0]
        if seeks is not None:
            seeks.append((after, path))
        if path.startswith("__"):
            after = "__" + _TOP  # the marker rows sort together: skip them all
            continue
        for marker in _HOME_MARKERS:
            at = path.find(marker)
            if at > 0:
                homes.add(path[:at])
                after = path[:at + len(marker)] + _TOP
                break
        else:
            after = path
    return tuple(sorted(homes))



@dataclass(slots=True)
class ScopeState:
    """A request's reads of its scope's state inside its snapshot, each remembered per index state (``memo``;
    every value is what a fresh read gives again). ``seeks`` holds what the homes skip-scan learned of
    ``index_state``'s key, which answers the prefix probes of the same snapshot."""

    snap: ReadSnapshot
    memo: RequestMemo
    has_cursor: bool
    seeks: list[Seek] = field(default_factory=list)

    def scope_rows(self, scope: Template, *, sources: Sequence[str], roots: Roots, since: str,
                   until: str) -> ScopeRows:
        """:func:`read_scope_rows`."""
        return self.memo.get(("scope", scope.digest, tuple(sources), roots.spellings, roots.real_paths, since, until),
                             lambda: read_scope_rows(self.snap, scope, sources=sources, roots=roots, since=since,
                                                     until=until))

    def marker_rows(self) -> dict[str, object]:
        """:func:`read_marker_rows`."""
        return self.memo.get(("markers",), lambda: read_marker_rows(self.snap))

    def revision(self, schema_cookie: int, markers: Mapping[str, object]) -> str:
        """``revision.index_revision`` of this snapshot."""
        return self.memo.get(("revision", schema_cookie, self.snap.mode),
                             lambda: index_revision(self.snap, schema_cookie=schema_cookie,
                                                    identity=self.snap.identity, markers=markers))

    def transcript_homes(self) -> tuple[str, ...]:
        """:func:`transcript_homes` (its seeks go to ``seeks`` when it runs)."""
        return self.memo.get(("homes",), lambda: transcript_homes(self.snap, self.seeks))

    def unit_rows(self, paths: Sequence[str]) -> Mapping[str, IndexRow]:
        """:func:`read_unit_rows` (not remembered past :data:`REMEMBERED_PATHS_MAX` paths)."""
        if len(paths) > REMEMBERED_PATHS_MAX:
            return read_unit_rows(self.snap, paths, has_cursor=self.has_cursor)
        return self.memo.get(("rows", self.has_cursor, tuple(paths)),
                             lambda: read_unit_rows(self.snap, paths, has_cursor=self.has_cursor))

    def has_rows_under(self, prefix: str) -> bool:
        """:func:`has_rows_under`, told by ``seeks`` where they can tell."""
        return self.memo.get(("prefix", prefix), lambda: has_rows_under(self.snap, prefix, self.seeks))
