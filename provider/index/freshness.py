"""Is the Obelisk index fresh for a scope? An outside reader's judgement over ``index_state``.

The caller reads ``index_state`` inside its read transaction and passes the rows in; this module only looks
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
    Lines are counted only where a decision needs them; ``lines_counted`` says how many files were counted.

Rows whose file is gone are *missing on disk* (informational, never stale by itself). A deleted file's cwd
cannot be read, so only Claude rows whose project directory is exactly the encoding of a root are
attributed to the scope; other deleted files are not counted (an under-count, never a cross-scope leak).

Markers (rows named ``__…__``): ``__last_build__`` age (negative when the marker is ahead of ``now_ms``);
``__app_heartbeat__`` fresh when younger than 60 s (a live daemon is reported but never turns stale units
fresh); ``__app_last_successful_build__`` older than ``__last_build__`` by more than ``APP_BUILD_SLACK_MS``
is a partial app build; an in-scope source without any ``__<source>_canonical_transcript_vN__`` marker has
a full replay pending.

Verdict precedence (``_decide_verdict``, the one place it lives):
    1. ``unknown``    nothing can be judged: no usable root, no supported source, or no readable home;
    2. ``incomplete`` any in-scope unit is unindexed;
    3. ``stale``      any unit is stale, the last app build was partial, or a provider marker is missing;
    4. ``unknown``    something could not be judged (unknown cursor, unreadable root/home/file,
                      unsupported source): reported only when nothing worse is already known;
    5. ``fresh``      otherwise (an empty scope, no transcripts at all, is fresh with ``units_in_scope=0``).

Paths in ``stale_units``/``unindexed_units`` are private (local ``status`` view only); ``to_public()``
carries only counts, flags, ages and reason codes. Nothing here logs; malformed input never raises.
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
import stat as stat_mod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Literal, NamedTuple

from provider.index.cursors import (
    CodexV4Cursor,
    Cursor,
    KimiAggregateCursor,
    LegacyCursor,
    PiSnapshotCursor,
    SignatureCursor,
    TombstoneCursor,
    ino_matches,
    parse_cursor,
)

__all__ = [
    "APP_BUILD_SLACK_MS",
    "HEARTBEAT_FRESH_MS",
    "SUPPORTED_SOURCES",
    "FreshnessReport",
    "Verdict",
    "assess_freshness",
]

Verdict = Literal["fresh", "stale", "incomplete", "unknown"]
IndexRow = tuple[str, float | None, int | None, str | None]

#: Obelisk's ``APP_HEARTBEAT_FRESH_MS``: a heartbeat younger than this means the app daemon is alive.
HEARTBEAT_FRESH_MS: Final = 60_000.0
#: ``__app_last_successful_build__`` and ``__last_build__`` come from separate clock reads in one finalize;
#: a later, separate build is at least the app's 2.5 s debounce (or the CLI's 30 s) away.
APP_BUILD_SLACK_MS: Final = 1_000.0
SUPPORTED_SOURCES: Final = frozenset({"claude", "codex", "kimi", "pi"})

_HEAD_CHUNK: Final = 8 * 1024
_COUNT_CHUNK: Final = 1024 * 1024
_MARKER_RE: Final = re.compile(r"__(.+)_canonical_transcript_v\d+__")
_CWD_RE: Final = re.compile(rb'"(?:cwd|workDir)"\s*:\s*"((?:[^"\\]|\\.){1,4096})"')
_SESSION_META_RE: Final = re.compile(rb'"type"\s*:\s*"session_meta"')
_SLUG_RE: Final = re.compile(r"[^A-Za-z0-9]")

UnitKind = Literal["jsonl", "workflow_json", "kimi_dir"]
Outcome = Literal["up_to_date", "stale", "unknown_cursor", "unreadable"]


@dataclass(frozen=True, slots=True)
class FreshnessReport:
    """The judgement for one scope. ``stale_units`` and ``unindexed_units`` are private paths."""

    verdict: Verdict
    units_in_scope: int
    up_to_date: int
    stale: int
    unindexed: int
    missing_on_disk: int
    unknown_cursor: int
    unreadable_units: int
    unattributed_files: int
    stale_units: tuple[str, ...]
    unindexed_units: tuple[str, ...]
    last_build_age_ms: float | None
    heartbeat_fresh: bool | None
    app_build_partial: bool
    missing_provider_markers: tuple[str, ...]
    lines_counted: int
    unknown_reasons: tuple[str, ...]

    def to_public(self) -> dict[str, object]:
        """Content-free projection: counts, flags, ages, source names and reason codes. No paths."""
        return {
            "verdict": self.verdict,
            "units_in_scope": self.units_in_scope,
            "up_to_date": self.up_to_date,
            "stale": self.stale,
            "unindexed": self.unindexed,
            "missing_on_disk": self.missing_on_disk,
            "unknown_cursor": self.unknown_cursor,
            "unreadable_units": self.unreadable_units,
            "unattributed_files": self.unattributed_files,
            "last_build_age_ms": self.last_build_age_ms,
            "heartbeat_fresh": self.heartbeat_fresh,
            "app_build_partial": self.app_build_partial,
            "missing_provider_markers": list(self.missing_provider_markers),
            "lines_counted": self.lines_counted,
            "unknown_reasons": list(self.unknown_reasons),
        }


# --------------------------------------------------------------------------------------------------- inputs


class _Row(NamedTuple):
    # A NamedTuple, not a frozen dataclass: one is built per index_state row (20,000 at 1M messages).
    mtime: object
    lines: object
    cursor: object


@dataclass(frozen=True, slots=True)
class _Unit:
    path: str
    source: str
    kind: UnitKind
    parent: str | None = None


@dataclass(frozen=True, slots=True)
class _Markers:
    last_build: float | None
    heartbeat: float | None
    heartbeat_present: bool
    app_success: float | None
    provider_sources: frozenset[str]


@dataclass(slots=True)
class _Ctx:
    """Mutable state of one assessment (internal)."""

    stat: Callable[[str], os.stat_result]
    max_head_bytes: int
    tol: float
    roots: tuple[str, ...]
    rows: dict[str, _Row]
    lines_counted: int = 0
    reasons: set[str] = field(default_factory=set)
    parent_cwds: dict[str, str | None] = field(default_factory=dict)


def _split_rows(index_rows: object) -> tuple[dict[str, _Row], dict[str, object]]:
    """Unit rows by path and marker values by key; rows not shaped (text path, _, _, _) are skipped."""
    units: dict[str, _Row] = {}
    markers: dict[str, object] = {}
    if not isinstance(index_rows, Iterable):
        return units, markers
    for row in index_rows:
        try:
            path, mtime, lines, cursor = row
        except (TypeError, ValueError):
            continue
        if not isinstance(path, str) or not path:
            continue
        if len(path) >= 4 and path.startswith("__") and path.endswith("__"):
            markers[path] = mtime
        else:
            units[path] = _Row(mtime=mtime, lines=lines, cursor=cursor)
    return units, markers


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return None if math.isnan(number) else number


def _read_markers(markers: Mapping[str, object]) -> _Markers:
    sources: set[str] = set()
    for key in markers:
        match = _MARKER_RE.fullmatch(key)
        if match:
            sources.add(match.group(1))
    return _Markers(
        last_build=_number(markers.get("__last_build__")),
        heartbeat=_number(markers.get("__app_heartbeat__")),
        heartbeat_present="__app_heartbeat__" in markers,
        app_success=_number(markers.get("__app_last_successful_build__")),
        provider_sources=frozenset(sources),
    )


def _norm_path(value: object) -> str | None:
    """An absolute, normalised path string, or None."""
    if not isinstance(value, str | os.PathLike):
        return None
    try:
        text = os.fspath(value)
    except TypeError:
        return None
    if not isinstance(text, str) or "\x00" in text or not os.path.isabs(text):
        return None
    return os.path.normpath(text)


def _is_dir(ctx: _Ctx, path: str) -> bool:
    try:
        return stat_mod.S_ISDIR(ctx.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def _prepare_roots(roots: object, stat: Callable[[str], os.stat_result]) -> tuple[tuple[str, ...], bool]:
    """Normalised roots (plus their resolved forms) and whether every root was a readable directory."""
    out: list[str] = []
    all_ok = True
    for raw in roots if isinstance(roots, Sequence) and not isinstance(roots, str) else ():
        root = _norm_path(raw)
        if root is None:
            all_ok = False
            continue
        out.append(root)
        real = os.path.realpath(root)
        if real != root:
            out.append(real)
        try:
            all_ok = all_ok and stat_mod.S_ISDIR(stat(root).st_mode)
        except (OSError, ValueError):
            all_ok = False
    return tuple(dict.fromkeys(out)), all_ok


def _under_roots(cwd: str, roots: Sequence[str]) -> bool:
    """Path-boundary containment: ``/a/b`` holds ``/a/b`` and ``/a/b/c``, never ``/a/bc``."""
    path = _norm_path(cwd)
    if path is None:
        return False
    return any(root in (path, os.sep) or path.startswith(root + os.sep) for root in roots)


# --------------------------------------------------------------------------------------------------- walking


def _scan(ctx: _Ctx, path: str) -> list[os.DirEntry[str]]:
    """Entries of a directory; a missing directory is empty, an unreadable one is recorded."""
    try:
        with os.scandir(path) as it:
            return list(it)
    except FileNotFoundError:
        return []
    except (OSError, ValueError):
        ctx.reasons.add("unreadable_home")
        return []


def _is_subdir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def _is_file(entry: os.DirEntry[str], suffix: str) -> bool:
    try:
        return entry.name.endswith(suffix) and entry.is_file()
    except OSError:
        return False


def _walk_claude_session_dir(ctx: _Ctx, session_dir: str, parent: str) -> Iterator[_Unit]:
    subagents = os.path.join(session_dir, "subagents")
    for entry in _scan(ctx, subagents):
        if _is_file(entry, ".jsonl"):
            yield _Unit(entry.path, "claude", "jsonl", parent)
    for run in _scan(ctx, os.path.join(subagents, "workflows")):
        if _is_subdir(run):
            for entry in _scan(ctx, run.path):
                if _is_file(entry, ".jsonl"):
                    yield _Unit(entry.path, "claude", "jsonl", parent)
    for entry in _scan(ctx, os.path.join(session_dir, "workflows")):
        if _is_file(entry, ".json"):
            yield _Unit(entry.path, "claude", "workflow_json", parent)


def _walk_claude(ctx: _Ctx, home: str) -> Iterator[_Unit]:
    for project in _scan(ctx, os.path.join(home, ".claude", "projects")):
        if not _is_subdir(project):
            continue
        for entry in _scan(ctx, project.path):
            if _is_file(entry, ".jsonl"):
                yield _Unit(entry.path, "claude", "jsonl")
            elif _is_subdir(entry):
                parent = os.path.join(project.path, entry.name + ".jsonl")
                yield from _walk_claude_session_dir(ctx, entry.path, parent)


def _walk_jsonl_tree(ctx: _Ctx, top: str, source: str) -> Iterator[_Unit]:
    stack = [top]
    while stack:
        for entry in _scan(ctx, stack.pop()):
            if _is_subdir(entry):
                stack.append(entry.path)
            elif _is_file(entry, ".jsonl"):
                yield _Unit(entry.path, source, "jsonl")


def _walk_codex(ctx: _Ctx, home: str) -> Iterator[_Unit]:
    codex = os.path.join(home, ".codex")
    yield from _walk_jsonl_tree(ctx, os.path.join(codex, "sessions"), "codex")
    archived = os.path.join(codex, "archived_sessions")
    if any(path.startswith(archived + os.sep) for path in ctx.rows):
        yield from _walk_jsonl_tree(ctx, archived, "codex")


def _walk_kimi(ctx: _Ctx, home: str) -> Iterator[_Unit]:
    for workspace in _scan(ctx, os.path.join(home, ".kimi-code", "sessions")):
        if not _is_subdir(workspace):
            continue
        for session in _scan(ctx, workspace.path):
            if _is_subdir(session) and _kimi_files(ctx, session.path)[0]:
                yield _Unit(session.path, "kimi", "kimi_dir")


def _walk_pi(ctx: _Ctx, home: str) -> Iterator[_Unit]:
    yield from _walk_jsonl_tree(ctx, os.path.join(home, ".pi", "agent", "sessions"), "pi")


_WALKERS: Final[Mapping[str, Callable[[_Ctx, str], Iterator[_Unit]]]] = {
    "claude": _walk_claude,
    "codex": _walk_codex,
    "kimi": _walk_kimi,
    "pi": _walk_pi,
}


def _kimi_files(ctx: _Ctx, session_dir: str) -> tuple[list[str], str | None]:
    """(wire files, state.json or None) of one Kimi session directory."""
    wires: list[str] = []
    state: str | None = None
    for entry in _scan(ctx, session_dir):
        if entry.name == "state.json" and _is_file(entry, ".json"):
            state = entry.path
        elif entry.name == "wire.jsonl" and _is_file(entry, ".jsonl"):
            wires.append(entry.path)
    for agent in _scan(ctx, os.path.join(session_dir, "agents")):
        wire = os.path.join(agent.path, "wire.jsonl")
        if _is_subdir(agent) and os.path.isfile(wire):
            wires.append(wire)
    if state is not None:
        return [state, *wires], state
    return wires, None


# --------------------------------------------------------------------------------------------------- heads


def _record_cwd(record: object, source: str) -> str | None:
    if not isinstance(record, dict):
        return None
    if source == "codex":
        if record.get("type") not in ("session_meta", "turn_context"):
            return None
        payload = record.get("payload")
        cwd = payload.get("cwd") if isinstance(payload, dict) else None
    elif source == "kimi":
        cwd = record.get("cwd") or record.get("workDir")
    else:
        cwd = record.get("cwd")
    return cwd if isinstance(cwd, str) and cwd else None


def _line_cwd(line: bytes, source: str) -> str | None:
    if not line.strip():
        return None
    try:
        return _record_cwd(json.loads(line), source)
    except (ValueError, RecursionError):
        return None


def _partial_cwd(partial: bytes, source: str) -> str | None:
    """Best effort for a first line longer than the head: the first ``"cwd"`` string in it."""
    if source == "codex" and not _SESSION_META_RE.search(partial):
        return None
    match = _CWD_RE.search(partial)
    if match is None:
        return None
    try:
        value = json.loads(b'"' + match.group(1) + b'"')
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, str) and value else None


def _head_cwd(path: str, source: str, limit: int) -> tuple[str | None, bool]:
    """(cwd or None, readable) from at most ``limit`` bytes of the file's head."""
    buf = bytearray()
    pos = 0
    eof = False
    try:
        with open(path, "rb", buffering=0) as fh:
            while True:
                newline = buf.find(b"\n", pos)
                if newline >= 0:
                    cwd = _line_cwd(bytes(buf[pos:newline]), source)
                    if cwd is not None:
                        return cwd, True
                    pos = newline + 1
                    continue
                if eof or len(buf) >= limit:
                    break
                chunk = fh.read(min(_HEAD_CHUNK, limit - len(buf)))
                eof = not chunk
                buf += chunk
    except (OSError, ValueError):
        return None, False
    rest = bytes(buf[pos:])
    cwd = _line_cwd(rest, source) if eof else _partial_cwd(rest, source)
    return cwd, True


