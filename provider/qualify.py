"""Stage 0 qualification (RFC v0 §9-§10): a matched replan corpus, three arms, metrics, promotion criteria.

The corpus is generated with the project's own fixture code (:func:`provider.fixtures.builder.build_fixture`):
same-repository histories with known dead ends, decisions, tool outcomes and file edits, filler sessions as
distractors, and three variants of the same index:

* ``base``: as built (expected freshness ``fresh``);
* ``stale``: one in-scope transcript per scope gains a line *after* the build (expected ``stale``);
* ``incomplete``: one in-scope ``index_state`` row per scope is deleted (expected ``incomplete``).

Every case is a replan question asked under three arms (RFC §10):

* ``current_context``: only the current LoopX context, no history. Nothing is recognised, by construction,
  and no history enters the context (0 characters);
* ``provider``: the typed, admitted request through :func:`provider.service.answer` in-process, and a few
  through a real ``python -m provider query`` subprocess, which must agree with the in-process answers;
* ``native_ceiling``: full native history as the cost ceiling, an Obelisk-style search written here with
  plain read-only apsw queries: the top 20 whole messages by bm25 for the raw terms (OR of quoted phrases)
  with 6 neighbouring messages each (3 before, 3 after, same session), filtered by nothing but the
  repository's project paths (no agent, source, visibility or recency filter).

Case kinds: ``dead_end`` (a known failed route the agent is about to repeat: recognised or not),
``same_route`` (a command, file or choice walked before), ``negative`` (matched negatives: terms that occur
only in other agents' or other repositories' sessions, checked against the corpus itself), ``cross_scope``
(requests for other agents, projects or repositories, or with cross-scope flags: must be rejected),
``unknown_option`` (requests with fields the contract does not define: must be rejected) and ``freshness``
(the same question on the three variants).

The report (JSON and Markdown, one per qualified scope, plus a summary) holds counts, rates, sizes and
latencies only: no snippet, term or path of the corpus. ``passed`` is true when every Stage 0 criterion
passes; criteria that need live agent runs (task success, time to a grounded successor) are reported as
``not_measured`` and belong to the Stage 3 decision. A passing per-scope report is what
``enable --stage 2 --qualification-report FILE`` accepts.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, TextIO

from provider._version import PROVIDER_VERSION

__all__ = [
    "NativeResult",
    "QualifyScope",
    "native_search",
    "qualify_command",
    "render_markdown",
    "run_qualification",
]

REPORT_FORMAT: Final = "obelisk-session-evidence-qualification/1"
SUMMARY_FORMAT: Final = "obelisk-session-evidence-qualification-summary/1"
REPO_ROOT: Final = Path(__file__).resolve().parents[1]

#: The bounded limits every qualification request asks for (well under the provider's ceilings).
LIMITS: Final[dict[str, int]] = {"max_sessions": 5, "max_items": 8, "max_snippet_chars": 300,
                                 "max_total_chars": 3000}
#: The Obelisk-style ceiling: top-N whole messages, each with this many neighbours (half before, half after).
NATIVE_TOP: Final = 20
NATIVE_NEIGHBOURS: Final = 6
#: Repositories whose scopes are qualified by default (the fixture's two main repositories).
DEFAULT_REPOS: Final[tuple[str, ...]] = ("alpha-svc", "beta-web")
#: At least this many cases of a kind: a single anecdote is not evidence (RFC §10).
MIN_DEAD_END_CASES: Final = 3
MIN_DEAD_END_FACTS: Final = 2
MIN_NEGATIVE_CASES: Final = 3

# Thresholds of the Stage 0 criteria (the report prints each with its measured value).
RECOGNITION_MIN: Final = 0.90
PRECISION_MIN: Final = 0.60
CONTEXT_REDUCTION_MIN: Final = 10.0
DETECTION_MIN: Final = 1.0
REJECTION_MIN: Final = 1.0


# --------------------------------------------------------------------------------------------------------
# Scopes and the corpus
# --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Cell:
    """One fixture history: the fixture agent(s) writing the scope's sources, in one fixture repository."""

    agents: tuple[str, ...]
    repo: str


@dataclass(frozen=True)
class QualifyScope:
    """The scope a report is issued for, and the fixture histories (cells) that stand in for its own.

    Each cell is qualified with its own temporary config that binds this scope's ids and sources to the
    cell's repository roots, so every case is a same-agent, same-repository question; metrics are pooled.
    """

    agent_id: str
    project_id: str
    repository_id: str
    sources: tuple[str, ...]
    cells: tuple[Cell, ...]

    @property
    def label(self) -> str:
        return f"{self.agent_id}-{self.repository_id}"

    def public(self) -> dict[str, Any]:
        return {"agent_id": self.agent_id, "project_id": self.project_id,
                "repository_id": self.repository_id, "sources": list(self.sources)}


@dataclass(frozen=True)
class Fact:
    """One planted piece of history (manifest ``facts``), with every ref that identifies it."""

    id: str
    evidence_type: str
    agents: tuple[str, ...]
    repo: str
    sessions: frozenset[str]
    refs: frozenset[str]  # message uuids, tool ids, summary ids (what provider items carry)
    messages: frozenset[str]  # message uuids, tool call/result messages included (what native rows carry)
    keys: tuple[str, ...]  # lower-case words that name the route: terms, command, file
    marker: str  # text that shows the fact, repository-relative


@dataclass
class Case:
    id: str
    kind: str  # dead_end | same_route | negative | cross_scope | unknown_option | freshness
    request: dict[str, Any]
    terms: tuple[str, ...] = ()
    target: Fact | None = None
    truth: tuple[Fact, ...] = ()
    variant: str = "base"
    expect: str = ""
    question: str = ""  # prior_failure | same_route | summary (precision class)
    cell: int = 0
    relevant: tuple[Fact, ...] = ()  # in-cell facts about the same route, any evidence type (precision)


@dataclass
class _Variant:
    name: str
    db_path: Path
    home: Path
    manifest: dict[str, Any]
    configs: dict[tuple[str, int], Path]


@dataclass
class _Corpus:
    base: _Variant
    stale: _Variant
    incomplete: _Variant
    facts: tuple[Fact, ...]
    session_of_message: dict[str, str]
    session_text: dict[str, str]  # lower-cased searchable text per session (for matched negatives)
    session_meta: dict[str, tuple[str, str]]  # session id -> (source, project_path)


def _now_iso() -> str:
    return datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def _ro_uri(path: Path) -> str:
    immutable = not any(os.path.exists(f"{path}{s}") for s in ("-wal", "-shm", "-journal"))
    quoted = urllib.parse.quote(str(path.resolve()), safe="/")
    return f"file:{quoted}?mode=ro" + ("&immutable=1" if immutable else "")


def _repo_group(manifest: Mapping[str, Any], repo: str) -> tuple[str, ...]:
    worktrees: Mapping[str, str] = manifest.get("worktrees", {})
    return (repo, *sorted(w for w, main in worktrees.items() if main == repo))


def _roots(manifest: Mapping[str, Any], repo: str) -> tuple[str, ...]:
    repos: Mapping[str, str] = manifest["repos"]
    return tuple(repos[r] for r in _repo_group(manifest, repo) if r in repos)


def _under(path: str | None, roots: Iterable[str]) -> bool:
    if not path:
        return False
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def _relative(text: str, manifest: Mapping[str, Any]) -> str:
    for root in sorted(manifest["repos"].values(), key=len, reverse=True):
        text = text.replace(str(root).rstrip("/") + "/", "")
    return text


def _facts(manifest: Mapping[str, Any], tool_messages: Mapping[str, set[str]]) -> tuple[Fact, ...]:
    out: list[Fact] = []
    for raw in manifest["facts"]:
        refs = {*raw.get("refs", ()), *raw.get("message_uuids", ()), *raw.get("tool_ids", ()),
                *raw.get("summary_ids", ())}
        messages = set(raw.get("message_uuids", ()))
        for tool_id in raw.get("tool_ids", ()):
            messages |= tool_messages.get(tool_id, set())
        sessions = set(raw.get("session_ids") or [raw["session_id"]])
        keys = [str(t).lower() for t in raw.get("terms", ())]
        for extra in ("command", "relative_path"):
            if raw.get(extra):
                keys.append(str(raw[extra]).lower())
        if raw.get("file_path"):
            keys.append(_relative(str(raw["file_path"]), manifest).lower())
        out.append(Fact(id=str(raw["id"]), evidence_type=str(raw["evidence_type"]),
                        agents=(str(raw["agent"]),), repo=str(raw["repo"]), sessions=frozenset(sessions),
                        refs=frozenset(refs), messages=frozenset(messages), keys=tuple(dict.fromkeys(keys)),
                        marker=_relative(str(raw["must_contain"]), manifest)))
    return tuple(out)


