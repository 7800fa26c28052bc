"""Judging one in-scope unit against its ``index_state`` cursor, counting lines only where a decision needs them."""

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
    plain_signature,
)
from . import memo
from .context import Ctx, Outcome, Unit
from .rows import Row, UnitRow, number
from .walk import kimi_files

_COUNT_CHUNK: Final = 1024 * 1024
#: Most bytes read to count a file's lines; a longer file (a sparse file, say) is not counted: unreadable.
_COUNT_CAP: Final = 4 * 1024 * 1024 * 1024
#: Longest cursor ``unchanged_signature`` looks at: five plain decimal numbers (a time at most 17 significant
#: digits and a point, a count, size or inode at most 20 digits) and four colons fit with room to spare; a longer
#: one is judged in full.
_PLAIN_SIGNATURE_CHARS: Final = 160


class _LineCount(NamedTuple):
    terminated: int
    tail: bool


def _count_lines(ctx: Ctx, path: str, st: os.stat_result | None = None) -> _LineCount | None:
    """Newline-terminated lines and whether an unterminated tail follows. None when unreadable. With the
    file's stat and ``ctx.remember``, a count read under the same stat is reused (``memo``)."""
    if st is not None and ctx.remember:
        key = ("lines", path, *memo.identity(st, with_ctime=True))
        return memo.remembered(key, lambda: _read_lines(ctx, path), lambda counted: counted is not None)
    return _read_lines(ctx, path)


def _read_lines(ctx: Ctx, path: str) -> _LineCount | None:
    """The count of a regular file only (``inputs.regular_file_chunks``: a FIFO or a device is never read),
    under the assessment's deadline check; None when it cannot be read or is longer than ``_COUNT_CAP``."""
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


def _lines_match(expected: int, counted: _LineCount) -> bool:
    return expected == counted.terminated or (counted.tail and expected == counted.terminated + 1)


def _ms(ns: int) -> float:
    return ns / 1e6


def _confirm_by_lines(ctx: Ctx, path: str, expected: int, *, exact: bool,
                      st: os.stat_result | None = None) -> Outcome:
    counted = _count_lines(ctx, path, st)
    if counted is None:
        return "unreadable"
    ok = expected == counted.terminated if exact else _lines_match(expected, counted)
    return "up_to_date" if ok else "stale"


def _judge_legacy(ctx: Ctx, unit: Unit, st: os.stat_result, cur: LegacyCursor) -> Outcome:
    if _ms(st.st_mtime_ns) > cur.mtime_ms + ctx.tol:
        return "stale"
    if unit.kind == "workflow_json":
        return "up_to_date"
    return _confirm_by_lines(ctx, unit.path, cur.lines, exact=False, st=st)


def _same_identity(ctx: Ctx, st: os.stat_result, ctime_ms: float, ino: int | None) -> bool:
    return abs(_ms(st.st_ctime_ns) - ctime_ms) <= ctx.tol and ino_matches(ino, st.st_ino)


def _judge_signature(ctx: Ctx, unit: Unit, st: os.stat_result, cur: SignatureCursor) -> Outcome:
    return _judge_signature_fields(ctx, unit, st, (cur.mtime_ms, cur.lines, cur.size, cur.ctime_ms, cur.ino))


def _judge_signature_fields(ctx: Ctx, unit: Unit, st: os.stat_result,
                            fields: tuple[float, int, int, float, int | None]) -> Outcome:
    """The signature rule over ``(mtime_ms, lines, size, ctime_ms, ino)`` (also of a plain cursor never built
    into a ``SignatureCursor``); ``_ms`` and ``_same_identity`` written out, the same arithmetic."""
    mtime_ms, lines, size, ctime_ms, ino = fields
    tol = ctx.tol
    if st.st_size != size or abs(st.st_mtime_ns / 1e6 - mtime_ms) > tol:
        return "stale"
    if abs(st.st_ctime_ns / 1e6 - ctime_ms) <= tol and (ino == st.st_ino or ino_matches(ino, st.st_ino)):
        return "up_to_date"
    return _confirm_by_lines(ctx, unit.path, lines, exact=False, st=st)


def _judge_codex_v4(ctx: Ctx, unit: Unit, st: os.stat_result, cur: CodexV4Cursor) -> Outcome:
    if st.st_size != cur.source_size or abs(_ms(st.st_mtime_ns) - cur.mtime_ms) > ctx.tol:
        return "stale"
    if _same_identity(ctx, st, cur.ctime_ms, cur.ino):
        return "up_to_date"
    return _confirm_by_lines(ctx, unit.path, cur.complete_lines, exact=True, st=st)


def _judge_pi(ctx: Ctx, st: os.stat_result, cur: PiSnapshotCursor) -> Outcome:
    if st.st_size != cur.size or abs(_ms(st.st_mtime_ns) - cur.mtime_ms) > ctx.tol:
        return "stale"
    return "up_to_date"


