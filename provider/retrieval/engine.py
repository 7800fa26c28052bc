"""Run the admitted templates inside the request's snapshot and re-check every row's scope."""

import json
from collections.abc import Callable, Mapping, Sequence
from operator import itemgetter
from typing import Any, NamedTuple, cast

from ..contract.wire import EvidenceType
from ..errors import ScopeViolation
from ..index.connection import ReadSnapshot, StatementBudgetExceeded
from ..index.scope_state import read_scope_set
from ..paths import Roots
from ..templates.catalog import SCOPE_KIND, Template
from ..templates.params import NO_UPPER_BOUND, roots_json
from .markers import MarkerMatcher, UndecidableText, marker_matcher, term_matcher, token_string
from .snippets import ReadWindow
from .terms import (
    DECISION_CUES,
    DECISION_WORDS,
    FAILURE_CUES,
    FAILURE_WORDS,
    PreparedTerms,
    combined_expression,
    has_resolution_cue,
    marker_expression,
    match_variants,
    unsegmented,
)

#: Rows fetched per template at most; reaching it is disclosed and marks the result truncated.
FETCH_CEILING = 200
#: The FTS-first plan of a template is the template with this id suffix; it gets this many ms.
FTS_FIRST = ".fts_first"
FTS_FIRST_BUDGET_MS = 25.0
#: The small-scope plan of a template (``.scope_rows``) and the statement listing the scope's messages that hold
#: a marker word (``.cue_rows``), which a warm process remembers per index state and scope set. Used when the
#: scope has at most ``SMALL_SCOPE_SESSIONS`` sessions and fewer than ``CUE_ROWS_CEILING`` such messages.
SCOPE_ROWS = ".scope_rows"
CUE_ROWS = ".cue_rows"
#: The scope's messages (``.cue_text``: rowids and text lengths, read through the session index), then their
#: texts (``.cue_bodies``, by rowid), matched against the marker words in Python (``markers``: exactly FTS5's
#: match, under the default unicode61 tokenizer). It stands in for ``.cue_rows``, which expands every marker
#: prefix over the whole index, and so also serves a one-shot ``query``. At most ``CUE_TEXT_ROWS`` messages of at
#: most ``CUE_TEXT_CAP`` characters each, ``CUE_TEXT_CHARS`` in all (the texts are read only within that, so no
#: more is ever held); a scope with more, or a text only FTS5 can judge (longer, or not text), is left to
#: ``.cue_rows`` or the template itself.
CUE_TEXT = ".cue_text"
CUE_BODIES = ".cue_bodies"
CUE_TEXT_ROWS = 4000
#: Characters of ``.cue_text`` bodies tokenized per template at most (about 20 ms of tokenizing); a scope whose
#: texts hold more is left to ``.cue_rows`` or the template, as one with more rows is.
CUE_TEXT_CHARS = 1_000_000
#: The term probe of an FTS template (``.term_probe``): one message of the scope matching the query terms alone.
#: Without one, every FTS template (the terms AND more) has no row: the probe answers them, and they do not run.
#: The probes of the templates are one statement, run once per request under ``TERM_PROBE_BUDGET_MS``.
TERM_PROBE = ".term_probe"
TERM_PROBE_BUDGET_MS = 5.0
#: The probe's budget when the small-scope plans (``.cue_text``) stand ready for the marker templates: they cost
#: a few ms whatever the terms, so the probe is not worth more. A rare term's probe ends well within it (about
#: 1 ms at 1M messages); a common term's first match in the scope can lie 15 ms down its doclist.
SMALL_SCOPE_PROBE_BUDGET_MS = 2.0
SMALL_SCOPE_SESSIONS = 64
CUE_ROWS_CEILING = 4000
#: A template with a ``.scope_rows`` plan and no marker words (``decision.reasoning``) reads a small scope's
#: messages of its kind through the session index, each matched by rowid: a few tenths of a ms where the full
#: plan walks a common term's doclist over the whole index (7 ms at 1M messages). A scope of few sessions can
#: still hold many messages, so the plan gets this budget; past it the template runs as before.
SCOPE_ROWS_BUDGET_MS = 3.0
#: A scope of at most this many sessions skips the FTS-first plan: its scope-set plan lists few messages, so it
#: costs about what FTS-first costs on a rare term and far less on a common one (issue 13's bench: 100k/1M
#: messages, 11-20 sessions: within 1 ms on rare terms, 10.7 vs 35.2 ms and 54 vs 213 ms on a common one). A
#: larger scope tries FTS-first under its budget, where a rare term is found much faster that way.
SCOPE_FIRST_SESSIONS = 64
_PLAN_SUFFIXES = (FTS_FIRST, SCOPE_ROWS, CUE_ROWS, CUE_TEXT, CUE_BODIES, TERM_PROBE)
#: Characters read from one text cell (head and tail), so a huge row never reaches Python whole.
READ_HEAD = 4000
READ_TAIL = 1500
#: Characters of a cell (a tool's ``input_json`` or ``content``, a message or summary text) the templates search
#: for the terms (``:search``). 64 Ki holds whole every cell Obelisk writes for a call of one or two string leaves
#: (it keeps 10,000 characters of each leaf, JSON-escaped) and every text (it keeps 10,000), so only a term past
#: several leaves of a many-leaf input (a MultiEdit) is not searched; one instr() over it takes about 30 us, so 16
#: terms of 16 variants cost milliseconds per huge cell and no step of a statement runs long between two of the
#: progress handler's deadline checks.
SEARCH_CHARS = 65536
#: Characters of a whole message a template may return for Python to window (Obelisk keeps at most 10,000 of a
#: message; a larger cell in a hostile database is cut here, so it never reaches Python whole).
MESSAGE_CAP = 12000
#: Characters of one ``.cue_text`` body (a longer text is left to FTS5: ``CUE_TEXT``).
CUE_TEXT_CAP = MESSAGE_CAP