def _read_corpus_tables(db_path: Path) -> tuple[dict[str, set[str]], dict[str, str], dict[str, str],
                                                dict[str, tuple[str, str]]]:
    """Tool id -> message uuids, message -> session, session -> searchable text, session -> (source, path)."""
    conn = sqlite3.connect(_ro_uri(db_path), uri=True)
    try:
        tool_messages: dict[str, set[str]] = {}
        for tool_id, uid in conn.execute("SELECT id, message_uuid FROM tool_calls"):
            tool_messages.setdefault(tool_id, set()).add(uid)
        for tool_id, uid in conn.execute("SELECT tool_use_id, message_uuid FROM tool_results"):
            tool_messages.setdefault(tool_id, set()).add(uid)
        session_of: dict[str, str] = {}
        texts: dict[str, list[str]] = {}
        for uid, sid, text in conn.execute("SELECT uuid, session_id, text FROM messages"):
            session_of[uid] = sid
            texts.setdefault(sid, []).append(text or "")
        for query in ("SELECT session_id, input_json FROM tool_calls",
                      "SELECT session_id, content FROM tool_results",
                      "SELECT session_id, content FROM summaries", "SELECT id, title FROM sessions"):
            for sid, text in conn.execute(query):
                texts.setdefault(sid, []).append(text or "")
        meta = {sid: (src or "claude", path or "") for sid, src, path in
                conn.execute("SELECT id, source, project_path FROM sessions")}
    finally:
        conn.close()
    return tool_messages, session_of, {s: "\n".join(t).lower() for s, t in texts.items()}, meta


def _write_config(path: Path, scope: QualifyScope, cell: Cell, manifest: Mapping[str, Any]) -> None:
    from provider.admission.config import EnabledScope, ProviderConfig, save_config

    entry = EnabledScope(agent_id=scope.agent_id, project_id=scope.project_id,
                         repository_id=scope.repository_id, sources=scope.sources,
                         roots=_roots(manifest, cell.repo), stage=2)
    save_config(path, ProviderConfig(recency_days=36500, transcript_homes=(str(manifest["home"]),),
                                     scopes=(entry,)))


def _build_variant(work: Path, name: str, seed: int, extra_sessions: int,
                   scopes: Sequence[QualifyScope]) -> _Variant:
    from provider.fixtures.builder import build_fixture

    info = build_fixture(work / name, seed=seed, extra_sessions=extra_sessions)
    manifest = json.loads(info.manifest_path.read_text(encoding="utf-8"))
    configs: dict[tuple[str, int], Path] = {}
    for n, scope in enumerate(scopes):
        for index, cell in enumerate(scope.cells):
            path = work / f"{name}-config-{n}-{index}.json"
            _write_config(path, scope, cell, manifest)
            configs[(scope.label, index)] = path
    return _Variant(name, info.db_path, info.home, manifest, configs)


def build_corpus(work: Path, scopes: Sequence[QualifyScope], *, seed: int, extra_sessions: int) -> _Corpus:
    base = _build_variant(work, "base", seed, extra_sessions, scopes)
    stale = _build_variant(work, "stale", seed, extra_sessions, scopes)
    incomplete = _build_variant(work, "incomplete", seed, extra_sessions, scopes)
    tool_messages, session_of, texts, meta = _read_corpus_tables(base.db_path)
    return _Corpus(base, stale, incomplete, _facts(base.manifest, tool_messages), session_of, texts, meta)


def _cell_sessions(corpus: _Corpus, scope: QualifyScope, cell: Cell) -> set[str]:
    roots = _roots(corpus.base.manifest, cell.repo)
    return {sid for sid, (src, path) in corpus.session_meta.items() if src in scope.sources and _under(path, roots)}


def _in_cell(fact: Fact, cell: Cell, manifest: Mapping[str, Any]) -> bool:
    return any(a in cell.agents for a in fact.agents) and fact.repo in _repo_group(manifest, cell.repo)


# --------------------------------------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------------------------------------


def _request(rid: str, scope: QualifyScope, trigger: str, types: Sequence[str], terms: Sequence[str],
             **overrides: Any) -> dict[str, Any]:
    request: dict[str, Any] = {
        "schema_version": "historical_evidence_request_v0",
        "request_id": rid,
        "situation_id": f"qualify-{rid}",
        "trigger": trigger,
        "scope": {"agent_id": scope.agent_id, "project_id": scope.project_id,
                  "repository_id": scope.repository_id, "allow_cross_agent": False,
                  "allow_cross_project": False},
        "evidence_types": list(types),
        "query_terms": list(terms),
        "limits": dict(LIMITS),
    }
    request.update(overrides)
    return request


def _overlaps(terms: Sequence[str], fact: Fact) -> bool:
    lowered = [t.lower() for t in terms]
    return any(t in key or key in t for t in lowered for key in fact.keys)


def _phrasings(fact: Fact, raw: Mapping[str, Any], manifest: Mapping[str, Any]) -> list[tuple[str, ...]]:
    """Ways a replan situation names the same route, keyed the way its evidence type is keyed (RFC §5.1:
    terms come from canonical situation fields, not from chat).

    A failure: its words (all, the first two, the first), its command, command and first word. A decision or
    summary: its words (all, the first two, each). A tool outcome: its command (with the first word). A file:
    its repository-relative path and its file name.
    """
    terms = [str(t) for t in raw.get("terms", ()) if len(str(t)) >= 3]
    command = str(raw["command"]) if raw.get("command") else None
    options: list[tuple[str, ...]] = []
    if fact.evidence_type == "prior_failure":
        options += [tuple(terms), tuple(terms[:2]), tuple(terms[:1])]
        if command:
            options += [(command,), (command, *terms[:1])]
    elif fact.evidence_type in ("decision", "summary"):
        options += [tuple(terms), tuple(terms[:2]), *((t,) for t in terms)]
    elif fact.evidence_type == "tool_outcome":
        options += [(command,), (command, *terms[:1])] if command else [tuple(terms[:2])]
    elif fact.evidence_type == "file_history":
        path = raw.get("relative_path") or (_relative(str(raw["file_path"]), manifest)
                                            if raw.get("file_path") else None)
        if path:
            options.append((str(path),))
        options += [(t,) for t in terms if "." in t or "/" in t]
    found: list[tuple[str, ...]] = []
    for option in options:
        if option and option not in found:
            found.append(option)
    return found


def _spelling(manifest: Mapping[str, Any]) -> dict[str, str]:
    """Lower-case key -> the spelling the history uses (requests use the history's spelling)."""
    spelled: dict[str, str] = {}
    for raw in [*manifest["facts"], *manifest.get("canaries", ())]:
        for term in [*raw.get("terms", ()), *([raw["command"]] if raw.get("command") else [])]:
            spelled.setdefault(str(term).lower(), str(term))
    return spelled


_KINDS: Final[dict[str, tuple[tuple[str, ...], str, str, str]]] = {
    # evidence type -> (requested types, trigger, case kind, precision class)
    "prior_failure": (("prior_failure", "tool_outcome"), "replan_repetition", "dead_end", "prior_failure"),
    "tool_outcome": (("tool_outcome",), "hypothesis_history_gap", "same_route", "same_route"),
    "file_history": (("file_history",), "hypothesis_history_gap", "same_route", "same_route"),
    "decision": (("decision",), "resume_or_handoff_gap", "same_route", "same_route"),
    "summary": (("summary",), "resume_or_handoff_gap", "same_route", "summary"),
}


