"""Shared state of one assessment: the context threaded through walking and judging, and the unit shape."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

from .rows import Row

UnitKind = Literal["jsonl", "workflow_json", "kimi_dir"]
Outcome = Literal["up_to_date", "stale", "unknown_cursor", "unreadable"]


class Unit(NamedTuple):
    """One transcript unit: a file, or a Kimi session directory; ``parent`` is a Claude parent session.
    A NamedTuple, not a frozen dataclass: one is built per listed file, and building one is the cheaper."""

    path: str
    source: str
    kind: UnitKind
    parent: str | None = None


@dataclass(slots=True)
class Ctx:
    """Mutable state of one assessment (internal)."""

    stat: Callable[[str], os.stat_result]
    max_head_bytes: int
    tol: float
    roots: tuple[str, ...]
    rows: dict[str, Row]
    lines_counted: int = 0
    remember: bool = False  # keep line counts and heads across assessments (``memo``), by file identity
    reasons: set[str] = field(default_factory=set)
    parent_cwds: dict[str, str | None] = field(default_factory=dict)
