"""Static verification of the SQL templates: each one is a single, scoped, bounded, read-only SELECT.

The check walks sqlglot's AST of the template text (dialect ``sqlite``). The AST is only inspected: the
provider always executes the original text, because regenerated SQL can differ in ways that matter to SQLite
(sqlglot drops a unary ``+``, which changes the query plan).

Rules (the names appear in ``TemplateViolation.rules`` and in error details; messages never carry SQL text):

* ``parse_error``, ``single_statement``, ``not_select``, ``unparsed_command``, ``forbidden_statement``,
  ``set_operation``: exactly one statement, a SELECT, with no UNION/INTERSECT/EXCEPT and no write, DDL,
  pragma, attach or transaction node anywhere (sqlglot's ``Command`` fallback counts as a violation).
* ``nested_with``, ``recursive_cte``, ``duplicate_cte``, ``cte_shadows_table``: one top-level, non-recursive
  WITH whose names do not hide a real table.
* ``table_allowlist``, ``qualified_table``, ``alias_shadows_table``, ``table_function_argument``,
  ``nested_join``, ``implicit_join_columns``: only the index tables, the statement's CTEs and
  ``json_each(:param)``, joined with explicit ON conditions.
* ``function_allowlist``, ``star_projection``: only allow-listed functions; no ``*`` except in ``count(*)``.
* ``unnamed_placeholder``, ``parameter_syntax``, ``dollar_parameter``, ``undeclared_param``, ``unused_param``,
  ``duplicate_param``: only ``:name`` placeholders, exactly the declared ones.
* ``scope_cte_missing``, ``scope_cte_shape``, ``scope_sources``, ``scope_roots``, ``scope_since``: the
  ``scope_sessions`` CTE reads ``sessions`` alone and has the three scope predicates as top-level conjuncts.
* ``outer_source``, ``outer_scope_filter``, ``visibility``, ``is_meta``, ``limit_placeholder``,
  ``projection_subquery``: the outer SELECT reads only index tables and ``scope_sessions``, keeps rows of
  scoped sessions only, filters hidden and meta rows, is bounded by ``LIMIT :limit``, and computes its output
  columns from no other table.
* ``qualified_column``, ``unresolved_column``, ``ambiguous_column``, ``column_not_in_needs``: every column of
  an index table that the template reads is declared in its ``needs`` header (the live schema check relies
  on that list).

``ensure_verified`` runs the check once per (template digest, sqlglot version, verifier digest) and caches
positive verdicts in a small JSON file, so that a warm start does not import sqlglot at all.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import json
import logging
import os
import re
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar

from provider.errors import TemplateRejected


class _LazyModule:
    """A module imported on first attribute access: importing sqlglot costs ~100 ms of cold start, which a
    warm verdict cache avoids entirely."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        value = getattr(importlib.import_module(self._name), attr)
        setattr(self, attr, value)  # later lookups bypass __getattr__
        return value


if TYPE_CHECKING:
    from sqlglot import exp

    from provider.retrieval.templates import Template
else:
    exp = _LazyModule("sqlglot.expressions")

T = TypeVar("T")

__all__ = ["TemplateViolation", "Violation", "ensure_verified", "verify_sql", "verify_template"]

#: Bump when the rules change in a way the verifier's own file digest would not show.
RULESET_VERSION = 1

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
_SYNTAX_FUNC_NODES = ("Connector", "Exists")
#: Statement and command nodes that may not appear anywhere in a template.
FORBIDDEN_NODES = (
    "Insert", "Update", "Delete", "Create", "Drop", "Alter", "AlterColumn", "Command", "Pragma", "Attach",
    "Detach", "Transaction", "Merge", "Analyze", "Use", "Set", "Commit", "Rollback", "TruncateTable",
    "Copy", "LoadData", "Grant", "Revoke", "Describe", "Show", "Kill", "Cache", "Uncache", "Refresh",
    "Declare", "Execute", "Returning", "Into",
)
SET_OPERATION_NODES = ("Union", "Intersect", "Except", "SetOperation")

