"""Freshness from what the index already knows: cost follows the scope, not the transcript tree.

The caller passes the transcript files of the sessions the index places in scope (``sessions.jsonl_path`` of
the scope set, read in the request's snapshot), the marker rows, and a row lookup that reads ``index_state``
for given paths only (primary-key lookups in the same snapshot). Then:

* only the directories that can hold the scope's transcripts are listed (``candidates``);
* a file of a session in scope, or a Claude subagent or workflow file of such a session, is in scope by the
  index's own attribution (the ``project_path`` the scope template matched): judged, no head read;
* a Codex rollout the index has a row for that is not a session in scope is skipped without a stat (a day
  directory holds every project's rollouts of that day);
* any other file the index has a row for whose cursor still matches the file is up to date whatever its
  scope: it cannot change the verdict, so its head is not read and it is not counted;
* a file the index does not know, or whose cursor no longer matches, is attributed by its head as in
  ``assess_freshness`` (unindexed or stale when in scope);
* a file of a session in scope that no listed directory held (an older Codex date directory unchanged since
  the last build is not listed) is judged where the index says it is; when it is gone it counts as missing
  on disk.

So stats and reads stay O(files in scope + files in walked directories). The verdict rules are those of
``verdict.decide_verdict``. Differences from the full walk: ``units_in_scope`` leaves out indexed, unchanged
files of sessions outside the scope set that heads would place in scope (e.g. a Codex child thread, a session
older than the recency window); an indexed Codex child thread that grew, a session outside the recency window
resumed into an old Codex day directory, a new rollout in an old day directory that was there at the last build
and holds no session in scope, and a file the index does not hold in an old year, month or day directory
unchanged since the last build (mtime and ctime: it was there when the build ran) are not seen until a build
indexes them. A restore that sets mtimes back is seen: it moves the ctimes (``candidates``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Mapping, Sequence
from itertools import repeat
from operator import itemgetter
from pathlib import Path

from .candidates import Probe, collect_candidates
from .context import Ctx, Unit
from .markers import read_markers
from .rows import IndexRow
from .scope import SUPPORTED_SOURCES, already_normal, norm_path, prepare_roots, readable_homes, wanted_sources
from .tally import Tally, assess_unit, judge_files_in_scope, judge_in_scope
from .units import judge_row
from .verdict import FreshnessReport, build_report

RowLookup = Callable[[Sequence[str]], Mapping[str, IndexRow]]
#: Sources whose ``sessions.jsonl_path`` is the transcript unit itself (Kimi's unit is a directory, Pi is
#: walked whole): a known file of these is judged even when no walked directory held it.
_FILE_SOURCES = ("claude", "codex")


def _load_rows(lookup: RowLookup, paths: Collection[str]) -> Mapping[str, IndexRow]:
    """The rows of ``paths`` (distinct: a set or a dict's keys), then of the resolved form of the paths without a
    row (under that form), as the lookup returned them (its mapping is not changed: a warm service may keep it).
    The lookup gives rows of the paths asked only: as many rows as paths means every path has its row."""
    rows = lookup(sorted(paths))  # (sorted: a warm service remembers rows by the paths asked, in order)
    if len(rows) == len(paths):
        return rows  # every path has its row (the paths are distinct, the rows are theirs): the common case
    resolved = set()
    for path in set(paths).difference(rows):
        real = os.path.realpath(path)
        if real != path:
            resolved.add(real)
    if resolved:
        rows = {**rows, **lookup(sorted(resolved))}
    return rows


def _known_paths(known_files: Sequence[tuple[str, str]], supported: Sequence[str]) -> tuple[dict[str, str], set[str]]:
    """Source by normalised path of the known files of the supported sources (a later duplicate's source wins),
    and the directories holding them (those of every source: each walk looks only below its own top).

    The common case is taken whole, with C-level passes and no test per path: every path of a supported
    source (the scope template asked for those), NUL-free, holding a slash, named with more than two
    characters (so not empty, ``.`` or ``..``), in an already normal directory (``scope.already_normal``; a
    scope's transcripts share a few): each path is then already normal. Anything else (a shorter name too) is
    normalised path by path (``scope.norm_path``)."""
    wanted = set(supported)
    try:
        parts = list(map(str.rpartition, map(itemgetter(0), known_files), repeat("/")))
    except TypeError:  # a path that is not a str
        parts = []
    if parts and all(map(itemgetter(1), parts)) and min(map(len, map(itemgetter(2), parts))) > 2 \
            and set(map(itemgetter(1), known_files)) <= wanted \
            and "\x00" not in "".join(map(itemgetter(0), known_files)):
        dirs = set(map(itemgetter(0), parts))
        if all(not directory or already_normal(directory) for directory in dirs):
            return dict(known_files), dirs
    known: dict[str, str] = {}
    for raw, source in known_files:
        path = norm_path(raw) if source in wanted else None
        if path is not None:
            known[path] = source
    return known, {path.rpartition("/")[0] for path in known}


def _assess(ctx: Ctx, unit: Unit, tally: Tally) -> None:
    """A listed unit outside the index's attribution to the scope."""
    row = ctx.rows.get(unit.path)
    if row is not None and unit.source == "codex":
        tally.seen.add(unit.path)
        return  # another session's rollout the index holds (or a child thread): not even statted
    if row is not None and unit.kind != "kimi_dir" and judge_row(ctx, unit, row) == "up_to_date":
        tally.seen.add(unit.path)
        return  # indexed and unchanged: whatever its scope, it cannot change the verdict
    assess_unit(ctx, unit, tally)


def assess_scoped_freshness(
    known_files: Sequence[tuple[str, str]],
    markers: Mapping[str, object],
    *,
    lookup: RowLookup,
    has_rows_under: Probe,
    roots: Sequence[str],
    real_roots: Sequence[str] | None = None,
    sources: Sequence[str],
    transcript_homes: Sequence[str | Path],
    now_ms: float,
    stat: Callable[[str], os.stat_result] = os.stat,
    max_head_bytes: int = 64 * 1024,
    mtime_tolerance_ms: float = 1.0,
    remember: bool = False,
    deadline_check: Callable[[], object] | None = None,
) -> FreshnessReport:
    """Judge the scope's freshness from ``known_files`` ((path, source) of the sessions in scope) and the
    candidate directories (module docstring). ``real_roots``: the roots' real paths as already resolved
    (``paths.Roots.real_paths``; resolved here when None). ``remember``: reuse line counts and heads read under
    the same stat in this process (``memo``; a warm ``serve``). ``deadline_check``: called before every chunk
    read from a transcript (a request passes its deadline's ``check``, whose exception ends the assessment, as
    its deadline-checked ``stat`` does). Never raises on malformed rows, cursors or transcripts."""
    root_list, roots_ok = prepare_roots(roots, stat, real_roots)
    ctx = Ctx(stat=stat, max_head_bytes=max(1, int(max_head_bytes)), tol=abs(float(mtime_tolerance_ms)),
              roots=root_list, rows={}, remember=remember, check=deadline_check)
    if not roots_ok:
        ctx.reasons.add("unreadable_root")
    wanted = wanted_sources(sources)
    supported = [s for s in wanted if s in SUPPORTED_SOURCES]
    if len(supported) < len(wanted):
        ctx.reasons.add("unsupported_source")
    homes = readable_homes(ctx, transcript_homes)
    marks = read_markers(markers)
    tally = Tally()
    if root_list:
        known, dirs = _known_paths(known_files, supported)
        # The rows of the scope's own files first, beside the other index reads and before any listing (SQLite's
        # code and pages are still in the CPU's caches); then those of listed files the index does not attribute.
        rows = _load_rows(lookup, known.keys())
        units: list[Unit] = []
        listed_files: list[tuple[str, list[str]]] = []  # (source, main transcripts listed): unbuilt units
        for home in homes:
            for source in supported:
                mains: list[str] = []
                collect_candidates(ctx, home, source, known=known, dirs=dirs, last_build_ms=marks.last_build,
                                   has_rows_under=has_rows_under, mains=mains, units=units)
                if mains:
                    listed_files.append((source, mains))
        # Set algebra over whole collections (one C-level pass each), not a Python test per path: the listed
        # files, the known files no listed directory held (strays), the listed files the index attributes.
        listed = {unit.path for unit in units}
        for _, mains in listed_files:
            listed.update(mains)
        strays = [(p, known[p]) for p in known.keys() - listed if known[p] in _FILE_SOURCES]
        unread = listed.difference(known)  # listed files the index does not place in scope: rows not read yet
        ctx.rows = {**rows, **_load_rows(lookup, unread)} if unread else rows
        for source, mains in listed_files:
            attributed = known.keys() & mains
            judge_files_in_scope(ctx, attributed, source, tally)  # (in scope by the index's attribution)
            for path in set(mains).difference(attributed):
                _assess(ctx, Unit(path, source, "jsonl"), tally)
        for unit in units:
            if unit.path in known or (unit.parent is not None and unit.parent in known):
                judge_in_scope(ctx, unit, tally)  # in scope by the index's attribution
            else:
                _assess(ctx, unit, tally)
        for source in _FILE_SOURCES:
            judge_files_in_scope(ctx, [path for path, s in strays if s == source], source, tally,
                                 gone_is_missing=True)
    judgeable = bool(root_list and supported and homes)
    return build_report(ctx, tally, marks, wanted, now_ms=now_ms, judgeable=judgeable)

