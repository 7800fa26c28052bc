"""Column rules: every column of an index table that the template reads is declared in its ``needs``
header, which the live schema check relies on (``qualified_column``, ``unresolved_column``,
``ambiguous_column``, ``column_not_in_needs``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .allowlists import FTS_TABLES, IMPLICIT_COLUMNS, JSON_EACH_COLUMNS, NEEDS_TABLES
from .context import CheckContext, Source
from .sqlast import from_and_joins, is_json_each, lower

if TYPE_CHECKING:
    from sqlglot import exp
else:
    from .sqlast import exp


def check_columns(ctx: CheckContext) -> None:
    for column in ctx.nodes(exp.Column):
        if not isinstance(column.this, exp.Identifier):
            continue  # m.* (reported as star_projection)
        name = lower(column.name)
        if name.startswith(("$", "@", "?", ":")):
            continue  # reported as dollar_parameter
        if column.args.get("db") is not None or column.args.get("catalog") is not None:
            ctx.fail("qualified_column")
            continue
        chain, in_projection = _scope_chain(column)
        if column.table:
            _resolve_qualified(ctx, lower(column.table), name, chain)
        else:
            _resolve_bare(ctx, name, chain, in_projection)


def _sources(ctx: CheckContext, select: exp.Expression) -> dict[str, Source]:
    cached = ctx.sources_cache.get(id(select))
    if cached is not None:
        return cached
    found: dict[str, Source] = {}
    for item in from_and_joins(select):
        alias = lower(item.alias_or_name)
        if isinstance(item, exp.Table) and is_json_each(item):
            found[alias or "json_each"] = Source("json_each", "json_each", JSON_EACH_COLUMNS)
        elif isinstance(item, exp.Table) and isinstance(item.this, exp.Identifier):
            name = lower(item.name)
            if name in ctx.ctes:
                body = ctx.ctes[name]
                outputs = frozenset(lower(e.alias_or_name) for e in getattr(body, "expressions", []))
                found[alias] = Source("cte", name, outputs)
            else:
                found[alias] = Source("table", name)
        elif isinstance(item, exp.Subquery) and isinstance(item.this, exp.Select):
            outputs = frozenset(lower(e.alias_or_name) for e in item.this.expressions)
            found[alias] = Source("derived", alias, outputs)
        else:
            found[alias] = Source("other", alias)
    ctx.sources_cache[id(select)] = found
    return found


def _scope_chain(node: exp.Expression) -> tuple[list[exp.Select], bool]:
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


def _need(ctx: CheckContext, table: str, column: str) -> None:
    if ctx.needs is None or table not in NEEDS_TABLES or column in IMPLICIT_COLUMNS:
        return
    if table in FTS_TABLES and column in (table, "rank"):
        return
    if (table, column) not in ctx.needs:
        ctx.fail("column_not_in_needs", table)


def _resolve_qualified(ctx: CheckContext, alias: str, name: str, chain: list[exp.Select]) -> None:
    for select in chain:
        source = _sources(ctx, select).get(alias)
        if source is not None:
            if source.kind == "table":
                _need(ctx, source.name, name)
            return
    ctx.fail("unresolved_column")


def _resolve_bare(ctx: CheckContext, name: str, chain: list[exp.Select], in_projection: bool) -> None:
    if chain and not in_projection:
        outputs = {lower(e.alias) for e in chain[0].expressions if isinstance(e, exp.Alias)}
        if name in outputs:
            return  # a result alias (WHERE/ORDER BY)
    for select in chain:
        sources = _sources(ctx, select)
        fts = sources.get(name)
        if fts is not None and fts.kind == "table" and fts.name in FTS_TABLES:
            return  # the FTS5 table-named hidden column (MATCH, bm25())
        if any(s.kind != "table" and name in s.columns for s in sources.values()):
            return
        tables = [s for s in sources.values() if s.kind == "table"]
        if len(tables) == 1:
            _need(ctx, tables[0].name, name)
            return
        if len(tables) > 1:
            ctx.fail("ambiguous_column")
            return
    ctx.fail("unresolved_column")
