"""The evaluation corpus's answers are identical before and after the cost work (issue 13).

``tests/golden/corpus_answers.json`` holds every situation's answer as the provider at evidence2 fbee4e2 gave
it: main cf1f75b plus the evidence work (issue 11) and none of issue 13's commits, so the answers are those of
the evidence the provider gives today, read the way it was read before the cost work. The sets are the corpus
at seeds 11, 12 and 13 and real-obelisk-formats, produced by ``tools/corpus_answers.py`` run with that
install's python. This test recomputes every answer with this tree, normalised by the same function (which
drops only what varies between two runs of the same code, plus the freshness counters issue 13 defines
differently: listed in ``tools/corpus_answers.py``), and compares them exactly, situation by situation.
Issue 32 (evidence that knows what came after) changed the answers listed in ``ISSUE_32_CHANGES``, each for the
reason its test states, and added the corpus's ``time-*`` situations.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.realobelisk import shared_dir

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "golden" / "corpus_answers.json"


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("corpus_answers", REPO / "tools" / "corpus_answers.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("corpus_answers", module)
    spec.loader.exec_module(module)
    return module


def _golden() -> dict[str, Any]:
    document: dict[str, Any] = json.loads(GOLDEN.read_text(encoding="utf-8"))
    return document


def _compare(name: str, now: dict[str, dict[str, Any]]) -> None:
    before = _golden()["sets"][name]
    assert sorted(now) == sorted(before), f"{name}: the situations differ"
    differing = [sid for sid in sorted(before) if now[sid] != before[sid]]
    assert not differing, (f"{name}: {len(differing)} answers differ from the golden file's, first "
                           f"{differing[0]}:\nbefore {json.dumps(before[differing[0]], sort_keys=True)}\n"
                           f"now    {json.dumps(now[differing[0]], sort_keys=True)}")


def test_the_golden_file_is_the_before_install_s() -> None:
    document = _golden()
    assert "evidence2 fbee4e2" in document["produced_by"]
    assert set(document["sets"]) == {"corpus-seed-11", "corpus-seed-12", "corpus-seed-13", "real-obelisk-formats"}
    # Every set is answered in full: non-trivial answers, items with snippets, negatives included.
    for name, answers in document["sets"].items():
        assert len(answers) >= 60, name
        items = [i for a in answers.values() for i in (a.get("result") or {}).get("items", [])]
        assert len(items) >= 100 and all(i.get("snippet") for i in items), name
        assert any(not (a.get("result") or {}).get("items") for a in answers.values()), name


@pytest.mark.parametrize("seed", [11, 12, 13])
def test_corpus_answers_are_those_of_before_the_cost_work(seed: int) -> None:
    _compare(f"corpus-seed-{seed}", _tool().corpus_answers(seed))


def test_formats_answers_are_those_of_before_the_cost_work() -> None:
    data = shared_dir() / "real-obelisk-formats"
    if not (data / "facts.json").is_file():
        pytest.skip(f"real-obelisk-formats not found at {data}")
    _compare("real-obelisk-formats", _tool().formats_answers(data))


def test_normalise_keeps_every_answer_field_that_must_not_change() -> None:
    """What normalisation drops is exactly the listed fields: a changed snippet, item, verdict or count is seen."""
    tool = _tool()
    envelope = {"outcome": "ok", "error": None,
                "result": {"index_revision": "obx1-a", "freshness": "fresh", "truncated": False,
                           "items": [{"session_ref": "s", "snippet": "x", "observed_at": "t"}]},
                "receipt": {"result_digest": "hmac-sha256:1", "scope_digest": "hmac-sha256:2",
                            "query_digest": "hmac-sha256:3", "index_revision_digest": "hmac-sha256:4",
                            "result_count": 1},
                "provider_meta": {"elapsed_ms": 3.0, "since": "1926-01-01", "templates_run": ["a.fts_first.v1"],
                                  "freshness_detail": {"units_in_scope": 3, "stale": 0, "unindexed": 0,
                                                       "missing_on_disk": 0, "last_build_age_ms": 5,
                                                       "unknown_reason_no_transcript_home": 1},
                                  "total_chars": 1}}
    base = tool.normalise(envelope)
    varied = json.loads(json.dumps(envelope))
    varied["result"]["index_revision"] = "obx1-b"
    varied["receipt"].update({k: "hmac-sha256:9" for k in ("result_digest", "scope_digest", "query_digest",
                                                             "index_revision_digest")})
    varied["provider_meta"].update({"elapsed_ms": 9.0, "since": "1927-01-01", "templates_run": ["a.v1"]})
    varied["provider_meta"]["freshness_detail"].update({"units_in_scope": 2, "last_build_age_ms": 7})
    assert tool.normalise(varied) == base
    for path, value in ((("result", "items", 0, "snippet"), "y"), (("result", "items", 0, "session_ref"), "z"),
                        (("result", "freshness"), "stale"), (("result", "truncated"), True),
                        (("receipt", "result_count"), 2), (("provider_meta", "total_chars"), 2),
                        (("provider_meta", "templates_run", 0), "b.v1"),
                        (("provider_meta", "freshness_detail", "stale"), 1),
                        (("provider_meta", "freshness_detail", "unknown_reason_no_transcript_home"), 0),
                        (("outcome",), "error")):
        changed: Any = json.loads(json.dumps(envelope))
        target = changed
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
        assert tool.normalise(changed) != base, path


def test_issue_35_f16_gains_the_wrap_up_of_a_session_without_a_stored_summary() -> None:
    """Why real-obelisk-formats' F16 changed in the golden file (issue 35): a summary request for
    TokenBucketDrift now also shows the last words of a session that has no stored summary (its wrap-up), after
    the stored away summary and the titles; the other sets changed only in ``templates_run`` and by the new
    wrap-up and tool-name situations."""
    import sqlite3

    items = _golden()["sets"]["real-obelisk-formats"]["F16"]["result"]["items"]
    kinds = [i["snippet"].split("] ")[0] + "]" for i in items]
    assert kinds[0] == "[away_summary]" and kinds[-1] == "[session wrap-up]", kinds
    wrapup = items[-1]
    db = shared_dir() / "real-obelisk-formats" / "formats.sqlite"
    conn = sqlite3.connect(f"file:{db}?mode=ro&immutable=1", uri=True)
    try:
        session = wrapup["session_ref"]
        assert conn.execute("SELECT count(*) FROM summaries WHERE session_id = ?", (session,)).fetchone() == (0,)
        last = conn.execute("SELECT uuid FROM messages WHERE session_id = ? AND role = 'assistant' AND "
                            "content_type = 'text' AND is_sidechain = 0 ORDER BY timestamp DESC LIMIT 1",
                            (session,)).fetchone()
    finally:
        conn.close()
    assert last == (wrapup["message_ref"],)


def test_a_plan_step_is_written_as_the_template_it_answers_for() -> None:
    """The term probe (``X.term_probe.v1``) answers for ``X`` within a budget of a few milliseconds, so whether it
    or the template answered depends on the machine's load: both are written ``X`` at its own version."""
    tool = _tool()
    assert tool.template_of("prior_failure.narration.term_probe.v1") == "prior_failure.narration.v2"
    assert tool.template_of("prior_failure.narration.fts_first.v2") == "prior_failure.narration.v2"
    assert tool.template_of("prior_failure.resolution_calls.v1") == "prior_failure.resolution_calls.v1"