def positive_cases(corpus: _Corpus, scope: QualifyScope) -> list[Case]:
    manifest = corpus.base.manifest
    raw_facts = {str(f["id"]): f for f in manifest["facts"]}
    cases: list[Case] = []
    for index, cell in enumerate(scope.cells):
        own = [f for f in corpus.facts if _in_cell(f, cell, manifest)]
        for fact in own:
            types, trigger, kind, question = _KINDS[fact.evidence_type]
            number = corpus.facts.index(fact)  # case ids name facts by number: reports stay content-free
            for n, terms in enumerate(_phrasings(fact, raw_facts[fact.id], manifest)):
                rid = f"{scope.label}:{index}:{kind}:f{number}:{n}"
                relevant = tuple(f for f in own if _overlaps(terms, f))
                cases.append(Case(id=rid, kind=kind, request=_request(rid, scope, trigger, types, terms),
                                  terms=terms, target=fact, question=question, cell=index, relevant=relevant,
                                  truth=tuple(f for f in relevant if f.evidence_type in types)))
    return cases


def negative_cases(corpus: _Corpus, scope: QualifyScope) -> list[Case]:
    """Matched negatives: each term occurs in another agent's or repository's session, in none of the cell's."""
    manifest = corpus.base.manifest
    spelled = _spelling(manifest)
    cases: list[Case] = []
    for index, cell in enumerate(scope.cells):
        mine = _cell_sessions(corpus, scope, cell)
        pools: list[tuple[str, Sequence[str]]] = [(f"f{n}", f.keys) for n, f in enumerate(corpus.facts)
                                                  if not _in_cell(f, cell, manifest)]
        pools += [(f"c{n}", [str(t).lower() for t in c.get("terms", ())])
                  for n, c in enumerate(manifest.get("canaries", ()))]
        seen: set[tuple[str, ...]] = set()
        for origin, keys in pools:
            terms = [k for k in keys if len(k) >= 3
                     and not any(k in corpus.session_text.get(s, "") for s in mine)
                     and any(k in text for s, text in corpus.session_text.items() if s not in mine)]
            picked = tuple(spelled.get(t, t) for t in terms[:2])
            if not picked or picked in seen:
                continue
            seen.add(picked)
            rid = f"{scope.label}:{index}:negative:{origin}"
            request = _request(rid, scope, "replan_repetition",
                               ["prior_failure", "decision", "file_history", "tool_outcome", "summary"], picked)
            cases.append(Case(id=rid, kind="negative", request=request, terms=picked, expect="empty",
                              cell=index))
    return cases


def cross_scope_cases(scope: QualifyScope) -> list[Case]:
    base = _request("x", scope, "operator_requested_history", ["prior_failure"], ["error"])
    variants: dict[str, dict[str, Any]] = {
        "other_repository": {"scope": {**base["scope"], "repository_id": scope.repository_id + "-other"}},
        "other_agent": {"scope": {**base["scope"], "agent_id": "qualify-intruder-agent"}},
        "other_project": {"scope": {**base["scope"], "project_id": scope.project_id + "-other"}},
        "allow_cross_agent": {"scope": {**base["scope"], "allow_cross_agent": True}},
        "allow_cross_project": {"scope": {**base["scope"], "allow_cross_project": True}},
    }
    return [Case(id=f"{scope.label}:cross_scope:{name}", kind="cross_scope", expect="rejected",
                 request={**base, "request_id": f"{scope.label}:cross_scope:{name}", **override})
            for name, override in variants.items()]


def unknown_option_cases(scope: QualifyScope) -> list[Case]:
    base = _request("u", scope, "operator_requested_history", ["prior_failure"], ["error"])
    variants: dict[str, dict[str, Any]] = {
        "top_level_option": {"options": {"include_other_agents": True}},
        "raw_sql": {"sql": "SELECT text FROM messages"},
        "scope_option": {"scope": {**base["scope"], "include_worktrees": True}},
        "limits_option": {"limits": {**base["limits"], "max_tokens": 100}},
        "revision_option": {"revision": {"current": "HEAD", "branch": "main"}},
        "unknown_evidence_type": {"evidence_types": ["raw_transcript"]},
    }
    return [Case(id=f"{scope.label}:unknown_option:{name}", kind="unknown_option", expect="rejected",
                 request={**base, "request_id": f"{scope.label}:unknown_option:{name}", **override})
            for name, override in variants.items()]


def freshness_cases(positives: Sequence[Case], scope: QualifyScope) -> list[Case]:
    """The first two questions of each cell, asked again on the three variants."""
    cases = []
    for index in range(len(scope.cells)):
        mine = [c for c in positives if c.cell == index]
        picked = ([c for c in mine if c.kind == "dead_end"] + [c for c in mine if c.kind != "dead_end"])[:2]
        for variant, expect in (("base", "fresh"), ("stale", "stale"), ("incomplete", "incomplete")):
            for case in picked:
                rid = f"{case.id}:{variant}"
                cases.append(Case(id=rid, kind="freshness", request={**case.request, "request_id": rid},
                                  terms=case.terms, variant=variant, expect=expect, cell=index))
    return cases


# --------------------------------------------------------------------------------------------------------
# Variants: stale (append after the build) and incomplete (an index_state row deleted)
# --------------------------------------------------------------------------------------------------------


def _cell_units(variant: _Variant, cell: Cell) -> list[dict[str, Any]]:
    group = _repo_group(variant.manifest, cell.repo)
    return [s for s in variant.manifest["sessions"]
            if s["agent"] in cell.agents and s["repo"] in group and s.get("kind") != "canary"]


def make_stale(variant: _Variant, cell: Cell) -> float | None:
    """Append one transcript line to a session of the cell; the monotonic time of the change (None: no unit)."""
    units = _cell_units(variant, cell)
    if not units:
        return None
    unit = units[0]
    if unit["source"] == "codex":
        line: dict[str, Any] = {"timestamp": _now_iso(), "type": "event_msg",
                                "payload": {"type": "agent_message", "message": "appended after the build"}}
    else:
        line = {"type": "user", "cwd": unit["project_path"], "sessionId": unit["id"], "uuid": os.urandom(8).hex(),
                "timestamp": _now_iso(), "message": {"role": "user", "content": "appended after the build"}}
    changed = time.monotonic()
    with Path(unit["jsonl_path"]).open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(line) + "\n")
    return changed


def make_incomplete(variant: _Variant, cell: Cell) -> None:
    """Delete the ``index_state`` row of one transcript of the cell (the fixture's writer, not the provider)."""
    units = _cell_units(variant, cell)
    if not units:
        return
    conn = sqlite3.connect(variant.db_path, isolation_level=None)
    try:
        conn.execute("DELETE FROM index_state WHERE jsonl_path = ?", (units[-1]["jsonl_path"],))
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


# --------------------------------------------------------------------------------------------------------
# The native ceiling: an Obelisk-style search over the same database, read-only apsw
# --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NativeMessage:
    uuid: str
    session_id: str
    text: str
    hit: bool


@dataclass(frozen=True)
class NativeResult:
    messages: tuple[NativeMessage, ...]
    elapsed_ms: float

    @property
    def chars(self) -> int:
        return sum(len(m.text) for m in self.messages)

    @property
    def hits(self) -> tuple[NativeMessage, ...]:
        return tuple(m for m in self.messages if m.hit)


_NATIVE_HITS: Final = """
SELECT m.rowid, m.uuid, m.session_id, m.timestamp
FROM messages_fts
JOIN messages AS m ON m.rowid = messages_fts.rowid
JOIN sessions AS s ON s.id = m.session_id
WHERE messages_fts MATCH :q
  AND EXISTS (SELECT 1 FROM json_each(:roots) AS r
              WHERE s.project_path = r.value OR substr(s.project_path, 1, length(r.value) + 1) = r.value || '/')
ORDER BY bm25(messages_fts)
LIMIT :limit"""

_NATIVE_BEFORE: Final = """
SELECT rowid, uuid, session_id, timestamp FROM messages
WHERE session_id = :sid AND (timestamp < :ts OR (timestamp = :ts AND rowid < :rid))
ORDER BY timestamp DESC, rowid DESC LIMIT :n"""

_NATIVE_AFTER: Final = """
SELECT rowid, uuid, session_id, timestamp FROM messages
WHERE session_id = :sid AND (timestamp > :ts OR (timestamp = :ts AND rowid > :rid))
ORDER BY timestamp, rowid LIMIT :n"""

