"""Judging one unit against its ``index_state`` row by its provider's cursor rules (the package README).

:func:`judge_unit` is the one judging path. Lines are counted only where a decision needs them, and only
through ``inputs.regular_file_chunks`` (a FIFO or a device is never read; the deadline is checked before
every chunk).
"""

from __future__ import annotations

import os
import stat as stat_mod
from collections.abc import Sequence
from typing import Final, NamedTuple

from ...inputs import regular_file_chunks
from ..cursors import (
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
from .context import Ctx, Outcome, Unit, UnitRow
from .memo import identity
from .scope import number
from .walks import kimi_files

_COUNT_CHUNK: Final = 1024 * 1024
#: Most bytes read to count a file's lines; a longer file (a sparse file, say) is not counted: unreadable.
_COUNT_CAP: Final = 4 * 1024 * 1024 * 1024
#: Longest cursor the plain-signature branch looks at: five plain decimal numbers and four colons fit with room
#: to spare (a Codex v4 cursor, tens of KB, is never split there).
_PLAIN_SIGNATURE_CHARS: Final = 160


def judge_unit(ctx: Ctx, unit: Unit, row: UnitRow, st: os.stat_result | None = None) -> Outcome:
    """The outcome for ``unit`` against its row ``(jsonl_path, mtime, lines_processed, cursor)``; ``st``: the
    file's stat when the caller already took it.

    A file is statted first: every cursor shape of a file is judged against its stat, and a path that cannot be
    statted, or that is no longer a regular file once links are followed (a FIFO, a device, a directory), is
    ``unreadable`` whatever its cursor, and never read. The first branch is the common case: a plain five-part
    cursor that names exactly this stat is up to date without being parsed (:func:`_names_stat`)."""
    if unit.kind == "kimi_dir":
        return _judge_kimi(ctx, unit, _parsed(row, unit.source))
    if st is None:
        try:
            st = ctx.stat(unit.path)
        except (OSError, ValueError):
            return "unreadable"
    if not stat_mod.S_ISREG(st.st_mode):
        return "unreadable"
    if ctx.tol >= 1.0 and _names_stat(row[3], st):
        return "up_to_date"
    match _parsed(row, unit.source):
        case SignatureCursor() as cur:  # Claude current, Codex v3
            return _by_signature(ctx, unit.path, st, size=cur.size, mtime_ms=cur.mtime_ms, ctime_ms=cur.ctime_ms,
                                 ino=cur.ino, lines=cur.lines, exact=False)
        case CodexV4Cursor() as cur:
            return _by_signature(ctx, unit.path, st, size=cur.source_size, mtime_ms=cur.mtime_ms,
                                 ctime_ms=cur.ctime_ms, ino=cur.ino, lines=cur.complete_lines, exact=True)
        case LegacyCursor() as cur:
            if _ms(st.st_mtime_ns) > cur.mtime_ms + ctx.tol:
                return "stale"
            if unit.kind == "workflow_json":  # ``mtime:1``: Obelisk itself checks the mtime only
                return "up_to_date"
            return _confirm_by_lines(ctx, unit.path, cur.lines, exact=False, st=st)
        case PiSnapshotCursor() as cur:  # its line field is always 0: size and mtime only
            same = st.st_size == cur.size and abs(_ms(st.st_mtime_ns) - cur.mtime_ms) <= ctx.tol
            return "up_to_date" if same else "stale"
        case TombstoneCursor():  # retracted, yet the file is there again
            return "stale"
        case _:
            return "unknown_cursor"


def _names_stat(cursor: object, st: os.stat_result) -> bool:
    """Whether ``cursor`` is a five-part signature in plain decimal naming exactly this stat: the size and the
    inode as the same decimal text, the mtime and the ctime in the same whole millisecond (times not before
    1970), the line count and the fractions ASCII digits. True only where the signature rule says up to date
    with a tolerance of at least 1 ms; False says nothing (the cursor is then parsed and judged in full).

    The whole millisecond is enough: a field ``W.fff`` and ``st_mtime_ns / 1e6`` with
    ``st_mtime_ns // 10**6 == W`` both lie in ``[W, W + 1]``, so they differ by at most 1 ms."""
    if type(cursor) is not str or len(cursor) > _PLAIN_SIGNATURE_CHARS or not cursor.isascii():
        return False
    parts = cursor.split(":")
    if len(parts) != 5:
        return False
    mtime, lines, size, ctime, ino = parts
    if size != str(st.st_size) or ino != str(st.st_ino):
        return False
    m_whole, _, m_part = mtime.partition(".")
    c_whole, _, c_part = ctime.partition(".")
    m_ns, c_ns = st.st_mtime_ns, st.st_ctime_ns
    return (m_whole == str(m_ns // 1_000_000) and c_whole == str(c_ns // 1_000_000) and m_ns >= 0 and c_ns >= 0
            and lines != "" and (lines + m_part + c_part).isdigit())


def _parsed(row: UnitRow, source: str) -> Cursor:
    """The row's cursor, parsed; a NULL cursor rebuilt from the row's columns, as Obelisk's readers do."""
    _, mtime, lines, cursor = row
    if cursor is None:
        return parse_cursor(None, mtime=number(mtime), lines_processed=lines if isinstance(lines, int) else None,
                            source=source)
    return parse_cursor(cursor, source=source)


def _by_signature(ctx: Ctx, path: str, st: os.stat_result, *, size: int, mtime_ms: float, ctime_ms: float,
                  ino: int | None, lines: int, exact: bool) -> Outcome:
    """A size or mtime difference is stale; the same size and mtime with the same ctime and inode is up to date.
    The same size and mtime under another ctime or inode (a copy, a restore) is settled by the line count:
    ``exact``, newline-terminated lines only (Codex v4's ``completeLines``), else an unterminated tail may count.
    """
    if st.st_size != size or abs(_ms(st.st_mtime_ns) - mtime_ms) > ctx.tol:
        return "stale"
    if abs(_ms(st.st_ctime_ns) - ctime_ms) <= ctx.tol and ino_matches(ino, st.st_ino):
        return "up_to_date"
    return _confirm_by_lines(ctx, path, lines, exact=exact, st=st)


def _ms(ns: int) -> float:
    return ns / 1e6


class _LineCount(NamedTuple):
    terminated: int
    tail: bool


def _confirm_by_lines(ctx: Ctx, path: str, expected: int, *, exact: bool, st: os.stat_result) -> Outcome:
    counted = _count_lines(ctx, path, st)
    if counted is None:
        return "unreadable"
    ok = expected == counted.terminated if exact else _lines_match(expected, counted)
    return "up_to_date" if ok else "stale"


def _lines_match(expected: int, counted: _LineCount) -> bool:
    """Newline-terminated lines, or one more when an unterminated tail follows (Claude counts a parseable tail;
    cursors before Obelisk PR #102 counted any tail)."""
    return expected == counted.terminated or (counted.tail and expected == counted.terminated + 1)


def _count_lines(ctx: Ctx, path: str, st: os.stat_result | None = None) -> _LineCount | None:
    """Newline-terminated lines and whether an unterminated tail follows; None when unreadable. With the file's
    stat and a memo, a count read under the same stat is reused."""
    if st is not None and ctx.memo is not None:
        return ctx.memo.remembered(("lines", path, *identity(st)), lambda: _read_lines(ctx, path),
                                   lambda counted: counted is not None)
    return _read_lines(ctx, path)


def _read_lines(ctx: Ctx, path: str) -> _LineCount | None:
    """The count of a regular file only, under the assessment's deadline check; None when it cannot be read or
    is longer than ``_COUNT_CAP``."""
    ctx.lines_counted += 1
    count = 0
    tail = False
    read = 0
    try:
        for chunk in regular_file_chunks(path, _COUNT_CAP + 1, chunk=_COUNT_CHUNK, check=ctx.check):
            count += chunk.count(b"\n")
            tail = not chunk.endswith(b"\n")
            read += len(chunk)
    except (OSError, ValueError):  # (inputs.NotRegularFile is an OSError)
        return None
    return _LineCount(count, tail) if read <= _COUNT_CAP else None


def _judge_kimi(ctx: Ctx, unit: Unit, cur: Cursor) -> Outcome:
    """The aggregate ``max(mtime)`` over ``state.json`` and the wire files, then the line total (any of the
    readings in :func:`_kimi_line_totals`)."""
    if not isinstance(cur, KimiAggregateCursor):
        return "unknown_cursor"
    files, state = kimi_files(ctx, unit.path)
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


def _kimi_line_totals(ctx: Ctx, files: Sequence[str], state: str | None) -> set[int] | None:
    """Every accepted reading of the Kimi line total: Obelisk's exact sum is not pinned down, so wire lines with
    or without unterminated tails, with or without ``state.json``'s lines."""
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
