"""The planner chooses each template's steps from its declared plans and the sizes measured this request.

Pure functions over the shipped templates: which steps, in which order, under which budget, at the boundaries
of the scope sizes. tests/integration/test_retrieval.py shows on real databases that every plan answers what
its template answers.
"""

from __future__ import annotations

import pytest
from obelisk_session_evidence.retrieval import planner
from obelisk_session_evidence.retrieval.planner import BUDGETS, Plans, choose, evidence_plans, probe_budget, texts_ready
from obelisk_session_evidence.templates.catalog import PLAN_KINDS, load_templates

TEMPLATES = load_templates()
PLANS = {p.template.id: p for p in evidence_plans(TEMPLATES)}
SMALL, LARGE = planner.SMALL_SCOPE_SESSIONS, planner.SMALL_SCOPE_SESSIONS + 1


def _steps(template_id: str, **sizes: object) -> list[tuple[str | None, str]]:
    given: dict[str, object] = {"sessions": SMALL, "marker_words": True, "terms_alone": True, "texts": True,
                                "remembered": True, "probe_ms": 2.0, **sizes}
    return [(s.kind, s.template.id) for s in choose(PLANS[template_id], **given)]  # type: ignore[arg-type]


def test_the_plans_of_each_template_are_those_its_directory_declares() -> None:
    assert set(PLANS["prior_failure.narration"].of_kind) == set(PLAN_KINDS)
    assert set(PLANS["decision.messages"].of_kind) == set(PLAN_KINDS)
    assert set(PLANS["decision.reasoning"].of_kind) == {"scope_rows", "term_probe"}
    assert PLANS["prior_failure.tool_results"].of_kind == {}
    assert all(t.plan_of == p.template.id for p in PLANS.values() for t in p.of_kind.values())
    # Templates that follow up found failures run last, the rest in the order given.
    order = [p.template.id for p in evidence_plans(TEMPLATES)]
    follow_ups = [t.id for t in TEMPLATES if t.plan is None and "failures" in t.params]
    assert follow_ups and order[-len(follow_ups):] == follow_ups
    assert [i for i in order if i not in follow_ups] == \
        [t.id for t in TEMPLATES if t.plan is None and t.id not in follow_ups and t.evidence_type != "scope"]


def test_a_small_scope_reads_its_own_marker_messages() -> None:
    n = "prior_failure.narration"
    assert _steps(n) == [("term_probe", f"{n}.term_probe"), ("scope_rows", f"{n}.scope_rows"), (None, n)]
    step = choose(PLANS[n], sessions=SMALL, marker_words=True, terms_alone=True, texts=True, remembered=True,
                  probe_ms=2.0)[1]
    assert step.budget_ms is None  # the rows are listed first: at most CUE_ROWS_CEILING lookups by rowid
    assert step.texts is not None and [t.plan for t in step.texts] == ["cue_text", "cue_bodies"]
    assert step.cue_rows is not None and step.cue_rows.plan == "cue_rows"


@pytest.mark.parametrize(("texts", "remembered", "listed"), [
    (True, False, ("cue_text", None)), (False, True, (None, "cue_rows")), (False, False, None)])
def test_a_small_scope_lists_its_marker_messages_from_texts_or_from_what_is_remembered(
        texts: bool, remembered: bool, listed: tuple[str | None, str | None] | None) -> None:
    steps = choose(PLANS["decision.messages"], sessions=1, marker_words=True, terms_alone=True, texts=texts,
                   remembered=remembered, probe_ms=5.0)
    small = [s for s in steps if s.kind == "scope_rows"]
    if listed is None:
        assert not small  # nothing lists the marker messages: the template itself reads the scope
        return
    assert (small[0].texts[0].plan if small[0].texts else None, small[0].cue_rows.plan if small[0].cue_rows
            else None) == listed


def test_a_template_without_marker_words_reads_a_small_scope_within_a_budget() -> None:
    r = "decision.reasoning"
    steps = choose(PLANS[r], sessions=SMALL, marker_words=False, terms_alone=True, texts=False, remembered=False,
                   probe_ms=5.0)
    assert [(s.kind, s.budget_ms) for s in steps] == [("term_probe", 5.0), ("scope_rows", BUDGETS["scope_rows"].ms),
                                                      (None, None)]


def test_a_larger_scope_tries_fts_first_within_its_budget() -> None:
    n = "prior_failure.narration"
    assert _steps(n, sessions=LARGE) == [("term_probe", f"{n}.term_probe"), ("fts_first", f"{n}.fts_first"),
                                         (None, n)]
    steps = choose(PLANS[n], sessions=LARGE, marker_words=True, terms_alone=True, texts=True, remembered=True,
                   probe_ms=5.0)
    assert steps[1].budget_ms == BUDGETS["fts_first"].ms
    assert planner.SCOPE_FIRST_SESSIONS == planner.SMALL_SCOPE_SESSIONS  # no size gets neither plan


def test_terms_that_cannot_be_asked_alone_leave_the_template_to_itself() -> None:
    n = "prior_failure.narration"
    assert _steps(n, terms_alone=False) == [(None, n)]
    assert _steps(n, sessions=LARGE, terms_alone=False) == [("fts_first", f"{n}.fts_first"), (None, n)]


def test_a_template_without_plans_runs_itself() -> None:
    for sessions in (0, SMALL, LARGE, 10**6):
        assert _steps("prior_failure.tool_results", sessions=sessions) == [(None, "prior_failure.tool_results")]


def test_the_term_probe_is_worth_less_beside_a_small_scopes_texts() -> None:
    probe = BUDGETS["term_probe"]
    assert probe.beside_texts_ms is not None and probe.beside_texts_ms < probe.ms
    assert probe_budget(SMALL, texts=True) == probe.beside_texts_ms
    assert probe_budget(LARGE, texts=True) == probe.ms
    assert probe_budget(SMALL, texts=False) == probe.ms
    plans = evidence_plans(TEMPLATES)
    assert texts_ready(plans, markers_in_python=True)
    assert not texts_ready(plans, markers_in_python=False)
    assert not texts_ready([Plans(p.template, {}) for p in plans], markers_in_python=True)


def test_every_budget_is_a_plan_kinds() -> None:
    assert set(BUDGETS) <= set(PLAN_KINDS)
    declared = {t.plan for t in TEMPLATES if t.plan is not None}
    assert declared == set(PLAN_KINDS)  # every kind the planner knows is declared by some template
