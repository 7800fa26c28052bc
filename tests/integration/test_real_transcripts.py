"""Issue 35 item 3: transcripts that Claude Code and Codex CLI themselves wrote, indexed the way Obelisk indexes
them (tests/data/real_transcripts/, tools/devkit/real_transcripts.py), asked through the CLI's ``query``.

Each one answers every evidence type without an error; a term from each assistant wrap-up finds it as the
session's wrap-up; a term naming a tool the session called finds the call, one naming another tool nothing.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import make_request, run_cli, scope_entry, write_config
from tools.devkit.real_transcripts import DATA_DIR, TRANSCRIPTS, RealTranscript, write_real_home

ALL_TYPES = ["prior_failure", "decision", "file_history", "tool_outcome", "summary"]
LIMITS = {"max_sessions": 5, "max_items": 8, "max_snippet_chars": 600, "max_total_chars": 6000}
BY_NAME = {t.name: t for t in TRANSCRIPTS}
CODEMIE, TOOL_HEAVY, SHORT, ROLLOUT = (t.name for t in TRANSCRIPTS)

#: Per transcript: a term from its assistant wrap-up and the wrap-up's first words (None: the agent never
#: replied, so there is no wrap-up and the term finds no summary).
WRAPUPS: dict[str, tuple[str, str | None]] = {
    CODEMIE: ("hello.js", "Done! I've deleted hello.js."),
    TOOL_HEAVY: ("Phoenix server", "Phoenix server is starting in the background."),
    SHORT: ("project structure", "Let me check the project structure and try running the server"),
    ROLLOUT: ("summarize purpuse", None),
}
#: Per transcript: a tool it called, how one of its calls reads, and a tool no session of its repository called
#: (nor names in any text). short and tool_heavy ran in one repository: one scope holds both.
TOOLS: dict[str, tuple[str, str, str]] = {
    CODEMIE: ("write", "[ok] Write hello.py", "Grep"),
    TOOL_HEAVY: ("WebSearch", "[ok] WebSearch xterm.js scroll not working embedded page captures scroll events",
                 "TaskOutput"),
    SHORT: ("glob", "[failed] Glob", "NotebookEdit"),
    ROLLOUT: ("shell", "[ok] ls", "apply_patch"),
}


def _agent(t: RealTranscript) -> str:
    """One agent (and repository) per tool and working directory."""
    return f"{t.provider}-{re.sub(r'[^a-z0-9]+', '-', t.cwd().lower()).strip('-')}"


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("real-transcripts")
    home = tmp / "home"
    write_real_home(tmp / "obelisk.sqlite", home, TRANSCRIPTS, now_ms=int(time.time() * 1000))
    scopes = {_agent(t): scope_entry(_agent(t), "real", _agent(t), [t.provider], [t.cwd()]) for t in TRANSCRIPTS}
    config = write_config(tmp / "config.json", list(scopes.values()), transcript_homes=[str(home)])
    return tmp / "obelisk.sqlite", config


def query(indexed: tuple[Path, Path], t: RealTranscript, terms: list[str], types: list[str]) -> dict[str, Any]:
    db, config = indexed
    agent = _agent(t)
    request = make_request(scope={"agent_id": agent, "project_id": "real", "repository_id": agent,
                                  "allow_cross_agent": False, "allow_cross_project": False},
                           evidence_types=types, query_terms=terms, limits=LIMITS)
    result = run_cli("query", "--db", str(db), "--config", str(config), stdin=json.dumps(request).encode())
    envelope = result.document()
    assert result.code == 0 and envelope["outcome"] == "ok", (t.name, result.code, envelope.get("error"))
    return envelope


def test_the_files_are_the_bytes_the_readme_records() -> None:
    readme = (DATA_DIR / "README.md").read_text(encoding="utf-8")
    on_disk = {p.name for p in DATA_DIR.glob("*.jsonl")}
    assert on_disk == set(BY_NAME), on_disk
    for t in TRANSCRIPTS:
        data = t.path.read_bytes()
        assert hashlib.sha256(data).hexdigest() == t.sha256, t.name
        assert f"| `{t.name}` |" in readme and f"| {len(data)} | `{t.sha256}` |" in readme, t.name
    assert 20_000 < sum(len(t.path.read_bytes()) for t in TRANSCRIPTS) < 110_000


@pytest.mark.parametrize("name", list(BY_NAME))
@pytest.mark.parametrize("evidence_type", ALL_TYPES)
def test_every_transcript_answers_every_evidence_type(indexed: tuple[Path, Path], name: str,
                                                      evidence_type: str) -> None:
    t = BY_NAME[name]
    envelope = query(indexed, t, [WRAPUPS[name][0], TOOLS[name][0]], [evidence_type])
    # Every file of the scope is indexed and up to date; the verdict is unknown only because the repository the
    # agent ran in is not on this machine (its root cannot be read).
    detail = envelope["provider_meta"]["freshness_detail"]
    assert envelope["result"]["freshness"] == "unknown", detail
    assert detail["up_to_date"] == detail["units_in_scope"] > 0 and detail["stale"] == detail["unindexed"] == 0
    assert [k for k, v in detail.items() if k.startswith("unknown_reason_") and v] == \
        ["unknown_reason_unreadable_root"], detail
    assert envelope["provider_meta"]["templates_run"], envelope["provider_meta"]
    assert {i["evidence_type"] for i in envelope["result"]["items"]} <= {evidence_type}


@pytest.mark.parametrize("name", list(BY_NAME))
def test_a_term_from_the_assistants_wrap_up_finds_it(indexed: tuple[Path, Path], name: str) -> None:
    term, said = WRAPUPS[name]
    items = query(indexed, BY_NAME[name], [term], ["summary"])["result"]["items"]
    if said is None:
        assert items == [], items  # the agent never replied: no wrap-up, whatever the prompt said
        return
    assert len(items) == 1 and items[0]["snippet"].startswith("[session wrap-up] " + said), items


@pytest.mark.parametrize("name", list(BY_NAME))
def test_a_term_naming_a_tool_finds_its_calls_and_another_tools_name_nothing(
        indexed: tuple[Path, Path], name: str) -> None:
    tool, first, other = TOOLS[name]
    t = BY_NAME[name]
    types = ["prior_failure"] if first.startswith("[failed]") else ["tool_outcome"]
    snippets = [i["snippet"] for i in query(indexed, t, [tool], types)["result"]["items"]]
    assert any(s.startswith(first) for s in snippets), snippets
    assert query(indexed, t, [other], ["tool_outcome", "prior_failure"])["result"]["items"] == []
