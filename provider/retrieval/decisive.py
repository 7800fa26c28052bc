"""The decisive block of a failed tool's output, wherever it sits, by the error idioms of the ecosystems agents
work in.

A long output keeps its cause anywhere: a Go race report or panic before a page of goroutines, a Java
``Caused by:`` chain whose last cause is the real one, the first error of a build before its cascade, a
Terraform ``Error:`` block before the state lock is released. :func:`decisive_block` reads every line and
returns the lines of the most decisive idiom found (:data:`IDIOMS`, most decisive first), in the order they are
to be kept: the idiom's anchor line, then the lines that make it readable (the frame of a panic, the span of a
Rust error, the ``│`` lines of a Terraform error, the ``DETAIL`` of a SQL error, the ``Retry-After`` of an HTTP
429). None when no idiom is in the output: the caller's generic reading decides then. :func:`exit_lines` gives
the lines by which a build tool says it stopped (make, npm, pnpm, yarn), kept beside the block.

The expressions are the provider's own constants, compiled on first use (the ``re`` module's cache).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import NamedTuple

Lines = Sequence[str]


def _re(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)  # the re module keeps the compiled patterns (its own bounded cache)


def _first(lines: Lines, pattern: str, nonblank: Sequence[int]) -> int | None:
    found = _re(pattern)
    return next((i for i in nonblank if found.search(lines[i])), None)


def _last(lines: Lines, pattern: str, nonblank: Sequence[int]) -> int | None:
    found = _re(pattern)
    return next((i for i in reversed(nonblank) if found.search(lines[i])), None)


def _following(lines: Lines, start: int, pattern: str, most: int, *, within: int = 12) -> list[int]:
    """Up to ``most`` lines after ``start`` (within ``within`` lines) matching ``pattern``."""
    found = _re(pattern)
    out = [i for i in range(start + 1, min(len(lines), start + 1 + within)) if found.search(lines[i])]
    return out[:most]


def _go_race(lines: Lines, nonblank: Sequence[int]) -> list[int] | None:
    """``WARNING: DATA RACE``, each access (``Write at … by goroutine N:``) and its first frame and file line."""
    at = _first(lines, r"^WARNING: DATA RACE", nonblank)
    if at is None:
        return None
    block = [at]
    end = next((i for i in range(at + 1, min(len(lines), at + 60)) if lines[i].startswith("=====")), at + 40)
    for access in _following(lines, at, r"^(Previous )?(Read|Write) at 0x[0-9a-f]+ by", 2, within=end - at):
        block += [access, *(i for i in (access + 1, access + 2) if i < len(lines) and lines[i].strip())]
    return block


def _go_panic(lines: Lines, nonblank: Sequence[int]) -> list[int] | None:
    """``panic:`` (or ``fatal error:``), its goroutine and the first frame with its file line."""
    at = _first(lines, r"^(panic: |fatal error: )", nonblank)
    if at is None:
        return None
    goroutine = _following(lines, at, r"^goroutine \d+ \[", 1, within=4)
    frames = [i for i in range(goroutine[0] + 1, min(len(lines), goroutine[0] + 5)) if lines[i].strip()][:4] \
        if goroutine else []
    return [at, *goroutine, *frames]


def _caused_by(lines: Lines, nonblank: Sequence[int]) -> list[int] | None:
    """The last ``Caused by:`` of a Java or Kotlin chain (the real cause) and its first frame, then the exception
    that opened the chain."""
    last = _last(lines, r"^\s*Caused by: ", nonblank)
    if last is None:
        return None
    frame = _following(lines, last, r"^\s+at ", 1, within=2)
    top = _first(lines, r"^\s*(Exception in thread \S+ )?[\w.$]+(Exception|Error)(: |$)", nonblank)
    return [last, *frame, *([top] if top is not None and top < last else [])]


def _python(lines: Lines, nonblank: Sequence[int]) -> list[int] | None:
    """A Python traceback's exception line and the frame above it; in a chain (``During handling …``, ``The above
    exception …``) the last exception first, then the first one."""
    tracebacks = [i for i in nonblank if lines[i].startswith("Traceback (most recent call last)")]
    if not tracebacks:
        return None
    exception = r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|Failure|Warning|Timeout|Refused)\b.*"
    found = []
    for start in tracebacks:
        end = next((i for i in range(start + 1, len(lines)) if _re(exception).match(lines[i])), None)
        if end is not None:
            frame = next((i for i in range(end - 1, start, -1) if lines[i].lstrip().startswith("File ")), None)
            found.append((end, frame))
    if not found:
        return None
    last, frame = found[-1]
    block = [last, *([frame] if frame is not None else [])]
    if len(found) > 1:
        block.append(found[0][0])
    return block


def _rust(lines: Lines, nonblank: Sequence[int]) -> list[int] | None:
    """The first ``error[E…]:`` (or ``error:`` of rustc) with its ``-->`` location and the span that marks it."""
    at = _first(lines, r"^error(\[E\d{4}\])?: (?!could not compile|aborting)", nonblank)
    if at is None:
        return None
    location = _following(lines, at, r"^\s*--> ", 1, within=2)
    span = _following(lines, at, r"^\s*\d+\s*\|.*\S|^\s*\|\s*[-^]+", 4, within=10)
    return [at, *location, *[i for i in span if "^" in lines[i]], *span]


def _typescript(lines: Lines, nonblank: Sequence[int]) -> list[int] | None:
    at = _first(lines, r"\berror TS\d{3,5}\b", nonblank)
    return None if at is None else [at, *_following(lines, at, r"^\s+\S", 1, within=1)]


def _sql(lines: Lines, nonblank: Sequence[int]) -> list[int] | None:
    """A database's ``ERROR:`` (psql) or ``ERROR nnnn (SQLSTATE)`` (mysql), or a driver's ``SQLSTATE``, and its
    ``DETAIL``/``HINT``/``CONTEXT`` lines."""
    at = _first(lines, r"(^|: )ERROR:  \S|^ERROR \d+ \(\w{5}\)|SQLSTATE\[?\s?[0-9A-Z]{5}", nonblank)
    if at is None:
        return None
    return [at, *_following(lines, at, r"^(DETAIL|HINT|CONTEXT|LINE \d+):", 2, within=4)]


def _http(lines: Lines, nonblank: Sequence[int]) -> list[int] | None:
    """An HTTP 4xx/5xx status line and what it says of when to come back (``Retry-After``, rate limit headers)."""
    at = _first(lines, r"(?i)^[<\s]*HTTP/[\d.]+ [45]\d\d\b|\b[45]\d\d (Too Many Requests|Service Unavailable|"
                       r"Bad Gateway|Gateway Timeout|Forbidden|Unauthorized)\b", nonblank)
    if at is None:
        return None
    after = _following(lines, at, r"(?i)^[<\s]*(retry-after|x-ratelimit-remaining|x-ratelimit-reset):", 2, within=8)
    body = _following(lines, at, r"(?i)\"(message|error)\"\s*:", 1, within=10)
    return [at, *after, *body]


def _terraform(lines: Lines, nonblank: Sequence[int]) -> list[int] | None:
    """Terraform's first ``Error:`` and the ``│`` lines under it (the status, ``with`` and ``on file line``)."""
    at = _first(lines, r"^[│|]?\s*Error: ", nonblank)
    if at is None or not (lines[at].lstrip().startswith(("│", "|")) or _re(r"^Error: ").match(lines[at])):
        return None
    under = _following(lines, at, r"^[│|]\s*\S", 5, within=8)
    return [at, *sorted(under, key=lambda i: (" on " not in lines[i] and "with " not in lines[i], i))]