#: A whole message as the agent saw it: its text, and for tool messages the tool input and output.
_NATIVE_BODY: Final = """
SELECT COALESCE(m.text, '')
       || COALESCE((SELECT group_concat(input_json, char(10)) FROM tool_calls WHERE message_uuid = m.uuid), '')
       || COALESCE((SELECT group_concat(content, char(10)) FROM tool_results WHERE message_uuid = m.uuid), '')
FROM messages AS m WHERE m.rowid = :rid"""


def native_match_expression(terms: Sequence[str]) -> str | None:
    phrases = ['"' + t.replace("\x00", "").replace('"', '""') + '"' for t in terms if t.strip()]
    return " OR ".join(phrases) or None


def native_search(conn: Any, terms: Sequence[str], roots: Sequence[str], *, top: int = NATIVE_TOP,
                  neighbours: int = NATIVE_NEIGHBOURS) -> NativeResult:
    """Top ``top`` whole messages by bm25 for the raw terms, each with ``neighbours`` session neighbours.

    ``conn`` is an open apsw (or sqlite3) connection to the index; only SELECTs are run.
    """
    started = time.perf_counter()
    expression = native_match_expression(terms)
    if expression is None:
        return NativeResult((), 0.0)
    roots_json = json.dumps([r.rstrip("/") or "/" for r in roots])
    hits = list(conn.execute(_NATIVE_HITS, {"q": expression, "roots": roots_json, "limit": top}))
    chosen: dict[int, tuple[str, str, bool]] = {}
    order: list[int] = []
    half = neighbours // 2
    for rowid, uid, sid, ts in hits:
        around = [*reversed(list(conn.execute(_NATIVE_BEFORE, {"sid": sid, "ts": ts, "rid": rowid, "n": half}))),
                  (rowid, uid, sid, ts),
                  *conn.execute(_NATIVE_AFTER, {"sid": sid, "ts": ts, "rid": rowid,
                                                "n": neighbours - half})]
        for n_rowid, n_uid, n_sid, _ in around:
            is_hit = n_rowid == rowid
            if n_rowid not in chosen:
                order.append(n_rowid)
                chosen[n_rowid] = (n_uid, n_sid, is_hit)
            elif is_hit:
                chosen[n_rowid] = (n_uid, n_sid, True)
    messages = []
    for rowid in order:
        uid, sid, is_hit = chosen[rowid]
        body = next(iter(conn.execute(_NATIVE_BODY, {"rid": rowid})), ("",))[0] or ""
        messages.append(NativeMessage(uid, sid, str(body), is_hit))
    return NativeResult(tuple(messages), (time.perf_counter() - started) * 1000.0)


def open_native(db_path: Path) -> Any:
    import apsw

    return apsw.Connection(_ro_uri(db_path), flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)


# --------------------------------------------------------------------------------------------------------
# Running the arms and scoring
# --------------------------------------------------------------------------------------------------------


@dataclass
class _Outcome:
    case: Case
    outcome: str = ""
    error_code: str | None = None
    items: list[dict[str, Any]] = field(default_factory=list)
    freshness: str = ""
    truncated: bool = False
    omitted: int = 0
    result_chars: int = 0
    snippet_chars: int = 0
    elapsed_ms: float = 0.0
    native: NativeResult | None = None
    freshness_lag_ms: float | None = None


def _config(variant: _Variant, scope: QualifyScope, case: Case) -> Path:
    return variant.configs[(scope.label, case.cell)]


def _run_provider(case: Case, variant: _Variant, scope: QualifyScope) -> _Outcome:
    from provider.service import answer

    raw = json.dumps(case.request).encode("utf-8")
    started = time.perf_counter()
    response = answer(raw, db_path=variant.db_path, config_path=_config(variant, scope, case))
    elapsed = (time.perf_counter() - started) * 1000.0
    return _outcome_from(case, response.envelope, elapsed)


def _outcome_from(case: Case, envelope: Mapping[str, Any], elapsed_ms: float) -> _Outcome:
    out = _Outcome(case, outcome=str(envelope.get("outcome")), elapsed_ms=elapsed_ms)
    error = envelope.get("error")
    out.error_code = str(error["code"]) if isinstance(error, dict) else None
    result = envelope.get("result")
    if isinstance(result, dict):
        out.items = list(result.get("items", []))
        out.freshness = str(result.get("freshness"))
        out.truncated = bool(result.get("truncated"))
        out.omitted = int(result.get("omitted_count", 0))
        out.result_chars = len(json.dumps(result, ensure_ascii=False, separators=(",", ":")))
        out.snippet_chars = sum(len(str(i.get("snippet", ""))) for i in out.items)
    return out


def _recognised_by_items(fact: Fact, items: Sequence[Mapping[str, Any]], mine: set[str]) -> bool:
    """A returned item carries one of the fact's refs, or is an in-scope item that shows the fact's text.

    The text test matters for folded items: ``[repeated 3x in 3 sessions] …`` carries the ref of the newest
    occurrence only, which may belong to another session that walked the same route.
    """
    for item in items:
        if item.get("message_ref") in fact.refs:
            return True
        if item.get("session_ref") in mine and fact.marker and fact.marker in str(item.get("snippet")):
            return True
    return False


def _recognised_by_native(fact: Fact, native: NativeResult, mine: set[str]) -> bool:
    for message in native.messages:
        if message.uuid in fact.messages:
            return True
        if message.session_id in mine and fact.marker and fact.marker in message.text:
            return True
    return False


def _item_is_true(item: Mapping[str, Any], relevant: Sequence[Fact], mine: set[str]) -> bool:
    """Inside the case's truth: from a session, or carrying a ref, of a fact about the same route."""
    return any(item.get("message_ref") in f.refs or item.get("session_ref") in f.sessions
               or (item.get("session_ref") in mine and f.marker and f.marker in str(item.get("snippet")))
               for f in relevant)


def _native_is_true(message: NativeMessage, relevant: Sequence[Fact]) -> bool:
    return any(message.uuid in f.messages or message.session_id in f.sessions for f in relevant)


def _rate(num: float, den: float) -> float | None:
    return round(num / den, 4) if den else None


def _dist(values: Sequence[float]) -> dict[str, float | int | None]:
    if not values:
        return {"n": 0, "median": None, "p95": None, "max": None}
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, max(0, round(0.95 * len(ordered)) - 1))]
    return {"n": len(ordered), "median": round(statistics.median(ordered), 2), "p95": round(p95, 2),
            "max": round(ordered[-1], 2)}


def _ratio(numerators: Sequence[float], denominators: Sequence[float]) -> float | None:
    if not numerators or not denominators:
        return None
    den = statistics.median(denominators)
    return round(statistics.median(numerators) / den, 2) if den else None


def _subprocess_runs(outcomes: Sequence[_Outcome], corpus: _Corpus, scope: QualifyScope,
                     count: int) -> dict[str, Any]:
    """Re-run a few answered cases through a real ``python -m provider query`` process and compare."""
    kinds = ("dead_end", "negative", "cross_scope", "unknown_option")
    picked = [next(o for o in outcomes if o.case.kind == k) for k in kinds
              if any(o.case.kind == k for o in outcomes)][:count]
    env = {k: v for k, v in os.environ.items() if not k.startswith("OBELISK")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH", "")]))
    agree = 0
    times: list[float] = []
    for outcome in picked:
        variant = corpus.base
        started = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "provider", "query", "--db", str(variant.db_path), "--config",
             str(_config(variant, scope, outcome.case))], input=json.dumps(outcome.case.request).encode(),
            capture_output=True, env=env, cwd=REPO_ROOT, timeout=120, check=False)
        times.append((time.perf_counter() - started) * 1000.0)
        try:
            envelope = json.loads(proc.stdout.decode("utf-8").strip().splitlines()[-1])
        except (ValueError, IndexError):
            continue
        other = _outcome_from(outcome.case, envelope, 0.0)
        same = (other.outcome == outcome.outcome and other.error_code == outcome.error_code
                and [i.get("message_ref") for i in other.items] == [i.get("message_ref") for i in outcome.items]
                and not proc.stderr)
        agree += int(same)
    return {"runs": len(picked), "agree": agree, "latency_ms": _dist(times)}


