"""Turn template rows into evidence candidates: a short, readable text per row, with a fold key.

Recalled text is data: nothing in it changes what the provider does. Parsing of tool inputs and outputs is
defensive (values may be truncated JSON); anything unparseable falls back to plain text.
"""

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from ..contract.wire import EvidenceType
from ..errors import TemplateRejected
from ..paths import relative_to_roots, strip_roots
from ..templates.catalog import SCOPE_KIND, Template
from .cells import cell_flag, cell_text, load_json
from .edits import edit_paths, read_edits
from .engine import READ_HEAD
from .hits import RawHit
from .outcome import Outcome, read_outcome, tail_output
from .snippets import ReadWindow, Shown, drop_cut_edge, edit_story, tool_story, window_story
from .terms import CUE_HEAD, MARKERS, RESOLUTION_CUES, ascii_lower, has_resolution_cue, has_supply_cue
from .wrapups import names_outside_paths

_WS = re.compile(r"\s+")
_FOLD_NOISE = re.compile(r"\b\d+(?:\.\d+)?\s*(?:ms|s|sec|seconds)\b|\b[0-9a-f]{8,}\b|\d{4}-\d\d-\d\dT[\d:.]+Z?")
#: What varies between two occurrences of one failure: times, paths (a run of path characters holding a slash),
#: hashes and addresses, numbers.
_SIGNATURE_NOISE = re.compile(r"\d{4}-\d\d-\d\d[T ][\d:.]+(?:Z|[+-]\d\d:?\d\d)?|(?<![\w.~-])[\w.~-]*/[\w./~-]*|"
                              r"\b0x[0-9a-f]+\b|\b[0-9a-f]{7,}\b|\d+(?:\.\d+)*")
#: A file a failure names: a path or file name with an extension of source, config or script. A match starts
#: only where a run of path characters starts, so a long run without one costs linear time, never cubic.
_NAMED_FILE = re.compile(r"(?<![\w./-])[\w./-]*\.(?:py|pyi|go|ts|tsx|js|jsx|mjs|cjs|rs|java|kt|kts|rb|php|cs|c|cc|cpp|"
                         r"h|hpp|swift|scala|sql|tf|ya?ml|json|toml|sh|vue|svelte)\b")


class Candidate(NamedTuple):
    evidence_type: EvidenceType
    session_ref: str
    message_ref: str | None
    observed_at: str | None
    revision_ref: str | None
    text: str
    score: float
    sidechain: bool
    fold_key: str
    #: Tie-break after score: a recorded tool outcome (0) outranks the agent's narration of it (1).
    priority: int = 0
    #: Redactions made while composing ``text`` (kind, count), counted into the answer's meta.
    redactions: tuple[tuple[str, int], ...] = ()
    #: The command of a tool call (to recognise the same command run again), else None.
    command: str | None = None
    #: "" for evidence found by the query terms; :data:`RESOLUTION_MESSAGE` / :data:`RESOLUTION_CALL` for what
    #: happened after a failure (see ``retrieval.resolution``).
    kind: str = ""
    #: The message_ref of the failure a resolution follows.
    follows: str | None = None
    #: What makes two failures the same one across sessions: the command and the decisive line, or the text, with
    #: paths, numbers, hashes and times taken out ("" : ``fold_key``).
    signature: str = ""
    #: The stems of the files a failure names (its command and output): an edit to one of them may be its fix.
    names: frozenset[str] = frozenset()
    #: A decision reversed or replaced by a later one: that one's ref and day (``retrieval.timeline``).
    superseded_by: str | None = None
    #: A failure that recurs after an earlier one of the same test or command was resolved: that fix's day.
    regression: str | None = None
    #: What happened after a failure is an edit (the same row may be file history too).
    edit: bool = False


def _squash(text: str) -> str:
    return _WS.sub(" ", text).strip()


def trim_cut_edges(text: str, *, cut_start: bool, cut_end: bool) -> str:
    """Drop the partial token at an edge where a read window cut the text.

    A secret split by the cut would otherwise show its visible part, which no redaction pattern can
    recognise any more (a token's tail, a key body without its BEGIN line); a whole token is either shown
    whole, and so redacted, or not at all.
    """
    if cut_start:
        first = _WS.search(text)
        text = text[first.end():] if first else ""
    if cut_end:
        last = max(text.rfind(ch) for ch in " \t\n\r")
        text = text[:last] if last >= 0 else ""
    return text


