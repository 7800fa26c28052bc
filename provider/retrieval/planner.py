"""Choose how each evidence template is read: from the plans declared for it and the sizes measured this request.

A template may have plans (``-- plan_of:`` and ``-- plan:`` in their headers): statements that return its rows
another way, or show it has none, at a cost that follows the scope or the terms instead of the whole index
(``sql_templates/README.md`` describes each kind). For each evidence template the planner lists the steps to try
in order; the engine runs them, and a step that declines (past its budget, or a measured count past its
ceiling) hands over to the next. The template itself ends every list. Which plan is fastest depends on how
common the terms are, which a read-only reader cannot ask the index: the measured sizes and the budgets decide.
"""

from collections.abc import Mapping, Sequence
from typing import NamedTuple

from ..templates.catalog import SCOPE_KIND, PlanKind, Template


class Budget(NamedTuple):
    """Milliseconds one statement of a plan may run before the next step runs: ``ms``, or ``beside_texts_ms``
    while a small scope's texts stand ready to be read (``cue_text``: a few ms whatever the terms)."""

    ms: float
    beside_texts_ms: float | None = None


#: The budget of each plan kind that runs under one; the rest run under the request's deadline alone.
BUDGETS: dict[PlanKind, Budget] = {
    "term_probe": Budget(5.0, beside_texts_ms=2.0),
    "scope_rows": Budget(3.0),  # without marker words: a scope of few sessions can still hold many messages
    "fts_first": Budget(25.0),
}
#: Sessions a scope holds at most for its own messages to be read (``scope_rows``, ``cue_text``, ``cue_rows``).
SMALL_SCOPE_SESSIONS = 64
#: Sessions a scope holds at most to skip ``fts_first``: its own messages are few, so the template costs about
#: what ``fts_first`` costs on a rare term and far less on a common one.
SCOPE_FIRST_SESSIONS = 64
#: Rows ``cue_rows`` lists at most; a scope with more is not small.
CUE_ROWS_CEILING = 4000
#: Messages ``cue_text`` lists at most, characters each of their texts holds at most (a longer text is left to
#: FTS5), and characters all of them hold at most (a bound on the tokenizing); a scope with more is not small.
CUE_TEXT_ROWS = 4000
CUE_TEXT_CAP = 12000
CUE_TEXT_CHARS = 1_000_000


class Plans(NamedTuple):
    """An evidence template and the plans declared for it, by kind."""

    template: Template
    of_kind: Mapping[PlanKind, Template]


class Step(NamedTuple):
    """One way to read a template's rows: ``kind`` (None: the template itself) by ``template``, within
    ``budget_ms`` (None: the request's deadline). A ``scope_rows`` step of a template with marker words first
    lists the scope's messages holding one: from their texts (``texts``: ``cue_text``, then ``cue_bodies``) or,
    when they cannot tell, by FTS5 (``cue_rows``)."""

    kind: PlanKind | None
    template: Template
    budget_ms: float | None = None
    texts: tuple[Template, Template] | None = None
    cue_rows: Template | None = None


def evidence_plans(templates: Sequence[Template]) -> list[Plans]:
    """The evidence templates among ``templates``, each with its plans, in the order they run: those that follow
    up found failures (``:failures``) last, the rest as given."""
    declared: dict[str, dict[PlanKind, Template]] = {}
    for t in templates:
        if t.plan_of is not None and t.plan is not None:
            declared.setdefault(t.plan_of, {})[t.plan] = t
    own = sorted((t for t in templates if t.plan is None and t.evidence_type != SCOPE_KIND),
                 key=lambda t: "failures" in t.params)
    return [Plans(t, declared.get(t.id, {})) for t in own]


def texts_ready(plans: Sequence[Plans], *, markers_in_python: bool) -> bool:
    """Whether a template's marker words may be found in a small scope's texts this request (the live tokenizer
    is the default one, and some template declares ``cue_text`` and ``cue_bodies``)."""
    return markers_in_python and any({"cue_text", "cue_bodies"} <= p.of_kind.keys() for p in plans)


def probe_budget(sessions: int, *, texts: bool) -> float:
    """The term probe's budget (``texts``: :func:`texts_ready`)."""
    budget = BUDGETS["term_probe"]
    if texts and sessions <= SMALL_SCOPE_SESSIONS and budget.beside_texts_ms is not None:
        return budget.beside_texts_ms
    return budget.ms


def choose(plans: Plans, *, sessions: int, marker_words: bool, terms_alone: bool, texts: bool, remembered: bool,
           probe_ms: float) -> tuple[Step, ...]:
    """The steps that read ``plans.template`` this request, in order.

    ``sessions``: the scope's size; ``marker_words``: the template pairs the terms with marker words;
    ``terms_alone``: the terms' half of its FTS expression can be asked alone; ``texts``: :func:`texts_ready`;
    ``remembered``: a warm process keeps what ``cue_rows`` lists (it pays only then); ``probe_ms``: the term
    probe's budget.
    """
    kinds = plans.of_kind
    steps: list[Step] = []
    if "term_probe" in kinds and terms_alone:
        steps.append(Step("term_probe", kinds["term_probe"], probe_ms))
    if "scope_rows" in kinds and sessions <= SMALL_SCOPE_SESSIONS:
        if not marker_words:
            steps.append(Step("scope_rows", kinds["scope_rows"], BUDGETS["scope_rows"].ms))
        elif terms_alone:
            listed = (kinds["cue_text"], kinds["cue_bodies"]) if texts and \
                {"cue_text", "cue_bodies"} <= kinds.keys() else None
            cue_rows = kinds.get("cue_rows") if remembered else None
            if listed is not None or cue_rows is not None:
                steps.append(Step("scope_rows", kinds["scope_rows"], None, listed, cue_rows))
    if "fts_first" in kinds and sessions > SCOPE_FIRST_SESSIONS:
        steps.append(Step("fts_first", kinds["fts_first"], BUDGETS["fts_first"].ms))
    steps.append(Step(None, plans.template))
    return tuple(steps)
