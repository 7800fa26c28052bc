"""Placeholder rules: only ``:name`` placeholders, exactly the declared ones (``unnamed_placeholder``,
``parameter_syntax``, ``dollar_parameter``, ``undeclared_param``, ``unused_param``, ``duplicate_param``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .context import CheckContext
from .sqlast import placeholder_name

if TYPE_CHECKING:
    from sqlglot import exp
else:
    from .sqlast import exp


def check_placeholders(ctx: CheckContext) -> None:
    used: set[str] = set()
    for node in ctx.all_nodes:
        if isinstance(node, exp.Placeholder):
            name = placeholder_name(node)
            if name is None:
                ctx.fail("unnamed_placeholder")
            else:
                used.add(name)
        elif isinstance(node, exp.Parameter):
            ctx.fail("parameter_syntax")
        elif isinstance(node, exp.Identifier) and str(node.this).startswith(("$", "@", "?", ":")):
            ctx.fail("dollar_parameter")
    declared = set(ctx.declared)
    if len(declared) != len(ctx.declared):
        ctx.fail("duplicate_param")
    for name in sorted(used - declared):
        ctx.fail("undeclared_param", name)
    for name in sorted(declared - used):
        ctx.fail("unused_param", name)
