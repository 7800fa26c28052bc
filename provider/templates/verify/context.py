"""The state one check shares between its rules: the statement, its CTEs, the declarations, the violations."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from .sqlast import lower
from .violations import Violation

if TYPE_CHECKING:
    from sqlglot import exp

T = TypeVar("T")


@dataclass(frozen=True)
class Source:
    kind: str  # "table" (an index table), "cte", "json_each", "derived", "other"
    name: str  # table or CTE name, lower-case
    columns: frozenset[str] = frozenset()  # known output columns of a CTE, derived table or json_each


class CheckContext:
    def __init__(self, root: exp.Select, declared_params: Sequence[str],
                 needs: Collection[tuple[str, str]] | None) -> None:
        self.root = root
        self.declared = list(declared_params)
        self.needs = {(lower(t), lower(c)) for t, c in needs} if needs is not None else None
        self.violations: list[Violation] = []
        self.ctes: dict[str, exp.Expression] = {}  # filled by the CTE rule, which runs first
        self.sources_cache: dict[int, dict[str, Source]] = {}
        self.all_nodes: list[exp.Expr] = list(root.walk())  # one walk, filtered by each rule

    def nodes(self, kind: type[T]) -> list[T]:
        return [node for node in self.all_nodes if isinstance(node, kind)]

    def fail(self, rule: str, subject: str = "") -> None:
        self.violations.append(Violation(rule, subject))
