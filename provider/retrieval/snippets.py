"""Compose evidence text that tells what happened, within the snippet budget.

* A tool call: ``[label] command``, then the decisive block of a failure wherever it sits in the output
  (``decisive``: a race or panic, the last cause of a chain, a build's first error …; else the first error line
  and the cause lines after it), the lines that name the query terms (keyword in context) and the summary line
  (test counts, "found N errors", the final status, a build tool's exit line). Lines keep their order in the
  output; a gap between shown lines is marked with ``…``.
* A file edit: the path and what changed (``@@`` symbol, removed and added lines, the first lines written).
* A message or summary: a keyword-in-context window around the first term.

Redaction runs before any cut. Every read of a cell that the SQL cut (a ``substr`` window, a head or tail read)
carries a margin of :data:`MARGIN` characters beyond what may be shown; :func:`redact` runs over the whole read,
and only then is the text cut, at line or token boundaries, never closer than the margin to a cut edge of the
read. A secret split by a read edge therefore lies in the margin and is never shown in part.
"""

import functools
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from ..redaction.redact import redact
from .decisive import decisive_block, exit_lines
from .edits import FileEdit
from .outcome import Outcome
from .terms import loose

ELLIPSIS = "…"
#: Characters read beyond a shown window on each side that the SQL cut, so redaction sees a secret's context.
MARGIN = 256
#: Room kept for the labels added after composition ("[repeated …] ", "[subagent] ").
LABEL_ROOM = 48
#: Longest single line shown, and longest command shown.
LINE_MAX = 240
COMMAND_MAX = 200

_WS = re.compile(r"\s+")
# The expressions of a tool call's lines, compiled on first use (``_compiled``): only tool stories read them.
#: The first line of a diagnostic block: a named error first, a generic error word second.
_DIAGNOSTIC = (
    r"\b[A-Za-z_.]*(Error|Exception|Exit|Fault|Timeout|Drift|Starvation)\b\s*:|\berror [A-Z]{1,4}\d{2,6}\b|"
    r"^E\s{2,}\S|\bfatal:|\bpanicked at\b|\bSegmentation fault\b|^\s*\d+:\d+\s+error\b|\bERR! code\b|"
    r"did not complete successfully|\bHTTP [45]\d\d\b|^\s*[\u00d7\u2717\u2718]\s|^\s*\u2192\s")
_GENERIC_DIAGNOSTIC = r"\bERROR\b|\bERR!|\bdenied\b|\brefused\b|\bnot found\b|\bcannot\b"
#: The start of an error named inside a long line (the innermost of a chain is the last).
_INNER_ERROR = r"(?<![A-Za-z_.])[A-Za-z_.]*(?:Exception|Error|Denied|Refused|Forbidden)\b:\s"
_ERRORISH = (
    r"(?i)error|exception|fail|traceback|refused|denied|not found|cannot|fatal|timed out|rejected|\[remote")
_SUMMARY = (
    r"(?i)\b\d+ (?:passed|failed|errors?|warnings?|problems?|tests?|skipped)\b|found \d+ errors?|"
    r"^\s*(?:test files|tests)\s+\d|✖ \d+ problem|^\s*(?:FAILED|PASSED|BUILD \w+|ERROR: failed to solve)|"
    r"All checks passed|^\s*Success\.|^Done\b")


@functools.cache
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