def _run_freshness(corpus: _Corpus, scope: QualifyScope, cases: Sequence[Case]) -> list[_Outcome]:
    """Base first; then each cell's transcript is appended to and the stale questions asked at once (the
    lag from the change to the answer is the freshness latency); then index_state rows are deleted."""
    outcomes = [_run_provider(c, corpus.base, scope) for c in cases if c.variant == "base"]
    for index, cell in enumerate(scope.cells):
        changed = make_stale(corpus.stale, cell)
        for n, case in enumerate(c for c in cases if c.variant == "stale" and c.cell == index):
            outcome = _run_provider(case, corpus.stale, scope)
            if n == 0 and changed is not None:
                outcome.freshness_lag_ms = (time.monotonic() - changed) * 1000.0
            outcomes.append(outcome)
        make_incomplete(corpus.incomplete, cell)
        outcomes += [_run_provider(c, corpus.incomplete, scope) for c in cases
                     if c.variant == "incomplete" and c.cell == index]
    return outcomes


def qualify_scope(corpus: _Corpus, scope: QualifyScope, *, subprocess_cases: int) -> dict[str, Any]:
    manifest = corpus.base.manifest
    positives = positive_cases(corpus, scope)
    negatives = negative_cases(corpus, scope)
    mine = {i: _cell_sessions(corpus, scope, cell) for i, cell in enumerate(scope.cells)}

    outcomes: list[_Outcome] = []
    native_conn = open_native(corpus.base.db_path)
    try:
        for case in [*positives, *negatives]:
            outcome = _run_provider(case, corpus.base, scope)
            outcome.native = native_search(native_conn, case.terms, _roots(manifest, scope.cells[case.cell].repo))
            outcomes.append(outcome)
    finally:
        native_conn.close()
    outcomes += [_run_provider(c, corpus.base, scope) for c in [*cross_scope_cases(scope),
                                                                *unknown_option_cases(scope)]]
    outcomes += _run_freshness(corpus, scope, freshness_cases(positives, scope))

    metrics = _score(outcomes, mine)
    subprocess_report = _subprocess_runs(outcomes, corpus, scope, subprocess_cases)
    criteria = _criteria(metrics, subprocess_report)
    passed = all(c["status"] == "pass" for c in criteria if c["stage"] == 0)
    by_cell = {f"{'+'.join(cell.agents)}@{cell.repo}": _cell_summary(
        _score([o for o in outcomes if o.case.cell == i], mine)) for i, cell in enumerate(scope.cells)}
    document: dict[str, Any] = {
        "format": REPORT_FORMAT,
        "passed": passed,
        "generated_at": _now_iso(),
        "scope": scope.public(),
        "sources": list(scope.sources),
        "provider_version": PROVIDER_VERSION,
        "corpus": {
            "generator": "provider.fixtures.builder.build_fixture",
            "seed": manifest["seed"], "generation": manifest["generation"],
            "cells": [{"fixture_agents": list(c.agents), "fixture_repository": c.repo,
                       "scope_sessions": len(mine[i])} for i, c in enumerate(scope.cells)],
            "sessions": manifest["counts"]["sessions"], "messages": manifest["counts"]["messages"],
            "cases": {kind: sum(1 for o in outcomes if o.case.kind == kind)
                      for kind in ("dead_end", "same_route", "negative", "cross_scope", "unknown_option",
                                   "freshness")},
            "dead_end_facts": len({o.case.target.id for o in outcomes
                                   if o.case.kind == "dead_end" and o.case.target}),
            "variants": ["base", "stale: a transcript line appended after the build",
                         "incomplete: an index_state row deleted"],
            "limits": dict(LIMITS),
        },
        "arms": {
            "current_context": "only the current LoopX context: no history is read, nothing is added",
            "provider": "the typed request through provider.service.answer in-process (a few through "
                        "`python -m provider query` subprocesses, which must agree)",
            "native_ceiling": f"Obelisk-style search: top {NATIVE_TOP} whole messages by bm25 for the raw terms "
                              f"(OR of quoted phrases) with {NATIVE_NEIGHBOURS} session neighbours each, filtered "
                              "by the repository's project paths only",
        },
        "metrics": metrics,
        "by_cell": by_cell,
        "subprocess": subprocess_report,
        "criteria": criteria,
        "cases": [_case_row(o, mine[o.case.cell]) for o in outcomes],
    }
    document["digest"] = _digest(document)
    return document


def _case_row(o: _Outcome, mine: set[str]) -> dict[str, Any]:
    """One content-free row per case: ids, counts, sizes, times (no term, snippet or path)."""
    row: dict[str, Any] = {"id": o.case.id, "kind": o.case.kind, "outcome": o.outcome, "code": o.error_code,
                           "items": len(o.items), "snippet_chars": o.snippet_chars, "ms": round(o.elapsed_ms, 2)}
    if o.case.kind in ("dead_end", "same_route", "negative"):
        relevant = o.case.relevant
        row["false_items"] = len(o.items) if o.case.kind == "negative" else \
            sum(1 for i in o.items if not _item_is_true(i, relevant, mine))
        row["truth_found"] = sum(1 for f in o.case.truth if _recognised_by_items(f, o.items, mine))
        row["truth"] = len(o.case.truth)
    if o.native is not None:
        row["native_chars"] = o.native.chars
        row["native_truth_found"] = sum(1 for f in o.case.truth if _recognised_by_native(f, o.native, mine))
    if o.case.kind == "freshness":
        row.update({"variant": o.case.variant, "expected": o.case.expect, "freshness": o.freshness})
    return row


