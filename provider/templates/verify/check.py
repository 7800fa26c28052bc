"""The AST check: parse the text, then run every rule in order and collect the violations."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from .context import CheckContext
from .rules_columns import check_columns
from .rules_outer import check_outer
from .rules_params import check_placeholders
from .rules_scope import check_scope_cte
from .rules_structure import check_ctes, parse_select
from .rules_tables import check_functions, check_joins, check_tables
from .violations import Violation

#: The rules after parsing, in reporting order; the CTE rule runs first because the others read its CTEs.
RULES = (
    check_ctes, check_tables, check_joins, check_functions, check_placeholders, check_scope_cte, check_outer,
    check_columns,
)


def check(sql: str, *, declared_params: Sequence[str],
          needs: Collection[tuple[str, str]] | None) -> list[Violation]:
    """Every rule ``sql`` breaks (empty when it is one scoped, bounded SELECT over declared columns)."""
    root = parse_select(sql)
    if isinstance(root, list):
        return root
    ctx = CheckContext(root, declared_params, needs)
    for rule in RULES:
        rule(ctx)
    return ctx.violations
