"""Scope CTE rules: ``scope_sessions`` reads ``sessions`` alone and has the four scope predicates as
top-level conjuncts (``scope_cte_missing``, ``scope_cte_shape``, ``scope_sources``, ``scope_roots``,
``scope_since``, ``scope_until``: the upper time bound that a replay binds to the moment it replays and a
normal request to a value that excludes nothing)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .allowlists import SCOPE_CTE, TIME_COLUMNS
from .context import CheckContext
from .sqlast import (
    arg,
    conjuncts,
    disjuncts,
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


def check_scope_cte(ctx: CheckContext) -> None:
    body = ctx.ctes.get(SCOPE_CTE)
    if body is None:
        ctx.fail("scope_cte_missing")
        return
    if not isinstance(body, exp.Select):
        ctx.fail("scope_cte_shape")
        return
    items = from_and_joins(body)
    if len(items) != 1 or not isinstance(items[0], exp.Table) or is_json_each(items[0]) \
            or lower(items[0].name) != "sessions":
        ctx.fail("scope_cte_shape")
        return
    alias = lower(items[0].alias_or_name)
    ids = [e for e in body.expressions if lower(e.alias_or_name) == "id"]
    if len(ids) != 1 or not is_column(ids[0].unalias(), alias, "id"):
        ctx.fail("scope_cte_shape")
    terms = list(conjuncts(where(body)))
    if not any(_is_sources_filter(c, alias) for c in terms):
        ctx.fail("scope_sources", "sources")
    if not any(_is_roots_filter(c, alias) for c in terms):
        ctx.fail("scope_roots", "roots")
    if not any(_is_since_filter(c, alias) for c in terms):
        ctx.fail("scope_since", "since")
    if not any(_is_until_filter(c, alias) for c in terms):
        ctx.fail("scope_until", "until")


def _json_each_select(node: exp.Expression | None, param: str) -> exp.Select | None:
    """``node`` when it is a SELECT reading exactly ``json_each(:param)`` and nothing else."""
    if isinstance(node, exp.Subquery):
        node = node.this
    if not isinstance(node, exp.Select) or arg(node, "with_", "with") is not None:
        return None
    items = from_and_joins(node)
    if len(items) != 1 or not is_json_each(items[0]):
        return None
    args = items[0].this.expressions
    if len(args) != 1 or placeholder_name(args[0]) != param:
        return None
    return node


def _is_sources_filter(node: exp.Expression, alias: str) -> bool:
    """``COALESCE(s.source, 'claude') IN (SELECT value FROM json_each(:sources))``, or ``s.source IN``."""
    if not isinstance(node, exp.In) or node.expressions or node.args.get("unnest") is not None:
        return False
    left = unparen(node.this)
    if isinstance(left, exp.Coalesce):
        default = left.expressions
        if len(default) != 1 or not isinstance(default[0], exp.Literal) or not default[0].is_string \
                or default[0].this != "claude":
            return False
        left = left.this
    if not is_column(left, alias, "source"):
        return False
    sub = _json_each_select(node.args.get("query"), "sources")
    if sub is None or len(sub.expressions) != 1:
        return False
    items = from_and_joins(sub)
    je_alias = lower(items[0].alias) or None
    value = sub.expressions[0]
    return is_column(value, None, "value") or \
        (je_alias is not None and is_column(value, je_alias, "value"))


def _is_roots_filter(node: exp.Expression, alias: str) -> bool:
    """``EXISTS (SELECT … FROM json_each(:roots) AS r WHERE <each disjunct compares s.project_path to
    an expression of r.value>)``."""
    if not isinstance(node, exp.Exists):
        return False
    sub = _json_each_select(node.this, "roots")
    if sub is None:
        return False
    je_alias = lower(from_and_joins(sub)[0].alias) or None
    terms = list(disjuncts(where(sub)))
    if not terms:
        return False

    def mentions(expr: exp.Expression, table: str | None, name: str) -> bool:
        return any(is_column(c, table, name) for c in expr.find_all(exp.Column))

    def is_path(expr: exp.Expression) -> bool:
        return mentions(expr, alias, "project_path")

    def is_root(expr: exp.Expression) -> bool:
        hit = mentions(expr, None, "value") or (
            je_alias is not None and mentions(expr, je_alias, "value"))
        return hit and not is_path(expr)

    for d in terms:
        if not isinstance(d, exp.EQ):
            return False
        a, b = d.this, d.expression
        if not ((is_path(a) and is_root(b)) or (is_path(b) and is_root(a))):
            return False
    return True


def _is_since_filter(node: exp.Expression, alias: str) -> bool:
    """``<expression of s.*> >= :since`` (or ``:since <= …``)."""
    if isinstance(node, exp.GTE):
        column_side, param_side = node.this, node.expression
    elif isinstance(node, exp.LTE):
        column_side, param_side = node.expression, node.this
    else:
        return False
    if placeholder_name(unparen(param_side)) != "since":
        return False
    return any(lower(c.table) == alias for c in column_side.find_all(exp.Column))


def _is_until_filter(node: exp.Expression, alias: str) -> bool:
    """``COALESCE(s.<column>, '') < :until`` (or ``:until > …``): a missing time reads as the earliest."""
    if isinstance(node, exp.LT):
        column_side, param_side = node.this, node.expression
    elif isinstance(node, exp.GT):
        column_side, param_side = node.expression, node.this
    else:
        return False
    return placeholder_name(unparen(param_side)) == "until" and is_time_bound(column_side, {alias})


def is_time_bound(expr: exp.Expression, aliases: set[str]) -> bool:
    """``COALESCE(<alias>.<time column>, '')`` for one of ``aliases``: the row's own time, NULL as ``''``."""
    expr = unparen(expr)
    if not isinstance(expr, exp.Coalesce) or len(expr.expressions) != 1:
        return False
    default = unparen(expr.expressions[0])
    if not isinstance(default, exp.Literal) or not default.is_string or default.this != "":
        return False
    column = unparen(expr.this)
    return isinstance(column, exp.Column) and isinstance(column.this, exp.Identifier) \
        and column.args.get("db") is None and lower(column.table) in aliases and lower(column.name) in TIME_COLUMNS
