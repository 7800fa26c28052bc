"""Issue 30, item 2: every string of a result is redacted and bounded, and the envelope has a hard ceiling.

A real fixture index (Claude Code sessions written as it writes them, indexed as Obelisk indexes them) whose
session ids, message ids, git branches and one timestamp were then rewritten in the database to 2 MB strings
holding a token (and a short session id and branch holding one), asked through the real CLI. Before issue 30
the refs were copied verbatim: a 25 MB envelope with ``max_total_chars`` 3,000, the token in clear, and no
``oversize``.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from obelisk_session_evidence.bounding import bound as bound_module
from obelisk_session_evidence.bounding.bound import REF_CEILING, TIME_CEILING, envelope_ceiling
from obelisk_session_evidence.contract.wire import Limits
from obelisk_session_evidence.fixtures.transcripts import ClaudeTranscript
from obelisk_session_evidence.service import answer

from tests.conftest import make_request, run_cli, write_config
from tests.evidence_home import AGENTS, EvidenceHome, build_home

TOKEN = "ghp_" + "Wq4Rt7Yu1Io" * 3 + "Pa9"
HUGE = 2 * 1024 * 1024
LIMITS = {"max_sessions": 5, "max_items": 8, "max_snippet_chars": 300, "max_total_chars": 3000}
TYPES = ["prior_failure", "decision", "tool_outcome", "summary"]


def _session(t: ClaudeTranscript, repo: Path) -> None:
    t.user("Run the flaky mkbigid tests.")
    t.bash("pytest -q tests/test_mkbigid.py", "Run pytest", "E   MkBigIdError: cache race\n1 failed", exit_code=1)
    t.say("I decided the mkbigid failure is a race in the cache; the lock goes around the read.")


def _huge(tag: str) -> str:
    return f"{tag}-{TOKEN}-" + "x" * HUGE


def _rename(con: sqlite3.Connection, old: str, new: str) -> None:
    for table, column in (("sessions", "id"), ("messages", "session_id"), ("tool_calls", "session_id"),
                          ("tool_results", "session_id"), ("summaries", "session_id")):
        con.execute(f"UPDATE {table} SET {column} = ? WHERE {column} = ?", (new, old))


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> EvidenceHome:
    tmp = tmp_path_factory.mktemp("bigids")
    home = build_home(tmp, claude=[_session, _session, _session], seed="bigids")
    first, second, third = home.sessions["claude"]
    con = sqlite3.connect(home.db)
    with con:
        # Session 1: a 2 MB id holding the token, and a 2 MB branch.
        _rename(con, first, _huge("s1"))
        con.execute("UPDATE sessions SET git_branch = ? WHERE id = ?", (_huge("branch"), _huge("s1")))
        # Session 2: a short id holding the token, a short branch holding it; 2 MB message and call ids; a 2 MB
        # timestamp (a valid time, then more).
        short = f"s2-{TOKEN}"
        _rename(con, second, short)
        con.execute("UPDATE sessions SET git_branch = ? WHERE id = ?", (f"fix/{TOKEN}", short))
        for (call_id,) in con.execute("SELECT id FROM tool_calls WHERE session_id = ?", (short,)).fetchall():
            con.execute("UPDATE tool_calls SET id = ? WHERE id = ?", (_huge("call"), call_id))
            con.execute("UPDATE tool_results SET tool_use_id = ? WHERE tool_use_id = ?", (_huge("call"), call_id))
        for (uuid,) in con.execute("SELECT uuid FROM messages WHERE session_id = ? AND role = 'assistant' "
                                   "AND text LIKE '%mkbigid%'", (short,)).fetchall():
            con.execute("UPDATE messages SET uuid = ?, timestamp = timestamp || ? WHERE uuid = ?",
                        (_huge("msg"), "9" * HUGE, uuid))
        # Session 3: left as written (the evidence a 2 MB neighbour must not crowd out).
        del third
    con.close()
    # Reading 2 MB ids costs the SQL real time on a busy machine: the deadline is not what this test is about.
    scopes = json.loads(home.config.read_text(encoding="utf-8"))["scopes"]
    write_config(home.config, scopes, transcript_homes=[str(home.home)], deadline_ms=60_000)
    return home


def _request() -> dict[str, Any]:
    return make_request(scope={"agent_id": AGENTS["claude"], "project_id": "demo", "repository_id": "web",
                               "allow_cross_agent": False, "allow_cross_project": False},
                        evidence_types=TYPES, query_terms=["mkbigid"], limits=LIMITS)


def test_huge_ids_and_tokens_in_refs_through_the_cli(home: EvidenceHome, tmp_path: Path) -> None:
    result = run_cli("query", "--db", str(home.db), "--config", str(home.config),
                     stdin=json.dumps(_request()).encode(), env={"HOME": str(tmp_path)}, timeout=300)
    assert result.stderr == "" and result.code == 0, result.stderr[-500:]
    line = result.stdout.encode()
    assert line.count(b"\n") == 1
    assert len(line) <= envelope_ceiling(Limits(**LIMITS)) < HUGE  # the hard ceiling holds
    assert not any(TOKEN[i:i + 8].encode() in line for i in range(len(TOKEN) - 7))
    document = result.document()
    assert document["outcome"] == "ok", document["error"]
    items = document["result"]["items"]
    for item in items:
        for field in ("session_ref", "message_ref", "revision_ref"):
            assert len(item.get(field, "")) <= REF_CEILING
        assert len(item.get("observed_at", "")) <= TIME_CEILING
    # Session 1's items are withheld whole (their session ref cannot be shown): counted, never cut.
    assert not any(i["session_ref"].startswith("s1") for i in items)
    assert document["result"]["truncated"] and document["result"]["omitted_count"] >= 2
    # Session 2's items stay, their refs redacted; the 2 MB message ids and the 2 MB time are left out.
    third_ref = home.sessions["claude"][2]
    second = [i for i in items if i["session_ref"] != third_ref]
    assert len(second) >= 2, items
    assert all("[REDACTED:" in i["session_ref"] and "[REDACTED:" in i["revision_ref"] for i in second)
    assert all("message_ref" not in i for i in second)
    assert any("observed_at" not in i for i in second)
    # Session 3's evidence is whole.
    third = [i for i in items if i["session_ref"] == third_ref]
    assert third and all(i.get("message_ref") and i.get("observed_at") and i.get("revision_ref") for i in third)
    meta = document["provider_meta"]
    assert meta["fields_withheld"] >= 3 and sum(meta["redactions"].values()) >= 4
    assert document["receipt"]["omitted_count"] == document["result"]["omitted_count"]


def test_an_envelope_over_the_ceiling_is_a_typed_oversize_failure(home: EvidenceHome,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The backstop: with the ceiling's frame made smaller than an answer (a fault injected into the constant,
    the computation itself unchanged), the answer is ``oversize``: a typed empty result, no partial output."""
    payload = json.dumps(_request()).encode()
    ok = answer(payload, db_path=home.db, config_path=home.config)
    assert ok.envelope["outcome"] == "ok" and ok.envelope["result"]["items"]
    monkeypatch.setattr(bound_module, "ENVELOPE_FRAME_BYTES", -envelope_ceiling(Limits(**LIMITS)))
    failed = answer(payload, db_path=home.db, config_path=home.config)
    assert failed.exit_code == 3
    assert failed.envelope["outcome"] == "failed" and failed.envelope["error"]["code"] == "oversize"
    assert failed.envelope["result"]["items"] == [] and failed.envelope["receipt"]["result_count"] == 0
    assert "mkbigid" not in json.dumps(failed.envelope)