_FTS_WORDS: Mapping[str, Sequence[str]] = {
    "prior_failure.narration": FAILURE_WORDS,
    "decision.messages": DECISION_WORDS,
}
#: The Chinese and Japanese cue words, added to the FTS marker words under a word tokenizer (unicode61): a CJK
#: run is one token there, so the prefix form finds a cue that opens a run (after punctuation, a space or
#: ASCII text: "…React 19 因为表格组件…"), which lets an ASCII term find a decision or failure told in
#: Chinese or Japanese. A cue inside a run is found only by the substring plans (CJK terms).
_CJK_FTS_WORDS: Mapping[str, Sequence[str]] = {
    "prior_failure.narration": unsegmented(FAILURE_CUES),
    "decision.messages": unsegmented(DECISION_CUES),
}
#: Cue words of the substring plans (``:cues``), which run only when the request holds unsegmented terms.
_CUES: Mapping[str, Sequence[str]] = {
    "prior_failure.narration.substring": FAILURE_CUES,
    "decision.messages.substring": DECISION_CUES,
}


class RawHit(NamedTuple):
    template: Template
    row: Mapping[str, Any]

    @property
    def template_id(self) -> str:
        """The id of the template whose rows these are: a plan's rows are its template's
        (``decision.reasoning.scope_rows`` -> ``decision.reasoning``)."""
        template_id = self.template.id
        for suffix in _PLAN_SUFFIXES:
            if template_id.endswith(suffix):
                return template_id.removesuffix(suffix)
        return template_id

    @property
    def evidence_type(self) -> EvidenceType:
        kind = self.template.evidence_type
        if kind == SCOPE_KIND:  # pragma: no cover - the scope template never yields evidence rows
            raise TypeError("the scope template yields no evidence")
        return cast("EvidenceType", kind)


