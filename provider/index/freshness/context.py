"""Shared state of one assessment: the context threaded through walking and judging, and the unit shape."""

import os
from collections.abc import Callable, Mapping
from typing import Literal, NamedTuple

from .rows import UnitRow

UnitKind = Literal["jsonl", "workflow_json", "kimi_dir"]
Outcome = Literal["up_to_date", "stale", "unknown_cursor", "unreadable"]


class Unit(NamedTuple):
    """One transcript unit: a file, or a Kimi session directory; ``parent`` is a Claude parent session.
    A NamedTuple, not a frozen dataclass: one is built per listed file, and building one is the cheaper."""

    path: str
    source: str
    kind: UnitKind
    parent: str | None = None


class Ctx:
    """Mutable state of one assessment (internal)."""

    __slots__ = ("check", "lines_counted", "max_head_bytes", "parent_cwds", "reasons", "remember", "roots", "rows",
                 "stat", "tol")

    def __init__(self, stat: Callable[[str], os.stat_result], max_head_bytes: int, tol: float,
                 roots: tuple[str, ...], rows: Mapping[str, UnitRow], *, lines_counted: int = 0,
                 remember: bool = False, reasons: set[str] | None = None,
                 parent_cwds: dict[str, str | None] | None = None,
                 check: Callable[[], object] | None = None) -> None:
        self.stat = stat
        self.check = check  # called before every chunk read from a transcript (a request's deadline check)
        self.max_head_bytes = max_head_bytes
        self.tol = tol
        self.roots = roots
        self.rows = rows
        self.lines_counted = lines_counted
        self.remember = remember  # keep line counts and heads across assessments (``memo``), by file identity
        self.reasons: set[str] = set() if reasons is None else reasons
        self.parent_cwds: dict[str, str | None] = {} if parent_cwds is None else parent_cwds
