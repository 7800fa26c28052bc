"""The two assessments: the scoped one a request makes, and the full walk (``status``, tests, the bench's
baseline). Both count units into a ``tally.Tally`` and end in ``verdict.build_report``."""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path

from .candidates import Probe, collect_candidates
from .context import Ctx, IndexRow, Unit
from .judging import judge_unit
from .memo import TranscriptMemo
from .scope import SUPPORTED_SOURCES, norm_path, prepare_roots, readable_homes, split_rows, wanted_sources
from .tally import Tally, assess_unit, count_missing, judge_in_scope
from .verdict import FreshnessReport, build_report, read_markers
from .walks import WALKERS

RowLookup = Callable[[Sequence[str]], Mapping[str, IndexRow]]
#: Sources whose ``sessions.jsonl_path`` is the transcript unit itself (Kimi's unit is a directory, Pi is
#: walked whole): a known file of these is judged even when no listed directory held it.
_FILE_SOURCES = ("claude", "codex")


def _start(roots: Sequence[str], sources: Sequence[str], homes: Sequence[str | Path], *,
           stat: Callable[[str], os.stat_result], real_roots: Sequence[str] | None, max_head_bytes: int,
           mtime_tolerance_ms: float, deadline_check: Callable[[], object] | None,
           memo: TranscriptMemo | None) -> tuple[Ctx, tuple[str, ...], list[str], list[str]]:
    """The context of one assessment, the requested sources, the supported ones and the readable homes; what
    cannot be used is recorded as a reason."""
    root_list, roots_ok = prepare_roots(roots, stat, real_roots)
    ctx = Ctx(stat=stat, roots=root_list, max_head_bytes=max(1, int(max_head_bytes)),
              tol=abs(float(mtime_tolerance_ms)), check=deadline_check, memo=memo)
    if not roots_ok:
        ctx.reasons.add("unreadable_root")
    wanted = wanted_sources(sources)
    supported = [s for s in wanted if s in SUPPORTED_SOURCES]
    if len(supported) < len(wanted):
        ctx.reasons.add("unsupported_source")
    return ctx, wanted, supported, readable_homes(ctx, homes)


