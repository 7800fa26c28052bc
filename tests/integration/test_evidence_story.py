"""Issue 11 items 6 to 9: what happened next, compaction summaries, any language, form-insensitive matching.

Sessions are written the way Claude Code and Codex write them today (tests/evidence_home.py); every request
goes through the real service.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from obelisk_session_evidence.fixtures.transcripts import ClaudeTranscript, CodexTranscript

from tests.evidence_home import EvidenceHome, build_home

NEXT = "[what happened next] "


def _claude_fixed(t: ClaudeTranscript, repo: Path) -> None:
    t.say("I said the root cause was unclear before anything failed.")  # before the failure: not a resolution
    t.user("Run the sync tests.")
    t.think("A single mkthinkgrep pass over tests/ is enough here; no need for the full suite.")
    t.bash("pytest -q tests/test_sync.py", "Run pytest", "E   SyncCursorError: cursor moved backwards\n1 failed",
           exit_code=1)
    t.say("Root cause: the cursor is read before the lock is taken. I moved the read under the lock.")
    t.bash("pytest -q tests/test_sync.py", "Run the sync tests again", "...\n3 passed in 0.2s")
    t.say("Done.")


def _claude_story(t: ClaudeTranscript, repo: Path) -> None:
    t.user("We decided to keep memcached out; use Redis instead for the session store.")
    t.bash("psql -c 'select 1' mkconn", "Check db", "psql: error: Connection Refused on port 5432", exit_code=2)
    t.bash("curl -s localhost:8081/mkwrap", "Probe", "upstream healthcheck\ntimed out after 45s", exit_code=28)
    t.bash("python -m app.report", "Report", "wrote 12 rows\nchecksum mkoutputonly-7f", exit_code=0)
    t.say("The database said Connection Refused, so the pool never started.")
    t.compaction("Analysis: moved the session store to Redis (mkcompact-42); the pool waits for the db.")
    t.away_summary("Still waiting on the db pool (mkaway-11).")
    t.ai_title("Session store on Redis (mktitle-9)")
    t.bash("npm run deploy-check", "Check", "デプロイ前チェックが失敗しました", exit_code=1)
    t.user("権限を付与しました。もう一度お願いします。")
    t.say("Done.")


def _codex_publish(x: CodexTranscript, repo: Path) -> None:
    x.user("请把 lumen-ui 包发布到内部仓库。之前发布总是因为令牌权限不够而失败。")
    x.exec_command("npm publish --workspace packages/ui", "npm ERR! code E403\nnpm ERR! token lacks scope",
                   exit_code=1)
    x.user("I granted the publish permission to the token; go ahead.")
    x.exec_command("npm publish --workspace packages/ui", "+ @lumen/ui@0.9.2")
    x.say("已发布。问题原因是令牌缺少写入权限导致发布被拒绝，现在已经正常。")


def _codex_supplied(x: CodexTranscript, repo: Path) -> None:
    x.shell(["aws", "s3", "cp", "out.parquet", "s3://mkbucket/"], "upload failed: NoSuchBucket", exit_code=1)
    x.say("Which bucket should I use?")
    x.user("Use s3://mkbucket-eu, the old one is gone.")  # supplies what was missing, with no cue word
    x.user("And keep the parquet file.")  # a second plain user message is not taken


def _codex_quiet(x: CodexTranscript, repo: Path) -> None:
    x.user("Fixed the root cause already, I added the npm publish token.")  # no failure in this session
    x.reason("A read-only mkreviewer subagent is enough; it only needs grep and the test runner.")
    x.shell("git status", "clean")


def _claude_first_person_fix(t: ClaudeTranscript, repo: Path) -> None:
    t.bash("pytest -q tests/test_slots.py", "Run pytest", "E   IntegrityError: duplicate key mkslotkey\n1 failed",
           exit_code=1)
    t.say("The retry runs the insert twice. I made the insert idempotent with ON CONFLICT DO NOTHING.")


def _codex_zh_decision(x: CodexTranscript, repo: Path) -> None:
    x.user("要不要现在升级 mkframework 19？")
    x.say("决定暂时不升级 mkframework 19，因为表格组件还不支持。")


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> EvidenceHome:
    return build_home(tmp_path_factory.mktemp("story"), claude=[_claude_fixed, _claude_story,
                                                                 _claude_first_person_fix],
                      codex=[_codex_publish, _codex_quiet, _codex_supplied, _codex_zh_decision])


# --- item 6: what happened next --------------------------------------------------------------------------


def test_a_failure_comes_with_its_resolution_ranked_right_after_it(home: EvidenceHome) -> None:
    items = home.items("claude", ["test_sync.py"], ["prior_failure"])
    snippets = [i["snippet"] for i in items]
    assert snippets[0].startswith("[failed exit 1] pytest -q tests/test_sync.py"), snippets
    assert snippets[1].startswith(NEXT + "Root cause: the cursor is read before the lock"), snippets
    assert snippets[2].startswith(NEXT + "[ok] pytest -q tests/test_sync.py"), snippets
    assert "3 passed" in snippets[2]
    assert {i["session_ref"] for i in items} == {home.sessions["claude"][0]}
    assert not any("unclear before anything failed" in s for s in snippets)  # said before the failure


def test_the_user_supplying_what_was_missing_is_the_resolution(home: EvidenceHome) -> None:
    items = home.items("codex", ["npm publish"], ["prior_failure"])
    snippets = [i["snippet"] for i in items]
    assert snippets[0].startswith("[failed exit 1; npm E403] npm publish"), snippets
    assert snippets[1] == NEXT + "[user] I granted the publish permission to the token; go ahead.", snippets
    assert snippets[2].startswith(NEXT + "[ok] npm publish") and "+ @lumen/ui@0.9.2" in snippets[2]
    assert all(i["session_ref"] == home.sessions["codex"][0] for i in items)  # the quiet session is not asked


def test_the_first_user_message_after_a_failure_is_what_happened_next_whatever_its_words(
        home: EvidenceHome) -> None:
    snippets = [i["snippet"] for i in home.items("codex", ["aws s3 cp"], ["prior_failure"])]
    assert snippets == ["[failed exit 1] aws s3 cp out.parquet s3://mkbucket/\nupload failed: NoSuchBucket",
                        NEXT + "[user] Use s3://mkbucket-eu, the old one is gone."], snippets


def test_resolution_cues_are_read_in_chinese_and_japanese(home: EvidenceHome) -> None:
    codex = [i["snippet"] for i in home.items("codex", ["npm publish"], ["prior_failure"])]
    assert any(s.startswith(NEXT) and "问题原因是令牌缺少写入权限" in s for s in codex), codex
    claude = [i["snippet"] for i in home.items("claude", ["deploy-check"], ["prior_failure"])]
    assert claude[1] == NEXT + "[user] 権限を付与しました。もう一度お願いします。", claude


@pytest.mark.parametrize(("source", "term", "note"), [
    ("claude", "mkthinkgrep", "[reasoning] A single mkthinkgrep pass over tests/ is enough here"),
    ("codex", "mkreviewer subagent", "[reasoning] A read-only mkreviewer subagent is enough"),
])
def test_the_agents_reasoning_note_is_decision_evidence_without_a_decision_word(
        home: EvidenceHome, source: str, term: str, note: str) -> None:
    # A Claude thinking block and a Codex agent_reasoning event are the agent's rationale; they name no
    # decision word ("decided", "instead", ...), so only the reasoning template finds them.
    items = home.items(source, [term], ["decision"])
    assert [i["snippet"][:len(note)] for i in items] == [note], items


@pytest.mark.parametrize(("source", "term"), [("claude", "mkthinkgrep"), ("codex", "mkreviewer subagent")])
def test_a_small_scopes_reasoning_notes_are_read_from_its_own_messages_with_the_full_plans_rows(
        home: EvidenceHome, monkeypatch: pytest.MonkeyPatch, source: str, term: str) -> None:
    """decision.reasoning.scope_rows (the scope's reasoning notes through the session index, each matched by
    rowid) yields exactly the rows of decision.reasoning (every match of the terms in the index), bm25 aside,
    and so the same answer. The full plan answers for a larger scope, past the plan's budget, and when the
    plan's rows reach :limit (its rows are then not known to be all, and without bm25 a cut would differ)."""
    from obelisk_session_evidence.index import connection
    from obelisk_session_evidence.retrieval import engine, planner

    original = engine.read_rows
    seen: list[tuple[str, list[list[tuple[str, object]]]]] = []
    steps = connection._PROGRESS_STEPS

    def recording(run: Any, plan: Any, *args: Any) -> Any:
        used, rows = original(run, plan, *args)
        if plan[-1].template.id == "decision.reasoning":
            names = run.reads.snap.last_columns
            seen.append((used.id, sorted(sorted((k, v) for k, v in zip(names, row, strict=True) if k != "rank")
                                         for row in rows)))
        return used, rows

    monkeypatch.setattr(engine, "read_rows", recording)
    answers = {}
    for mode, sessions, budget, ceiling in (("small", 64, 3.0, 200), ("many sessions", 0, 3.0, 200),
                                            ("over budget", 64, 0.0, 200), ("at the limit", 64, 3.0, 1)):
        monkeypatch.setattr(planner, "SMALL_SCOPE_SESSIONS", sessions)
        monkeypatch.setitem(planner.BUDGETS, "scope_rows", planner.Budget(budget))
        monkeypatch.setattr(engine, "FETCH_CEILING", ceiling)
        # The budget is checked every _PROGRESS_STEPS steps: a tiny index's statement ends before the first.
        monkeypatch.setattr(connection, "_PROGRESS_STEPS", 1 if budget == 0.0 else steps)
        seen.clear()
        answers[mode] = home.ask(source, [term], ["decision"])
        assert len(seen) == 1, (mode, seen)
        used, rows = seen[0]
        assert used == ("decision.reasoning.scope_rows" if mode == "small" else "decision.reasoning"), mode
        assert len(rows) == 1 and dict(rows[0])["session_id"] in home.sessions[source], (mode, rows)
        if mode == "small":
            small_rows = rows
        else:
            assert rows == small_rows, mode  # the same rows, column for column
    assert "decision.reasoning.scope_rows.v2" in answers["small"]["provider_meta"]["templates_run"]
    assert answers["small"]["result"]["items"] == answers["many sessions"]["result"]["items"] == \
        answers["over budget"]["result"]["items"]
    assert answers["small"]["result"]["items"][0]["snippet"].startswith("[reasoning] ")


