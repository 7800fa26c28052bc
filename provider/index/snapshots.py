"""Normalized, diffable snapshots of an Obelisk database schema, and the differences between two of them.

A snapshot is a JSON object captured from a live database (through the provider's read-only connection),
never typed by hand. It holds:

* ``tables``: ordinary tables (not ``sqlite_*``, not FTS/virtual-table shadow tables, not virtual tables),
  each with its columns in physical order: ``name``, ``type`` (upper-case), ``default`` (the declared
  default's text, or null), ``notnull`` and ``pk`` (position in the primary key, 0 when not part of it);
* ``indexes``: explicitly created indexes (``sqlite_autoindex_*`` follow from the primary keys already
  listed): ``name``, ``table``, ``columns`` (expressions as ``<expr>``; ``DESC`` and non-binary collations
  appended), ``unique`` and ``partial`` (the WHERE clause, whitespace collapsed, or null);
* ``fts``: FTS5 tables, read from their declaration: ``name``, ``columns``, ``unindexed``, ``content``,
  ``content_rowid``, ``tokenizer`` (the ``tokenize=`` value, null = FTS5's default ``unicode61``) and the
  remaining ``options``;
* ``virtual_tables``: other virtual tables (``name``, ``module``);
* ``triggers``: ``name``, ``table``, ``event`` (INSERT/UPDATE/DELETE), ``timing`` (BEFORE/AFTER/INSTEAD OF),
  ``update_of`` columns and the ``body`` with whitespace collapsed.

Every list is sorted by name so a diff of two files is stable. ``id`` names the schema generation,
``captured_from`` says where it came from (a description, never an absolute path) and ``digest`` is the
sha256 of the canonical JSON of everything else: two databases with the same schema have the same digest.
"""

import json
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Final, Literal, NamedTuple

from .._resources import data_dir
from ..digest import canonical_json, content_digest
from .connection import Deadline, ReadSnapshot, read_index
from .live_schema import parse_virtual_table, split_top_level, top_level_positions, unquote, words

SNAPSHOT_FORMAT: Final = 1
SNAPSHOT_DIR: Final = data_dir("schema_snapshots")
#: Keys that describe a snapshot rather than the schema: left out of the digest.
_META_KEYS: Final = ("id", "digest", "captured_from")
#: Shadow-table suffixes of FTS3/4/5 and R*Tree virtual tables.
_SHADOW_SUFFIXES: Final = ("data", "idx", "docsize", "config", "content", "segments", "segdir", "stat",
                           "node", "parent", "rowid")

DifferenceKind = Literal[
    "added_table", "missing_table", "added_column", "missing_column", "retyped_column", "column_order",
    "added_index", "missing_index", "changed_index", "tokenizer_changed", "fts_content_changed",
    "fts_options_changed", "added_trigger", "missing_trigger", "changed_trigger",
]
#: Drift that only adds to the pinned schema: every query written for the pinned schema still reads the
#: same data. Column order counts: the provider selects by name.
ADDITIVE_KINDS: Final[frozenset[str]] = frozenset({
    "added_table", "added_column", "added_index", "added_trigger", "column_order",
})


class Difference(NamedTuple):
    """One way the live schema differs from a pinned snapshot. ``detail`` is schema text, never data. Ordered by
    (kind, object, detail)."""

    kind: DifferenceKind
    object: str  # "table", "table.column", index/trigger name
    detail: str = ""

    @property
    def additive(self) -> bool:
        return self.kind in ADDITIVE_KINDS

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "object": self.object, "detail": self.detail, "additive": self.additive}


# --------------------------------------------------------------------------------------------------------
# capture
# --------------------------------------------------------------------------------------------------------

_SPACE = re.compile(r"\s+")
_WHERE = re.compile(r"\bWHERE\b", re.IGNORECASE)
_TRIGGER = re.compile(
    r"^\s*CREATE\s+(?:TEMP\s+|TEMPORARY\s+)?TRIGGER\s+(?:IF\s+NOT\s+EXISTS\s+)?"
    r"(?P<name>\"(?:[^\"]|\"\")+\"|`[^`]+`|\[[^\]]+\]|[\w.]+)\s+"
    r"(?P<timing>BEFORE\s+|AFTER\s+|INSTEAD\s+OF\s+)?"
    r"(?P<event>DELETE|INSERT|UPDATE)(?:\s+OF\s+(?P<of>.+?))?\s+ON\s+"
    r"(?P<table>\"(?:[^\"]|\"\")+\"|`[^`]+`|\[[^\]]+\]|[\w.]+)\s+"
    r"(?P<rest>.*)$",
    re.IGNORECASE | re.DOTALL,
)
_BEGIN = re.compile(r"\bBEGIN\b(?P<body>.*)\bEND\s*;?\s*$", re.IGNORECASE | re.DOTALL)


