"""Introspect the live schema inside the request's snapshot and judge it per template.

Verdicts: ``exact`` / ``compatible`` come from comparing with the pinned snapshots (see snapshots.py);
this module decides what retrieval may run: ``degraded`` when some template's needed column is missing (only
templates whose needs are met run), ``incompatible`` when a core table or column is missing, the FTS table's
content table is not ``messages`` (or its ``content_rowid`` is not ``rowid``), or its tokenizer is unknown.

The FTS5 declaration is read from the ``sql`` text in ``sqlite_schema`` (:func:`parse_virtual_table`), never
by connecting to the virtual table: a table declared with an unknown tokenizer cannot even be connected.
:func:`detect_tokenizer` names the live tokenizer (``unicode61`` when there is no ``tokenize=`` clause;
``porter`` with the tokenizer it wraps) and hands it to retrieval through :class:`LiveSchema`.
"""

import re
from collections.abc import Iterable, Iterator
from itertools import pairwise
from typing import NamedTuple

from .connection import ReadSnapshot

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
#: Tokenizers ``porter`` may wrap (its first argument; FTS5's default parent is ``unicode61``).
PORTER_PARENTS = ("unicode61", "ascii", "trigram")

_VIRTUAL = re.compile(
    r"^\s*CREATE\s+VIRTUAL\s+TABLE\s+.+?\s+USING\s+(\"[^\"]+\"|`[^`]+`|\[[^\]]+\]|'[^']+'|\w+)\s*"
    r"(?:\((.*)\))?\s*;?\s*$",
    re.IGNORECASE | re.DOTALL,
)
_WORD = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|`(?:[^`]|``)*`|\[[^\]]*\]|[^\s'\"`\[]+")
_QUOTE_CLOSERS = {"'": "'", '"': '"', "`": "`", "[": "]"}


def unquote(word: str) -> str:
    """An SQL/FTS5 word without its quotes (doubled quote characters inside collapse to one)."""
    if len(word) >= 2 and word[0] in _QUOTE_CLOSERS and word[-1] == _QUOTE_CLOSERS[word[0]]:
        inner = word[1:-1]
        return inner if word[0] == "[" else inner.replace(word[0] * 2, word[0])
    return word


def top_level_positions(text: str) -> Iterator[int]:
    """Offsets of the characters of ``text`` that lie outside quotes and outside parentheses.

    A doubled quote closes and reopens its literal, which has the right net effect; the parentheses
    themselves are not yielded.
    """
    depth = 0
    closer: str | None = None
    for at, char in enumerate(text):
        if closer is not None:
            if char == closer:
                closer = None
            continue
        if char in _QUOTE_CLOSERS:
            closer = _QUOTE_CLOSERS[char]
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif depth == 0:
            yield at


def split_top_level(text: str, separator: str = ",") -> list[str]:
    """Split ``text`` at ``separator`` outside quotes and parentheses."""
    cuts = [at for at in top_level_positions(text) if text[at] == separator]
    bounds = [-1, *cuts, len(text)]
    return [text[start + 1:end] for start, end in pairwise(bounds)]


def words(text: str) -> list[str]:
    """Whitespace-separated words, quoted words kept whole and unquoted (FTS5's reading of an option)."""
    return [unquote(w) for w in _WORD.findall(text)]


class VirtualTableDeclaration(NamedTuple):
    """What a ``CREATE VIRTUAL TABLE`` statement declares, read from its text (never by connecting to it).

    For FTS5, ``columns`` are the declared column names in order, ``unindexed`` those marked UNINDEXED and
    ``options`` the ``key=value`` arguments (keys lower-case, values unquoted): tokenize, content,
    content_rowid, prefix, detail, columnsize, ...
    """

    module: str  # lower-case
    columns: tuple[str, ...]
    unindexed: tuple[str, ...]
    options: dict[str, str]