@pytest.mark.parametrize(("source", "terms", "some_dropped"), [
    ("claude", ["pytest"], False), ("claude", ["npm", "psql", "curl"], True),
    ("codex", ["npm publish"], False), ("codex", ["aws s3 cp", "parquet"], True)])
def test_only_the_resolutions_that_are_kept_are_composed_and_the_answer_is_the_same(
        home: EvidenceHome, monkeypatch: pytest.MonkeyPatch, source: str, terms: list[str],
        some_dropped: bool) -> None:
    """Linking decides a resolution row by its session, time, ref, score and command: composing its story first
    (every row) or only for the rows kept gives the same candidates, in the same order."""
    import obelisk_session_evidence.service as service
    from obelisk_session_evidence.retrieval import evidence, resolution
    from obelisk_session_evidence.retrieval import terms as cue_terms

    # A message's score counts the cues in its first CUE_HEAD characters, as has_resolution_cue reads them.
    assert evidence.resolution_window("x" * cue_terms.CUE_HEAD + "fixed", ("fixed",), evidence.ReadWindow(100))[2] == 0

    captured: list[Any] = []
    original = service.run_templates

    def keep(*args: Any, **kwargs: Any) -> Any:
        captured.append(original(*args, **kwargs))
        return captured[-1]

    monkeypatch.setattr(service, "run_templates", keep)
    home.ask(source, terms, ["prior_failure"])
    run = captured[-1]
    window, roots = run.window_chars, [str(home.repo)]
    composed = [evidence.candidate(hit, terms=terms, roots=roots, window=window) for hit in run.hits]
    every = resolution.link_resolutions([c for c in composed if c is not None])
    calls: list[str] = []
    rest, pending = [], []
    for hit in run.hits:
        if evidence.shape_of(hit.template).kind:
            found = evidence.pending_resolution(hit, terms=terms, roots=roots, window=window)
            if found is not None:
                def compose(found: evidence.PendingResolution = found) -> Any:
                    calls.append(str(found.message_ref))
                    made = found.compose()
                    assert made is not None and (made.kind, made.session_ref, made.message_ref, made.observed_at,
                                                 made.kind == "resolution_call" or made.score != 0,
                                                 made.command) == found[:6]
                    return made
                pending.append(found._replace(compose=compose))
        else:
            made = evidence.candidate(hit, terms=terms, roots=roots, window=window)
            if made is not None:
                rest.append(made)
    linked = resolution.link_resolutions(rest, pending)
    assert linked == every
    kept = [c for c in every if c.follows is not None]
    assert kept, "no resolution kept: the comparison shows nothing"
    assert sorted(calls) == sorted(str(c.message_ref) for c in kept)  # composed: the kept ones only
    assert (len(pending) > len(kept)) == some_dropped, (len(pending), len(kept))


