"""A unit's session cwd, read from a bounded head of its file (or its Claude parent's, or Kimi ``state.json``)."""

from __future__ import annotations

import functools
import json
import re
from typing import Final

from . import memo
from .context import Ctx, Unit
from .walk import kimi_files

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


def _remembered_head(ctx: Ctx, path: str, source: str) -> tuple[str | None, bool]:
    """``_head_cwd``, reused under the same stat when ``ctx.remember`` (``memo``; one stat to know)."""
    if not ctx.remember:
        return _head_cwd(path, source, ctx.max_head_bytes)
    try:
        st = ctx.stat(path)
    except (OSError, ValueError):
        return None, False
    key = ("head", path, source, ctx.max_head_bytes, *memo.identity(st, with_ctime=True))
    return memo.remembered(key, lambda: _head_cwd(path, source, ctx.max_head_bytes), lambda found: found[1])


def unit_cwd(ctx: Ctx, unit: Unit) -> tuple[str | None, bool]:
    """(cwd or None, readable) of one unit; a Claude child without its own cwd inherits its parent's."""
    if unit.kind == "kimi_dir":
        state = kimi_files(ctx, unit.path)[1]
        return _kimi_state_cwd(state, ctx.max_head_bytes) if state else (None, True)
    cwd, readable = (None, True)
    if unit.kind == "jsonl":
        cwd, readable = _remembered_head(ctx, unit.path, unit.source)
    if cwd is None and unit.parent is not None:
        if unit.parent not in ctx.parent_cwds:
            ctx.parent_cwds[unit.parent] = _head_cwd(unit.parent, unit.source, ctx.max_head_bytes)[0]
        cwd = ctx.parent_cwds[unit.parent]
    return cwd, readable
