"""Table and function rules: only the index tables, the statement's CTEs and ``json_each(:param)``, joined
with explicit ON conditions; only allow-listed functions; no ``*`` except in ``count(*)``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .allowlists import (
    ALLOWED_ANONYMOUS,
    ALLOWED_FUNCTION_NODES,
    ALLOWED_TABLES,
    SYNTAX_FUNC_NODES,
    TABLE_FUNCTIONS,
)
from .context import CheckContext
from .sqlast import lower, node_types, placeholder_name

if TYPE_CHECKING:
    from sqlglot import exp
else:
    from .sqlast import exp


def check_tables(ctx: CheckContext) -> None:
    """``table_allowlist``, ``qualified_table``, ``table_function_argument``, ``nested_join``,
    ``alias_shadows_table``."""
    for table in ctx.nodes(exp.Table):
        if isinstance(table.parent, exp.Table) and table.arg_key == "indexed":
            continue  # INDEXED BY <index name>
        if isinstance(table.this, exp.Anonymous):
            fname = lower(table.this.name)
            if fname not in TABLE_FUNCTIONS:
                ctx.fail("table_allowlist", fname)
            elif len(table.this.expressions) != 1 or placeholder_name(table.this.expressions[0]) is None:
                ctx.fail("table_function_argument", fname)
        elif isinstance(table.this, exp.Identifier):
            name = lower(table.name)
            if table.args.get("db") is not None or table.args.get("catalog") is not None:
                ctx.fail("qualified_table", name)
            if name not in ALLOWED_TABLES and name not in ctx.ctes:
                ctx.fail("table_allowlist", name)
        else:
            ctx.fail("table_allowlist")
        if table.args.get("joins"):
            ctx.fail("nested_join")  # FROM (a JOIN b): sources hidden from the outer checks
        alias = lower(table.alias)
        own = lower(table.name) if isinstance(table.this, exp.Identifier) else ""
        if alias and alias != own and (alias in ALLOWED_TABLES or alias in ctx.ctes):
            ctx.fail("alias_shadows_table", alias)


def check_joins(ctx: CheckContext) -> None:
    """NATURAL joins and USING lists read columns that no ``exp.Column`` names (invisible to needs)."""
    for join in ctx.nodes(exp.Join):
        if join.args.get("using") or str(join.args.get("method") or "").lower() == "natural":
            ctx.fail("implicit_join_columns")


def check_functions(ctx: CheckContext) -> None:
    """``function_allowlist``, ``star_projection``."""
    allowed = node_types(ALLOWED_FUNCTION_NODES)
    syntax = node_types(SYNTAX_FUNC_NODES)
    for node in ctx.nodes(exp.Func):
        if syntax and isinstance(node, syntax):
            continue
        if isinstance(node, exp.Anonymous):
            fname = lower(node.name)
            if fname in TABLE_FUNCTIONS and isinstance(node.parent, exp.Table) \
                    and node.arg_key == "this":
                continue
            if fname not in ALLOWED_ANONYMOUS:
                ctx.fail("function_allowlist")
        elif not (allowed and isinstance(node, allowed)):
            ctx.fail("function_allowlist")
    for star in ctx.nodes(exp.Star):
        if not isinstance(star.parent, exp.Count):
            ctx.fail("star_projection")