_CACHE_FILENAME = "template-verdicts.json"
_CACHE_FORMAT = 1
_CACHE_MAX_BYTES = 256 * 1024
_CACHE_MAX_ENTRIES = 512
_VERSION_RE = re.compile(r"[0-9][0-9A-Za-z.+!_]*")
_KEY_RE = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class Violation:
    """One broken rule. ``subject`` is a table or parameter name, or empty; never SQL text."""

    rule: str
    subject: str = ""

    def __str__(self) -> str:
        return f"{self.rule}({self.subject})" if self.subject else self.rule


class TemplateViolation(Exception):
    """A template (or raw SQL) broke one or more rules; the message names the rules only."""

    def __init__(self, violations: Sequence[Violation]) -> None:
        unique = tuple(dict.fromkeys(violations))
        if not unique:
            unique = (Violation("unknown"),)
        self.violations: tuple[Violation, ...] = unique
        self.rules: tuple[str, ...] = tuple(dict.fromkeys(v.rule for v in unique))
        super().__init__("template violates " + ", ".join(str(v) for v in unique))

    @property
    def rule(self) -> str:
        """The first rule broken."""
        return self.rules[0]


# --- public API -------------------------------------------------------------------------------------------


def verify_template(t: Template) -> None:
    """Raise ``TemplateViolation`` unless ``t`` is one scoped, bounded SELECT over declared columns."""
    _raise_if(_check(t.sql, declared_params=t.params, needs=t.needs))


def verify_sql(sql: str, *, declared_params: Sequence[str],
               needs: Collection[tuple[str, str]] | None = None) -> None:
    """The template rules for raw SQL. ``needs`` None skips the column-declaration rule."""
    _raise_if(_check(sql, declared_params=declared_params, needs=needs))


def ensure_verified(templates: Sequence[Template], *, cache_dir: Path | None) -> None:
    """Verify every template, at most once per (digest, sqlglot version), or raise ``TemplateRejected``.

    Positive verdicts are cached in ``cache_dir`` (default: the user cache directory). When every template
    is already verified for the installed sqlglot, sqlglot is not imported. An unreadable or unwritable
    cache only means the templates are verified again.
    """
    version = _sqlglot_version()
    if version is None:
        raise TemplateRejected("template verifier unavailable: sqlglot is not installed")
    salt = _verifier_salt()
    directory = _resolve_cache_dir(cache_dir) if salt is not None else None
    keys = {t.digest: _verdict_key(t.digest, version, salt) for t in templates} if salt is not None else {}
    cached = _read_cache(directory) if directory is not None else set()
    pending = [t for t in templates if keys.get(t.digest) not in cached]
    if not pending:
        return
    failures: list[str] = []
    passed: set[str] = set()
    for t in pending:
        try:
            verify_template(t)
        except TemplateViolation as exc:
            failures.append(f"{t.id} v{t.version}: {', '.join(exc.rules)}")
        except ImportError:
            raise TemplateRejected("template verifier unavailable: sqlglot cannot be imported") from None
        except Exception:  # noqa: BLE001 - a verifier that cannot decide (e.g. a changed AST) rejects
            failures.append(f"{t.id} v{t.version}: verifier_error")
        else:
            if t.digest in keys:
                passed.add(keys[t.digest])
    if directory is not None and passed:
        _write_cache(directory, cached | passed)
    if failures:
        raise TemplateRejected("template failed static verification: " + "; ".join(failures))


# --- verdict cache ----------------------------------------------------------------------------------------


def _sqlglot_version() -> str | None:
    """The installed sqlglot version, read without importing sqlglot (from its dist-info directory name,
    else from importlib.metadata, which costs ~20 ms)."""
    try:
        spec = importlib.util.find_spec("sqlglot")
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if spec.origin:
        site = Path(spec.origin).resolve().parent.parent
        try:
            found = [p.name for p in site.iterdir()
                     if p.name.startswith("sqlglot-") and p.name.endswith(".dist-info")]
        except OSError:
            found = []
        if len(found) == 1:
            candidate = found[0][len("sqlglot-"):-len(".dist-info")]
            if _VERSION_RE.fullmatch(candidate):
                return candidate
    try:
        metadata = importlib.import_module("importlib.metadata")
        found_version: str = metadata.version("sqlglot")
    except Exception:  # noqa: BLE001 - PackageNotFoundError or a broken install: version unknown
        return None
    return found_version