class RunReport(NamedTuple):
    hits: tuple[RawHit, ...]
    templates_run: tuple[str, ...]
    templates_skipped: tuple[str, ...]
    fetch_ceiling_reached: bool
    window_chars: int  # characters read around a hit in message and summary text
    substring_scan: bool = False  # unsegmented (CJK) terms were matched by substring in the scope's messages


#: ``remember(key, compute)``: a value kept for the index's state (the warm cache), or ``compute()`` itself.
Remember = Callable[[tuple[object, ...], Callable[[], Any]], Any]


class _SmallScopePlan(NamedTuple):
    """The small-scope plan of one template: its ``.cue_text`` (with the marker matcher) and ``.cue_rows``
    templates (either may be absent), its ``.scope_rows`` template, the scope and the two halves of the
    template's FTS expression (marker words, query terms). ``term_matcher`` decides the terms' half in Python
    (None: FTS5 alone does); ``tokens`` holds the request's texts as token strings by message rowid, shared by
    the templates' ``.cue_text`` reads (a text read twice is tokenized once)."""

    cue_rows: Template | None
    cue_text: Template | None
    matcher: MarkerMatcher | None
    scope_rows: Template
    in_scope: frozenset[str]
    sources: Sequence[str]
    roots: Roots
    markers: str
    terms: str
    remember: Remember
    term_matcher: MarkerMatcher | None = None
    tokens: dict[int, str] | None = None
    cue_bodies: Template | None = None
    #: Nothing is remembered (a one-shot ``query``): the texts are matched against the terms first and only
    #: those holding them against the marker words (the rows kept are the same: both halves must match).
    terms_first: bool = False


def _params(template: Template, values: Mapping[str, Any]) -> dict[str, Any]:
    return {name: values[name] for name in template.params}


def scope_sessions(snap: ReadSnapshot, scope: Template, *, sources: Sequence[str], roots: Roots,
                   since: str, until: str = NO_UPPER_BOUND) -> tuple[frozenset[str], bool]:
    """The session ids in scope and whether the scope ceiling was reached (``index.scope_state``: kept by
    real project path; ``until``: the upper time bound, none by default)."""
    found = read_scope_set(snap, scope, sources=sources, roots=roots, since=since, until=until)
    return found.ids, found.ceiling_reached