def _kimi_state_cwd(path: str, limit: int) -> tuple[str | None, bool]:
    try:
        with open(path, "rb", buffering=0) as fh:
            head = fh.read(limit + 1)
    except (OSError, ValueError):
        return None, False
    if len(head) <= limit:
        cwd = _line_cwd(head, "kimi")
        if cwd is not None:
            return cwd, True
    return _partial_cwd(head[:limit], "kimi"), True


def _unit_cwd(ctx: _Ctx, unit: _Unit) -> tuple[str | None, bool]:
    if unit.kind == "kimi_dir":
        state = _kimi_files(ctx, unit.path)[1]
        return _kimi_state_cwd(state, ctx.max_head_bytes) if state else (None, True)
    cwd, readable = (None, True)
    if unit.kind == "jsonl":
        cwd, readable = _head_cwd(unit.path, unit.source, ctx.max_head_bytes)
    if cwd is None and unit.parent is not None:
        if unit.parent not in ctx.parent_cwds:
            ctx.parent_cwds[unit.parent] = _head_cwd(unit.parent, unit.source, ctx.max_head_bytes)[0]
        cwd = ctx.parent_cwds[unit.parent]
    return cwd, readable


# --------------------------------------------------------------------------------------------------- judging


@dataclass(frozen=True, slots=True)
class _LineCount:
    terminated: int
    tail: bool


