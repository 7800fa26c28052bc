"""Is the Obelisk index fresh for a scope? An outside reader's judgement over ``index_state``.

The caller reads ``index_state`` inside its read transaction and passes the rows in; this package only looks
at the transcript files on disk (``shared/obelisk-db-interface.md`` §2.5 and §6), never at the database.

Scope
    A transcript belongs to the scope when its session cwd lies under one of ``roots`` on a path boundary
    (``/a/b`` holds ``/a/b`` and ``/a/b/c``, never ``/a/bc``). The cwd comes from a bounded head of the file
    (at most ``max_head_bytes`` read): Claude and Pi, the first record with a ``cwd``; Codex, the
    ``session_meta`` (or first ``turn_context``) ``payload.cwd``; Kimi, ``state.json`` ``cwd``/``workDir``.
    Claude subagent and workflow files without a cwd of their own inherit their parent session's. When the
    first line is longer than the head, the first ``"cwd"`` string in the partial line is used (best
    effort). A file whose cwd cannot be found in its head is *unattributed*: counted, kept outside the
    scope, no effect on the verdict. Codex ``archived_sessions/`` is walked only when the index already
    holds a row under it (the Obelisk version that wrote the index walks archives); otherwise an older
    index would look incomplete forever.

Per in-scope unit (a transcript file; a Kimi session directory)
    * no ``index_state`` row: *unindexed*.
    * legacy ``mtime:lines`` (also a NULL cursor rebuilt from the columns): stale when the file mtime is
      newer than the stored one (+ tolerance). Otherwise the newline-terminated line count is compared with
      ``lines``, which catches the Codex same-mtime append (issue #104); ``lines`` may also be one more than
      that count when the file ends in an unterminated tail (Claude counts a parseable tail; pre-#102
      cursors counted any tail). Claude workflow ``.json`` units (``mtime:1``) get the mtime test only.
    * five-part signature (Claude current, Codex v3): a size or mtime difference is stale. Equal size and
      mtime with equal ctime and inode is up to date without reading the file. **Choice:** equal size and
      mtime but a different ctime or inode (a copy, a restore, a tar extract) is up to date when the line
      count still equals ``lines``, else stale. Obelisk itself would re-parse such a file once, but its
      content is what was indexed, so the evidence is current.
    * Codex v4: ``sourceSize`` (from the cursor's JSON state) against ``st_size``, and the mtime; a
      ctime/inode-only difference is settled by the newline-terminated line count against
      ``completeLines``. An undecodable state makes the cursor unknown.
    * Pi snapshot: size and mtime (its line field is always 0, so a ctime/inode-only change is up to
      date). A tombstone ``0:0`` whose file exists again is stale.
    * Kimi: the aggregate ``max(mtime)`` over ``state.json`` and the ``wire.jsonl`` files is recomputed;
      when it equals the stored one the line total must match. The exact Obelisk sum is not pinned down, so
      wire lines with or without unterminated tails, with or without ``state.json``'s lines, are accepted.
    * any other cursor: *unknown cursor*. A file that vanishes or cannot be read mid-check: *unreadable*.
    * **Choice:** a unit path that is no longer a regular file once links are followed (a FIFO, a device, a
      socket: anything the user runs can swap one in) is *unreadable* (``unknown`` unless worse is known),
      never read. Every read of a transcript goes through ``inputs.regular_file_chunks`` (non-blocking open,
      fstat must say regular, bounded chunks, the request's deadline checked before each); links are followed,
      as the walk, the stats and Obelisk itself follow them.
    Lines are counted only where a decision needs them; ``lines_counted`` says how many files were counted.

Rows whose file is gone are *missing on disk* (informational, never stale by itself). A deleted file's cwd
cannot be read, so only Claude rows whose project directory is exactly the encoding of a root are
attributed to the scope; other deleted files are not counted (an under-count, never a cross-scope leak).

Markers (rows named ``__…__``): ``__last_build__`` age (negative when the marker is ahead of ``now_ms``);
``__app_heartbeat__`` fresh when younger than 60 s (a live daemon is reported but never turns stale units
fresh); ``__app_last_successful_build__`` older than ``__last_build__`` by more than ``APP_BUILD_SLACK_MS``
is a partial app build; an in-scope source without any ``__<source>_canonical_transcript_vN__`` marker has
a full replay pending.

Verdict precedence (``verdict.decide_verdict``, the one place it lives):
    1. ``unknown``    nothing can be judged: no usable root, no supported source, or no readable home
                      (reason ``no_transcript_home`` when no other reason says why), or no unit of the scope
                      was checked: the scope's index rows name files that are all gone
                      (``every_in_scope_file_missing``), or no transcript in scope was found at all
                      (``no_transcript_in_scope``: an empty scope is never ``fresh``);
    2. ``incomplete`` any in-scope unit is unindexed;
    3. ``stale``      any unit is stale, the last app build was partial, or a provider marker is missing;
    4. ``unknown``    something could not be judged (unknown cursor, unreadable root/home/file,
                      unsupported source): reported only when nothing worse is already known;
    5. ``fresh``      otherwise (at least one unit of the scope checked, every one up to date).

Paths in ``stale_units``/``unindexed_units`` are private (local ``status`` view only); ``to_public()``
carries only counts, flags, ages and reason codes. Nothing here logs; malformed input never raises.

A request uses :func:`assess_scoped_freshness` (``scoped``): the same judgement, but only over the
directories that can hold the scope's transcripts, attributing the files of sessions the index places in
scope without reading their heads (cost follows the scope; see ``scoped`` for what it leaves out).
:func:`assess_freshness` walks every transcript (``status``, tests, ``tools/bench_freshness.py``'s baseline).

Modules
    ``scoped``   the scoped assessment a request uses;
    ``candidates`` the directories a scoped assessment walks;
    ``rows``     splitting ``index_state`` rows into unit rows and marker values;
    ``scope``    roots, path-boundary containment, supported sources, readable homes;
    ``walk``     discovering transcript units per provider layout;
    ``heads``    a unit's cwd from a bounded head;
    ``units``    judging one unit against its cursor, line counting;
    ``tally``    counting units into buckets, rows missing on disk;
    ``markers``  marker rows;
    ``verdict``  verdict precedence, ``FreshnessReport`` and ``to_public``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

from .context import Ctx
from .context import Outcome as Outcome
from .context import UnitKind as UnitKind
from .markers import APP_BUILD_SLACK_MS, HEARTBEAT_FRESH_MS, read_markers
from .rows import IndexRow as IndexRow
from .rows import split_rows
from .scope import SUPPORTED_SOURCES, prepare_roots, readable_homes, wanted_sources
from .scoped import assess_scoped_freshness as assess_scoped_freshness
from .tally import Tally, assess_unit, count_missing
from .verdict import FreshnessReport, Verdict, build_report
from .walk import WALKERS

__all__ = [
    "APP_BUILD_SLACK_MS",
    "HEARTBEAT_FRESH_MS",
    "SUPPORTED_SOURCES",
    "FreshnessReport",
    "Verdict",
    "assess_freshness",
    "assess_scoped_freshness",
]


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
) -> FreshnessReport:
    """Judge whether ``index_state`` covers the transcripts of the scope (``roots`` x ``sources``).

    ``index_rows`` are ``(jsonl_path, mtime, lines_processed, cursor)`` rows already read by the caller;
    ``transcript_homes`` are HOME-like directories holding ``.claude``, ``.codex``, ``.kimi-code``, ``.pi``;
    ``deadline_check`` is called before every chunk read from a transcript (its exception ends the assessment).
    Never raises on malformed rows, cursors or transcripts.
    """
    unit_rows, marker_values = split_rows(index_rows)
    root_list, roots_ok = prepare_roots(roots, stat)
    ctx = Ctx(
        stat=stat,
        max_head_bytes=max(1, int(max_head_bytes)),
        tol=abs(float(mtime_tolerance_ms)),
        roots=root_list,
        rows=unit_rows,
        check=deadline_check,
    )
    if not roots_ok:
        ctx.reasons.add("unreadable_root")
    wanted = wanted_sources(sources)
    supported = [s for s in wanted if s in SUPPORTED_SOURCES]
    if len(supported) < len(wanted):
        ctx.reasons.add("unsupported_source")
    homes = readable_homes(ctx, transcript_homes)
    tally = Tally()
    if root_list:
        for home in homes:
            for source in supported:
                for unit in WALKERS[source](ctx, home):
                    assess_unit(ctx, unit, tally)
        if "claude" in supported:
            count_missing(ctx, homes, tally)
    judgeable = bool(root_list and supported and homes)
    return build_report(ctx, tally, read_markers(marker_values), wanted, now_ms=now_ms, judgeable=judgeable)
