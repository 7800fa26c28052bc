"""Structure rules: one statement, a SELECT, no set operation, write, DDL, pragma, attach or transaction
node anywhere; and one top-level, non-recursive WITH whose names do not hide a real table."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .allowlists import ALLOWED_TABLES, FORBIDDEN_NODES, SET_OPERATION_NODES
from .context import CheckContext
from .sqlast import arg, load_sqlglot, lower, node_types
from .violations import Violation

if TYPE_CHECKING:
    from sqlglot import exp
else:
    from .sqlast import exp


def parse_select(sql: str) -> exp.Select | list[Violation]:
    """The statement's SELECT, or the structure violations (``parse_error``, ``single_statement``,
    ``unparsed_command``, ``forbidden_statement``, ``set_operation``, ``not_select``)."""
    sqlglot = load_sqlglot()
    try:
        parsed = sqlglot.parse(sql, read="sqlite")
    except Exception:  # noqa: BLE001 - any parser failure (ParseError, TokenError, ...) is a rejection
        return [Violation("parse_error")]
    statements: list[exp.Expression] = [s for s in parsed if s is not None]
    if len(statements) != 1:
        return [Violation("single_statement")]
    root = statements[0]
    structural: list[Violation] = []
    command = node_types(("Command",))
    forbidden = node_types(FORBIDDEN_NODES)
    set_ops = node_types(SET_OPERATION_NODES)
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
    return root


def check_ctes(ctx: CheckContext) -> None:
    """``nested_with``, ``recursive_cte``, ``duplicate_cte``, ``cte_shadows_table``; records ``ctx.ctes``."""
    top = arg(ctx.root, "with_", "with")
    for node in ctx.nodes(exp.With):
        if node is not top:
            ctx.fail("nested_with")
    if top is None:
        return
    if top.args.get("recursive"):
        ctx.fail("recursive_cte")
    for cte in top.expressions:
        name = lower(cte.alias)
        if name in ctx.ctes:
            ctx.fail("duplicate_cte", name)
        if name in ALLOWED_TABLES:
            ctx.fail("cte_shadows_table", name)
        ctx.ctes[name] = cte.this
