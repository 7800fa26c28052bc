"""The allow-list authorizer and connection hardening applied to every provider connection.

The authorizer returns DENY (never IGNORE: IGNORE silently turns a column into NULL and would hide a bug) for
everything except reading tables, running SELECT, calling allow-listed functions and the handful of read-only
pragmas that FTS5 and schema introspection issue themselves.
"""

from __future__ import annotations

import apsw

#: SQL functions the templates and schema introspection may call (lower-case, as SQLite reports them).
ALLOWED_FUNCTIONS = frozenset({
    # FTS5
    "match", "bm25", "snippet", "highlight",
    # scalar helpers the templates use
    "coalesce", "ifnull", "nullif", "substr", "substring", "length", "lower", "upper", "instr", "trim",
    "ltrim", "rtrim", "replace", "min", "max", "count", "sum", "abs", "iif", "printf", "like", "glob",
    "json_extract", "unicode", "char", "round", "cast", "typeof",
})

#: Pragmas permitted without an argument (``PRAGMA x`` / reads), and those permitted with a table argument.
_READ_PRAGMAS = frozenset({"data_version", "schema_version"})
_TABLE_PRAGMAS = frozenset({"table_info", "table_xinfo", "index_list", "index_info", "index_xinfo"})
#: Eponymous virtual tables that expose pages, statements, memory or files rather than index content.
_DENIED_READS = frozenset({"dbstat", "sqlite_dbpage", "sqlite_stmt", "sqlite_memstat", "fsdir", "zipfile",
                           "carray", "generate_series", "json_tree", "fts5vocab", "completion"})
_SCHEMA_TABLES = frozenset({"sqlite_schema", "sqlite_master"})
_TRANSACTION_WORDS = frozenset({"BEGIN", "COMMIT", "ROLLBACK", "END"})


def authorizer(action: int, arg1: str | None, arg2: str | None, dbname: str | None,
               trigger: str | None) -> int:
    """apsw authorizer: SQLITE_OK for reads, SQLITE_DENY for everything else."""
    if action == apsw.SQLITE_SELECT:
        return apsw.SQLITE_OK
    if action == apsw.SQLITE_READ:
        table = (arg1 or "").lower()
        if table in _DENIED_READS or (table.startswith("sqlite_") and table not in _SCHEMA_TABLES):
            return apsw.SQLITE_DENY
        # dbname is None for table-valued functions and for count(*)-style whole-table reads.
        return apsw.SQLITE_OK if dbname in ("main", None) else apsw.SQLITE_DENY
    if action == apsw.SQLITE_FUNCTION:
        return apsw.SQLITE_OK if (arg2 or "").lower() in ALLOWED_FUNCTIONS else apsw.SQLITE_DENY
    if action == apsw.SQLITE_PRAGMA:
        name = (arg1 or "").lower()
        if name in _READ_PRAGMAS and arg2 is None:
            return apsw.SQLITE_OK
        if name in _TABLE_PRAGMAS:
            return apsw.SQLITE_OK
        return apsw.SQLITE_DENY
    if action == apsw.SQLITE_TRANSACTION and (arg1 or "").upper() in _TRANSACTION_WORDS:
        # Only the one read transaction the provider opens itself (BEGIN DEFERRED ... COMMIT).
        return apsw.SQLITE_OK
    return apsw.SQLITE_DENY


def harden(conn: apsw.Connection) -> None:
    """Apply every connection-level restriction, then install the authorizer (last, so the pragmas run)."""
    conn.enable_load_extension(False)
    conn.config(apsw.SQLITE_DBCONFIG_DEFENSIVE, 1)
    conn.config(apsw.SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0)
    conn.config(apsw.SQLITE_DBCONFIG_ENABLE_TRIGGER, 0)
    conn.config(apsw.SQLITE_DBCONFIG_ENABLE_VIEW, 0)
    # Double-quoted strings off (as apsw.bestpractice does): "x" is only ever an identifier, as sqlglot reads it
    # when it verifies a template, never a string literal that silently stands in for a missing column.
    conn.config(apsw.SQLITE_DBCONFIG_DQS_DML, 0)
    conn.config(apsw.SQLITE_DBCONFIG_DQS_DDL, 0)
    # A WAL connection tries, on close, to take an EXCLUSIVE lock on the database to checkpoint. A read-only
    # reader can never checkpoint (the attempt fails with SQLITE_IOERR_LOCK, which SQLite swallows, but an
    # interposed VFS surfaces it as an I/O error): never even try to lock the database for writing.
    conn.config(apsw.SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1)
    conn.limit(apsw.SQLITE_LIMIT_ATTACHED, 0)
    conn.limit(apsw.SQLITE_LIMIT_SQL_LENGTH, 64 * 1024)
    # Keep all transient structures (sorters, temp b-trees) in memory: the provider opens no temp files.
    conn.execute("PRAGMA temp_store = MEMORY")
    conn.execute("PRAGMA query_only = ON")
    conn.authorizer = authorizer
