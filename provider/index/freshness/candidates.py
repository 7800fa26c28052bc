"""Where a scope's transcripts can be: the directories a scoped assessment walks (the package README).

Claude
    A project directory is Claude Code's encoding of the session's launch directory (``walks.claude_slug``:
    every character but ASCII letters and digits becomes ``-``; names longer than 200 characters are cut
    and given a hash suffix). The encoding is lossy, so the match is conservative: a directory is walked
    when its name equals a root's encoding, starts with it followed by ``-`` (any path below the root),
    is a cut name longer than 200 characters whose first 200 characters start with the root's encoding
    cut to 200, or holds a transcript of a session the index places in scope. Never missing an in-scope
    directory; sometimes walking a sibling such as ``/a/b-c`` for root ``/a/b`` (its heads then decide). These
    directories are listed on every request, whatever their mtimes (a restore may have set them back).
Codex
    ``sessions/YYYY/MM/DD/``: the day directories from two days before the ``__last_build__`` marker on
    (directory names are local dates, the marker is UTC), and the date directories (year, month, day) on the
    way to a transcript of a session in scope. Such an older directory is listed only when it changed since the
    last build (Codex names a new rollout after the day it starts: new files land in new days); unchanged, a
    year or month is not listed but visited by name (one stat of each directory on the way), and a day's files
    in scope are judged where the index says they are. "Changed" is the later of the directory's mtime and
    ctime: a restore that keeps mtimes (``tar x``, ``rsync -a``, ``cp -p``, Syncthing, a backup) sets a
    directory's mtime back to before the build, but no tool can set its ctime back. In a directory listed
    because it changed, an older date directory on the way to no known file is looked at too (one stat) and
    listed when it changed: a restored rollout may arrive in a new day or month directory. Without the marker,
    or for a name that is not a date, everything is walked.
    ``archived_sessions/`` only when the index holds a row under it (as ``walks``), and there only the files
    of sessions in scope and the files whose name date is on or after that cutoff.
Kimi and Pi
    Their layouts carry neither a date nor the project: walked whole (``walks``).
"""

from __future__ import annotations

import functools
import math
import os
import re
import stat as stat_mod
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from typing import Final

from .context import Ctx, Unit
from .scope import is_dir
from .walks import WALKERS, claude_slug, is_file, is_subdir, list_claude_project, scan, walk_jsonl_tree

#: Claude Code cuts longer project directory names and appends a hash.
CLAUDE_SLUG_CUT: Final = 200
#: Days before ``__last_build__`` whose Codex day directories are still walked (local dates vs UTC).
CODEX_SLACK_DAYS: Final = 2

Day = tuple[int, ...]
Probe = Callable[[str], bool]


def slug_can_hold(name: str, root_slug: str) -> bool:
    """Whether a Claude project directory named ``name`` can hold sessions under the root so encoded."""
    if name == root_slug or name.startswith(root_slug + "-"):
        return True
    return len(name) > CLAUDE_SLUG_CUT and name.startswith(root_slug[:CLAUDE_SLUG_CUT])


def first_components(paths: Collection[str], top: str) -> set[str]:
    """The first component below ``top`` of every path below ``top`` (a name in ``top``)."""
    prefix = top + os.sep
    start = len(prefix)
    return {path[start:].partition(os.sep)[0] for path in paths if path.startswith(prefix)}


def claude_units(ctx: Ctx, home: str, dirs: Collection[str], mains: list[str], units: list[Unit]) -> None:
    """The project directories that can hold the scope's sessions, listed (``walks.list_claude_project``);
    ``dirs``: the directories holding the scope's known transcripts (those below the projects folder count)."""
    projects = home.rstrip("/") + "/.claude/projects"  # (home is normal: os.path.join's result, at less cost)
    slugs = {claude_slug(root) for root in ctx.roots}
    # Every name ``slug_can_hold`` accepts starts with a slug cut to CLAUDE_SLUG_CUT (a prefix of the slug
    # itself): one C-level test passes over the other projects' directories.
    cuts = tuple({s[:CLAUDE_SLUG_CUT] for s in slugs})
    holding = first_components(dirs, projects)  # the project directories holding a known transcript
    for project in scan(ctx, projects):
        name = project.name
        if (name in holding or (name.startswith(cuts) and any(slug_can_hold(name, s) for s in slugs))) \
                and is_subdir(project):
            list_claude_project(ctx, project.path, mains, units)