def collapse(text: str) -> str:
    """Schema text with every whitespace run (quoted literals included) collapsed to one space."""
    return _SPACE.sub(" ", text).strip()


def _top_level_where(sql: str) -> str | None:
    """The text after the WHERE keyword of a CREATE INDEX statement, outside quotes and parentheses."""
    for at in top_level_positions(sql):
        if sql[at] in "wW" and _WHERE.match(sql, at):
            return collapse(sql[at + 5:]).rstrip(";").strip() or None
    return None


_COLUMN_NAME = re.compile(r'^\s*("(?:[^"]|"")+"|`[^`]+`|\[[^\]]+\]|[^\s(]+)')
_COLLATE = re.compile(r"\bCOLLATE\s+[\"'`\[]?(\w+)", re.IGNORECASE)
_TABLE_CONSTRAINT = ("CONSTRAINT", "PRIMARY", "UNIQUE", "CHECK", "FOREIGN")


def column_collations(create_sql: str) -> dict[str, str]:
    """Declared non-default collations of a CREATE TABLE's columns, by lower-cased column name (BINARY, the
    default, is left out so snapshots of tables without COLLATE clauses stay as they were)."""
    start, end = create_sql.find("("), create_sql.rfind(")")
    if start < 0 or end <= start:
        return {}
    body = create_sql[start + 1:end]
    cuts = [at for at in top_level_positions(body) if body[at] == ","]
    out: dict[str, str] = {}
    for begin, stop in zip([-1, *cuts], [*cuts, len(body)], strict=True):
        part = body[begin + 1:stop]
        name = _COLUMN_NAME.match(part)
        collate = _COLLATE.search(part)
        if not name or not collate or name.group(1).upper() in _TABLE_CONSTRAINT:
            continue
        collation = collate.group(1).upper()
        if collation != "BINARY":
            out[unquote(name.group(1)).lower()] = collation
    return out


def _table_columns(snap: ReadSnapshot, table: str, create_sql: str = "") -> list[dict[str, Any]]:
    info = snap.rows('SELECT name, type, "notnull", dflt_value, pk FROM pragma_table_info(:t) ORDER BY cid',
                     {"t": table})
    collations = column_collations(create_sql)
    columns: list[dict[str, Any]] = []
    for name, ctype, notnull, default, pk in info:
        column: dict[str, Any] = {"name": str(name), "type": str(ctype or "").upper(),
                                  "default": None if default is None else str(default),
                                  "notnull": bool(notnull), "pk": int(pk or 0)}
        if str(name).lower() in collations:
            column["collation"] = collations[str(name).lower()]
        columns.append(column)
    return columns


def _index_entry(snap: ReadSnapshot, name: str, table: str, sql: str, unique: bool) -> dict[str, Any]:
    columns = []
    for _seqno, cid, column, desc, collation in snap.rows(
            'SELECT seqno, cid, name, "desc", coll FROM pragma_index_xinfo(:i) '
            "WHERE key = 1 ORDER BY seqno", {"i": name}):
        text = "<rowid>" if cid == -1 else "<expr>" if column is None else str(column)
        if collation and str(collation).upper() != "BINARY":
            text += f" COLLATE {collation}"
        if desc:
            text += " DESC"
        columns.append(text)
    return {"name": name, "table": table, "columns": columns, "unique": unique,
            "partial": _top_level_where(sql)}


def _fts_entry(name: str, sql: str) -> dict[str, Any] | None:
    declared = parse_virtual_table(sql)
    if declared is None or declared.module != "fts5":
        return None
    options = dict(declared.options)
    tokenizer = options.pop("tokenize", None)
    content = options.pop("content", None)
    content_rowid = options.pop("content_rowid", None)
    return {
        "name": name,
        "columns": list(declared.columns),
        "unindexed": list(declared.unindexed),
        "content": content,
        "content_rowid": content_rowid,
        "tokenizer": None if tokenizer is None else " ".join(words(tokenizer)),
        "options": {key: collapse(value) for key, value in sorted(options.items())},
    }


