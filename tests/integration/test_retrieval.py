"""Retrieval end to end on fixture databases built from code: every planted fact, scope, folding,
redaction, sidechains, hidden rows, canaries, tampered templates, and every schema generation."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from obelisk_session_evidence.fixtures.builder import FixtureInfo, build_fixture
from obelisk_session_evidence.retrieval import engine, planner, small_scope
from obelisk_session_evidence.retrieval.markers import Tokenizers
from obelisk_session_evidence.service import WarmState, answer

from tests.conftest import make_request, scope_entry, write_config

LIMITS = {"max_sessions": 20, "max_items": 20, "max_snippet_chars": 600, "max_total_chars": 12000}


@pytest.fixture(scope="module")
def fx(tmp_path_factory: pytest.TempPathFactory) -> tuple[FixtureInfo, dict[str, Any]]:
    info = build_fixture(tmp_path_factory.mktemp("fx") / "current", generation="current")
    return info, json.loads(info.manifest_path.read_text(encoding="utf-8"))


def _ask(info: FixtureInfo, manifest: dict[str, Any], tmp: Path, *, agent: str, repo: str,
         types: list[str], terms: list[str], limits: dict[str, int] | None = None,
         template_dir: Path | None = None, roots: list[str] | None = None, one_shot: bool = False) -> dict[str, Any]:
    sources = manifest["agents"][agent]
    config = write_config(tmp / f"cfg-{agent}-{repo}.json",
                          [scope_entry(agent, "demo", repo, sources, roots or [manifest["repos"][repo]])],
                          transcript_homes=[str(info.home)])
    request = make_request(scope={"agent_id": agent, "project_id": "demo", "repository_id": repo,
                                  "allow_cross_agent": False, "allow_cross_project": False},
                           evidence_types=types, query_terms=terms, limits=limits or LIMITS)
    # Not one-shot: what a warm process reads, remembered for this answer only.
    return answer(json.dumps(request).encode(), db_path=info.db_path, config_path=config,
                  template_dir=template_dir, warm=None if one_shot else WarmState()).envelope


def _agent_for(manifest: dict[str, Any], source: str) -> str:
    return next(a for a, sources in manifest["agents"].items() if source in sources)


def _shown(fact: dict[str, Any], manifest: dict[str, Any]) -> str:
    text = str(fact["must_contain"])
    if '"exit_code":0' in text:
        return f"[ok] {fact['command']}"  # Codex output JSON is rendered as an outcome header
    if text.startswith("*** ") and "File: " in text:
        return text.split("File: ", 1)[1]  # apply_patch paths are listed, repository-relative
    for root in sorted(manifest["repos"].values(), key=len, reverse=True):
        text = text.replace(root.rstrip("/") + "/", "")
    return text


def test_every_planted_fact_is_found_in_its_own_scope(fx: tuple[FixtureInfo, dict[str, Any]],
                                                      tmp_path: Path) -> None:
    info, manifest = fx
    for fact in manifest["facts"]:
        envelope = _ask(info, manifest, tmp_path, agent=_agent_for(manifest, fact["source"]), repo=fact["repo"],
                        types=[fact["evidence_type"]], terms=fact["terms"])
        assert envelope["outcome"] == "ok", (fact["id"], envelope["error"])
        # The fact's own session: folding never hides a session.
        items = [i for i in envelope["result"]["items"] if i["session_ref"] == fact["session_id"]]
        assert any(i["evidence_type"] == fact["evidence_type"] and _shown(fact, manifest) in i["snippet"]
                   for i in items), (fact["id"], envelope["result"]["items"])


def test_facts_never_cross_agents_or_repositories(fx: tuple[FixtureInfo, dict[str, Any]],
                                                  tmp_path: Path) -> None:
    info, manifest = fx
    for fact in manifest["facts"]:
        for agent in manifest["agents"]:
            for repo in ("alpha-svc", "alpha-svc-wt", "beta-web"):
                if agent == _agent_for(manifest, fact["source"]) and repo == fact["repo"]:
                    continue
                envelope = _ask(info, manifest, tmp_path, agent=agent, repo=repo,
                                types=[fact["evidence_type"]], terms=fact["terms"])
                refs = {i["session_ref"] for i in envelope["result"]["items"]}
                assert fact["session_id"] not in refs, (fact["id"], agent, repo)


def test_canaries_are_never_returned(fx: tuple[FixtureInfo, dict[str, Any]], tmp_path: Path) -> None:
    info, manifest = fx
    canary_sessions = {c["session_id"] for c in manifest["canaries"]}
    for agent in manifest["agents"]:
        envelope = _ask(info, manifest, tmp_path, agent=agent, repo="alpha-svc",
                        types=["prior_failure", "decision", "file_history", "tool_outcome", "summary"],
                        terms=["CANARYTERM", "stripe", "ModuleNotFoundError"])
        assert envelope["outcome"] == "ok"
        assert not canary_sessions & {i["session_ref"] for i in envelope["result"]["items"]}
        assert "CANARYTERM" not in json.dumps(envelope["result"])


def test_hidden_inactive_and_meta_rows_are_excluded(fx: tuple[FixtureInfo, dict[str, Any]],
                                                    tmp_path: Path) -> None:
    info, manifest = fx
    for agent in manifest["agents"]:
        for repo in ("alpha-svc", "beta-web"):
            envelope = _ask(info, manifest, tmp_path, agent=agent, repo=repo,
                            types=["prior_failure", "decision", "tool_outcome", "summary"],
                            terms=manifest["hidden_terms"])
            assert not envelope["result"]["items"], (agent, repo)


def _timeless(text: str) -> str:
    """A snippet without its timings, the date range of a repeat's first item and a regression's label."""
    text = re.sub(r"^\[regression: [^\]]*\] ", "", text)
    text = re.sub(r", \d{4}-\d\d-\d\d to \d{4}-\d\d-\d\d\]", "]", text)
    return re.sub(r"\d+(?:\.\d+)?s\b", "#s", text)


def _same(one: str, other: str) -> bool:
    """The same evidence: equal but for timings and labels, one perhaps cut shorter (a longer label)."""
    a, b = sorted((_timeless(one).removesuffix("…"), _timeless(other).removesuffix("…")), key=len)
    return b.startswith(a)


def test_repeated_failure_is_folded_with_its_count(fx: tuple[FixtureInfo, dict[str, Any]],
                                                   tmp_path: Path) -> None:
    info, manifest = fx
    envelope = _ask(info, manifest, tmp_path, agent="claude-agent", repo="alpha-svc", types=["prior_failure"],
                    terms=["ModuleNotFoundError", "stripe"])
    items = envelope["result"]["items"]
    folded = [i for i in items if i["snippet"].startswith("[repeated in ")]
    assert folded, items
    for item in folded:  # the same failure keeps one item per session, each with the session count
        count = int(item["snippet"].removeprefix("[repeated in ").split(" ", 1)[0])
        same = {i["session_ref"] for i in items if _same(i["snippet"], item["snippet"])}
        assert count >= 2 and len(same) == count, items


def test_subagent_evidence_is_marked(fx: tuple[FixtureInfo, dict[str, Any]], tmp_path: Path) -> None:
    info, manifest = fx
    fact = next(f for f in manifest["facts"] if f["id"] == "claude-webhook-sidechain")
    envelope = _ask(info, manifest, tmp_path, agent="claude-agent", repo="alpha-svc", types=["prior_failure"],
                    terms=fact["terms"])
    assert any(i["snippet"].startswith("[subagent]") for i in envelope["result"]["items"])


def _plant_failure(db: Path, session_id: str, command: str, output: str, when: str) -> None:
    """Append one failed Bash call to a session of a fixture copy, the way Obelisk's indexer writes it."""
    import sqlite3

    con = sqlite3.connect(db)
    with con:
        cwd = con.execute("SELECT project_path FROM sessions WHERE id = ?", (session_id,)).fetchone()[0]
        con.execute("INSERT INTO messages (uuid, session_id, type, timestamp, role, content_type, cwd, source) "
                    "VALUES ('planted-call', ?, 'assistant', ?, 'assistant', 'tool_use', ?, 'claude')",
                    (session_id, when, cwd))
        con.execute("INSERT INTO tool_calls (id, message_uuid, session_id, name, input_json) "
                    "VALUES ('toolu_planted', 'planted-call', ?, 'Bash', ?)",
                    (session_id, json.dumps({"command": command})))
        con.execute("INSERT INTO tool_results (tool_use_id, message_uuid, session_id, content, is_error) "
                    "VALUES ('toolu_planted', 'planted-call', ?, ?, 1)", (session_id, output))
    con.close()