def test_the_agent_telling_its_change_in_the_first_person_is_what_happened_next(home: EvidenceHome) -> None:
    snippets = [i["snippet"] for i in home.items("claude", ["mkslotkey"], ["prior_failure"])]
    assert snippets[1:] == [NEXT + "The retry runs the insert twice. I made the insert idempotent with ON "
                                   "CONFLICT DO NOTHING."], snippets


def test_a_decision_told_in_chinese_is_found_by_an_ascii_term(home: EvidenceHome) -> None:
    # "mkframework 19" is ASCII, so no substring plan runs; the Chinese cue opening a run reaches FTS.
    snippets = [i["snippet"] for i in home.items("codex", ["mkframework 19"], ["decision"])]
    assert snippets == ["决定暂时不升级 mkframework 19，因为表格组件还不支持。"], snippets


def test_decisions_come_from_the_user_too(home: EvidenceHome) -> None:
    items = home.items("claude", ["memcached"], ["decision"])
    assert [i["snippet"] for i in items] == [
        "We decided to keep memcached out; use Redis instead for the session store."]


# --- item 7: summaries include compaction ----------------------------------------------------------------


@pytest.mark.parametrize(("term", "prefix"), [
    ("mkcompact-42", "[compaction summary] "),
    ("mkaway-11", "[away_summary] "),
    ("mktitle-9", "[session title] "),
])
def test_summaries_include_compactions_away_summaries_and_titles(home: EvidenceHome, term: str,
                                                                 prefix: str) -> None:
    items = home.items("claude", [term], ["summary"])
    assert len(items) == 1 and items[0]["snippet"].startswith(prefix), items
    assert term in items[0]["snippet"]