def parse_virtual_table(sql: str) -> VirtualTableDeclaration | None:
    """Parse ``CREATE VIRTUAL TABLE name USING module(args)``; None when ``sql`` is not such a statement."""
    found = _VIRTUAL.match(sql)
    if not found:
        return None
    module = unquote(found.group(1)).lower()
    columns: list[str] = []
    unindexed: list[str] = []
    options: dict[str, str] = {}
    for raw in split_top_level(found.group(2) or ""):
        arg = raw.strip()
        if not arg:
            continue
        pieces = split_top_level(arg, "=")
        if len(pieces) >= 2 and pieces[0].strip():
            options[unquote(pieces[0].strip()).lower()] = unquote("=".join(pieces[1:]).strip())
            continue
        declared = _WORD.findall(arg)
        if not declared:
            continue
        name = unquote(declared[0])
        columns.append(name)
        if any(w.upper() == "UNINDEXED" for w in declared[1:]):
            unindexed.append(name)
    return VirtualTableDeclaration(module, tuple(columns), tuple(unindexed), options)


def detect_tokenizer(spec: str | None) -> tuple[str | None, str | None]:
    """The FTS5 tokenizer named by a ``tokenize=`` value, and for ``porter`` the tokenizer it wraps.

    No clause (None) means FTS5's default ``unicode61``. Returns ``(None, None)`` for a tokenizer outside
    ``KNOWN_TOKENIZERS`` (or ``porter`` wrapping one outside ``PORTER_PARENTS``): retrieval cannot predict
    how such an index tokenizes, so the schema is incompatible.
    """
    parsed = [w.lower() for w in words(spec)] if spec is not None else ["unicode61"]
    if not parsed or parsed[0] not in KNOWN_TOKENIZERS:
        return None, None
    if parsed[0] != "porter":
        return parsed[0], None
    parent = parsed[1] if len(parsed) > 1 else "unicode61"
    return ("porter", parent) if parent in PORTER_PARENTS else (None, None)


class LiveSchema(NamedTuple):
    columns: dict[str, tuple[str, ...]]  # table -> column names in physical order
    column_types: dict[str, dict[str, str]]
    fts_sql: str | None
    tokenizer: str | None  # first word of the tokenize= clause (default unicode61), None if unknown
    tokenizer_spec: str | None
    fts_content: str | None
    schema_cookie: int
    fts_content_rowid: str | None = None  # the messages_fts ``content_rowid=`` option, None when absent
    tokenizer_wraps: str | None = None  # for ``porter``: the tokenizer it wraps (default unicode61)
    fts_module: str | None = None  # the messages_fts module (``fts5``), None when unparsable or absent

    def has(self, table: str, column: str) -> bool:
        return column in self.columns.get(table, ())


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
        if name.startswith(("sqlite_", "messages_fts_", "memories_fts")) or parse_virtual_table(sql):
            continue  # shadow tables, and virtual tables (connecting one may need an unknown module)
        info = snap.rows("SELECT name, type FROM pragma_table_info(:t) ORDER BY cid", {"t": name})
        columns[name] = tuple(str(r[0]) for r in info)
        types[name] = {str(r[0]): str(r[1] or "").upper() for r in info}
    spec = content = content_rowid = wraps = module = None
    tokenizer: str | None = None
    if fts_sql is not None:
        declared = parse_virtual_table(fts_sql)
        if declared is not None:
            module = declared.module
            spec = declared.options.get("tokenize")
            content = declared.options.get("content")
            content_rowid = declared.options.get("content_rowid")
            if declared.columns:
                columns["messages_fts"] = declared.columns
            if module == "fts5":
                tokenizer, wraps = detect_tokenizer(spec)
    return LiveSchema(columns, types, fts_sql, tokenizer, spec, content, cookie,
                      fts_content_rowid=content_rowid, tokenizer_wraps=wraps, fts_module=module)


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
        if live.fts_module is not None and live.fts_module != "fts5":
            problems.append("messages_fts is not an FTS5 table")
        if (live.fts_content or "").strip().lower() != "messages":
            problems.append("messages_fts content table changed")
        if (live.fts_content_rowid or "rowid").strip().lower() != "rowid":
            problems.append("messages_fts content_rowid changed")
        if live.tokenizer is None:
            problems.append("unknown FTS tokenizer")
    return problems


def unmet_needs(live: LiveSchema, needs: Iterable[tuple[str, str]]) -> list[str]:
    return sorted(f"{t}.{c}" for t, c in needs if not live.has(t, c))