def _score(outcomes: Sequence[_Outcome], mine: Mapping[int, set[str]]) -> dict[str, Any]:
    by_kind: dict[str, list[_Outcome]] = {}
    for o in outcomes:
        by_kind.setdefault(o.case.kind, []).append(o)
    dead = by_kind.get("dead_end", [])
    positives = [*dead, *by_kind.get("same_route", [])]
    negatives = by_kind.get("negative", [])
    asked = [*positives, *negatives]
    answered = [o for o in asked if o.outcome == "ok"]

    def own(o: _Outcome) -> set[str]:
        return mine[o.case.cell]

    def recognition(arm: str) -> float | None:
        if not dead:
            return None
        if arm == "current_context":
            return 0.0
        if arm == "provider":
            return _rate(sum(1 for o in dead if o.case.target
                             and _recognised_by_items(o.case.target, o.items, own(o))), len(dead))
        return _rate(sum(1 for o in dead if o.case.target and o.native
                         and _recognised_by_native(o.case.target, o.native, own(o))), len(dead))

    def recall(arm: str) -> float | None:
        found = total = 0
        for o in positives:
            for fact in o.case.truth:
                total += 1
                if arm == "provider":
                    found += int(_recognised_by_items(fact, o.items, own(o)))
                elif o.native is not None:
                    found += int(_recognised_by_native(fact, o.native, own(o)))
        return _rate(found, total)

    def precision(arm: str, question: str) -> dict[str, Any]:
        true = returned = 0
        for o in positives:
            if o.case.question != question:
                continue
            if arm == "provider":
                true += sum(1 for i in o.items if _item_is_true(i, o.case.relevant, own(o)))
                returned += len(o.items)
            elif o.native is not None:
                true += sum(1 for m in o.native.hits if _native_is_true(m, o.case.relevant))
                returned += len(o.native.hits)
        return {"precision": _rate(true, returned), "true_items": true, "returned_items": returned}

    def false_matches(arm: str) -> dict[str, Any]:
        false = returned = with_items = 0
        for o in asked:
            negative = o.case.kind == "negative"
            if arm == "provider":
                count = len(o.items)
                wrong = count if negative else sum(1 for i in o.items
                                                   if not _item_is_true(i, o.case.relevant, own(o)))
            else:
                hits = o.native.hits if o.native else ()
                count = len(hits)
                wrong = count if negative else sum(1 for m in hits if not _native_is_true(m, o.case.relevant))
            false += wrong
            returned += count
            with_items += int(negative and count > 0)
        return {"false_items": false, "returned_items": returned, "false_match_rate": _rate(false, returned),
                "negatives_with_items": with_items, "negatives": len(negatives)}

    def foreign(arm: str) -> int:
        if arm == "provider":
            return sum(1 for o in outcomes for i in o.items if i.get("session_ref") not in own(o))
        return sum(1 for o in asked if o.native for m in o.native.messages if m.session_id not in own(o))

    snippet_chars = [float(o.snippet_chars) for o in answered]
    result_chars = [float(o.result_chars) for o in answered]
    native_chars = [float(o.native.chars) for o in asked if o.native is not None]
    # The reduction is computed on the questions that have history (positives), where both arms return
    # evidence; matched negatives (provider: nothing) would flatter the provider.
    pos_snippets = [float(o.snippet_chars) for o in positives if o.outcome == "ok"]
    pos_results = [float(o.result_chars) for o in positives if o.outcome == "ok"]
    pos_native = [float(o.native.chars) for o in positives if o.native is not None]
    fresh_cases = by_kind.get("freshness", [])

    def detection(expect: str) -> dict[str, Any]:
        subset = [o for o in fresh_cases if o.case.expect == expect]
        hit = sum(1 for o in subset if o.freshness == expect)
        return {"cases": len(subset), "detected": hit, "rate": _rate(hit, len(subset)),
                "reported_fresh": sum(1 for o in subset if o.freshness == "fresh")}

    changed = [o for o in fresh_cases if o.case.expect != "fresh"]
    lagged = [o for o in fresh_cases if o.freshness_lag_ms is not None]
    cross = by_kind.get("cross_scope", [])
    unknown = by_kind.get("unknown_option", [])
    rec = {arm: recognition(arm) for arm in ("current_context", "provider", "native_ceiling")}
    return {
        "dead_end": {
            "cases": len(dead),
            "facts": len({o.case.target.id for o in dead if o.case.target}),
            "recognition_rate": rec,
            "repeated_dead_end_rate": {arm: None if v is None else round(1.0 - v, 4) for arm, v in rec.items()},
        },
        "recall": {"current_context": 0.0 if positives else None, "provider": recall("provider"),
                   "native_ceiling": recall("native_ceiling")},
        "precision": {
            question: {"provider": precision("provider", question),
                       "native_ceiling": precision("native_ceiling", question)}
            for question in ("prior_failure", "same_route")
        },
        "false_matches": {"provider": false_matches("provider"), "native_ceiling": false_matches("native_ceiling")},
        "foreign_scope_items": {"provider": foreign("provider"), "native_ceiling": foreign("native_ceiling")},
        "context_chars": {
            "measure": "characters of evidence text: provider snippets vs the ceiling's whole messages; the "
                       "provider's whole result JSON (refs, metadata) is reported alongside; the ratios use "
                       "the questions that have history (positives) unless named otherwise",
            "current_context": _dist([0.0] * len(answered)),
            "provider": _dist(snippet_chars),
            "provider_result_json": _dist(result_chars),
            "native_ceiling": _dist(native_chars),
            "ceiling_over_provider_median": _ratio(pos_native, pos_snippets),
            "ceiling_over_provider_result_json_median": _ratio(pos_native, pos_results),
            "ceiling_over_provider_median_all_questions": _ratio(native_chars, snippet_chars),
            "max_total_chars_requested": LIMITS["max_total_chars"],
            "answers_over_budget": sum(1 for o in answered if o.snippet_chars > LIMITS["max_total_chars"]),
        },
        "truncation": {"answers": len(answered), "truncated": sum(1 for o in answered if o.truncated),
                       "rate": _rate(sum(1 for o in answered if o.truncated), len(answered)),
                       "omitted_without_flag": sum(1 for o in answered if o.omitted and not o.truncated)},
        "latency_ms": {
            "provider_in_process": _dist([o.elapsed_ms for o in outcomes
                                          if o.case.kind in ("dead_end", "same_route", "negative", "freshness")]),
            "native_ceiling": _dist([o.native.elapsed_ms for o in asked if o.native is not None]),
            "current_context": _dist([0.0] * len(answered)),
            "timeouts": sum(1 for o in outcomes if o.error_code == "timeout"),
            "provider_failures": sum(1 for o in outcomes if o.outcome == "failed"),
        },
        "freshness": {
            "fresh_control": detection("fresh"), "stale": detection("stale"), "incomplete": detection("incomplete"),
            "detection_rate": _rate(sum(1 for o in changed if o.freshness == o.case.expect), len(changed)),
            "freshness_latency_ms": _dist([o.freshness_lag_ms for o in lagged if o.freshness_lag_ms is not None]),
            "detected_on_first_request_after_change": bool(lagged) and all(o.freshness == "stale" for o in lagged),
        },
        "cross_scope": {"requests": len(cross), "rejected": sum(1 for o in cross if o.outcome == "rejected"),
                        "rejection_rate": _rate(sum(1 for o in cross if o.outcome == "rejected"), len(cross)),
                        "codes": sorted({o.error_code or "none" for o in cross})},
        "unknown_option": {"requests": len(unknown), "rejected": sum(1 for o in unknown if o.outcome == "rejected"),
                           "failure_rate": _rate(sum(1 for o in unknown if o.outcome == "rejected"), len(unknown)),
                           "codes": sorted({o.error_code or "none" for o in unknown})},
    }


def _cell_summary(metrics: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "dead_end_cases": metrics["dead_end"]["cases"],
        "dead_end_facts": metrics["dead_end"]["facts"],
        "recognition_rate": metrics["dead_end"]["recognition_rate"],
        "recall": metrics["recall"],
        "precision": {q: {arm: v["precision"] for arm, v in block.items()}
                      for q, block in metrics["precision"].items()},
        "negatives_with_items": {arm: v["negatives_with_items"] for arm, v in metrics["false_matches"].items()},
        "context_chars_median": {arm: metrics["context_chars"][arm]["median"]
                                 for arm in ("provider", "native_ceiling")},
    }


def _criterion(cid: str, rfc: str, metric: str, threshold: str, verdict: tuple[Any, bool | None], *,
               stage: int = 0) -> dict[str, Any]:
    """One criterion; ``verdict`` is (what was measured, passed?), None for not measured."""
    measured, ok = verdict
    status = "not_measured" if ok is None else ("pass" if ok else "fail")
    return {"id": cid, "rfc": rfc, "metric": metric, "threshold": threshold, "measured": measured,
            "status": status, "stage": stage}


def _ge(value: Any, bound: float) -> bool:
    return isinstance(value, (int, float)) and value >= bound


