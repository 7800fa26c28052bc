"""Issue 35 items 1 and 2: a session's wrap-up is summary evidence; a tool's name is a term.

Sessions are written the way Claude Code and Codex write them (tests/evidence_home.py) and every request goes
through the public entry point, the CLI's ``query`` in a subprocess.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from obelisk_session_evidence.fixtures.transcripts import ClaudeTranscript, CodexTranscript

from tests.conftest import make_request, run_cli
from tests.evidence_home import AGENTS, LIMITS, EvidenceHome, build_home

WRAPUP = "[session wrap-up] "
HOUR_MS = 3_600_000


def _claude_migration(t: ClaudeTranscript, repo: Path) -> None:
    t.user("Migrate the invoices table to the mkledger schema.")
    t.say("I'll look at the mkdraftnote module first, then write the migration.")  # not the last word
    t.bash("alembic upgrade head", "Run the migration", "INFO  [alembic] Running upgrade -> 4f2")
    t.bash("pytest -q", "Run the tests", "42 passed in 3.1s")
    t.say("The mkledger migration is done: three files changed, the upgrade ran and the tests pass.")


def _claude_paused(t: ClaudeTranscript, repo: Path) -> None:
    t.user("Export the quarterly report.")
    t.bash("python -m app.export", "Export", "error: vendor key missing", exit_code=1)
    t.say("Paused: the mkpauseexport job needs the vendor key before it can run; I left the config untouched.")
    t.clock += 2 * HOUR_MS  # the session went quiet; the user came back later
    t.user("The key is in the vault now, go on.")
    t.bash("python -m app.export", "Export again", "wrote report.csv")
    t.say("The report is exported to report.csv and the vendor key is read from the vault.")


def _claude_summarised(t: ClaudeTranscript, repo: Path) -> None:
    t.user("Rotate the mkrotated signing keys.")
    t.bash("make rotate-keys", "Rotate", "rotated 3 keys")
    t.away_summary("Rotating the mkrotated signing keys: three keys rotated, the old ones still accepted.")
    t.say("The mkrotated signing keys are rotated; the old keys stay valid for a day.")


def _claude_chitchat(t: ClaudeTranscript, repo: Path) -> None:
    t.user("Thanks for the mkchitchat help earlier!")
    t.say("Glad the mkchitchat session helped! Let me know if there is anything else.")


def _claude_path_only(t: ClaudeTranscript, repo: Path) -> None:
    t.user("Tidy the tax helpers.")
    t.edit(repo / "src/mkpathonly/tax.py", "def r(x):", "def round_rate(x):")
    t.say("Renamed a helper in src/mkpathonly/tax.py so it reads better; nothing else changed.")


def _claude_tools(t: ClaudeTranscript, repo: Path) -> None:
    t.user("scrolling in xterm.js does not work, look it up")
    t.tool("WebSearch", {"query": "xterm.js scroll captured by outer page"},
           'Web search results for query: "xterm.js scroll captured by outer page"\n\nLinks: []')
    t.tool("mcp__tidewave__project_eval", {"code": "Application.get_env(:app, :port)"},
           "** (UndefinedFunctionError) function Application.get_env/2 is undefined", is_error=True)
    t.tool("mcp__docs__search", {"q": "wheel events"}, "3 pages")
    t.tool("mcp__docs__search_code", {"q": "wheel handler"}, "no match")
    t.say("The outer page swallows the wheel events; the terminal needs its own handler.")


def _codex_report(x: CodexTranscript, repo: Path) -> None:
    x.user("Write up what the flaky retry budget test does.")
    x.shell(["bash", "-lc", "pytest -q tests/test_budget.py"], "1 passed", exit_code=0)
    x.apply_patch("src/budget.py", "budget = 3", "budget = 5")
    x.say("Here is the report you asked for: the mkcodexreport retry budget is raised to 5 and the test passes.")


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> EvidenceHome:
    return build_home(tmp_path_factory.mktemp("wrapups"),
                      claude=[_claude_migration, _claude_paused, _claude_summarised, _claude_chitchat,
                              _claude_tools, _claude_path_only],
                      codex=[_codex_report])


def query(home: EvidenceHome, source: str, terms: list[str], types: list[str]) -> dict[str, Any]:
    """One request through ``obelisk-session-evidence query`` (a subprocess)."""
    request = make_request(
        scope={"agent_id": AGENTS[source], "project_id": "demo", "repository_id": "web",
               "allow_cross_agent": False, "allow_cross_project": False},
        evidence_types=types, query_terms=terms, limits=LIMITS)
    result = run_cli("query", "--db", str(home.db), "--config", str(home.config),
                     stdin=json.dumps(request).encode())
    envelope = result.document()
    assert result.code == 0 and envelope["outcome"] == "ok", (result.code, envelope.get("error"))
    return envelope


def snippets(home: EvidenceHome, source: str, terms: list[str], types: list[str]) -> list[str]:
    return [i["snippet"] for i in query(home, source, terms, types)["result"]["items"]]


# --- item 1: the wrap-up ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("source", "term", "said"), [
    ("claude", "mkledger", "The mkledger migration is done: three files changed"),
    ("claude", "mkpauseexport", "Paused: the mkpauseexport job needs the vendor key"),
    ("codex", "mkcodexreport", "Here is the report you asked for: the mkcodexreport retry budget"),
])
def test_the_agents_last_words_before_it_fell_silent_are_the_sessions_wrap_up(
        home: EvidenceHome, source: str, term: str, said: str) -> None:
    envelope = query(home, source, [term], ["summary"])
    items = envelope["result"]["items"]
    assert [i["snippet"][:len(WRAPUP) + len(said)] for i in items] == [WRAPUP + said], items
    assert all(i["evidence_type"] == "summary" for i in items)
    assert "summary.wrapups.v1" in envelope["provider_meta"]["templates_run"]


def test_a_message_the_agent_went_on_from_is_no_wrap_up(home: EvidenceHome) -> None:
    # Said early in the session, matched by the term, but the agent kept talking within minutes.
    assert snippets(home, "claude", ["mkdraftnote"], ["summary"]) == []


def test_a_stored_summary_comes_first_and_the_session_has_no_wrap_up_beside_it(home: EvidenceHome) -> None:
    found = snippets(home, "claude", ["mkrotated"], ["summary"])
    assert found == ["[away_summary] Rotating the mkrotated signing keys: three keys rotated, the old ones "
                     "still accepted."], found


def test_chit_chat_at_the_end_is_never_a_decision(home: EvidenceHome) -> None:
    assert snippets(home, "claude", ["mkchitchat"], ["decision"]) == []
    # The chit-chat is still the session's last word, and only ever summary evidence.
    found = snippets(home, "claude", ["mkchitchat"], ["decision", "summary"])
    assert found == [WRAPUP + "Glad the mkchitchat session helped! Let me know if there is anything else."]


def test_a_wrap_up_of_another_agents_session_is_not_read(home: EvidenceHome) -> None:
    assert snippets(home, "claude", ["mkcodexreport"], ["summary"]) == []
    assert snippets(home, "codex", ["mkledger"], ["summary"]) == []


# --- item 2: tool names ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("term", "command"), [
    ("WebSearch", "WebSearch xterm.js scroll captured by outer page"),
    ("websearch", "WebSearch xterm.js scroll captured by outer page"),
    ("mcp__docs__search_code", 'mcp__docs__search_code {"q":"wheel handler"}'),
    ("MCP__DOCS__SEARCH_CODE", 'mcp__docs__search_code {"q":"wheel handler"}'),
])
def test_a_term_naming_a_tool_finds_its_calls(home: EvidenceHome, term: str, command: str) -> None:
    found = snippets(home, "claude", [term], ["tool_outcome"])
    assert len(found) == 1 and found[0].startswith(f"[ok] {command}"), found


def test_an_mcp_tool_is_named_by_its_own_part_of_the_name(home: EvidenceHome) -> None:
    found = snippets(home, "claude", ["search"], ["tool_outcome"])
    # mcp__docs__search by its name; WebSearch only because its output reads "Web search results" (its text);
    # mcp__docs__search_code not at all.
    assert found[0].startswith('[ok] mcp__docs__search {"q":"wheel events"}'), found
    assert [s.split(" ", 2)[1] for s in found] == ["mcp__docs__search", "WebSearch"], found


def test_a_term_naming_a_tool_finds_its_failed_calls_as_prior_failures(home: EvidenceHome) -> None:
    found = snippets(home, "claude", ["project_eval"], ["prior_failure"])
    assert found and found[0].startswith("[failed] mcp__tidewave__project_eval"), found
    assert "UndefinedFunctionError" in found[0]
    # The same call by its full name; a succeeded call is no prior failure.
    assert snippets(home, "claude", ["mcp__tidewave__project_eval"], ["prior_failure"])[0] == found[0]
    assert snippets(home, "claude", ["WebSearch"], ["prior_failure"]) == []


def test_a_codex_tool_is_named_too(home: EvidenceHome) -> None:
    found = snippets(home, "codex", ["apply_patch"], ["tool_outcome"])
    assert len(found) == 1 and found[0].startswith("[ok] apply_patch"), found


@pytest.mark.parametrize("term", ["TaskOutput", "WebFetch", "tidewave", "docs", "mcp__docs", "search_cod"])
def test_a_term_naming_another_tool_or_part_of_a_name_finds_nothing(home: EvidenceHome, term: str) -> None:
    assert snippets(home, "claude", [term], ["tool_outcome", "prior_failure"]) == []


def test_a_tool_name_is_read_in_its_own_scope_only(home: EvidenceHome) -> None:
    assert snippets(home, "codex", ["WebSearch"], ["tool_outcome"]) == []
    assert snippets(home, "claude", ["apply_patch"], ["tool_outcome"]) == []


def test_a_wrap_up_names_every_term_asked(home: EvidenceHome) -> None:
    # Not written as a summary, a session's last words are taken only when they name everything asked: one
    # term of two (a session that merely touched the subject) is not enough.
    said = WRAPUP + "The mkledger migration is done"
    assert [s[:len(said)] for s in snippets(home, "claude", ["mkledger", "upgrade"], ["summary"])] == [said]
    assert snippets(home, "claude", ["mkledger", "mkelsewhere"], ["summary"]) == []


def test_a_term_met_only_inside_a_file_path_makes_no_wrap_up(home: EvidenceHome) -> None:
    # The path names where the session worked (file_history evidence), not what it concluded about the term.
    assert snippets(home, "claude", ["mkpathonly"], ["summary"]) == []
    found = snippets(home, "claude", ["src/mkpathonly/tax.py"], ["summary"])
    assert found == [WRAPUP + "Renamed a helper in src/mkpathonly/tax.py so it reads better; nothing else "
                     "changed."], found
