"""Counting units into the report's buckets: in scope or not, unindexed, judged, missing on disk."""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable, Sequence

from .context import Ctx, Outcome, Unit
from .heads import unit_cwd
from .rows import lookup_row
from .scope import under_roots
from .units import judge_row, unchanged_signature


class Tally:
    """Running counts of one assessment; ``stale``/``unindexed`` hold private paths."""

    __slots__ = ("missing_on_disk", "seen", "stale", "unattributed", "unindexed", "unknown_cursor", "unreadable",
                 "up_to_date")

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self.up_to_date = 0
        self.stale: list[str] = []
        self.unindexed: list[str] = []
        self.unknown_cursor = 0
        self.unreadable = 0
        self.unattributed = 0
        self.missing_on_disk = 0

    @property
    def in_scope(self) -> int:
        return self.up_to_date + len(self.stale) + len(self.unindexed) + self.unknown_cursor + self.unreadable


def assess_unit(ctx: Ctx, unit: Unit, tally: Tally) -> None:
    """Attribute one unit to the scope (or not) and, when in scope, judge it into ``tally``."""
    tally.seen.add(unit.path)
    cwd, readable = unit_cwd(ctx, unit)
    if not readable:
        tally.unattributed += 1
        ctx.reasons.add("unreadable_file")
        return
    if cwd is None:
        tally.unattributed += 1
        return
    if not under_roots(cwd, ctx.roots):
        return
    judge_in_scope(ctx, unit, tally)


def judge_in_scope(ctx: Ctx, unit: Unit, tally: Tally, outcome: Outcome | None = None,
                   st: os.stat_result | None = None) -> None:
    """Judge a unit already attributed to the scope into ``tally`` (``outcome`` when already judged; ``st``:
    the file's stat when already taken)."""
    path = unit.path
    tally.seen.add(path)
    row = ctx.rows.get(path) or lookup_row(ctx.rows, path)
    if row is None:
        tally.unindexed.append(path)
        return
    if outcome is None:
        outcome = judge_row(ctx, unit, row, st)
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


def judge_files_in_scope(ctx: Ctx, paths: Iterable[str], source: str, tally: Tally, *,
                         gone_is_missing: bool = False) -> None:
    """``judge_in_scope`` of ``Unit(path, source, "jsonl")`` for each of ``paths``, transcript files of a file
    source (Claude, Codex) attributed to the scope: the same outcomes, but the unit is built only when a file's
    cursor is not a plain signature naming exactly its stat (``units.unchanged_signature``), so the common case
    costs a row lookup, a stat and that test. ``gone_is_missing``: the files were not listed (``scoped``'s
    strays), so each is statted first and a file no longer there is missing on disk, not judged.
    ``tally.seen`` is not kept (only the full walk's ``count_missing`` reads it)."""
    rows = ctx.rows
    stat = ctx.stat
    plain = ctx.tol >= 1.0  # the whole-millisecond test holds only for a tolerance of at least 1 ms
    up_to_date = 0
    for path in paths:
        row = rows.get(path)
        if row is None and not gone_is_missing:
            judge_in_scope(ctx, Unit(path, source, "jsonl"), tally)  # its resolved form's row, or unindexed
            continue
        try:
            st = stat(path)
        except FileNotFoundError:
            if gone_is_missing:
                tally.missing_on_disk += 1
                continue
            st = None
        except (OSError, ValueError):
            st = None
        if st is None:
            judge_in_scope(ctx, Unit(path, source, "jsonl"), tally)  # unreadable (or unindexed)
        elif row is not None and plain and type(row[3]) is str and unchanged_signature(row[3], st):
            up_to_date += 1
        else:
            judge_in_scope(ctx, Unit(path, source, "jsonl"), tally, st=st)
    tally.up_to_date += up_to_date


@functools.lru_cache(maxsize=4096)
def claude_slug(path: str) -> str:
    """Claude Code's project directory name for a path: every character but ASCII letters and digits is ``-``."""
    return "".join(c if c.isascii() and c.isalnum() else "-" for c in path)


def count_missing(ctx: Ctx, homes: Sequence[str], tally: Tally) -> None:
    """Claude rows of deleted files whose project directory is exactly a root's encoding (package docstring)."""
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
