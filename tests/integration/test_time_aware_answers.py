"""Issue 32 through ``service.answer``: the evaluation corpus's time-aware situations (seed 11), answered as
LoopX asks them, over the built index and transcript homes.

Every ``time-*`` situation finds each of its facts (a marker such as ``superseded_by`` or ``regression`` in the
same item, a current decision that leads, one of a flood's sessions) and its negatives stay empty; and a few
answers are read as a user reads them: what happened after a regression's failure is the agent's stated cause
and the edit, placed before the bare passing run; a user's grant is the resolution of a permission failure; a
Korean term with a particle attached is found.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tools.devkit.corpus import Corpus, build_corpus
from tools.devkit.evaluation import runner
from tools.devkit.evaluation.situation import EvalSet


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    return build_corpus(tmp_path_factory.mktemp("time") / "corpus", seed=11)


@pytest.fixture(scope="module")
def ask(corpus: Corpus, tmp_path_factory: pytest.TempPathFactory) -> Any:
    from obelisk_session_evidence.digest import ensure_key
    from obelisk_session_evidence.service import answer

    evalset = corpus.evalset
    work = tmp_path_factory.mktemp("time-ask")
    db = work / "index.sqlite"
    shutil.copyfile(evalset.db_path, db)
    config = work / "config.json"
    config.write_text(json.dumps(runner._config(evalset.scopes)), encoding="utf-8")
    ensure_key(config)

    def one(situation_id: str) -> list[dict[str, Any]]:
        sit = next(s for s in evalset.situations if s.id == situation_id)
        raw = runner._request(sit, evalset.scope(sit.source, sit.repository), runner.Limits())
        envelope = answer(raw, db_path=db, config_path=config).envelope
        assert envelope["outcome"] == "ok", envelope
        items: list[dict[str, Any]] = envelope["result"]["items"]
        return items

    return one


def test_every_time_aware_situation_is_answered_in_full(corpus: Corpus, tmp_path: Path) -> None:
    evalset = corpus.evalset
    timed = EvalSet(evalset.name, evalset.db_path, evalset.scopes, evalset.sessions,
                    [s for s in evalset.situations if s.id.startswith("time-")])
    assert len(timed.situations) >= 30 and any(s.negative for s in timed.situations)
    outcomes = runner.run_evalset(timed)
    missed = {o.situation.id: [f.kind for f in o.missing] for o in outcomes if o.missing}
    false = {o.situation.id: o.false_items for o in outcomes if o.false_items}
    assert not missed and not false, (missed, false)
    assert all(o.scope_violations == 0 for o in outcomes)


def test_the_story_after_a_regression_names_its_cause_before_the_passing_run(ask: Any) -> None:
    items = ask("time-regression-explanation-before-success")
    snippets = [i["snippet"] for i in items]
    failure = next(n for n, s in enumerate(snippets) if "[regression:" in s)
    after = [s for s in snippets[failure + 1:] if s.startswith("[what happened next]")]
    assert after, snippets
    # The first thing after the failure explains or fixes it: never a bare passing run of the same command.
    assert not after[0].startswith("[what happened next] [ok]"), snippets
    assert any("MINOR_UNITS.get(currency, 2)" in s for s in after), snippets


def test_a_users_grant_resolves_a_permission_failure(ask: Any) -> None:
    snippets = [i["snippet"] for i in ask("time-user-grant-role")]
    denied = next(n for n, s in enumerate(snippets) if "permission denied for table ledger_entries" in s)
    assert any(s.startswith("[what happened next] [user] ") and "backfill role has INSERT" in s
               for s in snippets[denied + 1:]), snippets


def test_a_superseded_decision_follows_the_current_one(ask: Any) -> None:
    decisions = [i["snippet"] for i in ask("time-superseded-decision-claude") if i["evidence_type"] == "decision"]
    assert "superseded_by" not in decisions[0], decisions
    assert any(s.startswith("[superseded_by ") for s in decisions[1:]), decisions


def test_a_korean_term_is_found_with_its_particle(ask: Any) -> None:
    assert any("결제화면에서" in i["snippet"] for i in ask("time-ko-term-with-particle"))