def assess_freshness(
    index_rows: Sequence[tuple[str, float | None, int | None, str | None]],
    *,
    roots: Sequence[str],
    sources: Sequence[str],
    transcript_homes: Sequence[Path],
    now_ms: float,
    stat: Callable[[str], os.stat_result] = os.stat,
    max_head_bytes: int = 64 * 1024,
    mtime_tolerance_ms: float = 1.0,
    deadline_check: Callable[[], object] | None = None,
    memo: TranscriptMemo | None = None,
) -> FreshnessReport:
    """Judge whether ``index_state`` covers the transcripts of the scope (``roots`` x ``sources``), walking
    every transcript of ``transcript_homes`` (HOME-like directories holding ``.claude``, ``.codex``,
    ``.kimi-code``, ``.pi``) and reading each one's head.

    ``index_rows`` are ``(jsonl_path, mtime, lines_processed, cursor)`` rows already read by the caller;
    ``deadline_check`` is called before every chunk read and between directory entries (its exception ends the
    assessment); ``memo`` keeps line counts and heads for the next assessment. Never raises on malformed rows,
    cursors or transcripts."""
    unit_rows, marker_values = split_rows(index_rows)
    ctx, wanted, supported, homes = _start(
        roots, sources, transcript_homes, stat=stat, real_roots=None, max_head_bytes=max_head_bytes,
        mtime_tolerance_ms=mtime_tolerance_ms, deadline_check=deadline_check, memo=memo)
    ctx.rows = unit_rows
    tally = Tally()
    if ctx.roots:
        for home in homes:
            for source in supported:
                for unit in WALKERS[source](ctx, home):
                    assess_unit(ctx, unit, tally)
        if "claude" in supported:
            count_missing(ctx, homes, tally)
    judgeable = bool(ctx.roots and supported and homes)
    return build_report(ctx, tally, read_markers(marker_values), wanted, now_ms=now_ms, judgeable=judgeable)


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
    deadline_check: Callable[[], object] | None = None,
    memo: TranscriptMemo | None = None,
) -> FreshnessReport:
    """Judge the scope's freshness over the directories that can hold its transcripts (the package README).

    ``known_files``: (path, source) of the transcripts of the sessions the index places in scope; ``markers``:
    the marker rows' values by key; ``lookup``: ``index_state`` rows of given paths (primary-key reads in the
    caller's snapshot); ``has_rows_under``: whether the index holds a row under a path prefix. ``real_roots``:
    the roots' real paths as already resolved (resolved here when None). ``deadline_check`` and ``memo`` as in
    :func:`assess_freshness`. Never raises on malformed rows, cursors or transcripts."""
    ctx, wanted, supported, homes = _start(
        roots, sources, transcript_homes, stat=stat, real_roots=real_roots, max_head_bytes=max_head_bytes,
        mtime_tolerance_ms=mtime_tolerance_ms, deadline_check=deadline_check, memo=memo)
    marks = read_markers(markers)
    tally = Tally()
    if ctx.roots:
        known = _known_paths(known_files, supported)
        dirs = {path.rpartition("/")[0] for path in known}
        # The rows of the scope's own files first, beside the caller's other index reads; then those of the
        # listed files the index does not attribute to the scope.
        rows = _load_rows(lookup, known.keys())
        units: list[Unit] = []
        listed_mains: list[tuple[str, list[str]]] = []  # (source, Claude main transcripts listed)
        for home in homes:
            for source in supported:
                mains: list[str] = []
                collect_candidates(ctx, home, source, dirs=dirs, last_build_ms=marks.last_build,
                                   has_rows_under=has_rows_under, mains=mains, units=units)
                listed_mains.append((source, mains))
        listed = {unit.path for unit in units}.union(*(mains for _, mains in listed_mains))
        unread = listed.difference(known)
        ctx.rows = {**rows, **_load_rows(lookup, unread)} if unread else rows
        for source, mains in listed_mains:
            for path in mains:
                unit = Unit(path, source, "jsonl")
                if path in known:
                    judge_in_scope(ctx, unit, tally)  # in scope by the index's attribution: no head read
                else:
                    _assess(ctx, unit, tally)
        for unit in units:
            if unit.path in known or (unit.parent is not None and unit.parent in known):
                judge_in_scope(ctx, unit, tally)
            else:
                _assess(ctx, unit, tally)
        for path in known.keys() - listed:  # in a directory not listed: judged where the index says it is
            if known[path] in _FILE_SOURCES:
                judge_in_scope(ctx, Unit(path, known[path], "jsonl"), tally, gone_is_missing=True)
    judgeable = bool(ctx.roots and supported and homes)
    return build_report(ctx, tally, marks, wanted, now_ms=now_ms, judgeable=judgeable)


def _known_paths(known_files: Sequence[tuple[str, str]], supported: Collection[str]) -> dict[str, str]:
    """Source by normalised path of the known files of the supported sources (a later duplicate's wins)."""
    known: dict[str, str] = {}
    for raw, source in known_files:
        path = norm_path(raw) if source in supported else None
        if path is not None:
            known[path] = source
    return known


def _load_rows(lookup: RowLookup, paths: Collection[str]) -> Mapping[str, IndexRow]:
    """The rows of ``paths`` (distinct), then of the resolved form of the paths without a row (under that form),
    as the lookup returned them (its mapping is not changed: a warm service may keep it). The lookup gives rows
    of the paths asked only, so as many rows as paths means every path has its row."""
    rows = lookup(sorted(paths))  # (sorted: a warm service remembers rows by the paths asked, in order)
    if len(rows) == len(paths):
        return rows
    resolved = set()
    for path in set(paths).difference(rows):
        real = os.path.realpath(path)
        if real != path:
            resolved.add(real)
    if resolved:
        rows = {**rows, **lookup(sorted(resolved))}
    return rows


def _assess(ctx: Ctx, unit: Unit, tally: Tally) -> None:
    """A listed unit the index does not attribute to the scope: attributed by its head, unless the index holds
    it and it cannot change the verdict."""
    row = ctx.rows.get(unit.path)
    if row is not None and unit.source == "codex":
        tally.seen.add(unit.path)
        return  # another session's rollout the index holds (a day directory holds every project's): no stat
    if row is not None and unit.kind != "kimi_dir" and judge_unit(ctx, unit, row) == "up_to_date":
        tally.seen.add(unit.path)
        return  # indexed and unchanged: whatever its scope, it cannot change the verdict
    assess_unit(ctx, unit, tally)
