"""What one assessment carries: how it looks at the disk, what it has found on the way, and the unit shape."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

from ...contract.meta import UnknownReason
from .memo import TranscriptMemo

UnitKind = Literal["jsonl", "workflow_json", "kimi_dir"]
Outcome = Literal["up_to_date", "stale", "unknown_cursor", "unreadable"]
#: An ``index_state`` row as the caller reads it: ``(jsonl_path, mtime, lines_processed, cursor)``.
IndexRow = tuple[str, float | None, int | None, str | None]
#: An ``index_state`` unit row as passed in: ``(jsonl_path, mtime, lines_processed, cursor)``, any types.
UnitRow = tuple[str, object, object, object]


class Unit(NamedTuple):
    """One transcript unit: a file, or a Kimi session directory; ``parent`` is a Claude parent session's file."""

    path: str
    source: str
    kind: UnitKind
    parent: str | None = None


@dataclass(slots=True)
class Ctx:
    """One assessment's settings and side findings.

    ``stat`` is the caller's (a request's checks its deadline); ``check`` is called before every chunk read and
    between directory entries (its exception ends the assessment); ``memo`` keeps line counts and heads across
    assessments in a warm process. ``reasons`` collects why something could not be judged."""

    stat: Callable[[str], os.stat_result] = os.stat
    roots: tuple[str, ...] = ()
    rows: Mapping[str, UnitRow] = field(default_factory=dict)
    max_head_bytes: int = 64 * 1024
    tol: float = 1.0
    check: Callable[[], object] | None = None
    memo: TranscriptMemo | None = None
    lines_counted: int = 0
    reasons: set[UnknownReason] = field(default_factory=set)
    parent_cwds: dict[str, str | None] = field(default_factory=dict)