def _count_lines(ctx: _Ctx, path: str) -> _LineCount | None:
    """Newline-terminated lines and whether an unterminated tail follows. None when unreadable."""
    ctx.lines_counted += 1
    count = 0
    tail = False
    try:
        with open(path, "rb", buffering=0) as fh:
            while chunk := fh.read(_COUNT_CHUNK):
                count += chunk.count(b"\n")
                tail = not chunk.endswith(b"\n")
    except (OSError, ValueError):
        return None
    return _LineCount(count, tail)


def _lines_match(expected: int, counted: _LineCount) -> bool:
    return expected == counted.terminated or (counted.tail and expected == counted.terminated + 1)


def _ms(ns: int) -> float:
    return ns / 1e6


def _confirm_by_lines(ctx: _Ctx, path: str, expected: int, *, exact: bool) -> Outcome:
    counted = _count_lines(ctx, path)
    if counted is None:
        return "unreadable"
    ok = expected == counted.terminated if exact else _lines_match(expected, counted)
    return "up_to_date" if ok else "stale"


def _judge_legacy(ctx: _Ctx, unit: _Unit, st: os.stat_result, cur: LegacyCursor) -> Outcome:
    if _ms(st.st_mtime_ns) > cur.mtime_ms + ctx.tol:
        return "stale"
    if unit.kind == "workflow_json":
        return "up_to_date"
    return _confirm_by_lines(ctx, unit.path, cur.lines, exact=False)


