"""Run the chosen templates inside the request's snapshot, each by the steps the planner lists, and re-check
every row's scope."""

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ..index.connection import ReadSnapshot, StatementBudgetExceeded
from ..index.scope_state import read_scope_set
from ..paths import Roots
from ..templates.catalog import PlanKind, Template
from ..templates.params import NO_UPPER_BOUND, bind, roots_json
from .hits import RawHit, check_scope
from .markers import Tokenizers
from .planner import Plans, Step, choose, evidence_plans, probe_budget, texts_ready
from .small_scope import Remembers, ScopeReads, scope_rows_by_markers
from .snippets import ReadWindow
from .terms import (
    MARKERS,
    PreparedTerms,
    all_terms_expression,
    combined_expression,
    has_resolution_cue,
    marker_expression,
    match_variants,
    unsegmented,
)

#: Rows fetched per template at most; reaching it is disclosed and marks the result truncated.
FETCH_CEILING = 200
#: Characters one evidence text is composed to at most (the request's max_snippet_chars may be lower).
SNIPPET_CEILING = 2000
#: Characters read from one tool cell (head, and the tail of a longer one), so a huge row never reaches Python
#: whole: the head holds every result Obelisk writes whole (it keeps 10,000 characters), so a decisive block in
#: the middle of a long output is read (``snippets``); only a larger cell, another writer's, is cut.
READ_HEAD = 12000
READ_TAIL = 1500
#: Characters of a cell (a tool's ``input_json`` or ``content``, a message or summary text) the templates search
#: for the terms (``:search``): whole every cell Obelisk writes for a call of one or two string leaves (it keeps
#: 10,000 characters of each leaf, JSON-escaped) and every text, while no step of a statement runs long between
#: two of the progress handler's deadline checks.
SEARCH_CHARS = 65536
#: Characters of a whole message a template may return for Python to window (Obelisk keeps at most 10,000 of a
#: message; a larger cell in a hostile database is cut here, so it never reaches Python whole).
MESSAGE_CAP = 12000
#: Rows of a paged template (``:after_rowid``) read per page.
RESOLUTION_PAGE = 500
_KEY_COLUMNS = ("order_key", "message_rowid")  # a paged template's key columns, not part of the row handed on
_MIN_ROWID = -(2**63)
Row = tuple[Any, ...]


class RunReport(NamedTuple):
    hits: tuple[RawHit, ...]
    templates_run: tuple[str, ...]
    templates_skipped: tuple[str, ...]
    fetch_ceiling_reached: bool
    window_chars: int  # characters read around a hit in message and summary text
    substring_scan: bool = False  # unsegmented (CJK) terms were matched by substring in the scope's messages


def scope_sessions(snap: ReadSnapshot, scope: Template, *, sources: Sequence[str], roots: Roots,
                   since: str, until: str = NO_UPPER_BOUND) -> tuple[frozenset[str], bool]:
    """The session ids in scope and whether the scope ceiling was reached (``index.scope_state``: kept by
    real project path; ``until``: the upper time bound, none by default)."""
    found = read_scope_set(snap, scope, sources=sources, roots=roots, since=since, until=until)
    return found.ids, found.ceiling_reached


@dataclass(slots=True)
class _Run:
    """One request's run: what every template's read shares, and what the run found so far."""

    reads: ScopeReads
    base: dict[str, Any]
    terms: PreparedTerms
    tokenizer: str
    tokenizers: Tokenizers
    texts: bool  # a small scope's marker words may be found in its texts (``planner.texts_ready``)
    probe_ms: float
    terms_only: str | None = None  # the terms' half of every FTS expression (None: no term reaches MATCH)
    substring_terms: tuple[str, ...] = ()  # the unsegmented (CJK) terms, matched by substring
    term_hits: dict[str, bool] = field(default_factory=dict)  # the terms' expression -> the scope holds a match
    hits: list[RawHit] = field(default_factory=list)
    ran: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    ceiling: bool = False


