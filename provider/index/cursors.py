"""Typed parsing of Obelisk ``index_state`` cursors.

Obelisk stores a provider-specific cursor string per unit (``index_state.cursor``) and splits its first two
``:``-separated fields into ``mtime`` (milliseconds, REAL) and ``lines_processed`` (INTEGER). The shapes
met in the field (see ``shared/obelisk-db-interface.md`` §2.1):

============================  =======================================================================
``LegacyCursor``              ``mtimeMs:lines`` (Claude legacy, Codex before v3, Claude workflow ``.json``)
``SignatureCursor``           ``mtimeMs:lines:size:ctimeMs:ino`` (Claude current, Codex v3)
``CodexV4Cursor``             ``mtimeMs:completeLines:completeLineOffset:ctimeMs:ino:<base64url JSON>``;
                              the file size is ``sourceSize`` inside the decoded JSON state
``KimiAggregateCursor``       ``maxMtimeMs:totalLines`` of a Kimi session directory (needs ``source='kimi'``:
                              the string alone is indistinguishable from a legacy cursor)
``PiSnapshotCursor``          ``mtimeMs:0:pi-snapshot-v1:ctimeMs:size:ino``
``TombstoneCursor``           ``0:0`` (Pi tombstone; a zero legacy cursor means the same: nothing indexed)
``UnknownCursor``             anything else, with a content-free reason code
============================  =======================================================================

``parse_cursor`` never raises: malformed, oversized or non-finite input yields ``UnknownCursor``. A NULL
cursor is rebuilt from the row's ``(mtime, lines_processed)`` as a legacy cursor, as Obelisk's own readers do.
Cursor text is never kept in the parsed value (the Codex v4 state is tens of KB and opaque).
"""

import base64
import binascii
import functools
import json
import math
import re
from dataclasses import dataclass
from typing import Final, NamedTuple

__all__ = [
    "MAX_CODEX_V4_STATE_CHARS",
    "MAX_CURSOR_CHARS",
    "CodexV4Cursor",
    "Cursor",
    "KimiAggregateCursor",
    "LegacyCursor",
    "PiSnapshotCursor",
    "SignatureCursor",
    "TombstoneCursor",
    "UnknownCursor",
    "decode_codex_v4_source_size",
    "ino_matches",
    "parse_cursor",
]

#: Longest cursor string considered at all (the Codex v4 state is about 90 KB of base64url in practice).
MAX_CURSOR_CHARS: Final = 2 * 1024 * 1024
#: Longest base64url state field of a Codex v4 cursor that is decoded.
MAX_CODEX_V4_STATE_CHARS: Final = 1024 * 1024

_PI_SNAPSHOT_TAG: Final = "pi-snapshot-v1"


