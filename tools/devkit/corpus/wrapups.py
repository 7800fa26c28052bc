"""What a session concluded, and tools by name (issue 35): Claude Code and Codex sessions whose outcome is only
the agent's own last words (no stored summary), sessions that went quiet and were resumed, chit-chat at the end
of a session, and calls of tools named only by their call name (WebSearch, MCP tools, Codex's shell_command),
with negatives: words the agent went on from, another agent's wrap-up, chit-chat asked as a decision, a tool
another agent or repository called, part of a tool's name."""

from __future__ import annotations

from typing import Final

from .model import DE, PF, SU, TO, CorpusBuilder, fact

HOUR_MS: Final = 3_600_000
# Wrap-up wordings: (text, key phrase); the first is the reference seed's (see CorpusBuilder.variant). The term
# the situation asks (round_tariff) is in every one.
TARIFF_WRAPUP: Final = (
    ("The tariff rounding now lives in LedgerService.round_tariff; the three callers use it and the suite is green.",
     "tariff rounding now lives in LedgerService.round_tariff"),
    ("Done: LedgerService.round_tariff owns the tariff rounding, the callers were switched over, tests pass.",
     "LedgerService.round_tariff owns the tariff rounding"),
    ("Summary: round_tariff moved into LedgerService and every caller goes through it; all tests pass.",
     "round_tariff moved into LedgerService"),
)


def claude_tariff_wrapup(b: CorpusBuilder) -> None:
    """The outcome is the final message; a message said earlier, then gone on from, is no wrap-up."""
    t = b.claude("s-wrapup-tariff", "harbor-api", 51)
    t.user("Move the tariff rounding out of the berth module into the ledger service.")
    t.say("First I'll read the rounding helper in the berth module to see who calls it.")
    t.read(t.cwd / "src/harbor/berth.py", "def allocate(slot, now=None):\n    ...\n")
    t.bash("pytest -q tests/test_ledger.py", "Run the ledger tests", "12 passed in 0.4s")
    wrapup, phrase = b.variant(TARIFF_WRAPUP)
    t.say(wrapup)
    t.turn_duration()
    b.finish_claude(t, "harbor-api")
    b.situation("claude-wrapup-final-message", t, [SU], ["round_tariff"],
                [fact(t, [SU], phrase, "wrapup")], classes=["wrapup", "wrapup.final"])
    b.situation("neg-wrapup-words-gone-on-from", ("claude", "harbor-api"), [SU], ["rounding helper in the berth"],
                classes=["negative", "wrapup.negative", "negative.in_scope"])
    b.situation("neg-wrapup-other-agent", ("codex", "harbor-api"), [SU], ["round_tariff"],
                classes=["negative", "wrapup.negative"])


def claude_quiet_then_resumed(b: CorpusBuilder) -> None:
    """The last words before the session went quiet for hours are a wrap-up, though the session went on."""
    t = b.claude("s-wrapup-quiet", "prism-web", 53)
    t.user("Run the palette contrast audit on the dark theme.")
    t.bash("npm run audit:contrast", "Contrast audit", "12 of 14 pairs pass; tokens missing for 2", exit_code=1)
    t.say("Paused here: the palette contrast audit needs the two missing design tokens from the brand team.")
    t.clock += 3 * HOUR_MS
    t.user("The brand team sent the tokens, they are in tokens.json.")
    t.bash("npm run audit:contrast", "Contrast audit", "14 of 14 pairs pass")
    t.say("All fourteen colour pairs pass with the new tokens.")
    t.turn_duration()
    b.finish_claude(t, "prism-web")
    b.situation("claude-wrapup-before-quiet", t, [SU], ["palette contrast audit"],
                [fact(t, [SU], "palette contrast audit needs the two missing design tokens", "wrapup")],
                classes=["wrapup", "wrapup.quiet"])


