"""A unit's session cwd, read from a bounded head of its file (or its Claude parent's, or Kimi ``state.json``)."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from contextlib import closing
from typing import Final

from ...inputs import read_regular_file, regular_file_chunks
from .context import Ctx, Unit
from .memo import identity
from .walks import kimi_files

_HEAD_CHUNK: Final = 8 * 1024


@functools.cache
def _partial_patterns() -> tuple[re.Pattern[bytes], re.Pattern[bytes]]:
    """(cwd string, Codex session_meta type): compiled on first use, only a head longer than its bound needs them."""
    return (re.compile(rb'"(?:cwd|workDir)"\s*:\s*"((?:[^"\\]|\\.){1,4096})"'),
            re.compile(rb'"type"\s*:\s*"session_meta"'))


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
    cwd_re, session_meta_re = _partial_patterns()
    if source == "codex" and not session_meta_re.search(partial):
        return None
    match = cwd_re.search(partial)
    if match is None:
        return None
    try:
        value = json.loads(b'"' + match.group(1) + b'"')
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, str) and value else None


def _head_cwd(path: str, source: str, limit: int, check: Callable[[], object] | None = None, *,
              missing_ok: bool = False) -> tuple[str | None, bool]:
    """(cwd or None, readable) from at most ``limit`` bytes of the file's head, read in chunks as a regular file
    only (``inputs.regular_file_chunks``: a FIFO or a device is unreadable, never read), ``check`` called before
    each chunk. ``missing_ok``: a file that does not exist is readable, without a cwd."""
    buf = bytearray()
    pos = 0
    try:
        with closing(regular_file_chunks(path, limit, chunk=_HEAD_CHUNK, check=check)) as chunks:
            for chunk in chunks:
                buf += chunk
                while (newline := buf.find(b"\n", pos)) >= 0:
                    cwd = _line_cwd(bytes(buf[pos:newline]), source)
                    if cwd is not None:
                        return cwd, True
                    pos = newline + 1
    except FileNotFoundError:
        return None, missing_ok
    except (OSError, ValueError):
        return None, False
    eof = len(buf) < limit  # (the head stopped short of its bound: the file ended)
    rest = bytes(buf[pos:])
    cwd = _line_cwd(rest, source) if eof else _partial_cwd(rest, source)
    return cwd, True


def _kimi_state_cwd(path: str, limit: int, check: Callable[[], object] | None) -> tuple[str | None, bool]:
    try:
        head = read_regular_file(path, limit, check=check)
    except (OSError, ValueError):
        return None, False
    if len(head) <= limit:
        cwd = _line_cwd(head, "kimi")
        if cwd is not None:
            return cwd, True
    return _partial_cwd(head[:limit], "kimi"), True


def _remembered_head(ctx: Ctx, path: str, source: str) -> tuple[str | None, bool]:
    """``_head_cwd``, reused under the same stat when the assessment has a memo (one stat to know)."""
    if ctx.memo is None:
        return _head_cwd(path, source, ctx.max_head_bytes, ctx.check)
    try:
        st = ctx.stat(path)
    except (OSError, ValueError):
        return None, False
    key = ("head", path, source, ctx.max_head_bytes, *identity(st))
    return ctx.memo.remembered(key, lambda: _head_cwd(path, source, ctx.max_head_bytes, ctx.check),
                               lambda found: found[1])


def unit_cwd(ctx: Ctx, unit: Unit) -> tuple[str | None, bool]:
    """(cwd or None, readable) of one unit; a Claude child without its own cwd inherits its parent's."""
    if unit.kind == "kimi_dir":
        state = kimi_files(ctx, unit.path)[1]
        return _kimi_state_cwd(state, ctx.max_head_bytes, ctx.check) if state else (None, True)
    cwd, readable = (None, True)
    if unit.kind == "jsonl":
        cwd, readable = _remembered_head(ctx, unit.path, unit.source)
    if cwd is None and unit.parent is not None:
        if unit.parent not in ctx.parent_cwds:
            # (a parent that is gone leaves the child unattributed; one that cannot be read, a FIFO say, is said)
            parent_cwd, parent_readable = _head_cwd(unit.parent, unit.source, ctx.max_head_bytes, ctx.check,
                                                    missing_ok=True)
            if not parent_readable:
                ctx.reasons.add("unreadable_file")
            ctx.parent_cwds[unit.parent] = parent_cwd
        cwd = ctx.parent_cwds[unit.parent]
    return cwd, readable