def _script(text: str) -> str:
    """A shell script as typed: one line per non-blank line (a heredoc keeps its lines), spaces squashed."""
    return "\n".join(_squash(line) for line in text.splitlines() if line.strip())


def command_text(call_name: object, call_input: object) -> str:
    """The command or tool input a human would recognise: Bash command, Codex shell argv, or the tool. Either
    cell may be of any type (``retrieval.cells``)."""
    name = cell_text(call_name) or "tool"
    parsed = load_json(call_input)
    if isinstance(parsed, dict):
        command = parsed.get("command") or parsed.get("cmd")
        if isinstance(command, list) and command:
            words = [str(w) for w in command]
            if len(words) >= 3 and words[0] in ("bash", "sh", "zsh") and words[1] in ("-lc", "-c"):
                return _script(words[2])
            return _squash(" ".join(words))
        if isinstance(command, str):
            return _script(command)
        for key in ("file_path", "path", "pattern", "description", "query", "url"):
            if isinstance(parsed.get(key), str):
                return f"{name} {_squash(parsed[key])}"
    raw = parsed if isinstance(parsed, str) else cell_text(call_input)
    shown = _squash(raw)
    if len(shown) > 200:
        shown = trim_cut_edges(shown[:200], cut_start=False, cut_end=True) + " …"
    return f"{name} {shown}".strip()


def tool_outcome_of(row: Mapping[str, Any]) -> tuple[Outcome, str, bool]:
    """The outcome of a joined tool result, the tail read (wrappers removed) and whether the head was cut."""
    head = cell_text(row.get("result_head"))
    tail = cell_text(row.get("result_tail"))
    outcome = read_outcome(head, is_error=cell_flag(row.get("is_error")),
                           whole=head + "\n" + tail if tail else None)
    return outcome, tail_output(head, tail), bool(tail)


def _tool_text(row: Mapping[str, Any], terms: Sequence[str], budget: int) -> tuple[Shown, bool]:
    command = command_text(row.get("call_name"), row.get("call_input"))
    outcome, tail, head_cut = tool_outcome_of(row)
    return tool_story(command, outcome, tail, head_cut=head_cut, terms=terms, budget=budget), outcome.failed


def _file_text(row: Mapping[str, Any], roots: Sequence[str], terms: Sequence[str], budget: int) -> Shown:
    name = cell_text(row.get("call_name")) or "edit"
    raw = cell_text(row.get("call_input"))
    if len(raw) >= READ_HEAD:  # the head read cut the input: nothing within the margin of the cut is shown
        raw = drop_cut_edge(raw, at_start=False, at_end=True)
    edits = read_edits(name, raw, cell_text(row.get("file_path")) or None)
    for edit in edits:
        edit.path = relative_to_roots(edit.path.strip(), roots)
        if edit.moved_to:
            edit.moved_to = relative_to_roots(edit.moved_to.strip(), roots)
    if row.get("result_head") is not None or cell_flag(row.get("is_error")):
        failed = read_outcome(cell_text(row.get("result_head")), is_error=cell_flag(row.get("is_error"))).failed
    else:
        failed = False
    return edit_story(f"{name} {'failed' if failed else 'applied'}", edits, terms=terms, budget=budget)


def resolution_window(text: str, cues: Sequence[str], read: ReadWindow) -> tuple[int, str, int]:
    """``(window_start, body, score)`` of a ``prior_failure.resolution_messages`` row, as its SQL computed them
    before (``tests/unit/test_resolution_window.py`` checks against SQLite itself): the window of ``read.length``
    characters from ``read.sql_pre`` before the first cue found in the text (1 when none is), and the number of
    cues (repeats counted) found in the first :data:`READ_HEAD` characters. Case folds ASCII only, as SQLite's
    ``lower()``; positions count characters, as ``instr()`` and ``substr()`` do."""
    lowered = ascii_lower(text)
    found = [at + 1 for at in (lowered.find(cue) for cue in cues) if at >= 0]
    start = max(1, (min(found) if found else 1) - read.sql_pre)
    head = lowered[:CUE_HEAD]
    return start, text[start - 1:start - 1 + read.length], sum(1 for cue in cues if cue in head)


