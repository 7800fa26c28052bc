"""Where a scope's transcripts can be: the directories a scoped assessment lists (rules in the package README,
"Which directories a request lists")."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Collection, Iterator
from typing import Final

from .context import Ctx, Unit
from .walks import WALKERS, claude_slug, is_file, is_subdir, list_claude_project, scan, walk_jsonl_tree

#: Claude Code cuts longer project directory names and appends a hash.
CLAUDE_SLUG_CUT: Final = 200
#: Days before ``__last_build__`` whose Codex date directories are listed whatever their times (their names are
#: local dates, the marker is UTC).
CODEX_SLACK_DAYS: Final = 2

Day = tuple[int, ...]
Probe = Callable[[str], bool]


def slug_can_hold(name: str, root_slug: str) -> bool:
    """Whether a Claude project directory named ``name`` can hold sessions under the root so encoded."""
    if name == root_slug or name.startswith(root_slug + "-"):
        return True
    return len(name) > CLAUDE_SLUG_CUT and name.startswith(root_slug[:CLAUDE_SLUG_CUT])


def _claude(ctx: Ctx, home: str, dirs: Collection[str], mains: list[str], units: list[Unit]) -> None:
    """The project directories that can hold the scope's sessions, listed (``walks.list_claude_project``): those
    named for a root (``slug_can_hold``) and those holding a known transcript (``dirs``: their directories)."""
    projects = os.path.join(home, ".claude", "projects")
    slugs = {claude_slug(root) for root in ctx.roots}
    cuts = tuple({s[:CLAUDE_SLUG_CUT] for s in slugs})  # every name ``slug_can_hold`` accepts starts with one
    prefix = projects + os.sep
    holding = {d[len(prefix):].partition(os.sep)[0] for d in dirs if d.startswith(prefix)}
    for project in scan(ctx, projects):
        name = project.name
        if (name in holding or (name.startswith(cuts) and any(slug_can_hold(name, s) for s in slugs))) \
                and is_subdir(project):
            list_claude_project(ctx, project.path, mains, units)


def cutoff_day(last_build_ms: float | None) -> Day | None:
    """The first Codex day (y, m, d) listed whatever its times; None: every directory is listed."""
    if last_build_ms is None:
        return None
    try:
        moment = time.gmtime(last_build_ms / 1000.0 - CODEX_SLACK_DAYS * 86_400)
    except (OverflowError, OSError, ValueError):
        return None
    return (moment.tm_year, moment.tm_mon, moment.tm_mday)


def _date_number(name: str) -> int | None:
    """The number of a date-named entry (at most four characters, all ``str.isdigit``), else None."""
    return int(name) if name.isdigit() and len(name) <= 4 else None


def _codex_sessions(ctx: Ctx, top: str, last_build_ms: float | None) -> list[Unit]:
    """The units of the directories below ``sessions/`` whose entries may differ from what the last build saw.
    A date directory (year, month, day) from the cutoff on, or changed since the last build (the later of its
    mtime and ctime: a restore sets the mtime back, never the ctime), is listed whole. An unchanged year or
    month is listed for its directories only (its files are those the build saw); an unchanged day is not
    listed. A directory that is not a date is walked whole (Codex writes none; Obelisk walks ``sessions/``
    recursively)."""
    cutoff = cutoff_day(last_build_ms)
    units: list[Unit] = []

    def changed(path: str) -> bool:
        if last_build_ms is None:
            return True
        try:
            st = ctx.stat(path)
        except (OSError, ValueError):
            return True  # (cannot tell: listed)
        return max(st.st_mtime_ns, st.st_ctime_ns) / 1e6 > last_build_ms

    pending: list[tuple[str, Day, bool]] = [(top, (), True)]  # (directory, its date, listed whole)
    while pending:
        path, day, whole = pending.pop()
        for entry in scan(ctx, path):
            number = _date_number(entry.name) if len(day) < 3 else None
            if number is None:
                if whole and is_file(entry, ".jsonl"):
                    units.append(Unit(entry.path, "codex", "jsonl"))
                elif is_subdir(entry):
                    units.extend(walk_jsonl_tree(ctx, entry.path, "codex"))
            elif is_subdir(entry):
                date = (*day, number)
                if cutoff is None or date >= cutoff[:len(date)] or changed(entry.path):
                    pending.append((entry.path, date, True))
                elif len(date) < 3:
                    pending.append((entry.path, date, False))
    return units


def _codex(ctx: Ctx, home: str, has_rows_under: Probe, last_build_ms: float | None) -> Iterator[Unit]:
    codex = os.path.join(home, ".codex")
    yield from _codex_sessions(ctx, os.path.join(codex, "sessions"), last_build_ms)
    archived = os.path.join(codex, "archived_sessions")
    if has_rows_under(archived + os.sep):  # (only an Obelisk that walks archives has a row there)
        yield from walk_jsonl_tree(ctx, archived, "codex")


def collect_candidates(ctx: Ctx, home: str, source: str, *, dirs: Collection[str], last_build_ms: float | None,
                       has_rows_under: Probe, mains: list[str], units: list[Unit]) -> None:
    """The units of ``source`` in ``home`` that can belong to the scope: Claude main transcripts as paths onto
    ``mains`` (each stands for ``Unit(path, source, "jsonl")``), every other unit onto ``units``. ``dirs``: the
    directories holding the scope's known transcripts."""
    if source == "claude":
        _claude(ctx, home, dirs, mains, units)
    elif source == "codex":
        units.extend(_codex(ctx, home, has_rows_under, last_build_ms))
    else:
        units.extend(WALKERS[source](ctx, home))
