"""Outer SELECT rules: it reads only index tables, ``scope_sessions`` and CTEs over ``json_each`` of parameters
alone (:func:`parameter_ctes`: they add no index row), keeps rows of scoped sessions only, keeps rows written
before ``:until`` only, filters hidden and meta rows, is bounded by ``LIMIT :limit``, and computes its output
columns from no other table (``outer_source``, ``outer_scope_filter``, ``outer_until``, ``visibility``,
``is_meta``, ``limit_placeholder``, ``projection_subquery``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .allowlists import ALLOWED_TABLES, FTS_TABLES, SCOPE_CTE
from .context import CheckContext
from .rules_scope import is_time_bound
from .sqlast import (
    arg,
    conjuncts,
    from_and_joins,
    is_column,
    is_json_each,
    lower,
    placeholder_name,
    unparen,
    where,
)

if TYPE_CHECKING:
    from sqlglot import exp
else:
    from .sqlast import exp


def parameter_ctes(ctx: CheckContext) -> frozenset[str]:
    """The statement's CTEs that read nothing but ``json_each`` of parameters (a request's own values, e.g.
    each failure's session and time): joining one in adds no index row, so the outer rules hold as before."""
    found = set()
    for name, body in ctx.ctes.items():
        tables = list(body.find_all(exp.Table))
        if name != SCOPE_CTE and tables and all(is_json_each(t) for t in tables):
            found.add(name)
    return frozenset(found)


def check_outer(ctx: CheckContext) -> None:
    aliases: dict[str, str] = {}
    params_only = parameter_ctes(ctx)
    for item in from_and_joins(ctx.root):
        if isinstance(item, exp.Table) and isinstance(item.this, exp.Identifier):
            name = lower(item.name)
            if name in ALLOWED_TABLES or name == SCOPE_CTE or name in params_only:
                aliases[lower(item.alias_or_name)] = name
                continue
            ctx.fail("outer_source", name)
        else:
            ctx.fail("outer_source")
    terms = list(conjuncts(where(ctx.root)))
    rows = {alias: table for alias, table in aliases.items() if table not in params_only}
    if not any(_is_outer_scope_filter(c, rows) for c in terms):
        ctx.fail("outer_scope_filter")
    timed = {alias for alias, table in rows.items() if table != SCOPE_CTE and table not in FTS_TABLES}
    if not any(_is_outer_until(c, timed) for c in terms):
        ctx.fail("outer_until", "until")
    for alias, table in sorted(rows.items()):
        if table in ("messages", "summaries") and not any(
                _is_coalesce_eq(c, alias, "visibility", "visible") for c in terms):
            ctx.fail("visibility", table)
        if table == "messages" and not any(
                _is_coalesce_eq(c, alias, "is_meta", 0) for c in terms):
            ctx.fail("is_meta", table)
    limit = ctx.root.args.get("limit")
    if not isinstance(limit, exp.Limit) or placeholder_name(unparen(limit.expression)) != "limit":
        ctx.fail("limit_placeholder", "limit")
    # The output columns and their order come from the scoped outer rows, json_each and scope_sessions.
    for part in [*ctx.root.expressions, ctx.root.args.get("order")]:
        if part is None:
            continue
        for table in part.find_all(exp.Table):
            if not (is_json_each(table) or lower(table.name) == SCOPE_CTE):
                ctx.fail("projection_subquery", lower(table.name))


def _is_outer_scope_filter(node: exp.Expression, aliases: dict[str, str]) -> bool:
    """``<alias>.session_id IN (SELECT id FROM scope_sessions)`` (``<alias>.id`` for sessions)."""
    if not isinstance(node, exp.In) or node.expressions:
        return False
    left = unparen(node.this)
    if not isinstance(left, exp.Column):
        return False
    table = aliases.get(lower(left.table))
    if table is None or table == SCOPE_CTE or table in FTS_TABLES:
        return False
    if not is_column(left, lower(left.table), "id" if table == "sessions" else "session_id"):
        return False
    sub = node.args.get("query")
    if isinstance(sub, exp.Subquery):
        sub = sub.this
    if not isinstance(sub, exp.Select) or arg(sub, "with_", "with") is not None:
        return False
    items = from_and_joins(sub)
    if len(items) != 1 or not isinstance(items[0], exp.Table) or lower(items[0].name) != SCOPE_CTE \
            or is_json_each(items[0]) or len(sub.expressions) != 1:
        return False
    inner = lower(items[0].alias_or_name)
    return is_column(sub.expressions[0], None, "id") or \
        is_column(sub.expressions[0], inner, "id")


def _is_coalesce_eq(node: exp.Expression, alias: str, column: str, value: str | int) -> bool:
    """``COALESCE(alias.column, value) = value`` in either operand order."""
    if not isinstance(node, exp.EQ):
        return False

    def is_value(expr: exp.Expression) -> bool:
        expr = unparen(expr)
        if not isinstance(expr, exp.Literal):
            return False
        if isinstance(value, str):
            return bool(expr.is_string) and expr.this == value
        return not expr.is_string and expr.this == str(value)

    def is_coalesce(expr: exp.Expression) -> bool:
        expr = unparen(expr)
        return isinstance(expr, exp.Coalesce) and is_column(expr.this, alias, column) \
            and len(expr.expressions) == 1 and is_value(expr.expressions[0])

    a, b = node.this, node.expression
    return (is_coalesce(a) and is_value(b)) or (is_coalesce(b) and is_value(a))


def _is_outer_until(node: exp.Expression, aliases: set[str]) -> bool:
    """``COALESCE(<alias>.<time column>, '') < :until`` (or ``:until > …``) on a row table of the outer FROM."""
    if isinstance(node, exp.LT):
        column_side, param_side = node.this, node.expression
    elif isinstance(node, exp.GT):
        column_side, param_side = node.expression, node.this
    else:
        return False
    return placeholder_name(unparen(param_side)) == "until" and is_time_bound(column_side, aliases)