def _criteria(m: Mapping[str, Any], sub: Mapping[str, Any]) -> list[dict[str, Any]]:
    dead, recall, prec = m["dead_end"], m["recall"], m["precision"]
    ctx, trunc, lat, fresh = m["context_chars"], m["truncation"], m["latency_ms"], m["freshness"]
    fm = m["false_matches"]["provider"]
    rec = dead["recognition_rate"]
    cross, unknown, foreign = m["cross_scope"], m["unknown_option"], m["foreign_scope_items"]["provider"]

    def precision(block: Mapping[str, Any]) -> tuple[dict[str, Any], bool]:
        mine, ceiling = block["provider"]["precision"], block["native_ceiling"]["precision"]
        ok = _ge(mine, PRECISION_MIN) and (ceiling is None or mine >= ceiling)
        return {"provider": mine, "native_ceiling": ceiling}, ok

    corpus_ok = (dead["cases"] >= MIN_DEAD_END_CASES and dead["facts"] >= MIN_DEAD_END_FACTS
                 and fm["negatives"] >= MIN_NEGATIVE_CASES)
    recognition_ok = _ge(rec["provider"], RECOGNITION_MIN) and rec["provider"] > (rec["current_context"] or 0.0)
    latency_ok = _ge(2000.0 - (lat["provider_in_process"]["p95"] or 0.0), 0.0) and lat["timeouts"] == 0
    return [
        _criterion("corpus_size", "§10: a single positive anecdote is not enough",
                   "dead-end cases, distinct dead-end facts, matched negatives",
                   f">= {MIN_DEAD_END_CASES} dead-end cases over >= {MIN_DEAD_END_FACTS} facts, "
                   f">= {MIN_NEGATIVE_CASES} matched negatives",
                   ({"dead_end_cases": dead["cases"], "dead_end_facts": dead["facts"],
                     "negatives": fm["negatives"]}, corpus_ok)),
        _criterion("dead_end_reduction", "§10 repeated dead-end action rate; §9 measurable reduction",
                   "repeated dead-end recognition rate, provider vs current context",
                   f"provider >= {RECOGNITION_MIN:.2f} and above the current-context baseline",
                   ({"provider": rec["provider"], "current_context": rec["current_context"]}, recognition_ok)),
        _criterion("precision_prior_failure", "§10 retrieval precision, prior-failure questions",
                   "share of returned items inside the case's truth",
                   f">= {PRECISION_MIN:.2f} and >= the native ceiling's", precision(prec["prior_failure"])),
        _criterion("precision_same_route", "§10 retrieval precision, same-route questions",
                   "share of returned items inside the case's truth",
                   f">= {PRECISION_MIN:.2f} and >= the native ceiling's", precision(prec["same_route"])),
        _criterion("no_false_match_on_negatives", "§10 false matches; §4 cross-agent/project denied by default",
                   "matched negatives answered with any item", "0 of the matched negatives",
                   ({"negatives_with_items": fm["negatives_with_items"], "negatives": fm["negatives"]},
                    fm["negatives_with_items"] == 0 and fm["negatives"] > 0)),
        _criterion("recall_not_worse", "§10 evidence quality must not regress (issue: equal or better recall)",
                   "recall of the case's truth facts", "provider >= native ceiling",
                   ({"provider": recall["provider"], "native_ceiling": recall["native_ceiling"]},
                    _ge(recall["provider"], recall["native_ceiling"] or 0.0))),
        _criterion("bounded_context", "§5.2 bounded private result, explicit truncation; §10 context size",
                   "evidence characters per answer; truncation disclosure",
                   "every answer within max_total_chars; every omission flagged as truncated",
                   ({"answers_over_budget": ctx["answers_over_budget"],
                     "omitted_without_flag": trunc["omitted_without_flag"], "truncation_rate": trunc["rate"]},
                    ctx["answers_over_budget"] == 0 and trunc["omitted_without_flag"] == 0)),
        _criterion("context_reduction", "§9 context-rebuild cost reduction (issue: answers >= 10x smaller)",
                   "native ceiling / provider, median evidence characters on questions with history",
                   f">= {CONTEXT_REDUCTION_MIN:.0f}x",
                   ({"ceiling_over_provider_median": ctx["ceiling_over_provider_median"],
                     "ceiling_over_provider_result_json_median": ctx["ceiling_over_provider_result_json_median"]},
                    _ge(ctx["ceiling_over_provider_median"], CONTEXT_REDUCTION_MIN))),
        _criterion("bounded_latency", "§10 query latency; §6 a timeout is a typed failure",
                   "provider in-process p95 and timeouts", "p95 <= the 2000 ms request deadline, 0 timeouts",
                   ({"p95_ms": lat["provider_in_process"]["p95"], "timeouts": lat["timeouts"]}, latency_ok)),
        _criterion("stale_incomplete_detection", "§10 stale/incomplete detection; §7 never 'no history'",
                   "stale and incomplete variants reported as such; fresh control not flagged",
                   f"detection rate >= {DETECTION_MIN:.2f}, fresh control all fresh",
                   ({"detection_rate": fresh["detection_rate"], "fresh_control": fresh["fresh_control"]["rate"]},
                    _ge(fresh["detection_rate"], DETECTION_MIN) and fresh["fresh_control"]["rate"] == 1.0)),
        _criterion("no_scope_broadening", "§9 no silent scope broadening; §6 scope fail-closed",
                   "cross-scope requests rejected; provider items outside the scope",
                   f"rejection rate >= {REJECTION_MIN:.2f} and 0 foreign items",
                   ({"rejection_rate": cross["rejection_rate"], "foreign_items": foreign},
                    _ge(cross["rejection_rate"], REJECTION_MIN) and foreign == 0)),
        _criterion("unknown_option_rejected", "§6 unknown request field or provider option: reject",
                   "requests with unknown fields that were rejected", f"failure rate >= {REJECTION_MIN:.2f}",
                   (unknown["failure_rate"], _ge(unknown["failure_rate"], REJECTION_MIN))),
        _criterion("cli_agrees", "§6 one envelope per request, whichever entry point",
                   "subprocess answers identical to in-process ones", "all agree",
                   ({"agree": sub["agree"], "runs": sub["runs"]}, sub["agree"] == sub["runs"])),
        _criterion("task_success", "§10 task success, evidence quality; §9 stage 3",
                   "task success, time to a grounded successor, provider calls and tokens",
                   "needs live agent runs (the Stage 3 decision)", (None, None), stage=3),
    ]


def _digest(document: Mapping[str, Any]) -> str:
    body = {k: v for k, v in document.items() if k != "digest"}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    return "sha256:" + hashlib.sha256(canonical).hexdigest()


# --------------------------------------------------------------------------------------------------------
# Scopes, the run, files
# --------------------------------------------------------------------------------------------------------

#: The fixture's agents and the Obelisk sources they write (manifest ``agents``).
FIXTURE_AGENTS: Final[dict[str, tuple[str, ...]]] = {"claude-agent": ("claude",), "codex-agent": ("codex",)}


def _cells_for(sources: Sequence[str]) -> tuple[Cell, ...]:
    agents = tuple(a for a, srcs in FIXTURE_AGENTS.items() if set(srcs) & set(sources))
    return tuple(Cell(agents, repo) for repo in DEFAULT_REPOS)


def default_scopes() -> list[QualifyScope]:
    """One scope per fixture agent, qualified on that agent's histories in both fixture repositories."""
    return [QualifyScope(agent_id=agent, project_id="fixture", repository_id="fixture", sources=sources,
                         cells=_cells_for(sources)) for agent, sources in FIXTURE_AGENTS.items()]


def operator_scope(agent_id: str, project_id: str, repository_id: str, sources: Sequence[str]) -> QualifyScope:
    """The operator's scope, qualified on the fixture histories of the agent(s) writing the same sources."""
    known = {s for srcs in FIXTURE_AGENTS.values() for s in srcs}
    if not sources or not set(sources) <= known:
        raise ValueError(f"qualification corpora exist for these sources only: {', '.join(sorted(known))}")
    return QualifyScope(agent_id=agent_id, project_id=project_id, repository_id=repository_id,
                        sources=tuple(dict.fromkeys(sources)), cells=_cells_for(sources))


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)[:120]


def run_qualification(out_dir: Path, *, scopes: Sequence[QualifyScope] | None = None, seed: int = 7,
                      extra_sessions: int = 24, subprocess_cases: int = 3,
                      work_dir: Path | None = None) -> dict[str, Any]:
    """Build the corpus, qualify every scope, write one JSON + Markdown report per scope and a summary."""
    chosen = list(scopes) if scopes else default_scopes()
    owned = work_dir is None
    work = Path(tempfile.mkdtemp(prefix="ose-qualify-")) if work_dir is None else work_dir
    try:
        started = time.perf_counter()
        corpus = build_corpus(work, chosen, seed=seed, extra_sessions=extra_sessions)
        build_s = time.perf_counter() - started
        reports = [qualify_scope(corpus, scope, subprocess_cases=subprocess_cases) for scope in chosen]
    finally:
        if owned:
            shutil.rmtree(work, ignore_errors=True)
    out_dir.mkdir(parents=True, exist_ok=True)
    files = []
    for report in reports:
        scope = report["scope"]
        stem = f"qualification-{_safe(scope['agent_id'])}-{_safe(scope['repository_id'])}"
        (out_dir / f"{stem}.json").write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n",
                                              encoding="utf-8")
        (out_dir / f"{stem}.md").write_text(render_markdown(report), encoding="utf-8")
        files.append(f"{stem}.json")
    summary: dict[str, Any] = {
        "format": SUMMARY_FORMAT,
        "passed": all(r["passed"] for r in reports),
        "generated_at": _now_iso(),
        "provider_version": PROVIDER_VERSION,
        "corpus_build_seconds": round(build_s, 2),
        "scopes": [{**r["scope"], "passed": r["passed"], "report": f, "digest": r["digest"],
                    "failed_criteria": [c["id"] for c in r["criteria"] if c["status"] == "fail"]}
                   for r, f in zip(reports, files, strict=True)],
    }
    summary["digest"] = _digest(summary)
    (out_dir / "qualification.json").write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n",
                                                encoding="utf-8")
    (out_dir / "qualification.md").write_text(render_summary_markdown(summary, reports), encoding="utf-8")
    return {"summary": summary, "reports": reports}


def _fmt(value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}"
    if isinstance(value, dict):
        return ", ".join(f"{k}={_fmt(v)}" for k, v in value.items())
    return str(value)