def _same_identity(ctx: _Ctx, st: os.stat_result, ctime_ms: float, ino: int | None) -> bool:
    return abs(_ms(st.st_ctime_ns) - ctime_ms) <= ctx.tol and ino_matches(ino, st.st_ino)


def _judge_signature(ctx: _Ctx, unit: _Unit, st: os.stat_result, cur: SignatureCursor) -> Outcome:
    if st.st_size != cur.size or abs(_ms(st.st_mtime_ns) - cur.mtime_ms) > ctx.tol:
        return "stale"
    if _same_identity(ctx, st, cur.ctime_ms, cur.ino):
        return "up_to_date"
    return _confirm_by_lines(ctx, unit.path, cur.lines, exact=False)


def _judge_codex_v4(ctx: _Ctx, unit: _Unit, st: os.stat_result, cur: CodexV4Cursor) -> Outcome:
    if st.st_size != cur.source_size or abs(_ms(st.st_mtime_ns) - cur.mtime_ms) > ctx.tol:
        return "stale"
    if _same_identity(ctx, st, cur.ctime_ms, cur.ino):
        return "up_to_date"
    return _confirm_by_lines(ctx, unit.path, cur.complete_lines, exact=True)


def _judge_pi(ctx: _Ctx, st: os.stat_result, cur: PiSnapshotCursor) -> Outcome:
    if st.st_size != cur.size or abs(_ms(st.st_mtime_ns) - cur.mtime_ms) > ctx.tol:
        return "stale"
    return "up_to_date"