def _docker(lines: Lines, nonblank: Sequence[int]) -> list[int] | None:
    """A failed BuildKit step (``#N ERROR:`` / ``did not complete successfully``) with the step's last output lines
    (where the tool inside it said why) and its ``RUN`` line; a classic build's ``Step n/m`` and the lines before
    ``returned a non-zero code``."""
    at = _first(lines, r"^#\d+ ERROR: |did not complete successfully: exit code", nonblank)
    if at is not None:
        step = _re(r"^#(\d+) ").match(lines[at])
        if step:
            prefix = f"#{step.group(1)} "
            mine = [i for i in range(max(0, at - 40), at) if lines[i].startswith(prefix)]
            run = [i for i in mine if "] RUN " in lines[i]][-1:]
            said = [i for i in mine if i > (run[0] if run else -1) and lines[i].strip()][-2:]
            return [*reversed(said), at, *run]
        return [at]
    code = _first(lines, r"returned a non-zero code: \d+", nonblank)
    if code is None:
        return None
    classic = next((i for i in range(code - 1, max(-1, code - 40), -1) if lines[i].startswith("Step ")), None)
    said = [i for i in range(max(0, code - 3), code) if lines[i].strip() and i != classic]
    return [*reversed(said), code, *([classic] if classic is not None else [])]