def run_templates(snap: ReadSnapshot, templates: Sequence[Template], *, scope: Template, sources: Sequence[str],
                  roots: Roots, since: str, terms: PreparedTerms, tokenizer: str, tokenizers: Tokenizers,
                  max_items: int, max_snippet_chars: int, scope_set: tuple[frozenset[str], bool] | None = None,
                  until: str = NO_UPPER_BOUND, memo: Remembers | None = None,
                  markers_in_python: bool = False) -> RunReport:
    """Run ``templates`` (evidence templates and their plans) over the scope and return every row, checked.

    ``scope_set`` is the scope template's answer when the caller already ran it in this snapshot; without it the
    scope template runs here. ``until`` is the upper time bound (``NO_UPPER_BOUND``: none; a replay's moment:
    nothing at or after it is read). ``memo`` keeps request-independent reads for the index's state (a warm
    process); without it nothing is remembered, and the plans that pay only when remembered are not tried.
    ``markers_in_python``: the live tokenizer is the default unicode61, so a small scope's marker words may be
    found in its texts in Python.
    """
    window_chars = min(max_snippet_chars, SNIPPET_CEILING)
    if not templates:
        return RunReport((), (), (), False, window_chars)
    if scope_set is None:
        scope_set = scope_sessions(snap, scope, sources=sources, roots=roots, since=since, until=until)
    in_scope, scope_ceiling = scope_set
    plans = evidence_plans(templates)
    texts = texts_ready(plans, markers_in_python=markers_in_python)
    variants = match_variants(terms.instr_terms, roots.spellings)
    read = ReadWindow(window_chars)
    run = _Run(
        reads=ScopeReads(snap, sources, roots, in_scope, memo,
                         # Under the default tokenizer the terms' half is decided in Python too, over the texts a
                         # small scope's plans read anyway: FTS5 then looks up only the rows holding both halves.
                         term_matcher=tokenizers.term_matcher(terms.fts_terms) if texts else None),
        base={"sources": json.dumps(list(sources)), "roots": roots_json(roots), "since": since, "until": until,
              "scope_ids": json.dumps(sorted(in_scope)), "terms": json.dumps(list(variants)),
              "head": READ_HEAD, "tail": READ_TAIL, "search": SEARCH_CHARS, "cap": MESSAGE_CAP,
              "pre": read.sql_pre, "window": read.length,
              "limit": min(FETCH_CEILING, max(4 * max_items, 20))},
        terms=terms, tokenizer=tokenizer, tokenizers=tokenizers, texts=texts,
        probe_ms=probe_budget(len(in_scope), texts=texts),
        terms_only=combined_expression(terms, [], tokenizer), substring_terms=unsegmented(variants),
        ceiling=scope_ceiling)
    for each in plans if in_scope else ():
        _run_template(run, each)
    return RunReport(tuple(run.hits), tuple(run.ran), tuple(run.skipped), run.ceiling, window_chars,
                     substring_scan=any("cues" in t.params for t in templates if t.key in run.ran))


def substring_scan_planned(templates: Sequence[Template], terms: PreparedTerms, roots: Roots) -> bool:
    """Whether :func:`run_templates` will scan the scope's messages by substring: the request holds
    unsegmented (CJK) terms and a substring template (``:cues``) is among the runnable templates."""
    return bool(unsegmented(match_variants(terms.instr_terms, roots.spellings))) and any(
        "cues" in t.params for t in templates)