def render_markdown(report: Mapping[str, Any]) -> str:
    scope, m, corpus = report["scope"], report["metrics"], report["corpus"]
    cells = "; ".join(f"{'+'.join(c['fixture_agents'])} in {c['fixture_repository']} ({c['scope_sessions']} "
                      "sessions)" for c in corpus["cells"])
    lines = [
        f"# Qualification: {scope['agent_id']} / {scope['project_id']} / {scope['repository_id']}",
        "",
        f"* passed: **{report['passed']}** (every Stage 0 criterion; generated {report['generated_at']}, "
        f"provider {report['provider_version']})",
        f"* sources: {', '.join(scope['sources'])}; corpus: seed {corpus['seed']}, {corpus['sessions']} sessions, "
        f"{corpus['messages']} messages; histories: {cells}",
        f"* cases: {_fmt(corpus['cases'])}; distinct dead-end facts: {corpus['dead_end_facts']}",
        f"* digest: `{report['digest']}`",
        "",
        "## RFC §10 criteria",
        "",
        "| criterion | threshold | measured | status |",
        "|---|---|---|---|",
    ]
    lines += [f"| {c['id']} | {c['threshold']} | {_fmt(c['measured'])} | {c['status']} |" for c in report["criteria"]]
    dead, ctx, lat, fm = m["dead_end"], m["context_chars"], m["latency_ms"], m["false_matches"]

    def arms(block: Mapping[str, Any], key: str | None = None) -> str:
        values = [block.get(a) for a in ("current_context", "provider", "native_ceiling")]
        if key is not None:
            values = [v.get(key) if isinstance(v, Mapping) else v for v in values]
        return " | ".join(_fmt(v) for v in values)

    lines += [
        "",
        "## Arms",
        "",
        "| metric | current context | provider | native ceiling |",
        "|---|---|---|---|",
        f"| dead-end recognition ({dead['cases']} cases) | {arms(dead['recognition_rate'])} |",
        f"| repeated dead-end rate | {arms(dead['repeated_dead_end_rate'])} |",
        f"| recall of truth facts | {arms(m['recall'])} |",
        f"| precision, prior-failure questions | n/a | {arms(m['precision']['prior_failure'], 'precision')[6:]} |",
        f"| precision, same-route questions | n/a | {arms(m['precision']['same_route'], 'precision')[6:]} |",
        f"| false-match rate | n/a | {arms(fm, 'false_match_rate')[6:]} |",
        f"| matched negatives answered with items | n/a | {fm['provider']['negatives_with_items']} / "
        f"{fm['provider']['negatives']} | {fm['native_ceiling']['negatives_with_items']} / "
        f"{fm['native_ceiling']['negatives']} |",
        f"| items outside the scope | 0 | {m['foreign_scope_items']['provider']} | "
        f"{m['foreign_scope_items']['native_ceiling']} |",
        f"| evidence chars median / p95 (all questions) | 0 / 0 | {_fmt(ctx['provider']['median'])} / "
        f"{_fmt(ctx['provider']['p95'])} | {_fmt(ctx['native_ceiling']['median'])} / "
        f"{_fmt(ctx['native_ceiling']['p95'])} |",
        f"| result JSON chars median / p95 (all questions) | 0 / 0 | {_fmt(ctx['provider_result_json']['median'])} / "
        f"{_fmt(ctx['provider_result_json']['p95'])} | n/a |",
        f"| ceiling / provider, questions with history | n/a | "
        f"{_fmt(ctx['ceiling_over_provider_median'])}x evidence chars, "
        f"{_fmt(ctx['ceiling_over_provider_result_json_median'])}x result JSON | - |",
        f"| latency ms median / p95 | 0 / 0 | {_fmt(lat['provider_in_process']['median'])} / "
        f"{_fmt(lat['provider_in_process']['p95'])} | {_fmt(lat['native_ceiling']['median'])} / "
        f"{_fmt(lat['native_ceiling']['p95'])} |",
        "",
        "## Provider checks",
        "",
        f"* truncation rate: {_fmt(m['truncation']['rate'])} ({m['truncation']['truncated']} of "
        f"{m['truncation']['answers']} answers; omitted without the flag: {m['truncation']['omitted_without_flag']})",
        f"* freshness: stale {_fmt(m['freshness']['stale'])}; incomplete {_fmt(m['freshness']['incomplete'])}; "
        f"fresh control {_fmt(m['freshness']['fresh_control'])}; latency from the change to the stale answer "
        f"{_fmt(m['freshness']['freshness_latency_ms'])} ms",
        f"* cross-scope requests: {m['cross_scope']['rejected']} / {m['cross_scope']['requests']} rejected "
        f"({', '.join(m['cross_scope']['codes'])})",
        f"* unknown options: {m['unknown_option']['rejected']} / {m['unknown_option']['requests']} rejected "
        f"({', '.join(m['unknown_option']['codes'])})",
        f"* subprocess agreement: {report['subprocess']['agree']} / {report['subprocess']['runs']} "
        f"(cold process ms {_fmt(report['subprocess']['latency_ms'])})",
        "",
        "## By fixture history",
        "",
        "| history | dead-end cases (facts) | recognition provider / ceiling | recall provider / ceiling "
        "| negatives with items provider / ceiling | evidence chars provider / ceiling |",
        "|---|---|---|---|---|---|",
    ]
    for name, cell in report["by_cell"].items():
        rec, rcl = cell["recognition_rate"], cell["recall"]
        neg, chars = cell["negatives_with_items"], cell["context_chars_median"]
        lines.append(f"| {name} | {cell['dead_end_cases']} ({cell['dead_end_facts']}) | {_fmt(rec['provider'])} / "
                     f"{_fmt(rec['native_ceiling'])} | {_fmt(rcl['provider'])} / {_fmt(rcl['native_ceiling'])} | "
                     f"{neg['provider']} / {neg['native_ceiling']} | {_fmt(chars['provider'])} / "
                     f"{_fmt(chars['native_ceiling'])} |")
    lines.append("")
    return "\n".join(lines)


def render_summary_markdown(summary: Mapping[str, Any], reports: Sequence[Mapping[str, Any]]) -> str:
    lines = [
        "# Stage 0 qualification",
        "",
        f"passed: **{summary['passed']}** (generated {summary['generated_at']}, provider "
        f"{summary['provider_version']}; digest `{summary['digest']}`)",
        "",
        "| scope | passed | dead-end recognition (provider / current / ceiling) | recall provider / ceiling "
        "| evidence chars ceiling / provider | failed criteria | report |",
        "|---|---|---|---|---|---|---|",
    ]
    for entry, report in zip(summary["scopes"], reports, strict=True):
        m = report["metrics"]
        rec, recall = m["dead_end"]["recognition_rate"], m["recall"]
        lines.append(
            f"| {entry['agent_id']} / {entry['project_id']} / {entry['repository_id']} | {entry['passed']} | "
            f"{_fmt(rec['provider'])} / {_fmt(rec['current_context'])} / {_fmt(rec['native_ceiling'])} | "
            f"{_fmt(recall['provider'])} / {_fmt(recall['native_ceiling'])} | "
            f"{_fmt(m['context_chars']['ceiling_over_provider_median'])}x | "
            f"{', '.join(entry['failed_criteria']) or '-'} | {entry['report']} |")
    lines.append("")
    return "\n".join(lines)


def qualify_command(*, out_dir: Path, fmt: str, out: TextIO, scope: QualifyScope | None = None,
                    seed: int = 7, extra_sessions: int = 24, subprocess_cases: int = 3,
                    work_dir: Path | None = None) -> int:
    """``qualify``: 0 when every scope passed, 1 when one did not."""
    result = run_qualification(out_dir, scopes=[scope] if scope else None, seed=seed,
                               extra_sessions=extra_sessions, subprocess_cases=subprocess_cases,
                               work_dir=work_dir)
    summary = result["summary"]
    if fmt == "md":
        out.write(render_summary_markdown(summary, result["reports"]))
        out.write(f"\nreports written to {out_dir}\n")
    else:
        out.write(json.dumps({**summary, "out_dir": str(out_dir)}, ensure_ascii=False) + "\n")
    with contextlib.suppress(OSError, ValueError):
        out.flush()
    return 0 if summary["passed"] else 1