def claude_chitchat(b: CorpusBuilder) -> None:
    """Chit-chat at the end is the session's last word, never a decision."""
    t = b.claude("s-wrapup-chitchat", "prism-web", 55)
    t.user("Thanks, the gallery demo for the client went really well!")
    t.say("Glad the gallery demo went well! Ping me if anything else comes up.")
    b.finish_claude(t, "prism-web")
    b.situation("neg-chitchat-is-no-decision", ("claude", "prism-web"), [DE], ["gallery demo"],
                classes=["negative", "wrapup.negative", "negative.in_scope"])


def codex_report(b: CorpusBuilder) -> None:
    """A Codex run whose outcome is its final agent message; its shell_command calls are found by name."""
    x = b.codex("s-wrapup-codex-report", "prism-web", 57)
    x.user("How long does the image pipeline take on the crane roster page? Write it up.")
    x.shell_command("npm run perf -- --page crane-roster", "first paint 1.9 s; 41 images; 3.2 MB")
    x.say("Here is the report you asked for: the crane roster page paints in 1.9 s and ships 3.2 MB of images; "
          "resizing the thumbnails would halve it.")
    x.token_count()
    b.finish_codex(x, "prism-web", None)
    b.situation("codex-wrapup-final-message", x, [SU], ["crane roster"],
                [fact(x, [SU], "the crane roster page paints in 1.9 s", "wrapup")],
                classes=["wrapup", "wrapup.final", "codex.wrapup"])
    b.situation("codex-tool-name-shell-command", x, [TO], ["shell_command"],
                [fact(x, [TO], "npm run perf -- --page crane-roster", "tool_name")],
                classes=["tool_name", "codex.tool_name"])
    b.situation("neg-tool-name-part", ("codex", "prism-web"), [TO, PF], ["shell_comman"],
                classes=["negative", "tool_name.negative", "negative.in_scope"])


def claude_tools_by_name(b: CorpusBuilder) -> None:
    """A web search and two MCP tools, one failing, named only by their calls."""
    t = b.claude("s-tools-by-name", "harbor-api", 59)
    t.user("Look up how other ports round tariffs, then check issue HAR-412 and its error reports.")
    t.tool("WebSearch", {"query": "port authority harbour dues rounding to the cent"},
           'Web search results for query: "port authority harbour dues rounding to the cent"\n\nLinks: '
           '[{"title":"Harbour dues schedule 2026","url":"https://example.org/dues"}]')
    t.tool("mcp__linear__get_issue", {"id": "HAR-412"},
           '{"identifier":"HAR-412","title":"Dues drift by a cent on split berths","state":"Todo"}')
    t.tool("mcp__bugsink__search_events", {"project": "harbor-api", "query": "DuesDrift"},
           "MCP error -32603: project harbor-api is not visible to this token", is_error=True)
    t.say("HAR-412 is the cent drift; the error tracker is not visible to this token.")
    t.turn_duration()
    b.finish_claude(t, "harbor-api")
    b.situation("claude-tool-name-websearch", t, [TO], ["WebSearch"],
                [fact(t, [TO], "port authority harbour dues rounding to the cent", "tool_name")],
                classes=["tool_name", "claude.tool_name"])
    b.situation("claude-tool-name-mcp-tool", t, [TO], ["get_issue"],
                [fact(t, [TO], "Dues drift by a cent on split berths", "tool_name")],
                classes=["tool_name", "mcp.tool_name"])
    b.situation("claude-tool-name-mcp-failure", t, [PF], ["mcp__bugsink__search_events"],
                [fact(t, [PF], "project harbor-api is not visible to this token", "tool_name")],
                classes=["tool_name", "mcp.tool_name"])
    b.situation("neg-tool-name-other-agent", ("codex", "harbor-api"), [TO, PF], ["WebSearch"],
                classes=["negative", "tool_name.negative"])
    b.situation("neg-tool-name-other-repo", ("claude", "prism-web"), [TO, PF], ["get_issue"],
                classes=["negative", "tool_name.negative"])
    b.situation("neg-tool-name-mcp-server", ("claude", "harbor-api"), [TO, PF], ["bugsink"],
                classes=["negative", "tool_name.negative", "negative.in_scope"])


PLANTERS: Final = (claude_tariff_wrapup, claude_quiet_then_resumed, claude_chitchat, codex_report,
                   claude_tools_by_name)