def searched_cells(row: Mapping[str, Any], window: int) -> tuple[list[str], bool]:
    """The cells of a row that its template searched for the terms, as read, and whether the read cut any of them
    (SQL then searched text these do not show): a call's input, a result's head and tail, an edited path, a
    message's or summary's window."""
    texts = [cell_text(row.get(column)) for column in ("call_input", "result_head", "result_tail", "file_path",
                                                       "body") if row.get(column) is not None]
    cut = bool(cell_text(row.get("result_tail"))) or len(cell_text(row.get("call_input"))) >= READ_HEAD
    if row.get("body") is not None and "window_start" in row:
        cut = cut or int(row.get("window_start") or 1) > 1 or len(cell_text(row.get("body"))) >= \
            ReadWindow(window).length
    return texts, cut


def _window_text(row: Mapping[str, Any], terms: Sequence[str], read: ReadWindow, prefix: str = "") -> Shown:
    raw = cell_text(row.get("body"))
    start = int(row.get("window_start") or 1)
    return window_story(prefix, raw, terms=terms, cut_start=start > 1, cut_end=len(raw) >= read.length,
                        pre=read.pre, budget=read.compose)


#: The kinds of candidate that tell what happened after a failure (``retrieval.resolution`` links them).
RESOLUTION_MESSAGE = "resolution_message"
RESOLUTION_CALL = "resolution_call"
#: How what happened next is labelled, and a user's message among it.
NEXT_LABEL = "[what happened next] "
USER_LABEL = "[user] "


class Shaped(NamedTuple):
    """A row's composed text, the command of a tool call, the row's score where the shape computes it, and whether
    it shows an edit as what happened next."""

    shown: Shown
    command: str | None = None
    score: float | None = None
    edit: bool = False


class Compose(NamedTuple):
    """What composing a row's text reads besides the row: the terms (``instr`` variants), the bound roots'
    spellings and how text is windowed."""

    terms: Sequence[str]
    roots: Sequence[str]
    read: ReadWindow


class LinkFacts(NamedTuple):
    """What linking reads of a row that may tell what happened after a failure: whether it states a cause or fix
    (a message's resolution cue; a call: True), a user's message and whether it supplies what was missing, the
    command of a call, and the stems of the files an edit changed (:func:`file_stem`)."""

    cued: bool
    command: str | None = None
    user: bool = False
    supplies: bool = False
    edited: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Shape:
    """How the rows of one shape become candidates: ``compose`` gives the text (None: the row is not evidence
    after all); ``priority`` breaks ties after score (a recorded outcome, 0, before narration, 1); a shape of
    what happened after a failure has a ``kind`` and ``link``, the facts ``retrieval.resolution`` links it by
    (:class:`LinkFacts`; None: no resolution after all)."""

    compose: Callable[[RawHit, Compose], Shaped | None]
    priority: int = 1
    kind: str = ""
    link: Callable[[Mapping[str, Any]], LinkFacts | None] | None = None


def _tool_call(hit: RawHit, c: Compose) -> Shaped | None:
    row = hit.row
    shown, failed = _tool_text(row, c.terms, c.read.compose)
    if hit.evidence_type == "prior_failure" and not failed:
        return None  # the SQL prefilter is a superset: the outcome reader finds it succeeded
    return Shaped(shown, command_text(row.get("call_name"), row.get("call_input")))


def _resolution_call(hit: RawHit, c: Compose) -> Shaped | None:
    row = hit.row
    edit = bool(_edited(row))
    if edit:  # the edit that fixed it: what changed, as file history shows it
        shown = _file_text(row, c.roots, c.terms, c.read.compose)
    else:
        shown, failed = _tool_text(row, c.terms, c.read.compose)
        if failed:
            return None  # a call that failed again is no resolution
    shown.text = NEXT_LABEL + shown.text
    return Shaped(shown, command_text(row.get("call_name"), row.get("call_input")), edit=edit)


def _edited(row: Mapping[str, Any]) -> tuple[str, ...]:
    """The stems of the files a call edits (none: the call edits nothing)."""
    raw = cell_text(row.get("call_input"))
    edits = read_edits(cell_text(row.get("call_name")), raw, cell_text(row.get("file_path")) or None)
    return tuple(dict.fromkeys(file_stem(path) for path in edit_paths(edits)))


def _call_link(row: Mapping[str, Any]) -> LinkFacts | None:
    if tool_outcome_of(row)[0].failed:
        return None
    return LinkFacts(True, command_text(row.get("call_name"), row.get("call_input")), edited=_edited(row))