def test_secrets_are_redacted_and_counted(fx: tuple[FixtureInfo, dict[str, Any]], tmp_path: Path) -> None:
    info, manifest = fx
    db = tmp_path / "secrets.sqlite"
    shutil.copyfile(info.db_path, db)
    session = next(f["session_id"] for f in manifest["facts"] if f["id"] == "claude-stripe-failure")
    secrets = {s["kind"]: s["value"] for s in manifest["secrets"]}
    output = (f"Exit code 128\nfatal: unable to access '{secrets['url_credentials']}': auth failed with "
              f"token {secrets['github_token']} and key {secrets['aws_access_key_id']}")
    _plant_failure(db, session, "git push mirror", output, "2026-10-30T10:00:00.000Z")
    moved = info.__class__(**{**info.__dict__, "db_path": db})
    envelope = _ask(moved, manifest, tmp_path, agent="claude-agent", repo="alpha-svc",
                    types=["prior_failure"], terms=["git push", "auth failed"],
                    limits={**LIMITS, "max_snippet_chars": 2000})
    text = json.dumps(envelope)
    assert any("git push mirror" in i["snippet"] for i in envelope["result"]["items"])
    for kind in ("url_credentials", "github_token", "aws_access_key_id"):
        assert secrets[kind] not in text
    assert "pa55word" not in text
    assert "[REDACTED:" in text
    assert sum(envelope["provider_meta"]["redactions"].values()) >= 3