def run_templates(snap: ReadSnapshot, templates: Sequence[Template], *, scope: Template, sources: Sequence[str],
                  roots: Roots, since: str, terms: PreparedTerms, tokenizer: str,
                  fetch_limit: int, window_chars: int,
                  scope_set: tuple[frozenset[str], bool] | None = None, until: str = NO_UPPER_BOUND,
                  remember: Remember | None = None, markers_in_python: bool = False) -> RunReport:
    """``scope_set`` is the scope template's answer when the caller already ran it in this snapshot (the
    scope is computed once per request); without it the scope template runs here. ``until`` is the upper
    time bound (``NO_UPPER_BOUND``: none; a replay's moment: nothing at or after it is read). ``remember``
    keeps request-independent reads for the index's state; without it (a one-shot ``query``, the replay)
    nothing could be reused, so the small-scope plans that first read ``.cue_rows`` are not tried.
    ``markers_in_python``: the live tokenizer is the default unicode61, so a small scope's marker rows may be
    found in Python over its texts (``.cue_text``), remembered or not."""
    if not templates:
        return RunReport((), (), (), False, window_chars)
    if scope_set is None:
        scope_set = scope_sessions(snap, scope, sources=sources, roots=roots, since=since, until=until)
    in_scope, scope_ceiling = scope_set
    read = ReadWindow(window_chars)
    base: dict[str, Any] = {
        "sources": json.dumps(list(sources)),
        "roots": roots_json(roots),
        "since": since,
        "until": until,
        "scope_ids": json.dumps(sorted(in_scope)),
        "terms": json.dumps(list(match_variants(terms.instr_terms, roots.spellings))),
        "head": READ_HEAD,
        "tail": READ_TAIL,
        "search": SEARCH_CHARS,
        "cap": MESSAGE_CAP,
        "pre": read.sql_pre,
        "window": read.length,
        "limit": min(fetch_limit, FETCH_CEILING),
    }
    hits: list[RawHit] = []
    ran: list[str] = []
    skipped: list[str] = []
    ceiling = scope_ceiling
    substring_terms = unsegmented(match_variants(terms.instr_terms, roots.spellings))
    first_plans = {t.id.removesuffix(FTS_FIRST): t for t in templates if t.id.endswith(FTS_FIRST)}
    scope_plans = {t.id.removesuffix(SCOPE_ROWS): t for t in templates if t.id.endswith(SCOPE_ROWS)}
    cue_plans = {t.id.removesuffix(CUE_ROWS): t for t in templates if t.id.endswith(CUE_ROWS)}
    body_plans = {t.id.removesuffix(CUE_BODIES): t for t in templates if t.id.endswith(CUE_BODIES)}
    text_plans = {t.id.removesuffix(CUE_TEXT): t for t in templates
                  if t.id.endswith(CUE_TEXT) and t.id.removesuffix(CUE_TEXT) in body_plans} \
        if markers_in_python else {}
    probe_plans = {t.id.removesuffix(TERM_PROBE): t for t in templates if t.id.endswith(TERM_PROBE)}
    term_hits: dict[str, bool] = {}  # the terms' FTS expression -> whether the scope holds a message matching it
    terms_only = combined_expression(terms, [], tokenizer)  # the terms' half of every FTS expression
    probe_budget = SMALL_SCOPE_PROBE_BUDGET_MS if text_plans and len(in_scope) <= SMALL_SCOPE_SESSIONS \
        else TERM_PROBE_BUDGET_MS
    # Under the default tokenizer the terms' half is decided in Python too, over the texts a small scope's plans
    # read anyway: FTS5 then looks up only the rows that hold both halves (its own MATCH still decides them).
    terms_in_python = term_matcher(terms.fts_terms) if text_plans else None
    tokens: dict[int, str] = {}
    # Templates that follow up found failures (``:failures``) run last, over the failures found before them.
    ordered = sorted(templates, key=lambda t: "failures" in t.params)
    for template in ordered if in_scope else ():
        if template.id.endswith(_PLAN_SUFFIXES):
            continue  # tried right before the template it is a plan of
        values = dict(base)
        if "failures" in template.params:
            failures = _failure_keys(hits)
            if not failures:
                continue
            values["failures"] = json.dumps(failures)
        elif "cues" in template.params:
            if not substring_terms:
                continue  # only unsegmented terms need the substring plan
            values["terms"] = json.dumps(list(substring_terms))
            values["cues"] = json.dumps(list(_CUES.get(template.id, ())))
        if "fts" in template.params:
            words = [*_FTS_WORDS.get(template.id, ())]
            if tokenizer != "trigram":
                words += _CJK_FTS_WORDS.get(template.id, ())
            expression = combined_expression(terms, words, tokenizer)
            if expression is None:
                skipped.append(template.key)
                continue
            values["fts"] = expression
            probe = probe_plans.get(template.id)
            if probe is not None and terms_only is not None and \
                    not _has_term_hit(snap, probe, {**values, "fts": terms_only, "limit": 1}, term_hits,
                                     sources=sources, roots=roots, in_scope=in_scope, budget_ms=probe_budget):
                ran.append(probe.key)  # answered by its term probe: no message of the scope matches the terms
                continue
        small = direct = None
        if template.id in scope_plans and not words and len(in_scope) <= SMALL_SCOPE_SESSIONS:
            direct = scope_plans[template.id]  # no marker half: the plan reads the scope's own messages
        elif template.id in scope_plans and words and len(in_scope) <= SMALL_SCOPE_SESSIONS and \
                terms_only is not None:
            matcher = marker_matcher(words) if template.id in text_plans else None
            cue_text = text_plans.get(template.id) if matcher is not None else None
            cue_rows = cue_plans.get(template.id) if remember is not None else None
            if cue_text is not None or cue_rows is not None:
                small = _SmallScopePlan(cue_rows, cue_text, matcher, scope_plans[template.id], in_scope, sources,
                                        roots, f"({marker_expression(words, tokenizer)})", terms_only,
                                        remember or _compute, term_matcher=terms_in_python, tokens=tokens,
                                        cue_bodies=body_plans.get(template.id), terms_first=remember is None)
        fts_first = first_plans.get(template.id) if len(in_scope) > SCOPE_FIRST_SESSIONS else None
        if "after_rowid" in template.params:
            used, rows = template, _cue_rows_paged(snap, template, values)
        else:
            used, rows = _run_with_plans(snap, template, fts_first, values, small=small, direct=direct)
        ran.append(used.key)
        ceiling = ceiling or len(rows) >= values["limit"]
        names = snap.last_columns
        for row in rows:
            hit = RawHit(used, dict(zip(names, row, strict=True)))
            check_scope(hit, sources, roots, in_scope)
            hits.append(hit)
    return RunReport(tuple(hits), tuple(ran), tuple(skipped), ceiling, window_chars,
                     substring_scan=any(t.id in _CUES for t in ran_templates(templates, ran)))