def _build_error(lines: Lines, nonblank: Sequence[int]) -> list[int] | None:
    """The first error of a compiler or bundler (``file:line:col: error``, ``file(line,col): error``, esbuild's
    ``file:line:col: ERROR:``, webpack's ``ERROR in``), before its cascade."""
    # A location starts a word (``(?<!\S)``): a long line without one is read in linear time.
    at = _first(lines, r"(?<!\S)\S+:\d+:\d+:\s+(fatal )?(error|ERROR):|(?<!\S)\S+\(\d+,\d+\): error\b|^ERROR in \S",
                nonblank)
    return None if at is None else [at, *_following(lines, at, r"^\s+\S", 2, within=2)]


def _node(lines: Lines, nonblank: Sequence[int]) -> list[int] | None:
    """A JavaScript error line followed by its stack (``at …``): the error and the first frame of the code."""
    stack = _re(r"^\s+at \S")
    for i in nonblank:
        if _re(r"^\s*(Uncaught )?[A-Z]\w*(Error|Exception)(\s\[\w+\])?: \S").match(lines[i]) and i + 1 < len(lines) \
                and stack.match(lines[i + 1]):
            return [i, i + 1]
    return None


def _go_test(lines: Lines, nonblank: Sequence[int]) -> list[int] | None:
    """``--- FAIL: TestX`` and the ``file_test.go:N:`` lines that say why."""
    at = _first(lines, r"^\s*--- FAIL: ", nonblank)
    if at is None:
        return None
    why = [i for i in range(max(0, at - 4), min(len(lines), at + 4))
           if _re(r"^\s+\w+_test\.go:\d+: ").match(lines[i])][:2]
    return [*why, at]


class Idiom(NamedTuple):
    name: str
    find: Callable[[Lines, Sequence[int]], list[int] | None]


#: The idioms, most decisive first: a race or panic says more than the test failure it caused; the real cause
#: of a chain more than its top; a build's first error more than its summary.
IDIOMS: tuple[Idiom, ...] = (
    Idiom("go race", _go_race), Idiom("go panic", _go_panic), Idiom("java caused by", _caused_by),
    Idiom("python traceback", _python), Idiom("rust error", _rust), Idiom("typescript error", _typescript),
    Idiom("terraform error", _terraform), Idiom("docker step", _docker), Idiom("sql error", _sql),
    Idiom("http status", _http), Idiom("build error", _build_error), Idiom("node error", _node),
    Idiom("go test", _go_test),
)


def decisive_block(lines: Lines, nonblank: Sequence[int]) -> list[int] | None:
    """The lines of the most decisive idiom in ``lines`` (module docstring), anchor first; None when there is
    none. ``nonblank``: the indices of the lines with text."""
    for idiom in IDIOMS:
        found = idiom.find(lines, nonblank)
        if found:
            return list(dict.fromkeys(i for i in found if 0 <= i < len(lines)))
    return None


_EXIT = (r"^make(\[\d+\])?: \*\*\* |^npm (ERR!|error) (code \S|Lifecycle script|command failed)|ELIFECYCLE|"
         r"^error Command failed with exit code|^\s*ERROR\s+run failed|^FAILURE: Build failed|^BUILD FAILED|"
         r"^error: could not compile|^Error: Process completed with exit code")


def exit_lines(lines: Lines, nonblank: Sequence[int]) -> list[int]:
    """The first line by which a build tool says it stopped (make, npm, pnpm, yarn, turbo, gradle, cargo)."""
    found = _first(lines, _EXIT, nonblank)
    return [] if found is None else [found]