@functools.cache
def _number_re() -> re.Pattern[str]:
    """A JS number's text (read only where a cursor field is not plain decimal; compiled on first use)."""
    return re.compile(r"-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


@functools.cache
def _b64url_re() -> re.Pattern[str]:
    """A base64url field (a Codex v4 cursor's state only; compiled on first use)."""
    return re.compile(r"[A-Za-z0-9_\-]*={0,2}")

# JS numbers are exact integers only up to 2**53; inode numbers above that may have lost precision.
_JS_SAFE_INT: Final = 2**53


class LegacyCursor(NamedTuple):
    """``mtimeMs:lines``. Only "file mtime newer" and a line count can be checked against it."""

    mtime_ms: float
    lines: int
    rebuilt_from_columns: bool = False


class SignatureCursor(NamedTuple):
    """``mtimeMs:lines:size:ctimeMs:ino`` (Claude current, Codex v3). ``ino`` is None when not an integer."""

    mtime_ms: float
    lines: int
    size: int
    ctime_ms: float
    ino: int | None


class CodexV4Cursor(NamedTuple):
    """Codex v4 "cooperative" cursor. ``source_size`` comes from the decoded JSON state."""

    mtime_ms: float
    complete_lines: int
    complete_line_offset: int
    ctime_ms: float
    ino: int | None
    source_size: int


class KimiAggregateCursor(NamedTuple):
    """``maxMtimeMs:totalLines`` over ``state.json`` and the ``wire.jsonl`` files of one session directory."""

    max_mtime_ms: float
    total_lines: int


class PiSnapshotCursor(NamedTuple):
    """``mtimeMs:0:pi-snapshot-v1:ctimeMs:size:ino``."""

    mtime_ms: float
    ctime_ms: float
    size: int
    ino: int | None


@dataclass(frozen=True)
class TombstoneCursor:
    """``0:0``: the unit was retracted (Pi) or never produced anything. No fields, equal to any other tombstone
    (a dataclass: an empty NamedTuple would be a false value)."""


class UnknownCursor(NamedTuple):
    """A cursor this reader cannot interpret. ``reason`` is a short content-free code."""

    reason: str


Cursor = (
    LegacyCursor
    | SignatureCursor
    | CodexV4Cursor
    | KimiAggregateCursor
    | PiSnapshotCursor
    | TombstoneCursor
    | UnknownCursor
)


def _ms(text: str) -> float | None:
    """A finite, non-negative millisecond value from JS ``Number#toString`` text, else None."""
    if text.isascii() and text.replace(".", "", 1).isdigit():  # plain decimal: the common case
        return float(text)
    if not _number_re().fullmatch(text):
        return None
    value = float(text)
    if not math.isfinite(value) or value < 0:
        return None
    return value


def _count(text: str) -> int | None:
    """A non-negative integer count (lines, bytes); JS may print an integral float as ``12.0``."""
    if text.isascii() and text.isdigit():
        return int(text)
    value = _ms(text)
    if value is None or not value.is_integer():
        return None
    return int(value)


def _inode(text: str) -> int | None:
    """An inode number; JS can print large ones in exponent form, which is kept only when integral."""
    return _count(text)


def ino_matches(stored: int | None, actual: int) -> bool:
    """Compare a cursor inode with ``st_ino``, allowing the precision JS loses above 2**53."""
    if stored is None:
        return False
    if stored == actual:
        return True
    return actual >= _JS_SAFE_INT and float(stored) == float(actual)


def decode_codex_v4_source_size(field: str, *, max_chars: int = MAX_CODEX_V4_STATE_CHARS) -> int | None:
    """``sourceSize`` from the base64url JSON state of a Codex v4 cursor; None when it cannot be trusted."""
    if not field or len(field) > max_chars or not _b64url_re().fullmatch(field):
        return None
    padded = field + "=" * (-len(field) % 4)
    try:
        raw = base64.urlsafe_b64decode(padded.encode("ascii"))
        state = json.loads(raw)
    except (binascii.Error, ValueError, UnicodeDecodeError, RecursionError):
        return None
    if not isinstance(state, dict):
        return None
    size = state.get("sourceSize")
    if isinstance(size, bool) or not isinstance(size, int | float):
        return None
    if not math.isfinite(size) or size < 0 or not float(size).is_integer():
        return None
    return int(size)


def _parse_two(parts: list[str], source: str | None) -> Cursor:
    mtime, lines = _ms(parts[0]), _count(parts[1])
    if mtime is None or lines is None:
        return UnknownCursor("bad-number")
    if source == "kimi":
        return KimiAggregateCursor(max_mtime_ms=mtime, total_lines=lines)
    if mtime == 0 and lines == 0:
        return TombstoneCursor()
    return LegacyCursor(mtime_ms=mtime, lines=lines)


def _parse_five(parts: list[str]) -> Cursor:
    mtime, lines, size, ctime = _ms(parts[0]), _count(parts[1]), _count(parts[2]), _ms(parts[3])
    if mtime is None or lines is None or size is None or ctime is None:
        return UnknownCursor("bad-number")
    return SignatureCursor(mtime_ms=mtime, lines=lines, size=size, ctime_ms=ctime, ino=_inode(parts[4]))


def _parse_pi(parts: list[str]) -> Cursor:
    mtime, ctime, size = _ms(parts[0]), _ms(parts[3]), _count(parts[4])
    if mtime is None or ctime is None or size is None or _count(parts[1]) is None:
        return UnknownCursor("bad-number")
    return PiSnapshotCursor(mtime_ms=mtime, ctime_ms=ctime, size=size, ino=_inode(parts[5]))


def _parse_codex_v4(parts: list[str]) -> Cursor:
    mtime, lines, offset, ctime = _ms(parts[0]), _count(parts[1]), _count(parts[2]), _ms(parts[3])
    if mtime is None or lines is None or offset is None or ctime is None:
        return UnknownCursor("bad-number")
    source_size = decode_codex_v4_source_size(parts[5])
    if source_size is None:
        return UnknownCursor("codex-v4-state")
    return CodexV4Cursor(
        mtime_ms=mtime,
        complete_lines=lines,
        complete_line_offset=offset,
        ctime_ms=ctime,
        ino=_inode(parts[4]),
        source_size=source_size,
    )


def _rebuild(mtime: float | None, lines_processed: int | None, source: str | None) -> Cursor:
    """NULL cursor: rebuild ``"<mtime>:<lines_processed>"`` from the row's columns."""
    if mtime is None or lines_processed is None:
        return UnknownCursor("null-cursor-no-columns")
    if isinstance(mtime, bool) or not isinstance(mtime, int | float) or isinstance(lines_processed, bool):
        return UnknownCursor("bad-number")
    if not isinstance(lines_processed, int) or not math.isfinite(mtime) or mtime < 0 or lines_processed < 0:
        return UnknownCursor("bad-number")
    if source == "kimi":
        return KimiAggregateCursor(max_mtime_ms=float(mtime), total_lines=lines_processed)
    if mtime == 0 and lines_processed == 0:
        return TombstoneCursor()
    return LegacyCursor(mtime_ms=float(mtime), lines=lines_processed, rebuilt_from_columns=True)


def parse_cursor(
    cursor: object,
    *,
    mtime: float | None = None,
    lines_processed: int | None = None,
    source: str | None = None,
) -> Cursor:
    """Parse one ``index_state`` cursor. Never raises.

    ``source`` is the Obelisk provider the unit belongs to (``'kimi'`` turns a two-part cursor into a
    directory aggregate). ``mtime`` and ``lines_processed`` are the row's columns, used only when ``cursor``
    is NULL.
    """
    if cursor is None:
        return _rebuild(mtime, lines_processed, source)
    if not isinstance(cursor, str):
        return UnknownCursor("not-text")
    if len(cursor) > MAX_CURSOR_CHARS:
        return UnknownCursor("oversized")
    parts = cursor.strip().split(":", 5)
    if len(parts) == 2:
        return _parse_two(parts, source)
    if source == "kimi":
        return UnknownCursor("kimi-shape")
    if len(parts) == 5:
        return _parse_five(parts)
    if len(parts) == 6 and ":" not in parts[5]:
        if parts[2] == _PI_SNAPSHOT_TAG:
            return _parse_pi(parts)
        return _parse_codex_v4(parts)
    return UnknownCursor("shape")