def test_bounds_are_exact_and_explicit(fx: tuple[FixtureInfo, dict[str, Any]], tmp_path: Path) -> None:
    info, manifest = fx
    limits = {"max_sessions": 2, "max_items": 3, "max_snippet_chars": 60, "max_total_chars": 150}
    envelope = _ask(info, manifest, tmp_path, agent="claude-agent", repo="alpha-svc",
                    types=["prior_failure", "decision", "file_history", "tool_outcome", "summary"],
                    terms=["stripe", "billing", "ModuleNotFoundError", "pytest"], limits=limits)
    result = envelope["result"]
    assert len(result["items"]) <= 3
    assert len({i["session_ref"] for i in result["items"]}) <= 2
    assert all(len(i["snippet"]) <= 60 for i in result["items"])
    assert sum(len(i["snippet"]) for i in result["items"]) <= 150
    assert result["truncated"] is True and result["omitted_count"] > 0
    assert envelope["receipt"]["omitted_count"] == result["omitted_count"]


def test_answers_are_deterministic(fx: tuple[FixtureInfo, dict[str, Any]], tmp_path: Path) -> None:
    info, manifest = fx
    first = _ask(info, manifest, tmp_path, agent="claude-agent", repo="alpha-svc",
                 types=["prior_failure", "decision"], terms=["stripe", "billing"])
    second = _ask(info, manifest, tmp_path, agent="claude-agent", repo="alpha-svc",
                  types=["prior_failure", "decision"], terms=["stripe", "billing"])
    assert first["result"] == second["result"] and first["receipt"] == second["receipt"]


def test_receipt_is_content_free(fx: tuple[FixtureInfo, dict[str, Any]], tmp_path: Path) -> None:
    info, manifest = fx
    envelope = _ask(info, manifest, tmp_path, agent="claude-agent", repo="alpha-svc", types=["prior_failure"],
                    terms=["ModuleNotFoundError", "stripe"])
    receipt = json.dumps(envelope["receipt"])
    assert envelope["receipt"]["result_count"] == len(envelope["result"]["items"])
    for item in envelope["result"]["items"]:
        assert item["session_ref"] not in receipt
        assert item.get("message_ref", "§") not in receipt
    for private in ("stripe", "ModuleNotFoundError", "alpha-svc", str(info.home)):
        assert private not in receipt
        assert private not in json.dumps(envelope["provider_meta"])


def _tampered(tmp_path: Path, old: str, new: str, name: str | None = None, out: Path | None = None) -> Path:
    from obelisk_session_evidence.templates.catalog import TEMPLATE_DIR

    if out is None:
        out = tmp_path / "templates"
        shutil.copytree(TEMPLATE_DIR, out)
    names = [name] if name else [p.name for p in out.glob("*.sql")]
    changed = 0
    for file_name in names:
        path = out / file_name
        text = path.read_text(encoding="utf-8")
        changed += old in text
        path.write_text(text.replace(old, new), encoding="utf-8")
    assert changed
    return out


def test_tampered_template_that_leaks_fails_the_whole_result(fx: tuple[FixtureInfo, dict[str, Any]],
                                                            tmp_path: Path) -> None:
    info, manifest = fx
    # Drop the path-boundary '/' everywhere (the scope template too): alpha-svc-evil now matches the
    # alpha-svc root prefix. The scope set keeps it out (real-path check), so drop the evidence templates'
    # scope-set conjunct too: only the re-check of every returned row stands in the way.
    templates = _tampered(tmp_path, "substr(s.project_path, 1, length(r.value) + 1) = r.value || '/'",
                          "substr(s.project_path, 1, length(r.value)) = r.value")
    _tampered(tmp_path, "\n    AND s.id IN (SELECT value FROM json_each(:scope_ids))", "", out=templates)
    _tampered(tmp_path, "since scope_ids", "since", out=templates)
    for _ in range(3):
        envelope = _ask(info, manifest, tmp_path, agent="claude-agent", repo="alpha-svc",
                        types=["prior_failure"], terms=["CANARYTERM", "stripe", "ModuleNotFoundError"],
                        template_dir=templates)
        assert envelope["outcome"] == "failed"
        assert envelope["error"]["code"] == "scope_violation"
        assert envelope["result"]["items"] == [] and envelope["receipt"]["result_count"] == 0


