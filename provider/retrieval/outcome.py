"""Read a tool's recorded output: unwrap the format it was stored in and say whether the call failed.

This module is the one reader of tool-output formats. The SQL prefilter of ``prior_failure.tool_results``
admits a superset of what :func:`read_outcome` calls a failure (every marker below has a ``LIKE`` there), and
the Python label decides. Formats read:

* Codex JSON: ``{"output": "…", "metadata": {"exit_code": N, …}}`` (a head read cut mid-JSON is read with a
  pattern instead: ``"exit_code":N``);
* Codex plain-text header: ``Exit code: N``, ``Wall time: … seconds``, optional ``Total output lines: K``, then
  ``Output:`` and the output; unified exec: ``Chunk ID: …``, ``Wall time``, ``Process exited with code N``,
  ``Original token count: K``, ``Output:``;
* ``Process exited with code N`` anywhere in older outputs;
* Claude: ``is_error`` with an ``Exit code N`` first line;
* build tools reporting a failed inner step inside their output (docker's ``did not complete successfully:
  exit code: N``, make's ``*** [target] Error N``, npm's ``npm ERR! code …`` / ``npm error code …``).

A stated non-zero exit code or ``is_error`` is a failure. Without a stated code, a Python traceback header or a
failed inner step is a failure. A failure is never labelled ``ok``.
"""

import functools
import re
from typing import NamedTuple

from .cells import load_json

# The expressions are compiled on first use (``_compiled``): a request without tool results needs none.
_CLAUDE_EXIT = r"\AExit code (-?\d+)[ \t]*(?:\n|\Z)"
_HEADER_LINE = (
    r"\A(?:Chunk ID|Exit code|Wall time|Total output lines|Original token count|Process exited with code)\b")
_HEADER_EXIT = r"(?m)^(?:Exit code:|Process exited with code) (-?\d+)[ \t]*$"
_JSON_EXIT = r'"exit_code":\s?(-?\d+)'
_PROCESS_EXIT = r"Process exited with code (-?\d+)"
_TRACEBACK = "Traceback (most recent call last)"
#: Failed inner steps: (pattern, how the step is named in the label).
_INNER = (
    (r"did not complete successfully: exit code: (-?\d+)", "inner step exit {}"),
    (r"(?m)^make(?:\[\d+\])?: \*\*\* \[[^\]\n]*\] Error (\d+)", "make Error {}"),
    (r"(?m)^npm (?:ERR!|error) code (\S+)", "npm {}"),
)


@functools.cache
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


class Outcome(NamedTuple):
    """What a tool call's result says about the call."""

    output: str  # the tool's own output, wrappers and headers removed
    exit_code: int | None  # the outer exit code when one is stated
    inner: tuple[str, ...]  # failed inner steps, e.g. "inner step exit 127"
    failed: bool

    @property
    def label(self) -> str:
        if not self.failed:
            return "ok"
        parts = [f"failed exit {self.exit_code}" if self.exit_code is not None else "failed"]
        parts.extend(self.inner)
        return "; ".join(parts)


#: A JSON escape: a character, a surrogate pair written as two ``\\u`` escapes, or one ``\\u`` escape.
_JSON_ESCAPE = r'\\(["\\/bfnrt]|u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|u[0-9a-fA-F]{4})'
_ESCAPES = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_CUT_JSON_HEAD = '{"output":"'


def _code(digits: str) -> int:
    """A stated exit code as a number. Digits longer than any real code (a hostile cell; ``int`` refuses more than
    4,300 of them) keep their sign and whether they are zero, so a failure still reads as one."""
    if len(digits) <= 19:
        return int(digits)
    if not digits.strip("-0"):
        return 0
    return -(2**63) if digits.startswith("-") else 2**63 - 1


def _unescape(match: re.Match[str]) -> str:
    """One JSON escape decoded; a surrogate pair as the character it encodes, a lone surrogate as U+FFFD (it is
    not text: it could not be written out as UTF-8)."""
    code = match.group(1)
    if code.startswith("u"):
        point = int(code[1:5], 16)
        if len(code) == 11:  # a pair: u + 4 hex digits, then \\u + 4 hex digits
            return chr(0x10000 + ((point - 0xD800) << 10) + (int(code[7:], 16) - 0xDC00))
        return "\ufffd" if 0xD800 <= point <= 0xDFFF else chr(point)
    return _ESCAPES.get(code, code)


def _json_output(text: str) -> tuple[str, int | None] | None:
    if not text.startswith("{"):
        return None
    parsed = load_json(text)
    if parsed is None:
        if not text.startswith(_CUT_JSON_HEAD):
            return None
        # A head read cut inside the JSON: the output string up to the cut, its escapes decoded.
        found = _compiled(_JSON_EXIT).search(text)
        output = _compiled(_JSON_ESCAPE).sub(_unescape, text[len(_CUT_JSON_HEAD):])
        return output, _code(found.group(1)) if found else None
    if not isinstance(parsed, dict) or not isinstance(parsed.get("output"), str):
        return None
    meta = parsed.get("metadata")
    code = meta.get("exit_code") if isinstance(meta, dict) else None
    return parsed["output"], code if isinstance(code, int) and not isinstance(code, bool) else None


def _header_output(text: str) -> tuple[str, int | None] | None:
    """The Codex plain-text header (``Exit code: N`` / ``Chunk ID: …`` … ``Output:``), or None."""
    lines = text.split("\n")
    if not lines or not _compiled(_HEADER_LINE).match(lines[0]):
        return None
    for index, line in enumerate(lines[:8]):
        if line.rstrip() == "Output:":
            header = "\n".join(lines[:index])
            found = _compiled(_HEADER_EXIT).search(header)
            return "\n".join(lines[index + 1:]), _code(found.group(1)) if found else None
        if not _compiled(_HEADER_LINE).match(line):
            return None
    return None


def read_outcome(content: str, *, is_error: bool, whole: str | None = None) -> Outcome:
    """Read one tool result. ``content`` is what was read of the cell; ``whole`` optionally the head and tail
    joined, searched for exit codes and inner steps when the head alone was cut."""
    searched = whole if whole is not None else content
    output, code = content, None
    unwrapped = _json_output(content) or _header_output(content)
    if unwrapped is not None:
        output, code = unwrapped
    else:
        claude = _compiled(_CLAUDE_EXIT).match(content)
        if claude:
            output, code = content[claude.end():], _code(claude.group(1))
    if code is None:
        found = _compiled(_JSON_EXIT).search(searched) or _compiled(_PROCESS_EXIT).search(searched)
        code = _code(found.group(1)) if found else None
    inner = tuple(label.format(m.group(1)) for pattern, label in _INNER for m in [_compiled(pattern).search(searched)]
                  if m)
    # A stated code decides; without one, a traceback or a failed inner step says the call failed.
    stated_failure = code != 0 if code is not None else bool(inner) or _TRACEBACK in searched
    failed = is_error or stated_failure
    return Outcome(output=output, exit_code=code, inner=inner if failed else (), failed=failed)


def tail_output(head: str, tail: str) -> str:
    """The tail read of a cut cell, in the same form as the head's output: a Codex JSON wrapper's escapes
    decoded and its closing ``","metadata":…`` removed."""
    if not tail or not head.startswith(_CUT_JSON_HEAD):
        return tail
    end = tail.rfind('","metadata"')
    return _compiled(_JSON_ESCAPE).sub(_unescape, tail[:end] if end >= 0 else tail)