def _judge_file(ctx: _Ctx, unit: _Unit, cur: Cursor) -> Outcome:
    try:
        st = ctx.stat(unit.path)
    except (OSError, ValueError):
        return "unreadable"
    if isinstance(cur, TombstoneCursor):
        return "stale"
    if isinstance(cur, LegacyCursor):
        return _judge_legacy(ctx, unit, st, cur)
    if isinstance(cur, SignatureCursor):
        return _judge_signature(ctx, unit, st, cur)
    if isinstance(cur, CodexV4Cursor):
        return _judge_codex_v4(ctx, unit, st, cur)
    if isinstance(cur, PiSnapshotCursor):
        return _judge_pi(ctx, st, cur)
    return "unknown_cursor"


def _kimi_line_totals(ctx: _Ctx, files: Sequence[str], state: str | None) -> set[int] | None:
    """Every accepted reading of the Kimi line total (see the module docstring)."""
    terminated = tails = state_lines = 0
    for path in files:
        counted = _count_lines(ctx, path)
        if counted is None:
            return None
        if path == state:
            state_lines = counted.terminated + int(counted.tail)
        else:
            terminated += counted.terminated
            tails += int(counted.tail)
    bases = {terminated, terminated + tails}
    return bases | {base + state_lines for base in bases}