def _trigger_entry(name: str, table: str, sql: str) -> dict[str, Any]:
    found = _TRIGGER.match(sql)
    if not found:  # an unparsable trigger is still recorded, with its whole text as the body
        return {"name": name, "table": table, "event": None, "timing": None, "update_of": [],
                "body": collapse(sql)}
    of = found.group("of")
    body_match = _BEGIN.search(found.group("rest"))
    body = body_match.group("body") if body_match else found.group("rest")
    return {
        "name": name,
        "table": table,
        "event": found.group("event").upper(),
        "timing": collapse((found.group("timing") or "BEFORE").upper()),
        "update_of": [unquote(c.strip()) for c in split_top_level(of)] if of else [],
        "body": collapse(body),
    }


def compute_digest(snapshot: dict[str, Any]) -> str:
    """sha256 of the canonical JSON of the snapshot minus ``id``, ``digest`` and ``captured_from``."""
    return content_digest({key: value for key, value in snapshot.items() if key not in _META_KEYS})


def capture(snap: ReadSnapshot, *, snapshot_id: str = "live", captured_from: str = "a live database") -> \
        dict[str, Any]:
    """The normalized schema snapshot of the database behind ``snap`` (read inside its transaction)."""
    schema = [(str(kind), str(name), str(table), str(sql or "")) for kind, name, table, sql in snap.rows(
        "SELECT type, name, tbl_name, sql FROM sqlite_schema ORDER BY name")]
    virtual = {name: sql for kind, name, _t, sql in schema
               if kind == "table" and parse_virtual_table(sql) is not None}
    shadows = {f"{vtab}_{suffix}" for vtab in virtual for suffix in _SHADOW_SUFFIXES}
    tables: list[dict[str, Any]] = []
    fts: list[dict[str, Any]] = []
    others: list[dict[str, Any]] = []
    for kind, name, _table, sql in schema:
        if kind != "table" or name.startswith("sqlite_") or name in shadows:
            continue
        if name in virtual:
            entry = _fts_entry(name, sql)
            if entry is not None:
                fts.append(entry)
            else:
                declared = parse_virtual_table(sql)
                others.append({"name": name, "module": declared.module if declared else None})
            continue
        tables.append({"name": name, "columns": _table_columns(snap, name, sql)})
    uniques = {}
    for entry in tables:
        for index_name, unique in snap.rows('SELECT name, "unique" FROM pragma_index_list(:t)',
                                            {"t": entry["name"]}):
            uniques[str(index_name)] = bool(unique)
    indexes = [_index_entry(snap, name, table, sql, uniques.get(name, False))
               for kind, name, table, sql in schema
               if kind == "index" and not name.startswith("sqlite_") and sql]
    triggers = [_trigger_entry(name, table, sql) for kind, name, table, sql in schema if kind == "trigger"]
    snapshot: dict[str, Any] = {
        "format": SNAPSHOT_FORMAT,
        "id": snapshot_id,
        "captured_from": captured_from,
        "tables": sorted(tables, key=lambda e: e["name"]),
        "indexes": sorted(indexes, key=lambda e: e["name"]),
        "fts": sorted(fts, key=lambda e: e["name"]),
        "virtual_tables": sorted(others, key=lambda e: e["name"]),
        "triggers": sorted(triggers, key=lambda e: e["name"]),
    }
    snapshot["digest"] = compute_digest(snapshot)
    return snapshot


def capture_file(db_path: Path, *, snapshot_id: str, captured_from: str, deadline_ms: int = 10_000) -> \
        dict[str, Any]:
    """Capture the snapshot of the database at ``db_path`` through the provider's read-only connection."""
    result, _mode = read_index(db_path, lambda snap: capture(snap, snapshot_id=snapshot_id,
                                                             captured_from=captured_from),
                               deadline=Deadline(deadline_ms))
    return result


