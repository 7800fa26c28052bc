"""Counting units into the report's buckets: in the scope or not, unindexed, judged, missing on disk."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field

from .context import Ctx, Outcome, Unit
from .heads import unit_cwd
from .judging import judge_unit
from .scope import lookup_row, under_roots
from .walks import claude_slug


@dataclass(slots=True)
class Tally:
    """Running counts of one assessment; ``stale`` and ``unindexed`` hold private paths, ``seen`` every path
    looked at (the full walk's ``count_missing`` reads it)."""

    seen: set[str] = field(default_factory=set)
    up_to_date: int = 0
    stale: list[str] = field(default_factory=list)
    unindexed: list[str] = field(default_factory=list)
    unknown_cursor: int = 0
    unreadable: int = 0
    unattributed: int = 0
    missing_on_disk: int = 0

    @property
    def in_scope(self) -> int:
        return self.up_to_date + len(self.stale) + len(self.unindexed) + self.unknown_cursor + self.unreadable


def assess_unit(ctx: Ctx, unit: Unit, tally: Tally) -> None:
    """Attribute one unit to the scope by its head (or not) and, when in scope, judge it into ``tally``."""
    tally.seen.add(unit.path)
    cwd, readable = unit_cwd(ctx, unit)
    if not readable:
        tally.unattributed += 1
        ctx.reasons.add("unreadable_file")
        return
    if cwd is None:
        tally.unattributed += 1
        return
    if under_roots(cwd, ctx.roots):
        judge_in_scope(ctx, unit, tally)


def judge_in_scope(ctx: Ctx, unit: Unit, tally: Tally, *, gone_is_missing: bool = False) -> None:
    """Judge a unit already attributed to the scope into ``tally``: no row (under its path or its resolved form)
    is unindexed, without a stat. ``gone_is_missing``: the file was not listed (its directory was not), so a
    file no longer there is missing on disk, not judged."""
    path = unit.path
    tally.seen.add(path)
    row = lookup_row(ctx.rows, path)
    st = None
    if gone_is_missing:
        try:
            st = ctx.stat(path)
        except FileNotFoundError:
            tally.missing_on_disk += 1
            return
        except (OSError, ValueError):
            pass  # (judged: unreadable)
    if row is None:
        tally.unindexed.append(path)
        return
    _count(ctx, tally, path, judge_unit(ctx, unit, row, st))


def _count(ctx: Ctx, tally: Tally, path: str, outcome: Outcome) -> None:
    """One in-scope unit's outcome into ``tally`` (and the reason an outcome that is not a judgement gives)."""
    if outcome == "up_to_date":
        tally.up_to_date += 1
    elif outcome == "stale":
        tally.stale.append(path)
    elif outcome == "unknown_cursor":
        tally.unknown_cursor += 1
        ctx.reasons.add("unknown_cursor")
    else:
        tally.unreadable += 1
        ctx.reasons.add("unreadable_file")


def count_missing(ctx: Ctx, homes: Sequence[str], tally: Tally) -> None:
    """Claude rows of deleted files whose project directory is exactly a root's encoding (a deleted file's cwd
    cannot be read, so only these are attributed to the scope: an under-count, never a cross-scope leak)."""
    slugs = {claude_slug(root) for root in ctx.roots}
    for home in homes:
        projects = os.path.join(home, ".claude", "projects") + os.sep
        for path in ctx.rows:
            if path in tally.seen or not path.startswith(projects):
                continue
            slug = path[len(projects) :].split(os.sep, 1)[0]
            if claude_slug(slug) not in slugs:
                continue
            try:
                ctx.stat(path)
            except FileNotFoundError:
                tally.missing_on_disk += 1
            except (OSError, ValueError):
                continue