def substring_scan_planned(templates: Sequence[Template], terms: PreparedTerms, roots: Roots) -> bool:
    """Whether :func:`run_templates` will scan the scope's messages by substring: the request holds
    unsegmented (CJK) terms and a substring plan is among the runnable templates."""
    return bool(unsegmented(match_variants(terms.instr_terms, roots.spellings))) and any(
        t.id in _CUES for t in templates)


def ran_templates(templates: Sequence[Template], ran: Sequence[str]) -> list[Template]:
    return [t for t in templates if t.key in ran]


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


def _run_with_plans(snap: ReadSnapshot, template: Template, fts_first: Template | None,
                    values: Mapping[str, Any], *, small: _SmallScopePlan | None = None,
                    direct: Template | None = None) -> tuple[Template, list[tuple[Any, ...]]]:
    """Try the small-scope plan (``small`` for a template with marker words, ``direct`` for one without, under
    ``SCOPE_ROWS_BUDGET_MS``), else the FTS-first plan under a budget (fast for rare terms; not passed for a
    scope of at most ``SCOPE_FIRST_SESSIONS`` sessions), else the scope-set plan. A small-scope plan's answer
    stands in only when it holds fewer than ``:limit`` rows (it has no bm25, so a cut would differ).

    FTS-first walks every match of the terms in the whole index; the scope-set plan first lists the scope's
    messages and costs time proportional to the scope. Which is faster depends on how common the terms
    are, which the index does not tell a read-only reader: the budget decides, once per request. Both expand
    every marker-word prefix over the whole index; the small-scope plan (:func:`_small_scope_rows`) does not.
    """
    if small is not None:
        found = _small_scope_rows(snap, small, values)
        if found is not None:
            return small.scope_rows, found
    if direct is not None:
        try:
            rows = snap.rows(direct.sql, _params(direct, values), budget_ms=SCOPE_ROWS_BUDGET_MS)
        except StatementBudgetExceeded:
            pass
        else:
            if len(rows) < values["limit"]:
                return direct, rows
    if fts_first is not None:
        try:
            return fts_first, snap.rows(fts_first.sql, _params(fts_first, values), budget_ms=FTS_FIRST_BUDGET_MS)
        except StatementBudgetExceeded:
            pass
    return template, snap.rows(template.sql, _params(template, values))


