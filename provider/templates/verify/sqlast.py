"""The sqlglot AST, imported lazily, and small helpers the rules use to read it.

Importing sqlglot is slow and only a template the shipped manifest does not list needs it: ``exp`` here is
imported on first attribute access, and every rule module takes it from this one.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Iterator, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

from .allowlists import TABLE_FUNCTIONS


class _LazyModule:
    """A module imported on first attribute access (sqlglot: only when a template is verified)."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        value = getattr(importlib.import_module(self._name), attr)
        setattr(self, attr, value)  # later lookups bypass __getattr__
        return value


if TYPE_CHECKING:
    from sqlglot import exp
else:
    exp = _LazyModule("sqlglot.expressions")


def load_sqlglot() -> ModuleType:
    """Import sqlglot and keep its logger (fallback-to-Command warnings) off the provider's stderr."""
    logger = logging.getLogger("sqlglot")
    if not any(isinstance(h, logging.NullHandler) for h in logger.handlers):
        logger.addHandler(logging.NullHandler())
    logger.propagate = False
    logger.setLevel(logging.CRITICAL + 1)
    return importlib.import_module("sqlglot")


def node_types(names: Sequence[str]) -> tuple[type, ...]:
    """The AST classes of these names that the installed sqlglot defines (a missing one is skipped)."""
    base = getattr(exp, "Expr", None) or exp.Expression  # sqlglot 30 split Expr out of Expression
    found: list[type] = []
    for name in names:
        cls = getattr(exp, name, None)
        if isinstance(cls, type) and issubclass(cls, base):
            found.append(cls)
    return tuple(found)


def arg(node: exp.Expression, *names: str) -> Any:
    """An AST argument under any of its historical names (sqlglot 30 renamed ``from``/``with``)."""
    for name in names:
        value = node.args.get(name)
        if value is not None:
            return value
    return None


def lower(name: str | None) -> str:
    return (name or "").lower()


def conjuncts(node: exp.Expression | None) -> Iterator[exp.Expression]:
    """Top-level AND terms of a condition (parentheses unwrapped); nothing under OR/NOT is a conjunct."""
    if node is None:
        return
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.And):
        yield from conjuncts(node.this)
        yield from conjuncts(node.expression)
    else:
        yield node


def disjuncts(node: exp.Expression | None) -> Iterator[exp.Expression]:
    if node is None:
        return
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Or):
        yield from disjuncts(node.this)
        yield from disjuncts(node.expression)
    else:
        yield node


def where(select: exp.Expression) -> exp.Expression | None:
    found = select.args.get("where")
    return found.this if found is not None else None


def unparen(node: exp.Expression) -> exp.Expression:
    while isinstance(node, exp.Paren):
        node = node.this
    return node


def from_and_joins(select: exp.Expression) -> list[exp.Expression]:
    """The relations a SELECT reads directly: its FROM item(s) and every JOIN's item."""
    items: list[exp.Expression] = []
    from_ = arg(select, "from_", "from")
    if from_ is not None:
        if from_.this is not None:
            items.append(from_.this)
        items.extend(from_.expressions or [])
    for join in select.args.get("joins") or []:
        items.append(join.this)
    return items


def is_json_each(table: exp.Expression) -> bool:
    return isinstance(table, exp.Table) and isinstance(table.this, exp.Anonymous) \
        and lower(table.this.name) in TABLE_FUNCTIONS


def placeholder_name(node: exp.Expression | None) -> str | None:
    if isinstance(node, exp.Placeholder) and isinstance(node.this, str) and node.this:
        return node.this
    return None


def is_column(node: exp.Expression | None, alias: str | None, name: str) -> bool:
    """``alias.name`` (or a bare ``name`` when ``alias`` is None)."""
    if not isinstance(node, exp.Column) or not isinstance(node.this, exp.Identifier):
        return False
    if lower(node.name) != name or node.args.get("db") is not None:
        return False
    return lower(node.table) == alias if alias is not None else not node.table