def _verifier_salt() -> str | None:
    """The ruleset version and this file's digest: a verdict cached by other rules is never reused."""
    try:
        own = Path(__file__).read_bytes()
    except OSError:
        return None
    return f"{RULESET_VERSION}:{hashlib.sha256(own).hexdigest()}"


def _verdict_key(digest: str, version: str, salt: str | None) -> str:
    return hashlib.sha256(f"{digest}\0{version}\0{salt}".encode()).hexdigest()


def _resolve_cache_dir(cache_dir: Path | None) -> Path | None:
    if cache_dir is not None:
        return cache_dir
    try:
        platformdirs = importlib.import_module("platformdirs")
        return Path(platformdirs.user_cache_dir("obelisk-session-evidence"))
    except Exception:  # noqa: BLE001 - no cache directory only means no cache
        return None


def _read_cache(directory: Path) -> set[str]:
    try:
        with open(directory / _CACHE_FILENAME, "rb") as fh:
            raw = fh.read(_CACHE_MAX_BYTES + 1)
        if len(raw) > _CACHE_MAX_BYTES:
            return set()
        data = json.loads(raw)
    except (OSError, ValueError):
        return set()
    if not isinstance(data, dict) or data.get("format") != _CACHE_FORMAT:
        return set()
    verified = data.get("verified")
    if not isinstance(verified, list):
        return set()
    return {key for key in verified if isinstance(key, str) and _KEY_RE.fullmatch(key)}


def _write_cache(directory: Path, keys: set[str]) -> None:
    """Write the verdicts atomically (temp file in the same directory, then rename); ignore any failure."""
    payload = json.dumps({"format": _CACHE_FORMAT, "verified": sorted(keys)[-_CACHE_MAX_ENTRIES:]})
    tmp: Path | None = None
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        candidate = directory / f".{_CACHE_FILENAME}.{os.getpid()}.{os.urandom(6).hex()}.tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(candidate, flags, 0o600)
        tmp = candidate
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            os.fchmod(fh.fileno(), 0o600)
            fh.write(payload)
        os.replace(tmp, directory / _CACHE_FILENAME)
        tmp = None
    except OSError:
        pass
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


# --- the AST check ----------------------------------------------------------------------------------------


def _raise_if(violations: list[Violation]) -> None:
    if violations:
        raise TemplateViolation(violations)


def _load_sqlglot() -> ModuleType:
    """Import sqlglot and keep its logger (fallback-to-Command warnings) off the provider's stderr."""
    logger = logging.getLogger("sqlglot")
    if not any(isinstance(h, logging.NullHandler) for h in logger.handlers):
        logger.addHandler(logging.NullHandler())
    logger.propagate = False
    logger.setLevel(logging.CRITICAL + 1)
    return importlib.import_module("sqlglot")


def _node_types(names: Sequence[str]) -> tuple[type, ...]:
    """The AST classes of these names that the installed sqlglot defines (a missing one is skipped)."""
    base = getattr(exp, "Expr", None) or exp.Expression  # sqlglot 30 split Expr out of Expression
    found: list[type] = []
    for name in names:
        cls = getattr(exp, name, None)
        if isinstance(cls, type) and issubclass(cls, base):
            found.append(cls)
    return tuple(found)


def _check(sql: str, *, declared_params: Sequence[str],
           needs: Collection[tuple[str, str]] | None) -> list[Violation]:
    sqlglot = _load_sqlglot()
    try:
        parsed = sqlglot.parse(sql, read="sqlite")
    except Exception:  # noqa: BLE001 - any parser failure (ParseError, TokenError, ...) is a rejection
        return [Violation("parse_error")]
    statements: list[exp.Expression] = [s for s in parsed if s is not None]
    if len(statements) != 1:
        return [Violation("single_statement")]
    root = statements[0]
    structural: list[Violation] = []
    command = _node_types(("Command",))
    forbidden = _node_types(FORBIDDEN_NODES)
    set_ops = _node_types(SET_OPERATION_NODES)
    for node in root.walk():
        if command and isinstance(node, command):
            structural.append(Violation("unparsed_command"))
        elif forbidden and isinstance(node, forbidden):
            structural.append(Violation("forbidden_statement"))
        elif set_ops and isinstance(node, set_ops):
            structural.append(Violation("set_operation"))
    if not isinstance(root, exp.Select):
        return [*structural, Violation("not_select")]
    if structural:
        return structural
    checker = _Checker(root, declared_params, needs)
    checker.run()
    return checker.violations


