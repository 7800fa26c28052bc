"""The evaluation corpus is sound, the evaluation runs, and ``tools/evaluate`` reports and gates (the scorer
on hand-made answers: tests/unit/test_scorer.py).

Soundness: at least 60 situations, both agents, every format class, negatives, and every required fact's
key phrase present in a row of its own session in the *built database* (read back with SQL, not taken from
the generator); negative terms occur in no visible row of the scope they are asked under. The recall gate
(recall >= 0.95 and 0 false items on the corpus, on the corpus reworded by seeds 12 and 13, and on
real-obelisk-formats) is marked ``recall_gate`` and runs only with ``OBELISK_RECALL_GATE=1`` until retrieval
reaches it.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.realobelisk import shared_dir
from tools.devkit.corpus import Corpus, build_corpus, build_heldout
from tools.devkit.evaluation import formats as formats_mod
from tools.devkit.evaluation.report import figures
from tools.devkit.evaluation.runner import Outcome, run_evalset
from tools.devkit.evaluation.situation import Situation

REPO = Path(__file__).resolve().parents[2]
REQUIRED_CLASSES = {
    # tool outputs and build tools
    "codex.output.json", "codex.output.text", "codex.output.text_total_lines", "codex.exec_command",
    "codex.shell_command", "codex.shell.argv", "codex.shell.bash_lc", "claude.Bash.is_error",
    "build_tool.docker", "build_tool.npm_script", "build_tool.inner_step",
    # edits
    "codex.apply_patch.function", "codex.apply_patch.freeform", "codex.apply_patch.argv",
    "codex.apply_patch.heredoc", "edit.add", "edit.delete", "edit.move", "edit.two_in_one_file",
    "claude.Edit", "claude.MultiEdit", "claude.Write", "claude.NotebookEdit",
    # sidechains, summaries, worktrees, repeats
    "claude.Task.sidechain", "codex.child_thread", "claude.compaction", "claude.away_summary",
    "claude.ai-title", "worktree", "repeat.multi_session",
    # resolutions and decisions
    "resolution.success", "resolution.root_cause", "resolution.fix_statement",
    "resolution.user_supplies.package", "resolution.user_supplies.credential",
    "resolution.user_supplies.permission", "resolution.zh", "resolution.ja", "decision.user",
    "decision.assistant",
    # terms
    "cjk.zh", "cjk.ja", "phrase.case", "phrase.punctuation", "path.relative_term", "path.absolute_term",
    "term.tool_output_only", "shared_phrase",
    # negatives
    "negative", "negative.not_stored",
    # what a session concluded, tools by name (issue 35)
    "wrapup.final", "wrapup.quiet", "codex.wrapup", "wrapup.negative", "claude.tool_name", "mcp.tool_name",
    "codex.tool_name", "tool_name.negative", "negative.in_scope",
    # evidence that knows what came after (issue 32)
    "superseded_decision", "regression", "flood", "needle", "variant.term", "variant.command", "cjk.ko",
    "resolution.user_grant", "budget.types",
}
_TEXT_SQL = {
    "messages": "SELECT session_id, text FROM messages WHERE visibility = 'visible' AND is_meta = 0",
    "tool_calls": "SELECT session_id, input_json FROM tool_calls",
    "tool_names": "SELECT session_id, name FROM tool_calls",
    "tool_results": "SELECT session_id, content FROM tool_results",
    "summaries": "SELECT session_id, content FROM summaries",
    "sessions": "SELECT id, title FROM sessions",
}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    return build_corpus(tmp_path_factory.mktemp("eval") / "corpus", seed=11)


@pytest.fixture(scope="module")
def corpus_outcomes(corpus: Corpus) -> list[Outcome]:
    return run_evalset(corpus.evalset)


def _leaves(value: str) -> list[str]:
    out = [value]
    if value.startswith(("{", "[", '"')):
        try:
            stack: list[Any] = [json.loads(value)]
        except ValueError:
            return out
        while stack:
            item = stack.pop()
            if isinstance(item, str):
                out.append(item)
            elif isinstance(item, list):
                stack.extend(item)
            elif isinstance(item, dict):
                stack.extend(item.values())
    return out


def _db_texts(db: Path) -> dict[str, list[str]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro&immutable=1", uri=True)
    try:
        texts: dict[str, list[str]] = {}
        for sql in _TEXT_SQL.values():
            for sid, value in conn.execute(sql):
                if isinstance(value, str):
                    texts.setdefault(sid, []).extend(_leaves(value))
        return texts
    finally:
        conn.close()


def _holds(text: str, term: str, sit: Situation) -> bool:
    """Whether ``text`` holds ``term``: anywhere, or, for a negative of term variants (another word holding the
    term, ``tests`` inside ``contests``), as a word of its own."""
    if any(c.endswith("variant.term") for c in sit.classes):
        return re.search(rf"(?<![a-z0-9]){re.escape(term.casefold())}(?![a-z0-9])", text.casefold()) is not None
    return term.casefold() in text.casefold()


def test_corpus_is_large_and_covers_every_class(corpus: Corpus) -> None:
    sits = corpus.evalset.situations
    positives = [s for s in sits if not s.negative]
    assert len(sits) >= 60
    assert len(positives) >= 50
    assert {s.source for s in positives} == {"claude", "codex"}
    assert sum(1 for s in sits if s.negative) >= 10
    assert len({s.id for s in sits}) == len(sits)
    covered = {c for s in sits for c in s.classes}
    assert REQUIRED_CLASSES - covered == set()
    for s in positives:
        assert s.facts and s.terms and s.evidence_types
        assert all(f.evidence_type in s.evidence_types for f in s.facts)


def test_required_facts_are_in_the_built_database(corpus: Corpus) -> None:
    texts = _db_texts(corpus.evalset.db_path)
    for sit in corpus.evalset.situations:
        for fact in sit.facts:
            assert corpus.evalset.sessions[fact.session_id] == (sit.source, sit.repository), sit.id
            assert any(fact.phrase in t for t in texts.get(fact.session_id, [])), sit.id


def test_negative_terms_occur_only_outside_their_scope(corpus: Corpus) -> None:
    texts = _db_texts(corpus.evalset.db_path)
    everywhere = [t.casefold() for ts in texts.values() for t in ts]
    for sit in (s for s in corpus.evalset.situations if s.negative):
        in_scope = [sid for sid, scope in corpus.evalset.sessions.items() if scope == (sit.source, sit.repository)]
        for term in sit.terms:
            if "negative.in_scope" in sit.classes:  # in the scope, but not as the evidence asked (a wrap-up)
                assert any(term.casefold() in t.casefold() for sid in in_scope for t in texts.get(sid, [])), sit.id
                continue
            assert not any(_holds(t, term, sit) for sid in in_scope for t in texts.get(sid, [])), sit.id
            # A negative of a variant asks for what the scope holds only inside other words or other commands.
            variant = any(c.startswith("variant.") for c in sit.classes)
            if "negative.not_stored" not in sit.classes and not term.startswith("osprey-legacy") and not variant:
                assert any(term.casefold() in t for t in everywhere), f"{sit.id}: term occurs nowhere"


def test_transcripts_are_written_the_way_the_tools_write_them(corpus: Corpus) -> None:
    lines = [line for p in corpus.home.rglob("*.jsonl") for line in p.read_text(encoding="utf-8").splitlines()]
    blob = "\n".join(lines)
    for marker in ('"type":"compacted"', '"subtype":"compact_boundary"', '"isCompactSummary":true',
                   '"type":"collab_agent_spawn_end"', '\\"command\\":[\\"apply_patch\\"', "apply_patch <<'PATCH'",
                   '"type":"custom_tool_call"', '"name":"exec_command"', '"name":"shell_command"',
                   '"role":"developer"', '"type":"summary"', '"subtype":"away_summary"', '"type":"ai-title"'):
        assert marker in blob, marker
    assert list(corpus.home.rglob("subagents/agent-*.jsonl"))
    assert (corpus.home / "src" / "harbor-api-wt-queue").is_dir()
    if (corpus.home / "src" / "harbor-api" / ".git").is_dir():
        assert (corpus.home / "src" / "harbor-api-wt-queue" / ".git").is_file()  # a git worktree


def test_corpus_is_deterministic_by_seed(corpus: Corpus, tmp_path: Path) -> None:
    again = build_corpus(tmp_path / "again", seed=11)
    other = build_corpus(tmp_path / "other", seed=12)

    def doc(c: Corpus) -> str:
        return (c.out_dir / "situations.json").read_text(encoding="utf-8").replace(str(c.out_dir), "<out>")

    assert doc(again) == doc(corpus)
    assert doc(other) != doc(corpus)


@pytest.mark.parametrize("seed", [12, 13])
def test_other_seeds_reword_the_cues_and_stay_sound(seed: int, corpus: Corpus, tmp_path: Path) -> None:
    other = build_corpus(tmp_path / f"seed{seed}", seed=seed)
    texts = _db_texts(other.evalset.db_path)
    for sit in other.evalset.situations:
        for fact in sit.facts:
            assert any(fact.phrase in t for t in texts.get(fact.session_id, [])), sit.id

    def cue_phrases(c: Corpus) -> set[str]:
        return {f.phrase for s in c.evalset.situations for f in s.facts
                if f.kind.startswith(("resolution.root_cause", "resolution.fix", "user_supplies", "decision"))}

    assert len(cue_phrases(other) - cue_phrases(corpus)) >= 12
    assert [s.id for s in other.evalset.situations] == [s.id for s in corpus.evalset.situations]


def test_build_refuses_a_foreign_directory(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("x", encoding="utf-8")
    with pytest.raises(ValueError, match="refusing"):
        build_corpus(tmp_path)
    assert (tmp_path / "keep.txt").exists()


def test_corpus_evaluation_holds_scope_and_answers_every_request(corpus_outcomes: list[Outcome]) -> None:
    fig = figures("corpus", corpus_outcomes)
    assert fig["scope_violations"] == 0
    assert fig["not_ok_outcomes"] == 0
    assert fig["required_facts"] >= 60
    print(json.dumps({k: fig[k] for k in ("recall", "false_items", "snippet_chars_per_answer", "latency_ms")}))


# --- the held-out set ------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def heldout(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    return build_heldout(tmp_path_factory.mktemp("eval") / "heldout")


def test_heldout_set_is_sound_and_apart_from_the_corpus(heldout: Corpus, corpus: Corpus) -> None:
    sits = heldout.evalset.situations
    positives = [s for s in sits if not s.negative]
    assert len(positives) >= 15 and {s.source for s in positives} == {"claude", "codex"}
    assert any(s.negative for s in sits)
    texts = _db_texts(heldout.evalset.db_path)
    for sit in sits:
        for fact in sit.facts:
            assert heldout.evalset.sessions[fact.session_id] == (sit.source, sit.repository), sit.id
            assert any(fact.phrase in t for t in texts.get(fact.session_id, [])), sit.id
        if sit.negative:
            in_scope = [sid for sid, sc in heldout.evalset.sessions.items() if sc == (sit.source, sit.repository)]
            assert not any(_holds(t, term, sit) for term in sit.terms for sid in in_scope
                           for t in texts.get(sid, [])), sit.id
    # Written apart: no situation id or key phrase of the corpus is reused (a common command such as
    # "npm run build" may be asked in both).
    assert not {s.id for s in corpus.evalset.situations} & {s.id for s in sits}
    assert not {f.phrase for s in corpus.evalset.situations for f in s.facts} & {f.phrase for s in sits
                                                                                   for f in s.facts}


# --- real-obelisk-formats -----------------------------------------------------------------------------------

def _formats_dir() -> Path:
    path = shared_dir() / "real-obelisk-formats"
    if not (path / "facts.json").is_file():
        pytest.skip(f"real-obelisk-formats not found at {path}")
    return path


def test_formats_set_asks_every_fact_and_its_negatives() -> None:
    evalset = formats_mod.formats_evalset(_formats_dir())
    marker = formats_mod.HOME / formats_mod.MARKER
    stamp = marker.stat().st_mtime_ns
    formats_mod.materialize(_formats_dir())  # idempotent: nothing re-extracted
    assert marker.stat().st_mtime_ns == stamp
    positives = [s for s in evalset.situations if not s.negative]
    assert len(positives) == 55  # 56 stored facts less the fake secret
    assert {s.source for s in positives} == {"claude", "codex"}
    assert any(s.id.endswith("-not-stored") for s in evalset.situations)
    assert sum(1 for s in evalset.situations if s.negative) > len(positives)
    for sit in positives:
        assert evalset.sessions[sit.facts[0].session_id] == (sit.source, sit.repository)


# --- tools/evaluate -----------------------------------------------------------------------------------------

def _tool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(REPO / "tools" / "evaluate"), *args], capture_output=True,
                          text=True, check=False, cwd=REPO)


def test_tool_reports_figures_and_applies_thresholds(tmp_path: Path, corpus: Corpus) -> None:
    out = tmp_path / "figures.json"
    done = _tool("--corpus", "--json", str(out), "--min-recall", "0", "--max-false-items", "1000")
    assert done.returncode == 0, done.stderr
    doc = json.loads(out.read_text(encoding="utf-8"))
    fig = doc["sets"][0]
    assert fig["evalset"] == "evaluation-corpus" and fig["scope_violations"] == 0
    for key in ("recall_by_evidence_type", "recall_by_agent", "snippet_chars_per_answer", "latency_ms",
                "snippet_chars_per_item", "snippet_chars_per_answer_5_to_8_items"):
        assert key in fig
    assert "recall of required facts" in done.stdout
    phrases = {f.phrase for s in corpus.evalset.situations for f in s.facts}
    terms = {t for s in corpus.evalset.situations for t in s.terms}
    labels = {c for s in corpus.evalset.situations for c in s.classes}  # class names are the corpus's own labels
    shown = done.stdout
    for label in sorted(labels, key=len, reverse=True):
        shown = shown.replace(f"`{label}`", "")
    assert not any(p in shown for p in phrases | terms if len(p) > 4)  # figures only, no content
    assert _tool("--corpus", "--min-recall", "1.01").returncode == 1


# --- the gate (switched on by the coordinator once retrieval reaches it) -----------------------------------

gate = pytest.mark.skipif(os.environ.get("OBELISK_RECALL_GATE") != "1",
                          reason="recall gate is off (set OBELISK_RECALL_GATE=1)")


@pytest.mark.recall_gate
@gate
def test_recall_gate_on_the_corpus(corpus_outcomes: list[Outcome]) -> None:
    fig = figures("corpus", corpus_outcomes)
    assert fig["recall"] >= 0.95, fig["missed"]
    assert fig["false_items"] == 0, fig["false_item_situations"]


@pytest.mark.recall_gate
@gate
@pytest.mark.parametrize("seed", [12, 13])
def test_recall_gate_on_reworded_cues(seed: int, tmp_path: Path) -> None:
    fig = figures(f"corpus seed {seed}", run_evalset(build_corpus(tmp_path / "c", seed=seed).evalset))
    assert fig["recall"] >= 0.95, fig["missed"]
    assert fig["false_items"] == 0, fig["false_item_situations"]


@pytest.mark.recall_gate
@gate
def test_recall_gate_on_the_heldout_set(heldout: Corpus) -> None:
    fig = figures("held-out", run_evalset(heldout.evalset))
    assert fig["recall"] >= 0.95, fig["missed"]
    assert fig["false_items"] == 0, fig["false_item_situations"]
    assert fig["scope_violations"] == 0


@pytest.mark.recall_gate
@gate
def test_recall_gate_on_real_obelisk_formats() -> None:
    fig = figures("formats", run_evalset(formats_mod.formats_evalset(_formats_dir())))
    assert fig["recall"] >= 0.95, fig["missed"]
    assert fig["false_items"] == 0, fig["false_item_situations"]
    assert fig["scope_violations"] == 0


@pytest.mark.recall_gate
@gate
def test_recall_gate_on_the_real_transcripts(tmp_path: Path) -> None:
    from tools.devkit.evaluation.transcripts import transcripts_evalset

    fig = figures("real transcripts", run_evalset(transcripts_evalset(tmp_path / "rt")))
    assert fig["recall"] >= 0.95, fig["missed"]
    assert fig["false_items"] == 0, fig["false_item_situations"]
    assert fig["scope_violations"] == 0