def cutoff_day(last_build_ms: float | None) -> Day | None:
    """The first Codex day directory (y, m, d) still walked for new files; None: walk every day."""
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


def _skip_below(day: Day, cutoff: Day | None) -> float:
    """The numbers ``n`` for which ``(*day, n)`` is before ``cutoff`` are those below this bound (a date level
    of ``day``'s depth; none below 3 levels or without a cutoff)."""
    if cutoff is None or len(day) >= 3:
        return -math.inf
    head = cutoff[:len(day)]
    if day < head:
        return math.inf
    return cutoff[len(day)] if day == head else -math.inf


#: The directories on the way to the known files below a top directory: each name's own such entries.
Trie = dict[str, "Trie"]


def _trie(dirs: Iterable[str], top: str) -> Trie:
    """The directories ``dirs`` below ``top`` and every directory between, as nested names."""
    trie: Trie = {}
    prefix = top + os.sep
    start = len(prefix)
    for path in dirs:
        if path.startswith(prefix):
            node = trie
            for name in path[start:].split(os.sep):
                node = node.setdefault(name, {})
    return trie


def _codex_sessions(ctx: Ctx, top: str, cutoff: Day | None, dirs: Iterable[str],
                    last_build_ms: float | None) -> list[Unit]:
    """Day directories at or after ``cutoff`` or holding a known file; anything not date-shaped whole. A date
    directory (year, month or day) before the cutoff whose entries did not change since the last build (its
    mtime) is not listed: only its entries on the way to a known file are visited (by name, one stat each), and
    the files of sessions in scope in such a day directory are judged where the index says they are
    (``assess``). A list, not a generator: most of these directories add nothing, and a generator per
    directory cost more than the directory's stat."""
    units: list[Unit] = []

    def changed(st: os.stat_result) -> bool:
        """Whether a directory's entries may differ from the last build's: its mtime or its ctime is later."""
        return last_build_ms is None or max(st.st_mtime_ns, st.st_ctime_ns) / 1e6 > last_build_ms

    def old(top_path: str, top_day: Day, top_held: Trie) -> None:
        """A date directory before the cutoff on the way to known files (``held``: the names on that way), and
        the same below it: visited by name when unchanged since the last build, else listed. A directory no
        longer there (or no directory) adds nothing: the known files below it are judged where the index says
        they are. A loop over a stack, not a call per directory: a scope's rollouts can lie in many days."""
        stat = ctx.stat
        pending = [(top_path, top_day, top_held)]
        while pending:
            path, day, held = pending.pop()
            try:
                st = stat(path)
            except (OSError, ValueError):
                continue
            if not stat_mod.S_ISDIR(st.st_mode):
                continue
            if changed(st):
                walk(path, day, held, True)  # an entry was added or removed since the last build
            elif len(day) < 3:  # (an unchanged day directory adds nothing: its files in scope are judged as known)
                for name, below in held.items():
                    child = path + os.sep + name
                    number = _date_number(name)
                    if number is not None:
                        pending.append((child, (*day, number), below))  # before the cutoff as its parent is
                    elif is_dir(ctx, child):
                        units.extend(walk_jsonl_tree(ctx, child, "codex"))  # not a date level: walked whole

    def walk(path: str, day: Day, held: Trie, path_changed: bool | None = None) -> None:
        # A date-named entry before the cutoff (``(*day, number) < cutoff``) on the way to no known file is
        # passed over unless ``path`` changed since the last build (``path_changed``; None: not statted yet, a
        # stat on first need): then it may have been added since, and is looked at as an older directory.
        # A date-named entry's name is digits only: never a ``.jsonl`` file, so only a directory of it counts.
        below = _skip_below(day, cutoff)
        for entry in scan(ctx, path):
            number = _date_number(entry.name)
            if number is None:
                if is_file(entry, ".jsonl"):
                    units.append(Unit(entry.path, "codex", "jsonl"))
                elif is_subdir(entry):
                    units.extend(walk_jsonl_tree(ctx, entry.path, "codex"))  # not a date level: walked whole
            elif len(day) == 3:
                if is_subdir(entry):
                    units.extend(walk_jsonl_tree(ctx, entry.path, "codex"))  # below the day level: walked whole
            elif number >= below:
                if is_subdir(entry):
                    walk(entry.path, (*day, number), held.get(entry.name, {}))  # at or after the cutoff: listed
            elif entry.name in held:
                if is_subdir(entry):
                    old(entry.path, (*day, number), held[entry.name])
            elif is_subdir(entry):
                if path_changed is None:
                    try:
                        path_changed = changed(ctx.stat(path))
                    except (OSError, ValueError):
                        path_changed = True  # (cannot tell: looked at, as without the marker)
                if path_changed:
                    old(entry.path, (*day, number), {})  # listed only when it changed itself

    walk(top, (), _trie(dirs, top))
    return units


