"""What the rules allow and forbid: index tables, table functions, SQL functions and AST node names."""

from __future__ import annotations

#: Tables of the Obelisk index a template may read.
ALLOWED_TABLES = frozenset({
    "sessions", "messages", "tool_calls", "tool_results", "summaries", "subagents", "messages_fts",
})
#: Tables whose referenced columns must be declared in the template's ``needs`` header.
NEEDS_TABLES = ALLOWED_TABLES
#: FTS5 tables: the table-named column and ``rank`` are hidden columns, not schema columns.
FTS_TABLES = frozenset({"messages_fts"})
#: Columns every rowid table has without declaring them.
IMPLICIT_COLUMNS = frozenset({"rowid", "oid", "_rowid_"})
#: Columns of the ``json_each`` table-valued function.
JSON_EACH_COLUMNS = frozenset({
    "key", "value", "type", "atom", "id", "parent", "fullkey", "path", "json", "root",
})
TABLE_FUNCTIONS = frozenset({"json_each"})

SCOPE_CTE = "scope_sessions"
#: Columns that hold a row's time (ISO-8601 text); the ``:until`` bound compares one of them.
TIME_COLUMNS = frozenset({"timestamp", "started_at", "ended_at", "created_at"})

#: Functions sqlglot does not type (``exp.Anonymous``), by lower-case name. FTS5 auxiliaries and SQLite
#: built-ins that the connection's authorizer also permits (provider/index/guard.py).
ALLOWED_ANONYMOUS = frozenset({
    "bm25", "snippet", "highlight", "printf", "iif", "instr", "substr", "substring", "length", "lower",
    "upper", "coalesce", "ifnull", "nullif", "trim", "ltrim", "rtrim", "replace", "min", "max", "count",
    "sum", "abs", "round", "unicode", "char",
})
#: Typed function nodes (sqlglot class names), looked up defensively: a class missing from the installed
#: sqlglot is simply not allowed. ``max(a, b)``/``min(a, b)`` parse to Greatest/Least, ``iif`` to If,
#: ``instr`` to StrPosition, ``ifnull`` to Coalesce, ``char`` to Chr.
ALLOWED_FUNCTION_NODES = (
    "Count", "Min", "Max", "Sum", "Greatest", "Least", "Coalesce", "Nullif", "Substring", "Length", "Lower",
    "Upper", "StrPosition", "Trim", "Replace", "Abs", "Round", "Unicode", "Chr", "Cast", "Case", "If",
)
#: Func subclasses that are syntax rather than function calls.
SYNTAX_FUNC_NODES = ("Connector", "Exists")
#: Statement and command nodes that may not appear anywhere in a template.
FORBIDDEN_NODES = (
    "Insert", "Update", "Delete", "Create", "Drop", "Alter", "AlterColumn", "Command", "Pragma", "Attach",
    "Detach", "Transaction", "Merge", "Analyze", "Use", "Set", "Commit", "Rollback", "TruncateTable",
    "Copy", "LoadData", "Grant", "Revoke", "Describe", "Show", "Kill", "Cache", "Uncache", "Refresh",
    "Declare", "Execute", "Returning", "Into",
)
SET_OPERATION_NODES = ("Union", "Intersect", "Except", "SetOperation")
