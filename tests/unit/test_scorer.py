"""The evaluation's scorer and verdict (``tools.devkit.evaluation``) on hand-made answers: a fact counts only
when its session, evidence type and key phrase are shown; false items on a negative are counted; the thresholds
decide the verdict (the corpus, the tool and the recall gate: tests/integration/test_evaluate.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tools.devkit.evaluation.report import Thresholds, passed
from tools.devkit.evaluation.runner import score
from tools.devkit.evaluation.situation import EvalSet, Fact, ScopeSpec, Situation


def _sit(**kw: Any) -> Situation:
    base: dict[str, Any] = {"id": "s", "source": "claude", "repository": "r", "evidence_types": ("prior_failure",),
                            "terms": ("t",)}
    return Situation(**{**base, **kw})


def _evalset() -> EvalSet:
    return EvalSet("t", Path("/nonexistent"), [ScopeSpec("claude", "r", ("/r",))],
                   {"S1": ("claude", "r"), "S2": ("codex", "r")})


def _env(*items: dict[str, Any]) -> dict[str, Any]:
    return {"outcome": "ok", "result": {"items": list(items)}}


def test_scorer_needs_session_type_and_phrase() -> None:
    fact = Fact("S1", ("prior_failure",), "Boom  Error", "failure")
    sit = _sit(facts=(fact,))
    hit = {"session_ref": "S1", "evidence_type": "prior_failure", "snippet": "x\nBoom Error\ny"}
    assert score(sit, _evalset(), _env(hit), 1.0).found == [True]  # whitespace-insensitive
    assert score(sit, _evalset(), _env({**hit, "evidence_type": "decision"}), 1.0).found == [False]
    assert score(sit, _evalset(), _env({**hit, "snippet": "boom error"}), 1.0).found == [False]
    other = score(sit, _evalset(), _env({**hit, "session_ref": "S2"}), 1.0)
    assert other.found == [False]
    assert other.scope_violations == 1


def test_scorer_reads_markers_order_and_repeats() -> None:
    """A fact may ask for a marker in the same item, its absence, the lead among its types, or any of its sessions."""
    marked = Fact("S1", ("decision",), "use X", "d", with_phrases=("superseded_by",))
    item = {"session_ref": "S1", "evidence_type": "decision", "snippet": "[superseded_by m 2026-01-02] use X"}
    assert score(_sit(facts=(marked,)), _evalset(), _env(item), 1.0).found == [True]
    assert score(_sit(facts=(marked,)), _evalset(), _env({**item, "snippet": "use X"}), 1.0).found == [False]
    clean = Fact("S1", ("decision",), "use X", "d", without_phrases=("superseded_by",))
    assert score(_sit(facts=(clean,)), _evalset(), _env(item), 1.0).found == [False]
    leads = Fact("S1", ("decision",), "use Y", "d", leads=True)
    current = {"session_ref": "S1", "evidence_type": "decision", "snippet": "use Y"}
    failure = {"session_ref": "S1", "evidence_type": "prior_failure", "snippet": "boom"}
    assert score(_sit(facts=(leads,)), _evalset(), _env(failure, current, item), 1.0).found == [True]
    assert score(_sit(facts=(leads,)), _evalset(), _env(item, current), 1.0).found == [False]
    anywhere = Fact("S1", ("prior_failure",), "boom", "f", or_sessions=("S3",))
    assert score(_sit(facts=(anywhere,)), _evalset(), _env({**failure, "session_ref": "S3"}), 1.0).found == [True]
    assert score(_sit(facts=(anywhere,)), _evalset(), _env({**failure, "session_ref": "S2"}), 1.0).found == [False]


def test_situation_limits_reach_the_request() -> None:
    import json

    from tools.devkit.evaluation.runner import Limits, _request

    scope = ScopeSpec("claude", "r", ("/r",))
    tight = json.loads(_request(_sit(max_items=3, max_total_chars=900), scope, Limits()))["limits"]
    assert (tight["max_items"], tight["max_total_chars"]) == (3, 900)
    assert json.loads(_request(_sit(), scope, Limits()))["limits"] == Limits().as_json()


def test_scorer_counts_false_items_on_negatives() -> None:
    item = {"session_ref": "S1", "evidence_type": "prior_failure", "snippet": "unrelated"}
    assert score(_sit(negative=True), _evalset(), _env(item, item), 1.0).false_items == 2
    phrased = _sit(negative=True, forbidden_phrase="secret phrase")
    assert score(phrased, _evalset(), _env(item), 1.0).false_items == 0
    assert score(phrased, _evalset(), _env({**item, "snippet": "a secret  phrase"}), 1.0).false_items == 1


def test_verdict_thresholds() -> None:
    fig = {"recall": 0.95, "false_items": 0, "scope_violations": 0}
    assert passed(fig, Thresholds())
    assert not passed({**fig, "recall": 0.949}, Thresholds())
    assert not passed({**fig, "false_items": 1}, Thresholds())
    assert passed({**fig, "false_items": 1}, Thresholds(max_false_items=1))
    assert not passed({**fig, "scope_violations": 1}, Thresholds(min_recall=0.0, max_false_items=99))