#: The answers issue 32 changed (besides its new ``time-*`` situations), per set, and what each now shows.
EDIT_AFTER = "[what happened next] [Edit applied]"
PATCH_AFTER = "[what happened next] [apply_patch applied]"
WRITE_AFTER = "[what happened next] [Write applied]"
MULTIEDIT_AFTER = "[what happened next] [MultiEdit applied]"
ISSUE_32_CHANGES: dict[str, dict[str, tuple[str, ...]]] = {
    # The edit that fixed a failure (to a file the failure names, or before its command passes again) is
    # what happened next; a repeated signature's first item says when it happened first and last.
    "corpus-seed-11": {
        "claude-repeat-3-sessions": (MULTIEDIT_AFTER, "[repeated in 3 sessions, 2026-"),
        "claude-repeat-resolved-by-fix-statement": (MULTIEDIT_AFTER, "[repeated in 3 sessions, 2026-"),
        "claude-resolution-ja": (WRITE_AFTER,), "claude-resolution-same-command": (EDIT_AFTER,),
        "claude-resolution-zh": (EDIT_AFTER,), "claude-tool-error-exit-code": (EDIT_AFTER,),
        "claude-worktree-failure": (WRITE_AFTER,), "codex-json-output-failure": (PATCH_AFTER,),
        "codex-repeat-2-sessions-two-forms": ("[repeated in 2 sessions, 2026-",),
        "codex-resolution-root-cause-and-rerun": (PATCH_AFTER,), "codex-resolution-same-command": (PATCH_AFTER,),
    },
    "real-obelisk-formats": {
        "F02": (EDIT_AFTER, "[repeated in 3 sessions, 2026-"), "F04": (PATCH_AFTER,), "F09": (PATCH_AFTER,),
        "F15": (EDIT_AFTER,), "F20": (EDIT_AFTER,), "F21": (EDIT_AFTER,), "F22": (EDIT_AFTER,),
        "F34-not-codex-kite-api": (PATCH_AFTER,), "F39": (PATCH_AFTER,), "F41": (EDIT_AFTER,),
    },
}


@pytest.mark.parametrize("name", sorted(ISSUE_32_CHANGES))
def test_the_answers_issue_32_changed_show_what_came_after(name: str) -> None:
    """Each answer issue 32 changed shows what it changed for: the fixing edit placed right after a failure of
    its session, the date range of a repeated failure; and every corpus set holds the time-aware situations."""
    answers = _golden()["sets"][name]
    for sid, shown in ISSUE_32_CHANGES[name].items():
        items = (answers[sid].get("result") or {}).get("items", [])
        snippets = [i["snippet"] for i in items]
        for phrase in shown:
            assert any(phrase in s for s in snippets), (sid, phrase, snippets)
        for at, item in enumerate(items):
            if item["snippet"].startswith("[what happened next] ["):  # an edit or a run, after its session's failure
                earlier = [i for i in items[:at] if i["session_ref"] == item["session_ref"]]
                assert earlier and earlier[-1]["evidence_type"] == "prior_failure", (sid, snippets)
    for seed in (11, 12, 13):
        assert sum(sid.startswith("time-") for sid in _golden()["sets"][f"corpus-seed-{seed}"]) >= 30