def _has_term_hit(snap: ReadSnapshot, probe: Template, values: Mapping[str, Any], known: dict[str, bool], *,
                  sources: Sequence[str], roots: Roots, in_scope: frozenset[str],
                  budget_ms: float = TERM_PROBE_BUDGET_MS) -> bool:
    """Whether a message of the scope matches the terms alone (``values["fts"]``), asked once per expression in a
    request (``known``); True when the probe's budget ran out (the templates then run and decide)."""
    expression = str(values["fts"])
    if expression not in known:
        try:
            rows = snap.rows(probe.sql, _params(probe, values), budget_ms=budget_ms)
        except StatementBudgetExceeded:
            known[expression] = True
        else:
            names = snap.last_columns
            for row in rows:
                check_scope(RawHit(probe, dict(zip(names, row, strict=True))), sources, roots, in_scope)
            known[expression] = bool(rows)
    return known[expression]


#: Rows of ``prior_failure.resolution_messages`` read per page; a page holds at most this many message texts
#: of ``MESSAGE_CAP`` characters.
RESOLUTION_PAGE = 500
_KEY_COLUMNS = ("order_key", "message_rowid")  # the page key's columns, not part of the row handed on
_MIN_ROWID = -(2**63)


def _cue_rows_paged(snap: ReadSnapshot, template: Template, values: Mapping[str, Any]) -> list[tuple[Any, ...]]:
    """The rows of ``prior_failure.resolution_messages``: every user message and each agent message holding a
    resolution cue (:func:`terms.has_resolution_cue`), in the template's order, at most ``:limit``.

    The template lists the candidates in (timestamp, uuid, rowid) order, a page at a time after the last key, so
    the cue test runs in Python, once per message, and no more pages are read than the answer needs.
    ``snap.last_columns`` are left as a template's: the key columns are dropped from every row."""
    limit = int(values["limit"])
    kept: list[tuple[Any, ...]] = []
    after: tuple[Any, Any, Any] = ("", "", _MIN_ROWID)
    names: tuple[str, ...] = ()
    while True:
        page = snap.rows(template.sql, _params(template, {**values, "limit": RESOLUTION_PAGE, "after_ts": after[0],
                                                          "after_key": after[1], "after_rowid": after[2]}))
        names = snap.last_columns or names
        if not page:
            break
        at = {name: i for i, name in enumerate(names)}
        role, text, stamp, key, rowid = (at["role"], at["text"], at["observed_at"], at["order_key"],
                                         at["message_rowid"])
        for row in page:
            if row[role] == "user" or has_resolution_cue(row[text]):
                kept.append(row)
                if len(kept) >= limit:
                    break
        if len(kept) >= limit or len(page) < RESOLUTION_PAGE:
            break
        last = page[-1]
        after = (last[stamp], last[key], last[rowid])
    keep = [i for i, name in enumerate(names) if name not in _KEY_COLUMNS]
    snap.last_columns = tuple(names[i] for i in keep)
    return [tuple(row[i] for i in keep) for row in kept]


def _small_scope_rows(snap: ReadSnapshot, small: _SmallScopePlan,
                      values: Mapping[str, Any]) -> list[tuple[Any, ...]] | None:
    """The template's rows by its small-scope plan, or None when that plan cannot stand in for it.

    The scope's messages holding a marker word are read once per index state and scope set (``remember``);
    then only those rows are matched against the query terms. The rows are exactly the template's (a row
    matches ``(terms) AND (markers)`` when it matches both halves); without bm25 their SQL order may differ,
    so the answer is used only when it has fewer than ``:limit`` rows: then no row was cut, and the items'
    order is decided after the SQL (``bounding.fold``) by score, kind, time and refs alone.
    """
    scope_key = (small.markers, values["sources"], values["roots"], values["until"], tuple(sorted(small.in_scope)))
    cue_rows: tuple[int, ...] | None = None
    if small.cue_text is not None:
        text_values = {**values, "limit": CUE_TEXT_ROWS}
        cue_rows = small.remember(("cue_text", small.cue_text.digest, *scope_key),
                                  lambda: _cue_rowids_from_text(snap, small, text_values))
    if cue_rows is None and small.cue_rows is not None:
        cue_values = {**values, "fts": small.markers, "limit": CUE_ROWS_CEILING}
        cue_rows = small.remember(("cue_rows", small.cue_rows.digest, *scope_key),
                                  lambda: _cue_rowids(snap, small, cue_values))
    if cue_rows is None:
        return None  # too many, or not decidable here: the scope is not small
    rows = snap.rows(small.scope_rows.sql,
                     _params(small.scope_rows, {**values, "rows": json.dumps(list(_holding_terms(small, cue_rows))),
                                                "fts": small.terms}))
    return rows if len(rows) < values["limit"] else None