def _judge_kimi(ctx: _Ctx, unit: _Unit, cur: Cursor) -> Outcome:
    if not isinstance(cur, KimiAggregateCursor):
        return "unknown_cursor"
    files, state = _kimi_files(ctx, unit.path)
    try:
        newest = max(_ms(ctx.stat(path).st_mtime_ns) for path in files)
    except (OSError, ValueError):
        return "unreadable"
    if abs(newest - cur.max_mtime_ms) > ctx.tol:
        return "stale"
    totals = _kimi_line_totals(ctx, files, state)
    if totals is None:
        return "unreadable"
    return "up_to_date" if cur.total_lines in totals else "stale"


def _lookup_row(ctx: _Ctx, path: str) -> _Row | None:
    row = ctx.rows.get(path)
    if row is None:
        real = os.path.realpath(path)
        row = ctx.rows.get(real) if real != path else None
    return row


def _judge_unit(ctx: _Ctx, unit: _Unit, row: _Row) -> Outcome:
    lines = row.lines if isinstance(row.lines, int) else None
    mtime = _number(row.mtime)
    cur = parse_cursor(row.cursor, mtime=mtime, lines_processed=lines, source=unit.source)
    if unit.kind == "kimi_dir":
        return _judge_kimi(ctx, unit, cur)
    return _judge_file(ctx, unit, cur)


# --------------------------------------------------------------------------------------------------- tally


@dataclass(slots=True)
class _Tally:
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


def _assess_unit(ctx: _Ctx, unit: _Unit, tally: _Tally) -> None:
    tally.seen.add(unit.path)
    cwd, readable = _unit_cwd(ctx, unit)
    if not readable:
        tally.unattributed += 1
        ctx.reasons.add("unreadable_file")
        return
    if cwd is None:
        tally.unattributed += 1
        return
    if not _under_roots(cwd, ctx.roots):
        return
    row = _lookup_row(ctx, unit.path)
    if row is None:
        tally.unindexed.append(unit.path)
        return
    outcome = _judge_unit(ctx, unit, row)
    if outcome == "up_to_date":
        tally.up_to_date += 1
    elif outcome == "stale":
        tally.stale.append(unit.path)
    elif outcome == "unknown_cursor":
        tally.unknown_cursor += 1
        ctx.reasons.add("unknown_cursor")
    else:
        tally.unreadable += 1
        ctx.reasons.add("unreadable_file")


@functools.lru_cache(maxsize=4096)
def _claude_slug(path: str) -> str:
    return _SLUG_RE.sub("-", path)


def _count_missing(ctx: _Ctx, homes: Sequence[str], tally: _Tally) -> None:
    """Claude rows of deleted files whose project directory is exactly a root's encoding (see docstring)."""
    slugs = {_claude_slug(root) for root in ctx.roots}
    for home in homes:
        projects = os.path.join(home, ".claude", "projects") + os.sep
        for path in ctx.rows:
            if path in tally.seen or not path.startswith(projects):
                continue
            slug = path[len(projects) :].split(os.sep, 1)[0]
            if _claude_slug(slug) not in slugs:
                continue
            try:
                ctx.stat(path)
            except FileNotFoundError:
                tally.missing_on_disk += 1
            except (OSError, ValueError):
                continue


# --------------------------------------------------------------------------------------------------- verdict


def _decide_verdict(
    *,
    judgeable: bool,
    unindexed: int,
    stale: int,
    app_build_partial: bool,
    missing_markers: bool,
    unknown: bool,
) -> Verdict:
    """The single statement of verdict precedence (module docstring)."""
    if not judgeable:
        return "unknown"
    if unindexed:
        return "incomplete"
    if stale or app_build_partial or missing_markers:
        return "stale"
    if unknown:
        return "unknown"
    return "fresh"