def _resolution_message(hit: RawHit, c: Compose) -> Shaped:
    row = hit.row
    who = USER_LABEL if row.get("role") == "user" else ""
    start, body, score = resolution_window(cell_text(row.get("text")), RESOLUTION_CUES, c.read)
    shown = _window_text({**row, "window_start": start, "body": body}, RESOLUTION_CUES, c.read,
                         f"{NEXT_LABEL}{who}")
    return Shaped(shown, score=float(score))


def _message_link(row: Mapping[str, Any]) -> LinkFacts:
    # The message's score (resolution_window) counts the cues in its first CUE_HEAD characters: it is 0
    # exactly when none is there, all that linking asks of it.
    user = row.get("role") == "user"
    return LinkFacts(has_resolution_cue(row.get("text")), user=user,  # a BLOB read as SQLite would read it
                     supplies=user and has_supply_cue(row.get("text")))


def _title(hit: RawHit, c: Compose) -> Shaped:
    return Shaped(window_story("[session title] ", cell_text(hit.row.get("body")), terms=c.terms, cut_start=False,
                               cut_end=False, pre=c.read.pre, budget=c.read.compose))


def _summary(hit: RawHit, c: Compose) -> Shaped:
    return Shaped(_window_text(hit.row, c.terms, c.read, f"[{cell_text(hit.row.get('summary_kind')) or 'summary'}] "))


def _wrapup(hit: RawHit, c: Compose) -> Shaped | None:
    """A session's last words, when a term stands in them other than inside a file path (``retrieval.wrapups``)."""
    if not names_outside_paths(cell_text(hit.row.get("body")), c.terms):
        return None
    return Shaped(_window_text(hit.row, c.terms, c.read, "[session wrap-up] "))


def _labelled(label: str) -> Callable[[RawHit, Compose], Shaped]:
    """A keyword window of the row's text, after ``label``."""
    return lambda hit, c: Shaped(_window_text(hit.row, c.terms, c.read, label))


#: The shapes a template may declare (``-- shape:``), by name. Adding an evidence source whose rows read like
#: none of these means adding its function here (``sql_templates/README.md``).
SHAPES: Mapping[str, Shape] = {
    "message": Shape(_labelled("")),
    "reasoning": Shape(_labelled("[reasoning] ")),
    "tool_call": Shape(_tool_call, priority=0),
    "file_edit": Shape(lambda hit, c: Shaped(_file_text(hit.row, c.roots, c.terms, c.read.compose)), priority=0),
    "summary": Shape(_summary, priority=0),
    "compaction": Shape(_labelled("[compaction summary] "), priority=0),
    # The agent's own last words (summary.wrapups): after a stored summary of equal score.
    "wrapup": Shape(_wrapup),
    "title": Shape(_title),
    "resolution_message": Shape(_resolution_message, kind=RESOLUTION_MESSAGE, link=_message_link),
    "resolution_call": Shape(_resolution_call, kind=RESOLUTION_CALL, link=_call_link),
}


def shape_of(template: Template) -> Shape:
    """The shape of ``template``'s rows; ``TemplateRejected`` when it declares one this provider does not know."""
    shape = SHAPES.get(template.shape or "")
    if shape is None:
        raise TemplateRejected(f"template {template.id} v{template.version} declares an unknown shape")
    return shape


def check_declared(templates: Sequence[Template]) -> None:
    """Refuse (``TemplateRejected``) an evidence template whose shape or markers this provider does not know."""
    for template in templates:
        if template.plan is None and template.evidence_type != SCOPE_KIND:
            shape_of(template)
        if template.markers is not None and template.markers not in MARKERS:
            raise TemplateRejected(f"template {template.id} v{template.version} declares unknown markers")


class PendingResolution(NamedTuple):
    """A row of a resolution template before its text is composed: the fields by which
    ``resolution.link_resolutions`` keeps it or not, exactly as :func:`candidate` would set them, and the
    composition itself (most such rows are not kept, and composing a story is the costly part)."""

    kind: str
    session_ref: str
    message_ref: str | None
    observed_at: str | None
    cued: bool  # a cue word in the head of the message (its score is not 0); a call: True
    command: str | None
    compose: Callable[[], Candidate | None]
    user: bool = False  # a user's message
    supplies: bool = False  # a user's message that supplies what was missing or asks to try again
    edited: tuple[str, ...] = ()  # a call that edits files: their stems