def _judge_file(ctx: Ctx, unit: Unit, cur: Cursor, st: os.stat_result | None) -> Outcome:
    if st is None:
        try:
            st = ctx.stat(unit.path)
        except (OSError, ValueError):
            return "unreadable"
    if isinstance(cur, SignatureCursor):  # the common shape first (the shapes are disjoint classes)
        return _judge_signature(ctx, unit, st, cur)
    if isinstance(cur, TombstoneCursor):
        return "stale"
    if isinstance(cur, LegacyCursor):
        return _judge_legacy(ctx, unit, st, cur)
    if isinstance(cur, CodexV4Cursor):
        return _judge_codex_v4(ctx, unit, st, cur)
    if isinstance(cur, PiSnapshotCursor):
        return _judge_pi(ctx, st, cur)
    return "unknown_cursor"


def _kimi_line_totals(ctx: Ctx, files: Sequence[str], state: str | None) -> set[int] | None:
    """Every accepted reading of the Kimi line total (see the package docstring)."""
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


def _judge_kimi(ctx: Ctx, unit: Unit, cur: Cursor) -> Outcome:
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


def judge_unit(ctx: Ctx, unit: Unit, row: Row, st: os.stat_result | None = None) -> Outcome:
    """The outcome for one unit that has an ``index_state`` row; ``st``: the file's stat when the caller
    already took it (a file unit is then not statted again)."""
    return judge_row(ctx, unit, (unit.path, row.mtime, row.lines, row.cursor), st)


def unchanged_signature(cursor: str, st: os.stat_result) -> bool:
    """Whether a five-part signature cursor written in plain decimal names exactly this stat: the size and the
    inode as the same decimal text, the mtime and the ctime in the same whole millisecond (the stat's times
    not before 1970), the line count and the fractions ASCII digits. True only where the signature rule
    (``_judge_signature_fields`` over ``plain_signature``, with a tolerance of at least 1 ms) says
    ``up_to_date``; False says nothing (the caller then judges the cursor in full).

    Why the whole millisecond is enough: the field's text ``W.fff`` parses to a float in ``[W, W+1]`` and
    ``st_mtime_ns / 1e6`` with ``st_mtime_ns // 10**6 == W`` rounds into ``[W, W+1]`` too, so the two differ by
    at most 1 ms. No float is parsed (two decimal-to-float parses cost more than this whole test). A whole
    millisecond equal to the decimal text of a time not before 1970 is digits; the three other digit-only
    fields are tested as one text."""
    if len(cursor) > _PLAIN_SIGNATURE_CHARS:  # (a Codex v4 cursor's state: tens of KB not split at all)
        return False
    if not stat_mod.S_ISREG(st.st_mode):  # (no longer a regular file: ``judge_row`` says unreadable)
        return False
    parts = cursor.split(":")
    if len(parts) != 5 or not cursor.isascii():
        return False
    mtime, lines, size, ctime, ino = parts
    if size != str(st.st_size) or ino != str(st.st_ino):
        return False
    m_whole, _, m_part = mtime.partition(".")
    c_whole, _, c_part = ctime.partition(".")
    m_ns, c_ns = st.st_mtime_ns, st.st_ctime_ns
    return (m_whole == str(m_ns // 1_000_000) and c_whole == str(c_ns // 1_000_000) and m_ns >= 0 and c_ns >= 0
            and lines != "" and (lines + m_part + c_part).isdigit())


def judge_row(ctx: Ctx, unit: Unit, row: UnitRow, st: os.stat_result | None = None) -> Outcome:
    """``judge_unit`` over a ``UnitRow`` (the row as looked up, no ``Row`` built).

    A file unit is statted first (every cursor shape of a file is judged against its stat; a file that cannot
    be statted, or is no longer a regular file once links are followed: a FIFO, a device, a directory, is
    ``unreadable`` whatever its cursor, and never read), then a plain signature cursor naming exactly that stat
    is up to date without being parsed (``unchanged_signature``)."""
    cursor = row[3]
    if unit.kind != "kimi_dir":
        if st is None:
            try:
                st = ctx.stat(unit.path)
            except (OSError, ValueError):
                return "unreadable"
        if not stat_mod.S_ISREG(st.st_mode):
            return "unreadable"
        if type(cursor) is str and ctx.tol >= 1.0 and unit.source != "kimi" and unchanged_signature(cursor, st):
            return "up_to_date"
        plain = plain_signature(cursor, unit.source)
        if plain is not None:  # the common case: parse_cursor's SignatureCursor, judged from its fields
            return _judge_signature_fields(ctx, unit, st, plain)
    if cursor is None:  # the columns are read only to rebuild a NULL cursor
        lines = row[2] if isinstance(row[2], int) else None
        cur = parse_cursor(None, mtime=number(row[1]), lines_processed=lines, source=unit.source)
    else:
        cur = parse_cursor(cursor, source=unit.source)
    if unit.kind == "kimi_dir":
        return _judge_kimi(ctx, unit, cur)
    return _judge_file(ctx, unit, cur, st)