def _arg(node: exp.Expression, *names: str) -> Any:
    """An AST argument under any of its historical names (sqlglot 30 renamed ``from``/``with``)."""
    for name in names:
        value = node.args.get(name)
        if value is not None:
            return value
    return None


def _lower(name: str | None) -> str:
    return (name or "").lower()


def _conjuncts(node: exp.Expression | None) -> Iterator[exp.Expression]:
    """Top-level AND terms of a condition (parentheses unwrapped); nothing under OR/NOT is a conjunct."""
    if node is None:
        return
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.And):
        yield from _conjuncts(node.this)
        yield from _conjuncts(node.expression)
    else:
        yield node


def _disjuncts(node: exp.Expression | None) -> Iterator[exp.Expression]:
    if node is None:
        return
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Or):
        yield from _disjuncts(node.this)
        yield from _disjuncts(node.expression)
    else:
        yield node


def _where(select: exp.Expression) -> exp.Expression | None:
    where = select.args.get("where")
    return where.this if where is not None else None


def _unparen(node: exp.Expression) -> exp.Expression:
    while isinstance(node, exp.Paren):
        node = node.this
    return node


def _from_and_joins(select: exp.Expression) -> list[exp.Expression]:
    """The relations a SELECT reads directly: its FROM item(s) and every JOIN's item."""
    items: list[exp.Expression] = []
    from_ = _arg(select, "from_", "from")
    if from_ is not None:
        if from_.this is not None:
            items.append(from_.this)
        items.extend(from_.expressions or [])
    for join in select.args.get("joins") or []:
        items.append(join.this)
    return items


@dataclass(frozen=True)
class _Source:
    kind: str  # "table" (an index table), "cte", "json_each", "derived", "other"
    name: str  # table or CTE name, lower-case
    columns: frozenset[str] = frozenset()  # known output columns of a CTE, derived table or json_each


def _is_json_each(table: exp.Expression) -> bool:
    return isinstance(table, exp.Table) and isinstance(table.this, exp.Anonymous) \
        and _lower(table.this.name) in TABLE_FUNCTIONS


def _placeholder_name(node: exp.Expression | None) -> str | None:
    if isinstance(node, exp.Placeholder) and isinstance(node.this, str) and node.this:
        return node.this
    return None