def _holding_terms(small: _SmallScopePlan, rowids: tuple[int, ...]) -> tuple[int, ...]:
    """The marker rows that also hold the query terms, as far as Python can tell from the texts this request
    tokenized (all of them, or the rows are passed on as they are: remembered rowids come without their texts).
    Exact under the default tokenizer (``markers``), and the ``.scope_rows`` plan matches them in FTS5 again."""
    tokens, matcher = small.tokens, small.term_matcher
    if matcher is None or tokens is None or any(rowid not in tokens for rowid in rowids):
        return rowids
    held = matcher.held_in([tokens[rowid] for rowid in rowids])
    return tuple(rowid for rowid, hit in zip(rowids, held, strict=True) if hit)


def _compute(_key: tuple[object, ...], compute: Callable[[], Any]) -> Any:
    """``Remember`` that keeps nothing (a one-shot ``query``)."""
    return compute()


def _cue_rowids_from_text(snap: ReadSnapshot, small: _SmallScopePlan,
                          values: Mapping[str, Any]) -> tuple[int, ...] | None:
    """The rowids ``.cue_rows`` would list, from the scope's texts and the marker matcher: ``.cue_text`` lists the
    messages and their text lengths, ``.cue_bodies`` reads the texts not yet tokenized in this request. None
    when the scope has ``:limit`` such messages or more, more than ``CUE_TEXT_CHARS`` characters in all, or a
    text only FTS5 can judge (longer than ``CUE_TEXT_CAP``, or not text)."""
    template, bodies, matcher = small.cue_text, small.cue_bodies, small.matcher
    if template is None or bodies is None or matcher is None:
        return None
    at, listed = _checked_rows(snap, template, small, values)
    if len(listed) >= int(values["limit"]):
        return None
    if not listed:
        return ()  # the scope holds no such message (say, only the user's prompt): no row holds a marker word
    rowid, length = at["message_rowid"], at["body_chars"]
    chars = 0
    for row in listed:
        if type(row[rowid]) is not int or (row[length] is not None and type(row[length]) is not int):
            return None  # a rowid and a text's length are integers: FTS5 judges a database that says otherwise
        if row[length] is not None and row[length] > CUE_TEXT_CAP:
            return None  # longer than the matcher takes: FTS5 judges it
        chars += row[length] or 0
    if chars > CUE_TEXT_CHARS:
        return None  # more text than the matcher takes on: FTS5 judges the scope
    tokens = {} if small.tokens is None else small.tokens  # texts the request already tokenized, by rowid
    wanted = [row[rowid] for row in listed if row[rowid] not in tokens and row[length] is not None]
    try:
        if wanted:
            got, read = _checked_rows(snap, bodies, small, {**values, "rows": json.dumps(wanted),
                                                            "cap": CUE_TEXT_CAP, "limit": len(wanted) + 1})
            texts = {row[got["message_rowid"]]: row[got["body"]] for row in read}
            if any(texts.get(key) is None for key in wanted):
                return None  # a listed text not read back whole: FTS5 judges the scope
            for key in wanted:
                tokens[key] = token_string(matcher.document, texts[key])
        empty = token_string(matcher.document, None)  # a NULL text holds no token
        joined = [tokens[row[rowid]] if row[length] is not None else empty for row in listed]
    except UndecidableText:
        return None
    if small.terms_first and small.term_matcher is not None:
        # Only these rows are looked up afterwards (``_holding_terms``): the markers need not be found elsewhere.
        listed = [row for row, hit in zip(listed, small.term_matcher.held_in(joined), strict=True) if hit]
        joined = [tokens[row[rowid]] if row[length] is not None else empty for row in listed]
    held = matcher.held_in(joined)
    return tuple(row[rowid] for row, hit in zip(listed, held, strict=True) if hit)


