"""Introspect the live schema inside the request's snapshot and judge it per template.

Verdicts: ``exact`` / ``compatible`` come from comparing with the pinned snapshots (see snapshots.py);
this module decides what retrieval may run: ``degraded`` when some template's needed column is missing (only
templates whose needs are met run), ``incompatible`` when a core table or column is missing, the FTS table's
content table is not ``messages``, or its tokenizer is unknown.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from provider.index.connection import ReadSnapshot

#: Columns every Obelisk generation has had since its first release (the non-migrated ones the templates
#: build on). Missing any of them means the database is not one the provider can vouch for.
CORE_COLUMNS: dict[str, tuple[str, ...]] = {
    "sessions": ("id", "title", "project_path", "started_at", "ended_at", "git_branch"),
    "messages": ("uuid", "session_id", "timestamp", "role", "text", "cwd"),
    "tool_calls": ("id", "message_uuid", "session_id", "name", "input_json", "file_path"),
    "tool_results": ("tool_use_id", "message_uuid", "session_id", "content", "is_error"),
    "index_state": ("jsonl_path", "mtime", "lines_processed"),
}
KNOWN_TOKENIZERS = ("unicode61", "trigram", "porter", "ascii")

_TOKENIZE = re.compile(r"tokenize\s*=\s*(?:'([^']*)'|\"([^\"]*)\"|([A-Za-z0-9_]+))", re.IGNORECASE)
_CONTENT = re.compile(r"content\s*=\s*(?:'([^']*)'|\"([^\"]*)\"|([A-Za-z0-9_]+))", re.IGNORECASE)


@dataclass(frozen=True)
class LiveSchema:
    columns: dict[str, tuple[str, ...]]  # table -> column names in physical order
    column_types: dict[str, dict[str, str]]
    fts_sql: str | None
    tokenizer: str | None  # first word of the tokenize= clause (default unicode61), None if unknown
    tokenizer_spec: str | None
    fts_content: str | None
    schema_cookie: int

    def has(self, table: str, column: str) -> bool:
        return column in self.columns.get(table, ())


def _clause(pattern: re.Pattern[str], sql: str) -> str | None:
    found = pattern.search(sql)
    if not found:
        return None
    return next(group for group in found.groups() if group is not None)


def read_live_schema(snap: ReadSnapshot) -> LiveSchema:
    cookie_row = snap.one("PRAGMA schema_version")
    cookie = int(cookie_row[0]) if cookie_row else -1
    tables = [(str(r[0]), str(r[1] or "")) for r in snap.rows(
        "SELECT name, sql FROM sqlite_schema WHERE type = 'table' ORDER BY name")]
    columns: dict[str, tuple[str, ...]] = {}
    types: dict[str, dict[str, str]] = {}
    fts_sql = None
    for name, sql in tables:
        if name == "messages_fts":
            fts_sql = sql
            columns[name] = ("uuid", "session_id", "text")
            continue
        if name.startswith(("sqlite_", "messages_fts_", "memories_fts")):
            continue
        info = snap.rows("SELECT name, type FROM pragma_table_info(:t) ORDER BY cid", {"t": name})
        columns[name] = tuple(str(r[0]) for r in info)
        types[name] = {str(r[0]): str(r[1] or "").upper() for r in info}
    spec = content = None
    tokenizer: str | None = None
    if fts_sql is not None:
        spec = _clause(_TOKENIZE, fts_sql)
        content = _clause(_CONTENT, fts_sql)
        first = (spec or "unicode61").split()[0].lower() if (spec or "unicode61").split() else ""
        tokenizer = first if first in KNOWN_TOKENIZERS else None
    return LiveSchema(columns, types, fts_sql, tokenizer, spec, content, cookie)


def core_problems(live: LiveSchema) -> list[str]:
    """Content-free descriptions of why the live schema is incompatible (empty when it is not)."""
    problems = []
    for table, needed in CORE_COLUMNS.items():
        if table not in live.columns:
            problems.append(f"missing table {table}")
            continue
        problems.extend(f"missing column {table}.{c}" for c in needed if not live.has(table, c))
    if live.fts_sql is None:
        problems.append("missing table messages_fts")
    else:
        if (live.fts_content or "").strip() != "messages":
            problems.append("messages_fts content table changed")
        if live.tokenizer is None:
            problems.append("unknown FTS tokenizer")
    return problems


def unmet_needs(live: LiveSchema, needs: Iterable[tuple[str, str]]) -> list[str]:
    return sorted(f"{t}.{c}" for t, c in needs if not live.has(t, c))