def test_a_compaction_summary_is_matched_on_its_whole_text(home: EvidenceHome) -> None:
    items = home.items("claude", ["pool waits for the db"], ["summary"])
    assert any(i["snippet"].startswith("[compaction summary] ") for i in items), items


# --- item 8: any language --------------------------------------------------------------------------------


@pytest.mark.parametrize(("source", "term", "shown"), [
    ("codex", "令牌权限", "之前发布总是因为令牌权限不够而失败"),
    ("codex", "写入权限", "问题原因是令牌缺少写入权限导致发布被拒绝"),
])
def test_a_cjk_term_inside_a_longer_run_is_found_and_disclosed(home: EvidenceHome, source: str, term: str,
                                                               shown: str) -> None:
    envelope = home.ask(source, [term], ["prior_failure", "decision"])
    assert any(shown in i["snippet"] for i in envelope["result"]["items"]), envelope["result"]["items"]
    assert "cjk_substring_match" in envelope["provider_meta"]["degradations"]


def test_no_substring_scan_without_cjk_terms(home: EvidenceHome) -> None:
    envelope = home.ask("codex", ["npm publish"], ["prior_failure", "decision"])
    assert "cjk_substring_match" not in envelope["provider_meta"]["degradations"]


# --- item 9: case- and form-insensitive matching, tool output searchable ----------------------------------


def test_a_phrase_matches_whatever_its_case(home: EvidenceHome) -> None:
    items = home.items("claude", ["connection refused"], ["prior_failure"])
    snippets = [i["snippet"] for i in items]
    assert any(s.startswith("[failed exit 2] psql") and "Connection Refused" in s for s in snippets), snippets
    assert any(s.startswith("The database said Connection Refused") for s in snippets), snippets  # FTS narration


def test_a_phrase_matches_across_a_line_break(home: EvidenceHome) -> None:
    items = home.items("claude", ["healthcheck timed out"], ["prior_failure"])
    assert any(i["snippet"].startswith("[failed exit 28] curl") for i in items), items


def test_a_term_only_in_a_tool_output_finds_the_call(home: EvidenceHome) -> None:
    items = home.items("claude", ["mkoutputonly-7f"], ["tool_outcome"])
    assert [i["snippet"] for i in items] == ["[ok] python -m app.report\nwrote 12 rows\nchecksum mkoutputonly-7f"]
