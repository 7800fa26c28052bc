"""Cells of the index read as data: any SQLite value as text, a flag as a bool, JSON within a bounded depth.

The index is untrusted input. A cell a template returns may be NULL, a number, a BLOB (UTF-8 or not), huge, or
JSON nested thousands of levels deep, whatever Obelisk itself writes. The readers of tool inputs, outputs and
messages take cells through these functions, so no shape reaches them as an exception: bytes are decoded
(invalid sequences replaced), and JSON longer than :data:`MAX_JSON_CHARS` or nested deeper than
:data:`MAX_JSON_DEPTH` is "not JSON", read as plain text like any other value that does not parse. A ``\\uD800``
escape with no partner (JavaScript's ``JSON.stringify`` writes one for a string Obelisk cut inside a surrogate
pair) becomes U+FFFD: a lone surrogate is not text and could never be written out as UTF-8.
"""

import functools
import json
import re
from typing import Any

#: Nesting a tool input or output is parsed to at most (they nest a few levels; ``json`` itself gives out near
#: the interpreter's recursion limit, about 1,000, with a RecursionError).
MAX_JSON_DEPTH = 64
#: Characters of JSON parsed at most (the templates read 4,000 of a tool cell; anything longer is not theirs).
MAX_JSON_CHARS = 65536


@functools.cache
def _scanners() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """A JSON string and a bracket (compiled on first use: only JSON with many brackets needs them)."""
    return re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL), re.compile(r"[\[\]{}]")


def cell_text(value: object) -> str:
    """A cell as text: ``""`` for NULL, a BLOB's bytes as UTF-8 (invalid sequences replaced), a number as
    ``str`` writes it."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def cell_flag(value: object) -> bool:
    """An integer flag cell (``is_error``, ``is_sidechain``): true when it holds a number other than 0, or text
    that reads as one; NULL, other text and bytes that are not a number are false."""
    if isinstance(value, bool | int | float):
        return value != 0
    try:
        return float(cell_text(value).strip()) != 0
    except ValueError:
        return False


def _too_deep(text: str) -> bool:
    """Whether the JSON ``text`` nests deeper than :data:`MAX_JSON_DEPTH` (strings skipped, so brackets inside
    them do not count; an unterminated string counts its brackets, which only rejects text that is not JSON)."""
    if text.count("[") + text.count("{") <= MAX_JSON_DEPTH:
        return False
    string, bracket_pattern = _scanners()
    depth = 0
    for bracket in bracket_pattern.findall(string.sub("", text)):
        depth += 1 if bracket in "[{" else -1
        if depth > MAX_JSON_DEPTH:
            return True
    return False


@functools.cache
def _surrogate() -> re.Pattern[str]:
    """A lone surrogate code point (compiled on first use: only JSON with a surrogate escape needs it)."""
    return re.compile("[\ud800-\udfff]")


def without_surrogates(text: str) -> str:
    """``text`` with every lone surrogate code point replaced by U+FFFD."""
    return _surrogate().sub("\ufffd", text)


def _mend(value: Any) -> Any:
    """``value`` with :func:`without_surrogates` applied to every string in it (nested at most
    :data:`MAX_JSON_DEPTH` levels: :func:`load_json` checked)."""
    if isinstance(value, str):
        return without_surrogates(value)
    if isinstance(value, list):
        return [_mend(item) for item in value]
    if isinstance(value, dict):
        return {without_surrogates(key): _mend(item) for key, item in value.items()}
    return value


def load_json(value: object) -> Any:
    """The JSON value of a cell, or None when it holds none this reader takes: NULL, empty, not text, invalid
    JSON, longer than :data:`MAX_JSON_CHARS` or nested deeper than :data:`MAX_JSON_DEPTH`."""
    text = cell_text(value) if isinstance(value, bytes) else value
    if not isinstance(text, str) or not text or len(text) > MAX_JSON_CHARS or _too_deep(text):
        return None
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):
        return None
    # Only a \\u escape can make a lone surrogate: text from SQLite is valid UTF-8.
    return _mend(parsed) if "\\ud" in text.lower() else parsed