def test_tampered_template_without_scope_is_rejected_before_running(
        fx: tuple[FixtureInfo, dict[str, Any]], tmp_path: Path) -> None:
    info, manifest = fx
    templates = _tampered(tmp_path, "WHERE tc.session_id IN (SELECT id FROM scope_sessions)\n  AND",
                          "WHERE", "prior_failure.tool_results.v3.sql")
    envelope = _ask(info, manifest, tmp_path, agent="claude-agent", repo="alpha-svc", types=["prior_failure"],
                    terms=["stripe"], template_dir=templates)
    assert envelope["outcome"] == "failed"
    assert envelope["error"]["code"] == "template_rejected"


@pytest.mark.parametrize(("old", "new"), [("-- shape: tool_call\n", "-- shape: poem\n"),
                                          ("-- markers: failure\n", "-- markers: limericks\n")])
def test_a_template_declaring_an_unknown_shape_or_markers_is_refused_before_running(
        fx: tuple[FixtureInfo, dict[str, Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, old: str,
        new: str) -> None:
    """A shape or a marker vocabulary the provider does not know (``evidence.SHAPES``, ``terms.MARKERS``): the
    rows could not be shown, or the template not bound, so the request fails closed before any template runs."""
    from obelisk_session_evidence.index import connection

    info, manifest = fx
    name = "prior_failure.tool_results.v3.sql" if "shape" in old else "prior_failure.narration.v2.sql"
    templates = _tampered(tmp_path, old, new, name)
    ran: list[str] = []
    original = connection.ReadSnapshot._execute

    def recording(self: Any, sql: str, params: Any) -> Any:
        ran.append(sql.split("\n", 1)[0])
        return original(self, sql, params)

    monkeypatch.setattr(connection.ReadSnapshot, "_execute", recording)
    envelope = _ask(info, manifest, tmp_path, agent="claude-agent", repo="alpha-svc", types=["prior_failure"],
                    terms=["stripe"], template_dir=templates)
    assert envelope["outcome"] == "failed"
    assert envelope["error"]["code"] == "template_rejected"
    assert envelope["result"]["items"] == []
    assert not [line for line in ran if line.startswith("-- id:")], ran  # no template ran, not even the scope's


@pytest.mark.parametrize("generation", ["current", "migrated", "trigram", "legacy"])
def test_every_schema_generation(generation: str, tmp_path: Path) -> None:
    info = build_fixture(tmp_path / generation, generation=generation)  # type: ignore[arg-type]
    manifest = json.loads(info.manifest_path.read_text(encoding="utf-8"))
    fact = next(f for f in manifest["facts"] if f["id"] == "claude-stripe-failure")
    envelope = _ask(info, manifest, tmp_path, agent="claude-agent", repo="alpha-svc",
                    types=["prior_failure", "summary"], terms=fact["terms"])
    meta = envelope["provider_meta"]
    if generation == "legacy":
        # The migrated columns (visibility, is_meta, source) are missing: templates needing them are
        # skipped, disclosed by evidence type, never run without their predicates.
        assert envelope["outcome"] == "ok"
        assert set(meta["skipped_evidence_types"]) == {"prior_failure", "summary"}
        assert envelope["result"]["items"] == []
        return
    assert envelope["outcome"] == "ok", envelope["error"]
    assert meta["tokenizer"] == ("trigram" if generation == "trigram" else "unicode61")
    assert any(i["session_ref"] == fact["session_id"] for i in envelope["result"]["items"])


def test_a_short_term_under_trigram_keeps_what_names_any_term(tmp_path: Path) -> None:
    """Issue 36: under a trigram index a term of fewer than three characters is a disclosed post-filter: an item
    naming any one term is kept (one term named is enough), never dropped for naming only one."""
    info = build_fixture(tmp_path / "trigram", generation="trigram")
    manifest = json.loads(info.manifest_path.read_text(encoding="utf-8"))
    fact = next(f for f in manifest["facts"] if f["id"] == "claude-stripe-failure")
    envelope = _ask(info, manifest, tmp_path, agent="claude-agent", repo="alpha-svc", types=["prior_failure"],
                    terms=["ModuleNotFoundError", "zq"])
    assert envelope["outcome"] == "ok", envelope["error"]
    assert "trigram_short_term_post_filter" in envelope["provider_meta"]["degradations"]
    items = envelope["result"]["items"]
    assert any(i["session_ref"] == fact["session_id"] for i in items), items


def test_crafted_database_joining_another_repositorys_row_fails(fx: tuple[FixtureInfo, dict[str, Any]],
                                                                tmp_path: Path) -> None:
    """A tool call filed under an in-scope session whose message belongs to the canary session."""
    import sqlite3

    info, manifest = fx
    db = tmp_path / "crafted.sqlite"
    shutil.copyfile(info.db_path, db)
    in_scope = next(f["session_id"] for f in manifest["facts"] if f["id"] == "claude-stripe-failure")
    canary = manifest["canaries"][0]
    con = sqlite3.connect(db)
    with con:
        con.execute("UPDATE tool_calls SET session_id = ? WHERE id = ?", (in_scope, canary["tool_ids"][0]))
    con.close()
    moved = info.__class__(**{**info.__dict__, "db_path": db})
    envelope = _ask(moved, manifest, tmp_path, agent="claude-agent", repo="alpha-svc",
                    types=["prior_failure", "tool_outcome"], terms=canary["terms"])
    assert envelope["outcome"] == "failed"
    assert envelope["error"]["code"] == "scope_violation"
    assert envelope["result"]["items"] == []


def test_fts_first_and_scope_set_plans_return_the_same_evidence(
        fx: tuple[FixtureInfo, dict[str, Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The FTS-first plan runs under a statement budget; past it the scope-set plan runs. Same answer."""
    info, manifest = fx
    ask = {"agent": "claude-agent", "repo": "alpha-svc", "types": ["prior_failure", "decision"],
           "terms": ["stripe", "billing", "ModuleNotFoundError"]}
    monkeypatch.setattr(planner, "SMALL_SCOPE_SESSIONS", 0)  # the small-scope plan has its own test below
    scoped = _ask(info, manifest, tmp_path, **ask)  # type: ignore[arg-type]
    # A small scope (at most SCOPE_FIRST_SESSIONS sessions) goes straight to the scope-set plan.
    assert "prior_failure.narration.v2" in scoped["provider_meta"]["templates_run"]
    assert "decision.messages.v2" in scoped["provider_meta"]["templates_run"]
    assert not any(".fts_first." in t for t in scoped["provider_meta"]["templates_run"])
    monkeypatch.setattr(planner, "SCOPE_FIRST_SESSIONS", 0)  # as a larger scope would: FTS-first first
    fast = _ask(info, manifest, tmp_path, **ask)  # type: ignore[arg-type]
    assert "prior_failure.narration.fts_first.v2" in fast["provider_meta"]["templates_run"]
    assert "decision.messages.fts_first.v2" in fast["provider_meta"]["templates_run"]
    monkeypatch.setitem(planner.BUDGETS, "fts_first", planner.Budget(0.0))
    slow = _ask(info, manifest, tmp_path, **ask)  # type: ignore[arg-type]
    assert "prior_failure.narration.v2" in slow["provider_meta"]["templates_run"]
    assert "decision.messages.v2" in slow["provider_meta"]["templates_run"]
    assert fast["result"]["items"] == slow["result"]["items"] == scoped["result"]["items"]
    assert fast["result"]["items"], "no item: the comparison shows nothing"


def test_small_scope_plans_return_the_rows_of_the_full_plans(
        fx: tuple[FixtureInfo, dict[str, Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """prior_failure.narration.scope_rows and decision.messages.scope_rows (the scope's marker-word messages,
    matched against the terms alone) yield exactly the rows of prior_failure.narration and decision.messages
    (the full FTS expression over the scope), bm25 aside, and so the same answer; with the small-scope plan
    off, the full plans answer. The marker-word messages are found in the scope's texts (``.cue_text``); with
    that read refused (too many rows) or undecidable (a text over the cap), by FTS5 (``.cue_rows``): the same
    rowids, the same answer."""
    info, manifest = fx
    seen: dict[str, list[list[tuple[str, Any]]]] = {}
    original = engine.read_rows
    from_text, from_fts = small_scope.rowids_from_texts, small_scope.rowids_by_fts
    cue: dict[str, list[tuple[str, tuple[int, ...] | None]]] = {"text": [], "fts": []}

    def recording(run: Any, steps: Any, *args: Any) -> Any:
        used, rows = original(run, steps, *args)
        if steps[-1].template.id in ("prior_failure.narration", "decision.messages"):
            names = run.reads.snap.last_columns
            seen.setdefault(used.id, []).append(
                sorted(sorted((k, v) for k, v in zip(names, row, strict=True) if k != "rank") for row in rows))
        return used, rows

    def text_rowids(reads: Any, listing: Any, *args: Any) -> Any:
        found = from_text(reads, listing, *args)
        cue["text"].append((listing.plan_of, found))
        return found

    def fts_rowids(reads: Any, cue_rows: Any, values: Any) -> Any:
        found = from_fts(reads, cue_rows, values)
        cue["fts"].append((cue_rows.plan_of, found))
        return found

    monkeypatch.setattr(engine, "read_rows", recording)
    monkeypatch.setattr(small_scope, "rowids_from_texts", text_rowids)
    monkeypatch.setattr(small_scope, "rowids_by_fts", fts_rowids)
    compared = 0
    rows_of: dict[str, list[list[list[tuple[str, Any]]]]] = {}
    for agent, repo, terms in (("claude-agent", "alpha-svc", ["stripe", "billing", "ModuleNotFoundError"]),
                               ("claude-agent", "alpha-svc", ["ECONNREFUSED", "timeout"]),
                               ("codex-agent", "harbor-api", ["pytest", "error"])):
        if agent not in manifest["agents"] or repo not in manifest["repos"]:
            continue
        answers = {}
        by_text: dict[str, tuple[int, ...] | None] = {}
        seen.clear()
        rows_cap, cap_cap, chars_cap = planner.CUE_TEXT_ROWS, planner.CUE_TEXT_CAP, planner.CUE_TEXT_CHARS
        for mode, sessions, rows, cap, chars in (("text", 64, rows_cap, cap_cap, chars_cap),
                                                 ("fts", 64, 0, cap_cap, chars_cap),
                                                 ("long", 64, rows_cap, 1, chars_cap),
                                                 ("much", 64, rows_cap, cap_cap, 1),
                                                 ("full", 0, rows_cap, cap_cap, chars_cap)):
            cue["text"].clear()
            cue["fts"].clear()
            monkeypatch.setattr(planner, "SMALL_SCOPE_SESSIONS", sessions)
            monkeypatch.setattr(planner, "CUE_TEXT_ROWS", rows)
            monkeypatch.setattr(planner, "CUE_TEXT_CAP", cap)
            monkeypatch.setattr(planner, "CUE_TEXT_CHARS", chars)
            monkeypatch.setitem(planner.BUDGETS, "fts_first", planner.Budget(0.0 if mode == "full" else 25.0))
            answers[mode] = _ask(info, manifest, tmp_path, agent=agent, repo=repo,
                                 types=["prior_failure", "decision"], terms=terms)
            if mode == "text" and cue["text"]:
                assert not cue["fts"] and all(found is not None for _, found in cue["text"]), cue
                by_text = dict(cue["text"])
            elif mode in ("fts", "long", "much") and cue["fts"]:
                assert all(found is None for _, found in cue["text"]), cue
                assert dict(cue["fts"]) == by_text, (mode, cue["fts"], by_text)  # the same rowids
                compared += 1
        run = answers["text"]["provider_meta"]["templates_run"]
        if "prior_failure.narration.term_probe.v1" in run:  # no message of the scope matches the terms at all
            assert "prior_failure.narration.term_probe.v1" in answers["full"]["provider_meta"]["templates_run"]
            assert all(a["result"]["items"] == answers["full"]["result"]["items"] for a in answers.values())
            continue
        for mode in ("text", "fts", "long", "much"):
            ran = answers[mode]["provider_meta"]["templates_run"]
            assert "prior_failure.narration.scope_rows.v2" in ran and "decision.messages.scope_rows.v2" in ran
        assert "prior_failure.narration.v2" in answers["full"]["provider_meta"]["templates_run"]
        assert "decision.messages.v2" in answers["full"]["provider_meta"]["templates_run"]
        for mode in ("text", "fts", "long", "much"):
            assert answers[mode]["result"] == answers["full"]["result"] | {
                "index_revision": answers[mode]["result"]["index_revision"]}
        for full in ("prior_failure.narration", "decision.messages"):
            assert len(seen[f"{full}.scope_rows"]) == 4 and len(seen[full]) == 1
            assert all(rows == seen[full][0] for rows in seen[f"{full}.scope_rows"])  # bm25 aside, the same rows
            rows_of.setdefault(full, []).append(seen[full][0])
    assert compared >= 3, "the texts' rowids were never compared with FTS5's"
    for full in ("prior_failure.narration", "decision.messages"):
        assert any(any(rows) for rows in rows_of[full]), f"no case found a {full} row: the test shows nothing"


def test_a_small_scopes_terms_are_decided_in_python_before_fts5_looks_up_rows(
        fx: tuple[FixtureInfo, dict[str, Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The marker rows a small scope's texts give are narrowed to those that also hold the query terms (the
    texts are already tokenized), so FTS5 looks up fewer rows by rowid; its MATCH still decides each, and the
    answer is the one FTS5 alone gives (the term matcher off)."""
    info, manifest = fx
    original = small_scope.holding_terms
    narrowed: list[tuple[int, int]] = []

    def spy(reads: Any, rowids: tuple[int, ...]) -> tuple[int, ...]:
        kept = original(reads, rowids)
        assert set(kept) <= set(rowids)
        narrowed.append((len(rowids), len(kept)))
        return kept

    monkeypatch.setattr(small_scope, "holding_terms", spy)
    ask = {"agent": "claude-agent", "repo": "alpha-svc", "types": ["prior_failure", "decision"]}
    shown = 0
    for terms in (["stripe", "billing", "ModuleNotFoundError"], ["ECONNREFUSED", "timeout"], ["error"]):
        answers = []
        for one_shot, matcher_on in ((False, True), (True, True), (False, False), (True, False)):
            # one-shot: nothing is remembered, so the terms are matched first and the markers only where they are
            if not matcher_on:
                monkeypatch.setattr(Tokenizers, "term_matcher", lambda _self, _terms: None)
            answers.append(_ask(info, manifest, tmp_path, **ask, terms=terms, one_shot=one_shot))  # type: ignore[arg-type]
            monkeypatch.undo()
            monkeypatch.setattr(small_scope, "holding_terms", spy)
        assert all(a["result"]["items"] == answers[0]["result"]["items"] for a in answers), terms
        shown += bool(answers[0]["result"]["items"])
    assert any(kept < given for given, kept in narrowed), narrowed  # fewer rows looked up by FTS5
    assert shown, "no item: the comparison shows nothing"


def test_the_term_probe_answers_only_for_terms_the_scope_never_mentions(
        fx: tuple[FixtureInfo, dict[str, Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The term probe (``X.term_probe``) answers the FTS templates with no row when no message of the scope
    matches the terms; then the answer equals the one the templates themselves give. A term of another scope
    only is probed away too; a term of this scope is not."""
    info, manifest = fx
    probes = ("prior_failure.narration.term_probe.v1", "decision.messages.term_probe.v1",
              "decision.reasoning.term_probe.v1")
    ask = {"agent": "claude-agent", "repo": "alpha-svc", "types": ["prior_failure", "decision"]}
    canary = manifest["canaries"][0]  # planted outside every enabled scope
    original = engine.READERS["term_probe"]
    for terms, probed in ((["zzqqxx-never-written"], True), (canary["terms"][:1], True),
                          (["stripe", "billing", "ModuleNotFoundError"], False)):
        monkeypatch.setitem(engine.READERS, "term_probe", original)
        with_probe = _ask(info, manifest, tmp_path, **ask, terms=terms)  # type: ignore[arg-type]
        run = with_probe["provider_meta"]["templates_run"]
        assert all((p in run) == probed for p in probes), (terms, run)
        monkeypatch.setitem(engine.READERS, "term_probe", lambda *a: None)  # the probe off: every template runs
        without = _ask(info, manifest, tmp_path, **ask, terms=terms)  # type: ignore[arg-type]
        assert not any(p in without["provider_meta"]["templates_run"] for p in probes)
        assert "prior_failure.narration.v2" in without["provider_meta"]["templates_run"] or \
            "prior_failure.narration.scope_rows.v2" in without["provider_meta"]["templates_run"]
        assert with_probe["result"]["items"] == without["result"]["items"]
        if not probed:
            assert with_probe["result"]["items"], "no item: the comparison shows nothing"


def test_a_one_shot_query_uses_the_small_scope_plan_from_texts_and_answers_the_same(
        fx: tuple[FixtureInfo, dict[str, Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``query`` answers one request and exits, so it never reads a small scope's FTS marker rows
    (``.cue_rows``: they pay only when remembered). It finds them in the scope's texts (``.cue_text``) and
    uses the small-scope plan, as ``serve --stdio`` does. Same answer from both, and in process: the one-shot
    read runs ``.cue_text`` and never ``.cue_rows``."""
    import subprocess

    from obelisk_session_evidence.index import connection

    from tests.conftest import CLI, REPO

    info, manifest = fx
    agent, repo = "claude-agent", "alpha-svc"
    config = write_config(tmp_path / "cfg.json",
                          [scope_entry(agent, "demo", repo, manifest["agents"][agent], [manifest["repos"][repo]])],
                          transcript_homes=[str(info.home)])
    request = json.dumps(make_request(scope={"agent_id": agent, "project_id": "demo", "repository_id": repo,
                                             "allow_cross_agent": False, "allow_cross_project": False},
                                      evidence_types=["prior_failure", "decision"],
                                      query_terms=["stripe", "billing", "ModuleNotFoundError"], limits=LIMITS))
    common = ["--db", str(info.db_path), "--config", str(config)]
    one = subprocess.run([*CLI, "query", *common], input=request.encode(), capture_output=True, cwd=REPO,
                         timeout=120, check=False)
    served = subprocess.run([*CLI, "serve", "--stdio", *common], input=(request + "\n").encode() * 2,
                            capture_output=True, cwd=REPO, timeout=120, check=False)
    assert one.returncode == 0 and served.returncode == 0, (one.stderr[-300:], served.stderr[-300:])
    query_doc = json.loads(one.stdout)
    serve_docs = [json.loads(line) for line in served.stdout.splitlines() if line.strip()]
    assert len(serve_docs) == 2
    for doc in (query_doc, *serve_docs):
        run = doc["provider_meta"]["templates_run"]
        assert "prior_failure.narration.scope_rows.v2" in run and "decision.messages.scope_rows.v2" in run, run
    ids: list[str] = []
    original = connection.ReadSnapshot._execute

    def recording(self: Any, sql: str, params: Any) -> Any:
        if sql.startswith("-- id: "):
            ids.append(sql.split("\n", 1)[0].removeprefix("-- id: "))
        return original(self, sql, params)

    monkeypatch.setattr(connection.ReadSnapshot, "_execute", recording)
    in_process = answer(request.encode(), db_path=info.db_path, config_path=config).envelope  # no WarmState
    assert "prior_failure.narration.cue_text" in ids and "decision.messages.cue_text" in ids, ids
    assert not any(i.endswith(".cue_rows") for i in ids), ids
    assert in_process["result"] == query_doc["result"] | {"index_revision": in_process["result"]["index_revision"]}
    assert query_doc["result"]["items"] and query_doc["result"] == serve_docs[0]["result"] == serve_docs[1]["result"]


def test_the_term_probe_gets_a_short_budget_when_the_small_scope_plans_stand_ready(
        fx: tuple[FixtureInfo, dict[str, Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A small scope under the default tokenizer has its marker templates' small-scope plans (a few ms whatever
    the terms), so the term probe runs under ``SMALL_SCOPE_PROBE_BUDGET_MS``; a larger scope, where the probe
    can spare a full plan, under ``TERM_PROBE_BUDGET_MS``. Past its budget the templates run: same answer."""
    from obelisk_session_evidence.index import connection

    info, manifest = fx
    budgets: list[float | None] = []
    original = connection.ReadSnapshot.rows

    def recording(self: Any, sql: str, params: Any = (), *, budget_ms: float | None = None) -> Any:
        if sql.startswith("-- id: ") and ".term_probe\n" in sql.split("\n", 1)[0] + "\n":
            budgets.append(budget_ms)
        return original(self, sql, params, budget_ms=budget_ms)

    monkeypatch.setattr(connection.ReadSnapshot, "rows", recording)
    ask = {"agent": "claude-agent", "repo": "alpha-svc", "types": ["prior_failure", "decision"],
           "terms": ["stripe", "billing", "ModuleNotFoundError"]}
    answers = {}
    probe = planner.BUDGETS["term_probe"]
    for small, budget in ((True, probe.beside_texts_ms), (False, probe.ms)):
        budgets.clear()
        monkeypatch.setattr(planner, "SMALL_SCOPE_SESSIONS", 64 if small else 0)
        answers[small] = _ask(info, manifest, tmp_path, **ask)  # type: ignore[arg-type]
        assert budgets == [budget], (small, budgets)
    assert probe.beside_texts_ms is not None and probe.beside_texts_ms < probe.ms
    monkeypatch.setitem(planner.BUDGETS, "term_probe", probe._replace(beside_texts_ms=0.0))  # always past it
    monkeypatch.setattr(planner, "SMALL_SCOPE_SESSIONS", 64)
    past = _ask(info, manifest, tmp_path, **ask)  # type: ignore[arg-type]
    assert past["result"]["items"] == answers[True]["result"]["items"] == answers[False]["result"]["items"]
    assert past["result"]["items"], "no item: the comparison shows nothing"