def _sources(sources: object) -> tuple[str, ...]:
    if not isinstance(sources, Sequence) or isinstance(sources, str):
        return ()
    return tuple(dict.fromkeys(s.strip().lower() for s in sources if isinstance(s, str) and s.strip()))


def _homes(ctx: _Ctx, homes: object) -> list[str]:
    readable: list[str] = []
    for raw in homes if isinstance(homes, Sequence) and not isinstance(homes, str) else ():
        home = _norm_path(raw)
        if home is not None and _is_dir(ctx, home):
            readable.append(home)
        else:
            ctx.reasons.add("unreadable_home")
    return readable


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
) -> FreshnessReport:
    """Judge whether ``index_state`` covers the transcripts of the scope (``roots`` x ``sources``).

    ``index_rows`` are ``(jsonl_path, mtime, lines_processed, cursor)`` rows already read by the caller;
    ``transcript_homes`` are HOME-like directories holding ``.claude``, ``.codex``, ``.kimi-code``, ``.pi``.
    Never raises on malformed rows, cursors or transcripts.
    """
    unit_rows, marker_values = _split_rows(index_rows)
    root_list, roots_ok = _prepare_roots(roots, stat)
    ctx = _Ctx(
        stat=stat,
        max_head_bytes=max(1, int(max_head_bytes)),
        tol=abs(float(mtime_tolerance_ms)),
        roots=root_list,
        rows=unit_rows,
    )
    if not roots_ok:
        ctx.reasons.add("unreadable_root")
    wanted = _sources(sources)
    supported = [s for s in wanted if s in SUPPORTED_SOURCES]
    if len(supported) < len(wanted):
        ctx.reasons.add("unsupported_source")
    homes = _homes(ctx, transcript_homes)
    tally = _Tally()
    if root_list:
        for home in homes:
            for source in supported:
                for unit in _WALKERS[source](ctx, home):
                    _assess_unit(ctx, unit, tally)
        if "claude" in supported:
            _count_missing(ctx, homes, tally)
    judgeable = bool(root_list and supported and homes)
    return _report(ctx, tally, _read_markers(marker_values), wanted, now_ms=now_ms, judgeable=judgeable)


def _report(
    ctx: _Ctx, tally: _Tally, markers: _Markers, wanted: Sequence[str], *, now_ms: float, judgeable: bool
) -> FreshnessReport:
    now = _number(now_ms)
    last_build_age = None if now is None or markers.last_build is None else now - markers.last_build
    heartbeat_fresh = None
    if markers.heartbeat_present and now is not None and markers.heartbeat is not None:
        heartbeat_fresh = now - markers.heartbeat < HEARTBEAT_FRESH_MS
    partial = (
        markers.app_success is not None
        and markers.last_build is not None
        and markers.app_success < markers.last_build - APP_BUILD_SLACK_MS
    )
    missing = tuple(sorted(s for s in wanted if s not in markers.provider_sources))
    verdict = _decide_verdict(
        judgeable=judgeable,
        unindexed=len(tally.unindexed),
        stale=len(tally.stale),
        app_build_partial=partial,
        missing_markers=bool(missing),
        unknown=bool(ctx.reasons),
    )
    return FreshnessReport(
        verdict=verdict,
        units_in_scope=tally.in_scope,
        up_to_date=tally.up_to_date,
        stale=len(tally.stale),
        unindexed=len(tally.unindexed),
        missing_on_disk=tally.missing_on_disk,
        unknown_cursor=tally.unknown_cursor,
        unreadable_units=tally.unreadable,
        unattributed_files=tally.unattributed,
        stale_units=tuple(sorted(tally.stale)),
        unindexed_units=tuple(sorted(tally.unindexed)),
        last_build_age_ms=last_build_age,
        heartbeat_fresh=heartbeat_fresh,
        app_build_partial=partial,
        missing_provider_markers=missing,
        lines_counted=ctx.lines_counted,
        unknown_reasons=tuple(sorted(ctx.reasons)),
    )