def render(snapshot: dict[str, Any]) -> str:
    """The committed form: pretty-printed, sorted keys, one trailing newline."""
    return json.dumps(snapshot, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


class SnapshotError(ValueError):
    """A pinned snapshot file is malformed or its digest does not match its content (edited by hand)."""


def validate(snapshot: object, origin: str) -> dict[str, Any]:
    if not isinstance(snapshot, dict):
        raise SnapshotError(f"{origin}: not a JSON object")
    for key in ("id", "digest", "tables", "indexes", "fts", "triggers"):
        if key not in snapshot:
            raise SnapshotError(f"{origin}: lacks {key!r}")
    if compute_digest(snapshot) != snapshot["digest"]:
        raise SnapshotError(f"{origin}: digest does not match the content (re-capture it with the tool)")
    return snapshot


def load_snapshots(directory: Path = SNAPSHOT_DIR) -> list[dict[str, Any]]:
    """Every pinned snapshot in ``directory``, validated, sorted by id."""
    found = []
    for path in sorted(directory.glob("*.json")):
        try:
            loaded = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise SnapshotError(f"{path.name}: unreadable ({type(exc).__name__})") from None
        found.append(validate(loaded, path.name))
    ids = [s["id"] for s in found]
    if len(ids) != len(set(ids)):
        raise SnapshotError("two snapshots share an id")
    return sorted(found, key=lambda s: str(s["id"]))


# --------------------------------------------------------------------------------------------------------
# diff
# --------------------------------------------------------------------------------------------------------


def _by_name(entries: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {str(e["name"]): e for e in entries}


def _declaration(column: dict[str, Any]) -> str:
    text = column.get("type") or "(no type)"
    if column.get("notnull"):
        text += " NOT NULL"
    if column.get("collation"):
        text += f" COLLATE {column['collation']}"
    if column.get("default") is not None:
        text += f" DEFAULT {column['default']}"
    if column.get("pk"):
        text += f" PK{column['pk']}"
    return str(text)


def _diff_columns(table: str, live: Sequence[dict[str, Any]], pinned: Sequence[dict[str, Any]]) -> \
        list[Difference]:
    out: list[Difference] = []
    live_cols, pinned_cols = _by_name(live), _by_name(pinned)
    for name in sorted(set(live_cols) - set(pinned_cols)):
        out.append(Difference("added_column", f"{table}.{name}", _declaration(live_cols[name])))
    for name in sorted(set(pinned_cols) - set(live_cols)):
        out.append(Difference("missing_column", f"{table}.{name}", _declaration(pinned_cols[name])))
    for name in sorted(set(live_cols) & set(pinned_cols)):
        was, now = _declaration(pinned_cols[name]), _declaration(live_cols[name])
        if was != now:
            out.append(Difference("retyped_column", f"{table}.{name}", f"{was} -> {now}"))
    common = set(live_cols) & set(pinned_cols)
    live_order = [str(c["name"]) for c in live if c["name"] in common]
    pinned_order = [str(c["name"]) for c in pinned if c["name"] in common]
    if live_order != pinned_order:
        out.append(Difference("column_order", table,
                              f"{', '.join(pinned_order)} -> {', '.join(live_order)}"))
    return out


def _index_text(index: dict[str, Any]) -> str:
    columns = ", ".join(index.get("columns", []))
    text = f"{'UNIQUE ' if index.get('unique') else ''}{index.get('table')}({columns})"
    if index.get("partial"):
        text += f" WHERE {index['partial']}"
    return text


def _trigger_text(trigger: dict[str, Any]) -> str:
    of = f" OF {', '.join(trigger.get('update_of') or [])}" if trigger.get("update_of") else ""
    return f"{trigger.get('timing')} {trigger.get('event')}{of} ON {trigger.get('table')}"


def _diff_fts(name: str, live: dict[str, Any], pinned: dict[str, Any]) -> list[Difference]:
    out: list[Difference] = []
    if live.get("tokenizer") != pinned.get("tokenizer"):
        out.append(Difference("tokenizer_changed", name,
                              f"{pinned.get('tokenizer') or 'unicode61 (default)'} -> "
                              f"{live.get('tokenizer') or 'unicode61 (default)'}"))
    for key in ("content", "content_rowid"):
        if live.get(key) != pinned.get(key):
            out.append(Difference("fts_content_changed", name,
                                  f"{key}: {pinned.get(key)} -> {live.get(key)}"))
    as_columns = [{"name": c, "type": "UNINDEXED" if c in pinned.get("unindexed", []) else ""}
                  for c in pinned.get("columns", [])]
    live_columns = [{"name": c, "type": "UNINDEXED" if c in live.get("unindexed", []) else ""}
                    for c in live.get("columns", [])]
    out.extend(_diff_columns(name, live_columns, as_columns))
    if live.get("options", {}) != pinned.get("options", {}):
        out.append(Difference("fts_options_changed", name,
                              f"{canonical_json(pinned.get('options', {})).decode()} -> "
                              f"{canonical_json(live.get('options', {})).decode()}"))
    return out


def diff(live: dict[str, Any], pinned: dict[str, Any]) -> list[Difference]:
    """Every difference of ``live`` from ``pinned``, sorted (kind, object)."""
    out: list[Difference] = []
    live_tables = {**_by_name(live.get("tables", [])), **_by_name(live.get("virtual_tables", []))}
    pinned_tables = {**_by_name(pinned.get("tables", [])), **_by_name(pinned.get("virtual_tables", []))}
    live_fts, pinned_fts = _by_name(live.get("fts", [])), _by_name(pinned.get("fts", []))
    live_all, pinned_all = set(live_tables) | set(live_fts), set(pinned_tables) | set(pinned_fts)
    out.extend(Difference("added_table", name, "fts5" if name in live_fts else "")
               for name in sorted(live_all - pinned_all))
    out.extend(Difference("missing_table", name, "fts5" if name in pinned_fts else "")
               for name in sorted(pinned_all - live_all))
    for name in sorted(live_all & pinned_all):
        if (name in live_fts) != (name in pinned_fts):
            out.append(Difference("missing_table", name, "the table changed kind (FTS5 / ordinary)"))
        elif name in live_fts:
            out.extend(_diff_fts(name, live_fts[name], pinned_fts[name]))
        elif "columns" in live_tables[name] or "columns" in pinned_tables[name]:
            out.extend(_diff_columns(name, live_tables[name].get("columns", []),
                                     pinned_tables[name].get("columns", [])))
    live_idx, pinned_idx = _by_name(live.get("indexes", [])), _by_name(pinned.get("indexes", []))
    out.extend(Difference("added_index", n, _index_text(live_idx[n]))
               for n in sorted(set(live_idx) - set(pinned_idx)))
    out.extend(Difference("missing_index", n, _index_text(pinned_idx[n]))
               for n in sorted(set(pinned_idx) - set(live_idx)))
    for name in sorted(set(live_idx) & set(pinned_idx)):
        was, now = _index_text(pinned_idx[name]), _index_text(live_idx[name])
        if was != now:
            out.append(Difference("changed_index", name, f"{was} -> {now}"))
    live_trg, pinned_trg = _by_name(live.get("triggers", [])), _by_name(pinned.get("triggers", []))
    out.extend(Difference("added_trigger", n, _trigger_text(live_trg[n]))
               for n in sorted(set(live_trg) - set(pinned_trg)))
    out.extend(Difference("missing_trigger", n, _trigger_text(pinned_trg[n]))
               for n in sorted(set(pinned_trg) - set(live_trg)))
    for name in sorted(set(live_trg) & set(pinned_trg)):
        old_trg, new_trg = pinned_trg[name], live_trg[name]
        if _trigger_text(old_trg) != _trigger_text(new_trg):
            out.append(Difference("changed_trigger", name,
                                  f"{_trigger_text(old_trg)} -> {_trigger_text(new_trg)}"))
        elif old_trg.get("body") != new_trg.get("body"):
            out.append(Difference("changed_trigger", name, "body changed"))
    return sorted(out)


def nearest(live: dict[str, Any], snapshots: Sequence[dict[str, Any]]) -> \
        tuple[dict[str, Any] | None, list[Difference]]:
    """The pinned snapshot with the fewest differences from ``live`` (ties: the smaller id), and them.

    A snapshot whose digest equals the live digest is always nearest (it has no difference).
    """
    best: tuple[int, str] | None = None
    chosen: tuple[dict[str, Any] | None, list[Difference]] = (None, [])
    exact = min((str(p.get("id")) for p in snapshots if p.get("digest") == live.get("digest")), default=None)
    for pinned in snapshots:
        if exact is not None and str(pinned.get("id")) > exact:
            continue  # ranks after the exact snapshot (no difference, a smaller id) whatever its differences
        found = [] if pinned.get("digest") == live.get("digest") else diff(live, pinned)
        rank = (len(found), str(pinned.get("id")))
        if best is None or rank < best:
            best, chosen = rank, (pinned, found)
    return chosen