class ReadWindow(NamedTuple):
    """How a message or summary window is read: ``budget`` characters may be shown, starting up to ``pre``
    characters before the first term; the SQL reads :data:`MARGIN` more on each side (``sql_pre``,
    ``length``)."""

    budget: int

    @property
    def compose(self) -> int:
        """Characters the composed text may use, leaving room for the labels added after composition."""
        return max(40, self.budget - LABEL_ROOM)

    @property
    def pre(self) -> int:
        return max(20, self.budget // 3)

    @property
    def sql_pre(self) -> int:
        return self.pre + MARGIN

    @property
    def length(self) -> int:
        return self.budget + self.pre + 2 * MARGIN


@dataclass(slots=True)
class Shown:
    """Composed text and the redactions made while composing it; for a failed tool call, the line that decided
    what was shown first (``anchor``, redacted: the failure's signature is read from it)."""

    text: str
    redactions: Counter[str] = field(default_factory=Counter)
    anchor: str = ""


def squash(text: str) -> str:
    return _WS.sub(" ", text).strip()


def cut_at_token(text: str, limit: int) -> str:
    """``text`` within ``limit`` characters, cut at a whitespace boundary and marked with ``…``."""
    if len(text) <= limit:
        return text
    room = max(0, limit - len(ELLIPSIS) - 1)
    head = text[:room]
    space = max(head.rfind(" "), head.rfind("\n"), head.rfind("\t"))
    if space > room // 2:
        head = head[:space]
    return head.rstrip() + " " + ELLIPSIS if head.strip() else ELLIPSIS


def _redacted(text: str, counts: Counter[str]) -> str:
    result = redact(text)
    counts.update(result.counts)
    return result.text


def drop_cut_edge(text: str, *, at_start: bool, at_end: bool) -> str:
    """Drop :data:`MARGIN` characters at each edge the read cut, back to the next line or token boundary."""
    if at_end:
        text = text[: max(0, len(text) - MARGIN)]
        last = max(text.rfind("\n"), text.rfind(" "))
        text = text[:last] if last >= 0 else ""
    if at_start:
        text = text[MARGIN:]
        first = min((i for i in (text.find("\n"), text.find(" ")) if i >= 0), default=-1)
        text = text[first + 1:] if first >= 0 else ""
    return text


def _term_hit(lowered: str, terms: Sequence[str]) -> int:
    hits = [i for i in (lowered.find(t) for t in terms if t) if i >= 0]
    return min(hits) if hits else -1


# --- tool calls ------------------------------------------------------------------------------------------


def _pick_lines(lines: Sequence[str], terms: Sequence[str], failed: bool) -> list[int]:
    """Line indices in priority order: the decisive block (``decisive``; else the first error line and its
    causes), keyword lines, summary line, the build tool's exit line (failed); else keyword lines, summary line,
    first line; then every other line, nearest to those first."""
    lowered = [loose(ln) for ln in lines]
    wanted = [loose(t) for t in terms if t]
    nonblank = [i for i, ln in enumerate(lines) if ln.strip()]
    kwic = [i for i in nonblank if any(t in lowered[i] for t in wanted)][:4]
    summary = [i for i in nonblank if _compiled(_SUMMARY).search(lines[i])][-1:] or nonblank[-1:]
    if failed:
        block = decisive_block(lines, nonblank)  # an ecosystem's idiom wherever it sits, else the first error
        order = (block if block is not None else _diagnostic_block(lines, nonblank)) + kwic + summary
        order += exit_lines(lines, nonblank)
    else:
        order = kwic + summary + nonblank[:1]
    seen = list(dict.fromkeys(order))
    return seen + _nearest_first([i for i in nonblank if i not in seen], seen)


def _nearest_first(rest: list[int], chosen: Sequence[int]) -> list[int]:
    """The budget left goes to the lines nearest the chosen ones (their context), nearest first."""
    if chosen:
        rest.sort(key=lambda i: (min(abs(i - j) for j in chosen), i))
    return rest


def _diagnostic_block(lines: Sequence[str], nonblank: Sequence[int]) -> list[int]:
    """The first error line (a named error first, a generic error word second, any error-ish word last) and the
    cause lines around it, or nothing."""
    errorish = _compiled(_ERRORISH)
    patterns = (_compiled(_DIAGNOSTIC), _compiled(_GENERIC_DIAGNOSTIC), errorish)
    first = next((i for pattern in patterns for i in nonblank if pattern.search(lines[i])), None)
    if first is None:
        return []
    # The cause often sits on the line right before (the shell's "not found" before docker's failed step) or in
    # the lines after (pytest's E lines, a compiler's note).
    before = [i for i in nonblank if i < first][-2:]
    # The line right before is kept as context; the one before it when it reads as an error too.
    cause = [i for n, i in enumerate(reversed(before)) if n == 0 or errorish.search(lines[i])]
    return [first, *cause, *(i for i in nonblank if first < i <= first + 2)]


def _display(line: str, terms: Sequence[str] = (), limit: int = LINE_MAX) -> str:
    """A line as shown: banner padding (``==== x ====``, ``____ x ____``) removed, long lines cut. A long line
    that names a term past the cut is shown around the term instead (``… words term words …``); one whose
    innermost error lies past the cut shows its head and that error (``head … api error X: why``)."""
    text = line.strip()
    text = text.strip("=_ ") or text
    if len(text) <= limit:
        return text
    lowered = text.lower()
    hit = _term_hit(lowered, [t.lower() for t in terms])
    if hit < 0 or hit + len(ELLIPSIS) + 24 < limit * 2 // 3:
        inner = [m.start() for m in _compiled(_INNER_ERROR).finditer(text)]
        if inner and inner[-1] > limit * 2 // 3:
            # An error wrapped in others ("operation error …: api error AccessDenied: …"): its head, then the
            # innermost error, which says what went wrong.
            tail = cut_at_token(text[inner[-1]:], limit * 2 // 3)
            return cut_at_token(text, limit - len(tail) - len(ELLIPSIS) - 2).removesuffix(ELLIPSIS).rstrip() + \
                f" {ELLIPSIS} {tail}"
        return cut_at_token(text, limit)
    start = hit - limit // 3
    space = text.rfind(" ", 0, max(0, start))
    start = space + 1 if space > 0 else max(0, start)
    return ELLIPSIS + " " + cut_at_token(text[start:], limit - len(ELLIPSIS) - 1)


def _render(lines: Sequence[str], picks: Sequence[int], header: str, budget: int,
            terms: Sequence[str] = ()) -> str:
    chosen: list[int] = []
    used = len(header) + 2  # and a trailing "\n…"
    for index in picks:
        line = _display(lines[index], terms)
        cost = len(line) + 3  # newline plus a possible elision line
        if used + cost > budget:
            continue
        chosen.append(index)
        used += cost
    out = [header] if header else []
    previous: int | None = None
    for index in sorted(chosen):
        skipped = lines[previous + 1:index] if previous is not None else lines[:index]
        if any(ln.strip() for ln in skipped):
            out.append(ELLIPSIS)
        out.append(_display(lines[index], terms))
        previous = index
    if previous is not None and any(ln.strip() for ln in lines[previous + 1:]):
        out.append(ELLIPSIS)
    return "\n".join(out)


def _command_block(label: str, command: str, terms: Sequence[str], budget: int) -> str:
    """``[label] command``; a command of several lines (a ``bash -lc`` script, a heredoc) keeps its lines,
    indented: the last (what runs after a heredoc) and those naming a term are kept first, elisions are
    marked ``…``."""
    lines = [squash(ln) for ln in command.split("\n") if ln.strip()] or [""]
    first = f"[{label}] " + cut_at_token(lines[0], COMMAND_MAX)
    if len(lines) == 1:
        return first
    wanted = [loose(t) for t in terms if t]
    rest = lines[1:]
    kwic = [i for i, ln in enumerate(rest) if any(t in loose(ln) for t in wanted)]
    picks = [len(rest) - 1, *kwic, *range(len(rest))]
    order = list(dict.fromkeys(picks))
    shown = _render(rest, order, "", max(0, budget - len(first) - 2 * len(rest)), terms)
    # The command's further lines are indented, so they read apart from the output after them.
    return first + "".join("\n  " + ln for ln in shown.split("\n")) if shown else first + " " + ELLIPSIS


def tool_story(command: str, outcome: Outcome, tail: str, *, head_cut: bool, terms: Sequence[str],
               budget: int) -> Shown:
    """``[label] command`` and the telling lines of the output (head read, then tail read if any)."""
    shown = Shown("")
    head_text = drop_cut_edge(_redacted(outcome.output, shown.redactions), at_start=False, at_end=head_cut)
    lines = head_text.split("\n")
    if tail:
        tail_text = drop_cut_edge(_redacted(tail, shown.redactions), at_start=True, at_end=False)
        lines = [*lines, ELLIPSIS, *tail_text.split("\n")]
    # The command may use up to a third of the budget (a script, a heredoc); the output has the rest.
    header = _command_block(outcome.label, _redacted(command, shown.redactions), terms, max(COMMAND_MAX, budget // 3))
    picks = _pick_lines(lines, terms, outcome.failed)
    shown.text = _render(lines, [i for i in picks if lines[i] != ELLIPSIS], header, budget, terms)
    if outcome.failed and picks:
        shown.anchor = lines[picks[0]]
    return shown


# --- file edits ------------------------------------------------------------------------------------------


def _edit_lines(edit: FileEdit, terms: Sequence[str]) -> tuple[list[str], list[tuple[int, str]]]:
    """The head lines of one edit (operation, path, ``@@`` symbol, move) and its body lines, each with its
    priority (0 first: lines naming a term, then the first removed and added lines; 1: the rest)."""
    head = f"{edit.op} {edit.path}"
    if edit.symbols:
        head += " @@ " + edit.symbols[0]
    heads = [head, *([f"*** Move to: {edit.moved_to}"] if edit.moved_to else [])]
    removed = [ln for ln in edit.removed if ln.strip()]
    added = [ln for ln in edit.added if ln.strip()]
    if edit.op == "edit" and len(removed) == 1 and len(added) == 1:
        return heads, [(0, f"{removed[0].strip()} → {added[0].strip()}")]

    def marked(lines: list[str], mark: str, first: int) -> list[tuple[int, str]]:
        return [(0 if n < first or any(t in ln.lower() for t in terms if t) else 1, f"{mark} {ln.strip()}")
                for n, ln in enumerate(lines)]
    # Removed lines before added ones, in their order.
    return heads, marked(removed, "-", 4) + marked(added, "+", 6)


#: An edit as planned: its head lines, its body lines with their rank, the body lines chosen.
_PlannedEdit = tuple[list[str], list[tuple[int, str]], set[int]]


def edit_story(label: str, edits: Sequence[FileEdit], *, terms: Sequence[str], budget: int) -> Shown:
    """``[label]`` and, per file, the operation, path and the substance of the change: every edit's head and
    its first changed lines (and those naming a term) first, then further changed lines while the budget
    lasts. Lines keep their order; a gap is marked ``…``."""
    shown = Shown("")
    out = [f"[{label}]"]
    used = len(out[0]) + 2  # and a final "\n…" when edits are left out
    planned: list[_PlannedEdit] = []
    for edit in edits:
        heads, body = _edit_lines(edit, terms)
        heads = [cut_at_token(_redacted(h, shown.redactions), LINE_MAX) for h in heads]
        body = [(rank, cut_at_token(_redacted(ln, shown.redactions), LINE_MAX)) for rank, ln in body]
        cost = sum(len(h) + 1 for h in heads) + (2 if body else 0)  # a trailing "\n…" after its lines
        if used + cost > budget:
            break
        used += cost
        planned.append((heads, body, set()))
    _choose_body_lines(planned, budget - used)
    for heads, body, chosen in planned:
        out.extend(heads)
        out.extend(_shown_body(body, chosen))
    if len(planned) < len(edits):
        out.append(ELLIPSIS)
    shown.text = "\n".join(out)
    return shown


def _choose_body_lines(planned: Sequence[_PlannedEdit], room: int) -> None:
    """Choose the body lines of every planned edit within ``room`` characters: rank 0 of every edit first."""
    for wanted_rank in (0, 1):
        for _, body, chosen in planned:
            for index, (rank, line) in enumerate(body):
                cost = len(line) + 3  # newline plus a possible elision line
                if rank == wanted_rank and cost <= room:
                    chosen.add(index)
                    room -= cost


def _shown_body(body: Sequence[tuple[int, str]], chosen: set[int]) -> list[str]:
    """The chosen body lines in their order, each gap marked ``…``."""
    out: list[str] = []
    previous = -1
    for index in sorted(chosen):
        if index != previous + 1:
            out.append(ELLIPSIS)
        out.append(body[index][1])
        previous = index
    if body and previous != len(body) - 1:
        out.append(ELLIPSIS)
    return out


# --- messages and summaries ------------------------------------------------------------------------------


def window_story(prefix: str, raw: str, *, terms: Sequence[str], cut_start: bool, cut_end: bool,
                 pre: int, budget: int) -> Shown:
    """A keyword-in-context window of ``raw`` (a read that carries :data:`MARGIN` beyond the window on each
    side the SQL cut), redacted whole before it is cut."""
    shown = Shown("")
    text = drop_cut_edge(_redacted(raw, shown.redactions), at_start=cut_start, at_end=cut_end)
    hit = _term_hit(text.lower(), terms)
    start = max(0, hit - pre) if hit >= 0 else 0
    if start > 0:
        space = text.rfind(" ", 0, start)
        start = space + 1 if space >= 0 else 0
    body = squash(text[start:])
    room = max(0, budget - len(prefix) - 2)
    shown_body = cut_at_token(body, room)
    lead = ELLIPSIS if (start > 0 or cut_start) else ""
    tail = f" {ELLIPSIS}" if (cut_end and not shown_body.endswith(ELLIPSIS)) else ""
    shown.text = f"{prefix}{lead}{shown_body}{tail}"
    return shown