class _Checker:
    def __init__(self, root: exp.Select, declared_params: Sequence[str],
                 needs: Collection[tuple[str, str]] | None) -> None:
        self.root = root
        self.declared = list(declared_params)
        self.needs = {(_lower(t), _lower(c)) for t, c in needs} if needs is not None else None
        self.violations: list[Violation] = []
        self.ctes: dict[str, exp.Expression] = {}
        self._sources_cache: dict[int, dict[str, _Source]] = {}
        self._nodes: list[exp.Expr] = list(root.walk())  # one walk, filtered by each rule

    def nodes(self, kind: type[T]) -> list[T]:
        return [node for node in self._nodes if isinstance(node, kind)]

    def fail(self, rule: str, subject: str = "") -> None:
        self.violations.append(Violation(rule, subject))

    def run(self) -> None:
        self.check_ctes()
        self.check_tables()
        self.check_joins()
        self.check_functions()
        self.check_placeholders()
        self.check_scope_cte()
        self.check_outer()
        self.check_columns()

    # -- CTEs, tables, functions, placeholders --------------------------------------------------------

    def check_ctes(self) -> None:
        top = _arg(self.root, "with_", "with")
        for node in self.nodes(exp.With):
            if node is not top:
                self.fail("nested_with")
        if top is None:
            return
        if top.args.get("recursive"):
            self.fail("recursive_cte")
        for cte in top.expressions:
            name = _lower(cte.alias)
            if name in self.ctes:
                self.fail("duplicate_cte", name)
            if name in ALLOWED_TABLES:
                self.fail("cte_shadows_table", name)
            self.ctes[name] = cte.this

    def check_tables(self) -> None:
        for table in self.nodes(exp.Table):
            if isinstance(table.parent, exp.Table) and table.arg_key == "indexed":
                continue  # INDEXED BY <index name>
            if isinstance(table.this, exp.Anonymous):
                fname = _lower(table.this.name)
                if fname not in TABLE_FUNCTIONS:
                    self.fail("table_allowlist", fname)
                elif len(table.this.expressions) != 1 or _placeholder_name(table.this.expressions[0]) is None:
                    self.fail("table_function_argument", fname)
            elif isinstance(table.this, exp.Identifier):
                name = _lower(table.name)
                if table.args.get("db") is not None or table.args.get("catalog") is not None:
                    self.fail("qualified_table", name)
                if name not in ALLOWED_TABLES and name not in self.ctes:
                    self.fail("table_allowlist", name)
            else:
                self.fail("table_allowlist")
            if table.args.get("joins"):
                self.fail("nested_join")  # FROM (a JOIN b): sources hidden from the outer checks
            alias = _lower(table.alias)
            own = _lower(table.name) if isinstance(table.this, exp.Identifier) else ""
            if alias and alias != own and (alias in ALLOWED_TABLES or alias in self.ctes):
                self.fail("alias_shadows_table", alias)

    def check_joins(self) -> None:
        """NATURAL joins and USING lists read columns that no ``exp.Column`` names (invisible to needs)."""
        for join in self.nodes(exp.Join):
            if join.args.get("using") or str(join.args.get("method") or "").lower() == "natural":
                self.fail("implicit_join_columns")

    def check_functions(self) -> None:
        allowed = _node_types(ALLOWED_FUNCTION_NODES)
        syntax = _node_types(_SYNTAX_FUNC_NODES)
        for node in self.nodes(exp.Func):
            if syntax and isinstance(node, syntax):
                continue
            if isinstance(node, exp.Anonymous):
                fname = _lower(node.name)
                if fname in TABLE_FUNCTIONS and isinstance(node.parent, exp.Table) \
                        and node.arg_key == "this":
                    continue
                if fname not in ALLOWED_ANONYMOUS:
                    self.fail("function_allowlist")
            elif not (allowed and isinstance(node, allowed)):
                self.fail("function_allowlist")
        for star in self.nodes(exp.Star):
            if not isinstance(star.parent, exp.Count):
                self.fail("star_projection")

    def check_placeholders(self) -> None:
        used: set[str] = set()
        for node in self._nodes:
            if isinstance(node, exp.Placeholder):
                name = _placeholder_name(node)
                if name is None:
                    self.fail("unnamed_placeholder")
                else:
                    used.add(name)
            elif isinstance(node, exp.Parameter):
                self.fail("parameter_syntax")
            elif isinstance(node, exp.Identifier) and str(node.this).startswith(("$", "@", "?", ":")):
                self.fail("dollar_parameter")
        declared = set(self.declared)
        if len(declared) != len(self.declared):
            self.fail("duplicate_param")
        for name in sorted(used - declared):
            self.fail("undeclared_param", name)
        for name in sorted(declared - used):
            self.fail("unused_param", name)

    # -- scope CTE ------------------------------------------------------------------------------------

    def check_scope_cte(self) -> None:
        body = self.ctes.get(SCOPE_CTE)
        if body is None:
            self.fail("scope_cte_missing")
            return
        if not isinstance(body, exp.Select):
            self.fail("scope_cte_shape")
            return
        items = _from_and_joins(body)
        if len(items) != 1 or not isinstance(items[0], exp.Table) or _is_json_each(items[0]) \
                or _lower(items[0].name) != "sessions":
            self.fail("scope_cte_shape")
            return
        alias = _lower(items[0].alias_or_name)
        ids = [e for e in body.expressions if _lower(e.alias_or_name) == "id"]
        if len(ids) != 1 or not self._is_column(ids[0].unalias(), alias, "id"):
            self.fail("scope_cte_shape")
        conjuncts = list(_conjuncts(_where(body)))
        if not any(self._is_sources_filter(c, alias) for c in conjuncts):
            self.fail("scope_sources", "sources")
        if not any(self._is_roots_filter(c, alias) for c in conjuncts):
            self.fail("scope_roots", "roots")
        if not any(self._is_since_filter(c, alias) for c in conjuncts):
            self.fail("scope_since", "since")

    @staticmethod
    def _is_column(node: exp.Expression | None, alias: str | None, name: str) -> bool:
        """``alias.name`` (or a bare ``name`` when ``alias`` is None)."""
        if not isinstance(node, exp.Column) or not isinstance(node.this, exp.Identifier):
            return False
        if _lower(node.name) != name or node.args.get("db") is not None:
            return False
        return _lower(node.table) == alias if alias is not None else not node.table

    @staticmethod
    def _json_each_select(node: exp.Expression | None, param: str) -> exp.Select | None:
        """``node`` when it is a SELECT reading exactly ``json_each(:param)`` and nothing else."""
        if isinstance(node, exp.Subquery):
            node = node.this
        if not isinstance(node, exp.Select) or _arg(node, "with_", "with") is not None:
            return None
        items = _from_and_joins(node)
        if len(items) != 1 or not _is_json_each(items[0]):
            return None
        args = items[0].this.expressions
        if len(args) != 1 or _placeholder_name(args[0]) != param:
            return None
        return node

    def _is_sources_filter(self, node: exp.Expression, alias: str) -> bool:
        """``COALESCE(s.source, 'claude') IN (SELECT value FROM json_each(:sources))``, or ``s.source IN``."""
        if not isinstance(node, exp.In) or node.expressions or node.args.get("unnest") is not None:
            return False
        left = _unparen(node.this)
        if isinstance(left, exp.Coalesce):
            default = left.expressions
            if len(default) != 1 or not isinstance(default[0], exp.Literal) or not default[0].is_string \
                    or default[0].this != "claude":
                return False
            left = left.this
        if not self._is_column(left, alias, "source"):
            return False
        sub = self._json_each_select(node.args.get("query"), "sources")
        if sub is None or len(sub.expressions) != 1:
            return False
        items = _from_and_joins(sub)
        je_alias = _lower(items[0].alias) or None
        value = sub.expressions[0]
        return self._is_column(value, None, "value") or \
            (je_alias is not None and self._is_column(value, je_alias, "value"))

    def _is_roots_filter(self, node: exp.Expression, alias: str) -> bool:
        """``EXISTS (SELECT … FROM json_each(:roots) AS r WHERE <each disjunct compares s.project_path to
        an expression of r.value>)``."""
        if not isinstance(node, exp.Exists):
            return False
        sub = self._json_each_select(node.this, "roots")
        if sub is None:
            return False
        je_alias = _lower(_from_and_joins(sub)[0].alias) or None
        disjuncts = list(_disjuncts(_where(sub)))
        if not disjuncts:
            return False

        def mentions(expr: exp.Expression, table: str | None, name: str) -> bool:
            return any(self._is_column(c, table, name) for c in expr.find_all(exp.Column))

        def is_path(expr: exp.Expression) -> bool:
            return mentions(expr, alias, "project_path")

        def is_root(expr: exp.Expression) -> bool:
            hit = mentions(expr, None, "value") or (
                je_alias is not None and mentions(expr, je_alias, "value"))
            return hit and not is_path(expr)

        for d in disjuncts:
            if not isinstance(d, exp.EQ):
                return False
            a, b = d.this, d.expression
            if not ((is_path(a) and is_root(b)) or (is_path(b) and is_root(a))):
                return False
        return True

    def _is_since_filter(self, node: exp.Expression, alias: str) -> bool:
        """``<expression of s.*> >= :since`` (or ``:since <= …``)."""
        if isinstance(node, exp.GTE):
            column_side, param_side = node.this, node.expression
        elif isinstance(node, exp.LTE):
            column_side, param_side = node.expression, node.this
        else:
            return False
        if _placeholder_name(_unparen(param_side)) != "since":
            return False
        return any(_lower(c.table) == alias for c in column_side.find_all(exp.Column))

    # -- outer SELECT ---------------------------------------------------------------------------------

    def check_outer(self) -> None:
        aliases: dict[str, str] = {}
        for item in _from_and_joins(self.root):
            if isinstance(item, exp.Table) and isinstance(item.this, exp.Identifier):
                name = _lower(item.name)
                if name in ALLOWED_TABLES or name == SCOPE_CTE:
                    aliases[_lower(item.alias_or_name)] = name
                    continue
                self.fail("outer_source", name)
            else:
                self.fail("outer_source")
        conjuncts = list(_conjuncts(_where(self.root)))
        if not any(self._is_outer_scope_filter(c, aliases) for c in conjuncts):
            self.fail("outer_scope_filter")
        for alias, table in sorted(aliases.items()):
            if table in ("messages", "summaries") and not any(
                    self._is_coalesce_eq(c, alias, "visibility", "visible") for c in conjuncts):
                self.fail("visibility", table)
            if table == "messages" and not any(
                    self._is_coalesce_eq(c, alias, "is_meta", 0) for c in conjuncts):
                self.fail("is_meta", table)
        limit = self.root.args.get("limit")
        if not isinstance(limit, exp.Limit) or _placeholder_name(_unparen(limit.expression)) != "limit":
            self.fail("limit_placeholder", "limit")
        # The output columns and their order come from the scoped outer rows, json_each and scope_sessions.
        for part in [*self.root.expressions, self.root.args.get("order")]:
            if part is None:
                continue
            for table in part.find_all(exp.Table):
                if not (_is_json_each(table) or _lower(table.name) == SCOPE_CTE):
                    self.fail("projection_subquery", _lower(table.name))

    def _is_outer_scope_filter(self, node: exp.Expression, aliases: dict[str, str]) -> bool:
        """``<alias>.session_id IN (SELECT id FROM scope_sessions)`` (``<alias>.id`` for sessions)."""
        if not isinstance(node, exp.In) or node.expressions:
            return False
        left = _unparen(node.this)
        if not isinstance(left, exp.Column):
            return False
        table = aliases.get(_lower(left.table))
        if table is None or table == SCOPE_CTE or table in FTS_TABLES:
            return False
        if not self._is_column(left, _lower(left.table), "id" if table == "sessions" else "session_id"):
            return False
        sub = node.args.get("query")
        if isinstance(sub, exp.Subquery):
            sub = sub.this
        if not isinstance(sub, exp.Select) or _arg(sub, "with_", "with") is not None:
            return False
        items = _from_and_joins(sub)
        if len(items) != 1 or not isinstance(items[0], exp.Table) or _lower(items[0].name) != SCOPE_CTE \
                or _is_json_each(items[0]) or len(sub.expressions) != 1:
            return False
        inner = _lower(items[0].alias_or_name)
        return self._is_column(sub.expressions[0], None, "id") or \
            self._is_column(sub.expressions[0], inner, "id")

    def _is_coalesce_eq(self, node: exp.Expression, alias: str, column: str, value: str | int) -> bool:
        """``COALESCE(alias.column, value) = value`` in either operand order."""
        if not isinstance(node, exp.EQ):
            return False

        def is_value(expr: exp.Expression) -> bool:
            expr = _unparen(expr)
            if not isinstance(expr, exp.Literal):
                return False
            if isinstance(value, str):
                return bool(expr.is_string) and expr.this == value
            return not expr.is_string and expr.this == str(value)

        def is_coalesce(expr: exp.Expression) -> bool:
            expr = _unparen(expr)
            return isinstance(expr, exp.Coalesce) and self._is_column(expr.this, alias, column) \
                and len(expr.expressions) == 1 and is_value(expr.expressions[0])

        a, b = node.this, node.expression
        return (is_coalesce(a) and is_value(b)) or (is_coalesce(b) and is_value(a))

    # -- columns and needs ----------------------------------------------------------------------------

    def sources(self, select: exp.Expression) -> dict[str, _Source]:
        cached = self._sources_cache.get(id(select))
        if cached is not None:
            return cached
        found: dict[str, _Source] = {}
        for item in _from_and_joins(select):
            alias = _lower(item.alias_or_name)
            if isinstance(item, exp.Table) and _is_json_each(item):
                found[alias or "json_each"] = _Source("json_each", "json_each", JSON_EACH_COLUMNS)
            elif isinstance(item, exp.Table) and isinstance(item.this, exp.Identifier):
                name = _lower(item.name)
                if name in self.ctes:
                    body = self.ctes[name]
                    outputs = frozenset(_lower(e.alias_or_name) for e in getattr(body, "expressions", []))
                    found[alias] = _Source("cte", name, outputs)
                else:
                    found[alias] = _Source("table", name)
            elif isinstance(item, exp.Subquery) and isinstance(item.this, exp.Select):
                outputs = frozenset(_lower(e.alias_or_name) for e in item.this.expressions)
                found[alias] = _Source("derived", alias, outputs)
            else:
                found[alias] = _Source("other", alias)
        self._sources_cache[id(select)] = found
        return found

    @staticmethod
    def scope_chain(node: exp.Expression) -> tuple[list[exp.Select], bool]:
        """The SELECTs whose sources ``node`` can see, innermost first, and whether ``node`` lies in the
        innermost SELECT's own output list (where result aliases are not visible)."""
        chain: list[exp.Select] = []
        in_projection = False
        child: exp.Expr = node
        parent = node.parent
        while parent is not None:
            if isinstance(parent, exp.Select):
                if not chain:
                    in_projection = child.arg_key == "expressions"
                chain.append(parent)
            if isinstance(parent, exp.CTE):
                break  # a CTE body sees no outer query
            child, parent = parent, parent.parent
        return chain, in_projection

    def check_columns(self) -> None:
        for column in self.nodes(exp.Column):
            if not isinstance(column.this, exp.Identifier):
                continue  # m.* (reported as star_projection)
            name = _lower(column.name)
            if name.startswith(("$", "@", "?", ":")):
                continue  # reported as dollar_parameter
            if column.args.get("db") is not None or column.args.get("catalog") is not None:
                self.fail("qualified_column")
                continue
            chain, in_projection = self.scope_chain(column)
            if column.table:
                self._resolve_qualified(_lower(column.table), name, chain)
            else:
                self._resolve_bare(name, chain, in_projection)

    def _need(self, table: str, column: str) -> None:
        if self.needs is None or table not in NEEDS_TABLES or column in IMPLICIT_COLUMNS:
            return
        if table in FTS_TABLES and column in (table, "rank"):
            return
        if (table, column) not in self.needs:
            self.fail("column_not_in_needs", table)

    def _resolve_qualified(self, alias: str, name: str, chain: list[exp.Select]) -> None:
        for select in chain:
            source = self.sources(select).get(alias)
            if source is not None:
                if source.kind == "table":
                    self._need(source.name, name)
                return
        self.fail("unresolved_column")

    def _resolve_bare(self, name: str, chain: list[exp.Select], in_projection: bool) -> None:
        if chain and not in_projection:
            outputs = {_lower(e.alias) for e in chain[0].expressions if isinstance(e, exp.Alias)}
            if name in outputs:
                return  # a result alias (WHERE/ORDER BY)
        for select in chain:
            sources = self.sources(select)
            fts = sources.get(name)
            if fts is not None and fts.kind == "table" and fts.name in FTS_TABLES:
                return  # the FTS5 table-named hidden column (MATCH, bm25())
            if any(s.kind != "table" and name in s.columns for s in sources.values()):
                return
            tables = [s for s in sources.values() if s.kind == "table"]
            if len(tables) == 1:
                self._need(tables[0].name, name)
                return
            if len(tables) > 1:
                self.fail("ambiguous_column")
                return
        self.fail("unresolved_column")