def _run_template(run: _Run, plans: Plans) -> None:
    """Read one evidence template by the planner's steps; keep its rows, each checked against the scope."""
    template = plans.template
    values = _values(run, template)
    if values is None:
        return  # nothing to follow up, or no term that needs the substring scan
    words = _marker_words(template, run.tokenizer)
    if "fts" in template.params:
        expression = combined_expression(run.terms, words, run.tokenizer)
        if expression is None:
            run.skipped.append(template.key)
            return
        values["fts"] = expression
    if "fts_all" in template.params:  # a template that asks for every term (summary.wrapups)
        every = all_terms_expression(run.terms)
        if every is None:
            run.skipped.append(template.key)
            return
        values["fts_all"] = every
    reads = run.reads
    steps = choose(plans, sessions=len(reads.in_scope), marker_words=bool(words),
                   terms_alone="fts" in template.params and run.terms_only is not None, texts=run.texts,
                   remembered=reads.memo is not None, probe_ms=run.probe_ms)
    used, rows = read_rows(run, steps, values, words)
    run.ran.append(used.key)
    run.ceiling = run.ceiling or len(rows) >= values["limit"]
    names = reads.snap.last_columns
    for row in rows:
        hit = RawHit(template, dict(zip(names, row, strict=True)), None if used is template else used)
        check_scope(hit, reads.sources, reads.roots, reads.in_scope)
        run.hits.append(hit)


def _values(run: _Run, template: Template) -> dict[str, Any] | None:
    """The values ``template`` binds this request, or None when it has nothing to read: a template following up
    found failures (``:failures``) when none was found, a substring template (``:cues``) without CJK terms."""
    values = dict(run.base)
    if "failures" in template.params:
        failures = _failure_keys(run.hits)
        if not failures:
            return None
        values["failures"] = json.dumps(failures)
    elif "cues" in template.params:
        if not run.substring_terms:
            return None
        values["terms"] = json.dumps(list(run.substring_terms))
        values["cues"] = json.dumps(list(MARKERS[template.markers].cues if template.markers else ()))
    return values


def _marker_words(template: Template, tokenizer: str) -> list[str]:
    """The marker words an FTS template pairs with the query terms (none for a template without markers)."""
    if "fts" not in template.params or template.markers is None:
        return []
    return MARKERS[template.markers].fts_words(tokenizer)


def _failure_keys(hits: Sequence[RawHit]) -> list[str]:
    """``session id<US>timestamp`` of the earliest failure per session found so far (at most 50 sessions)."""
    first: dict[str, str] = {}
    for hit in hits:
        if hit.template.evidence_type != "prior_failure" or "failures" in hit.template.params:
            continue
        session, when = hit.row.get("session_id"), hit.row.get("observed_at")
        if isinstance(session, str) and isinstance(when, str) and (session not in first or when < first[session]):
            first[session] = when
    return [f"{s}\x1f{t}" for s, t in sorted(first.items())[:50]]


def read_rows(run: _Run, steps: Sequence[Step], values: Mapping[str, Any],
              words: Sequence[str]) -> tuple[Template, list[Row]]:
    """The rows of the first step that answers, and the template that read them (the last step always answers)."""
    for step in steps:
        rows = READERS[step.kind](run, step, values, words)
        if rows is not None:
            return step.template, rows
    raise AssertionError("the template itself ends every plan")  # pragma: no cover - planner.choose


def _probe(run: _Run, step: Step, values: Mapping[str, Any], _words: Sequence[str]) -> list[Row] | None:
    """No row (the template answered) when no message of the scope matches the terms alone; else None. The terms'
    expression is probed once per request, for every template; past its budget the templates run and decide."""
    expression = str(run.terms_only)
    if expression not in run.term_hits:
        reads = run.reads
        try:
            rows = reads.snap.rows(step.template.sql, bind(step.template, {**values, "fts": expression, "limit": 1}),
                                   budget_ms=step.budget_ms)
        except StatementBudgetExceeded:
            run.term_hits[expression] = True
        else:
            names = reads.snap.last_columns
            for row in rows:
                check_scope(RawHit(step.template, dict(zip(names, row, strict=True))), reads.sources, reads.roots,
                            reads.in_scope)
            run.term_hits[expression] = bool(rows)
    return None if run.term_hits[expression] else []