@functools.cache
def _rollout_date() -> re.Pattern[str]:
    """The date in an archived rollout's name (compiled on first use: only a home with archived rows needs it)."""
    return re.compile(r"rollout-(\d{4})-(\d{2})-(\d{2})")


def _archived(ctx: Ctx, top: str, cutoff: Day | None, known: Collection[str]) -> Iterator[Unit]:
    for unit in walk_jsonl_tree(ctx, top, "codex"):
        match = _rollout_date().match(os.path.basename(unit.path))
        if cutoff is None or match is None or unit.path in known or \
                tuple(int(g) for g in match.groups()) >= cutoff:
            yield unit


def codex_units(ctx: Ctx, home: str, known: Mapping[str, str], dirs: Collection[str], *, cutoff: Day | None,
                has_rows_under: Probe, last_build_ms: float | None) -> Iterator[Unit]:
    """``known``: source by path of the scope's known transcripts; ``dirs``: the directories holding them (those
    below the sessions folder count)."""
    codex = home.rstrip("/") + "/.codex"  # (home is normal: os.path.join's result, at less cost)
    yield from _codex_sessions(ctx, codex + "/sessions", cutoff, dirs, last_build_ms)
    archived = codex + "/archived_sessions"
    if has_rows_under(archived + os.sep):
        yield from _archived(ctx, archived, cutoff, {path for path, source in known.items() if source == "codex"})


def collect_candidates(ctx: Ctx, home: str, source: str, *, known: Mapping[str, str], dirs: Collection[str],
                       last_build_ms: float | None, has_rows_under: Probe, mains: list[str],
                       units: list[Unit]) -> None:
    """The units of ``source`` in ``home`` that can belong to the scope (module docstring): Claude main
    transcripts as paths onto ``mains`` (each stands for ``Unit(path, source, "jsonl")``), every other unit onto
    ``units``. ``known``: source by path of the transcript files of the sessions in scope, as
    ``scope.norm_path`` returned them; ``dirs``: the directories holding them (each walk takes those below its
    own top)."""
    if source == "claude":
        claude_units(ctx, home, dirs, mains, units)
    elif source == "codex":
        units.extend(codex_units(ctx, home, known, dirs, cutoff=cutoff_day(last_build_ms),
                                 has_rows_under=has_rows_under, last_build_ms=last_build_ms))
    else:
        units.extend(WALKERS[source](ctx, home))