def pending_resolution(hit: RawHit, *, terms: Sequence[str], roots: Sequence[str],
                       window: int) -> PendingResolution | None:
    """The :class:`PendingResolution` of a row of a resolution shape (None where :func:`candidate` gives None:
    a call that failed again is no resolution); its ``compose`` is that :func:`candidate`."""
    shape = shape_of(hit.template)
    facts = shape.link(hit.row) if shape.link is not None else None
    if facts is None:
        return None
    row = hit.row
    return PendingResolution(
        kind=shape.kind, session_ref=str(row["session_id"]),
        message_ref=str(row["message_ref"]) if row.get("message_ref") is not None else None,
        observed_at=str(row["observed_at"]) if row.get("observed_at") else None, cued=facts.cued,
        command=facts.command, compose=lambda: candidate(hit, terms=terms, roots=roots, window=window),
        user=facts.user, supplies=facts.supplies, edited=facts.edited)


def candidate(hit: RawHit, *, terms: Sequence[str], roots: Sequence[str], window: int) -> Candidate | None:
    """The evidence candidate of one row, composed by its template's shape, or None when the row is not evidence
    of its type after all (a ``prior_failure`` tool row that the outcome reader finds succeeded: the SQL
    prefilter is a superset)."""
    shape = shape_of(hit.template)
    shaped = shape.compose(hit, Compose(terms, roots, ReadWindow(window)))
    if shaped is None:
        return None
    row = hit.row
    text = strip_roots(shaped.shown.text, roots)  # paths inside a bound root: repository-relative
    sidechain = cell_flag(row.get("sidechain"))
    if sidechain:
        text = "[subagent] " + text
    fold_basis = _FOLD_NOISE.sub("#", text.lower())
    shown = shaped.shown
    basis = f"{shaped.command or ''}\x1f{shown.anchor}" if shown.anchor else text
    failed_call = bool(shown.anchor) and hit.evidence_type == "prior_failure"
    return Candidate(
        evidence_type=hit.evidence_type,
        session_ref=str(row["session_id"]),
        message_ref=str(row["message_ref"]) if row.get("message_ref") is not None else None,
        observed_at=str(row["observed_at"]) if row.get("observed_at") else None,
        revision_ref=str(row["git_branch"]) if row.get("git_branch") else None,
        text=text,
        score=shaped.score if shaped.score is not None else float(row.get("score") or 0),
        sidechain=sidechain,
        fold_key=f"{hit.evidence_type}\x1f{_squash(fold_basis)}",
        priority=shape.priority,
        redactions=tuple(sorted(shaped.shown.redactions.items())),
        command=shaped.command,
        kind=shape.kind,
        signature=f"{hit.evidence_type}\x1f{signature_of(basis)}",
        edit=shaped.edit,
        names=named_files(row) if failed_call else frozenset(),
    )


def signature_of(text: str) -> str:
    """``text`` lower-cased with what varies between occurrences of one failure taken out (:data:`_SIGNATURE_NOISE`)
    and spaces squashed."""
    return _squash(_SIGNATURE_NOISE.sub("#", text.lower()))


def file_stem(path: str) -> str:
    """A file's stem as a test and its subject share it: ``tests/test_money.py`` and ``tools/money.py`` give
    ``money``; ``invoice_test.go`` and ``invoice.go`` give ``invoice``; ``summary.test.ts`` gives ``summary``."""
    name = path.replace("\\", "/").rsplit("/", 1)[-1].lower()
    stem = name.split(".", 1)[0] if not name.startswith(".") else name
    for prefix in ("test_", "tests_"):
        stem = stem[len(prefix):] if stem.startswith(prefix) else stem
    for suffix in ("_test", "_tests", "_spec", "test", "spec"):
        if stem.endswith(suffix) and len(stem) > len(suffix):
            stem = stem[: -len(suffix)].rstrip("_.-")
            break
    return stem


def named_files(row: Mapping[str, Any]) -> frozenset[str]:
    """The stems (:func:`file_stem`) of the files a failed call's command and output name, at most 64."""
    text = "\n".join(cell_text(row.get(column)) for column in ("call_input", "result_head", "result_tail"))
    stems: dict[str, None] = {}
    for found in _NAMED_FILE.finditer(text):
        stems[file_stem(found.group(0))] = None
        if len(stems) >= 64:
            break
    return frozenset(s for s in stems if len(s) >= 3)