def _checked_rows(snap: ReadSnapshot, template: Template, small: _SmallScopePlan,
                  values: Mapping[str, Any]) -> tuple[dict[str, int], list[tuple[Any, ...]]]:
    """The column positions and rows of a not-evidence read of a small scope, each row checked against the scope
    as every row is (once per distinct value of the columns the check reads: the rows of one session share
    theirs). The positions are known only when there is a row (a statement that returned none leaves no column
    names): callers read them only then."""
    found = snap.rows(template.sql, _params(template, values))
    names = snap.last_columns
    scope_columns = [i for i, name in enumerate(names) if name in SCOPE_COLUMNS]
    if found and scope_columns:
        key_of = itemgetter(*scope_columns)
        for row in {key_of(row): row for row in found}.values():  # a row of each distinct value
            check_scope(RawHit(template, dict(zip(names, row, strict=True))), small.sources, small.roots,
                        small.in_scope)
    else:
        for row in found:
            check_scope(RawHit(template, dict(zip(names, row, strict=True))), small.sources, small.roots,
                        small.in_scope)
    return {name: i for i, name in enumerate(names)}, found


def _cue_rowids(snap: ReadSnapshot, small: _SmallScopePlan, values: Mapping[str, Any]) -> tuple[int, ...] | None:
    if small.cue_rows is None:
        return None
    found = snap.rows(small.cue_rows.sql, _params(small.cue_rows, values))
    if len(found) >= CUE_ROWS_CEILING:
        return None
    names = snap.last_columns
    rowids = []
    for row in found:
        record = dict(zip(names, row, strict=True))
        check_scope(RawHit(small.cue_rows, record), small.sources, small.roots, small.in_scope)  # as every row
        rowids.append(int(record["message_rowid"]))
    return tuple(rowids)


#: Session ids of rows joined in from other tables (a message, a tool result), where a template projects them.
JOINED_SESSION_COLUMNS = ("msg_session_id", "result_session_id")
#: Every column :func:`check_scope` reads: a row's verdict is a function of these alone.
SCOPE_COLUMNS = frozenset({"session_id", "session_source", "session_path", "msg_cwd", *JOINED_SESSION_COLUMNS})


def check_scope(hit: RawHit, sources: Sequence[str], roots: Roots, in_scope: frozenset[str]) -> None:
    """Fail the whole result when a row lies outside the requested scope: never filter it away.

    A row is in scope when its session is in the scope set, its source is bound, its session's project path
    lies inside a root by real path, its message's recorded cwd (where there is one) does too, and every row
    joined into it (message, tool result) carries the same session id: a NULL or different one fails, as no
    FOREIGN KEY enforces it.
    """
    row = hit.row
    session = row.get("session_id")
    if session is None or session not in in_scope:
        raise ScopeViolation
    if row.get("session_source") not in sources:
        raise ScopeViolation
    if not roots.contains(row.get("session_path")):
        raise ScopeViolation
    cwd = row.get("msg_cwd")
    if cwd is not None and not roots.contains(cwd):
        raise ScopeViolation
    for joined in JOINED_SESSION_COLUMNS:
        if joined in row and row[joined] != session:
            raise ScopeViolation