def _scope_rows(run: _Run, step: Step, values: Mapping[str, Any], words: Sequence[str]) -> list[Row] | None:
    """A small scope's rows from its own messages: those holding a marker word (``small_scope``), or, for a
    template without marker words, all of its kind within the step's budget. None when the plan cannot stand in
    (past the budget, too many rows, or rows reaching ``:limit``: without bm25 a cut would differ)."""
    if words:
        matcher = run.tokenizers.marker_matcher(words) if step.texts is not None else None
        return scope_rows_by_markers(run.reads, step, values, markers=f"({marker_expression(words, run.tokenizer)})",
                                     matcher=matcher, terms=str(run.terms_only))
    rows = _within_budget(run, step, values)
    return rows if rows is not None and len(rows) < values["limit"] else None


def _within_budget(run: _Run, step: Step, values: Mapping[str, Any]) -> list[Row] | None:
    """The step's rows, or None past its budget (the snapshot stays open for the next step)."""
    try:
        return run.reads.snap.rows(step.template.sql, bind(step.template, values), budget_ms=step.budget_ms)
    except StatementBudgetExceeded:
        return None


def _template_rows(run: _Run, step: Step, values: Mapping[str, Any], _words: Sequence[str]) -> list[Row]:
    """The template's own rows (a paged template's page by page)."""
    if "after_rowid" in step.template.params:
        return paged_rows(run.reads.snap, step.template, values)
    return run.reads.snap.rows(step.template.sql, bind(step.template, values))


#: How a step of each kind is read: its rows, or None when it declines to the next step.
READERS: Mapping[PlanKind | None, Callable[[_Run, Step, Mapping[str, Any], Sequence[str]], list[Row] | None]] = {
    "term_probe": _probe,
    "scope_rows": _scope_rows,
    "fts_first": lambda run, step, values, _words: _within_budget(run, step, values),
    None: _template_rows,
}


def paged_rows(snap: ReadSnapshot, template: Template, values: Mapping[str, Any]) -> list[Row]:
    """The rows of a paged template (``prior_failure.resolution_messages``): every user message and each agent
    message holding a resolution cue (:func:`terms.has_resolution_cue`), in the template's order, at most
    ``:limit``. The template lists the candidates in (timestamp, uuid, rowid) order, a page at a time after the
    last key, so the cue test runs in Python, once per message, and no more pages are read than the answer needs.
    ``snap.last_columns`` are left as a template's: the key columns are dropped from every row."""
    limit = int(values["limit"])
    kept: list[Row] = []
    after: tuple[Any, Any, Any] = ("", "", _MIN_ROWID)
    names: tuple[str, ...] = ()
    while True:
        page = snap.rows(template.sql, bind(template, {**values, "limit": RESOLUTION_PAGE, "after_ts": after[0],
                                                       "after_key": after[1], "after_rowid": after[2]}))
        names = snap.last_columns or names
        if not page:
            break
        at = {name: i for i, name in enumerate(names)}
        key = (at["observed_at"], at["order_key"], at["message_rowid"])
        _keep_cued(page, at["role"], at["text"], kept, limit)
        if len(kept) >= limit or len(page) < RESOLUTION_PAGE:
            break
        after = (page[-1][key[0]], page[-1][key[1]], page[-1][key[2]])
    keep = [i for i, name in enumerate(names) if name not in _KEY_COLUMNS]
    snap.last_columns = tuple(names[i] for i in keep)
    return [tuple(row[i] for i in keep) for row in kept]


def _keep_cued(page: Sequence[Row], role: int, text: int, kept: list[Row], limit: int) -> None:
    """Add to ``kept`` the page's user messages and cued agent messages, until it holds ``limit`` rows."""
    for row in page:
        if row[role] == "user" or has_resolution_cue(row[text]):
            kept.append(row)
            if len(kept) >= limit:
                return
