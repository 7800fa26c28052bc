"""The matched replan corpus: three builds of the fixture (base, stale, incomplete), its planted facts and
per-session tables, and the changes that turn the ``stale`` and ``incomplete`` builds into what they are named.

The corpus is generated with :func:`provider.fixtures.builder.build_fixture`; each scope's cells get their own
temporary config binding the scope's ids and sources to the cell's repository roots.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ...admission.config import EnabledScope, ProviderConfig, save_config
from ...fixtures.builder import build_fixture
from ...paths import strip_roots, under_root
from .scopes import Cell, QualifyScope


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
class Variant:
    name: str
    db_path: Path
    home: Path
    manifest: dict[str, Any]
    configs: dict[tuple[str, int], Path]


@dataclass
class Corpus:
    base: Variant
    stale: Variant
    incomplete: Variant
    facts: tuple[Fact, ...]
    session_of_message: dict[str, str]
    session_text: dict[str, str]  # lower-cased searchable text per session (for matched negatives)
    session_meta: dict[str, tuple[str, str]]  # session id -> (source, project_path)


def now_iso() -> str:
    return datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def ro_uri(path: Path) -> str:
    immutable = not any(os.path.exists(f"{path}{s}") for s in ("-wal", "-shm", "-journal"))
    quoted = urllib.parse.quote(str(path.resolve()), safe="/")
    return f"file:{quoted}?mode=ro" + ("&immutable=1" if immutable else "")


def _repo_group(manifest: Mapping[str, Any], repo: str) -> tuple[str, ...]:
    worktrees: Mapping[str, str] = manifest.get("worktrees", {})
    return (repo, *sorted(w for w, main in worktrees.items() if main == repo))


def repo_roots(manifest: Mapping[str, Any], repo: str) -> tuple[str, ...]:
    repos: Mapping[str, str] = manifest["repos"]
    return tuple(repos[r] for r in _repo_group(manifest, repo) if r in repos)


def relative_to_repo(text: str, manifest: Mapping[str, Any]) -> str:
    return strip_roots(text, [str(root) for root in manifest["repos"].values()])


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
            keys.append(relative_to_repo(str(raw["file_path"]), manifest).lower())
        out.append(Fact(id=str(raw["id"]), evidence_type=str(raw["evidence_type"]),
                        agents=(str(raw["agent"]),), repo=str(raw["repo"]), sessions=frozenset(sessions),
                        refs=frozenset(refs), messages=frozenset(messages), keys=tuple(dict.fromkeys(keys)),
                        marker=relative_to_repo(str(raw["must_contain"]), manifest)))
    return tuple(out)


def _read_corpus_tables(db_path: Path) -> tuple[dict[str, set[str]], dict[str, str], dict[str, str],
                                                dict[str, tuple[str, str]]]:
    """Tool id -> message uuids, message -> session, session -> searchable text, session -> (source, path)."""
    conn = sqlite3.connect(ro_uri(db_path), uri=True)
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
    entry = EnabledScope(agent_id=scope.agent_id, project_id=scope.project_id,
                         repository_id=scope.repository_id, sources=scope.sources,
                         roots=repo_roots(manifest, cell.repo), stage=2)
    save_config(path, ProviderConfig(recency_days=36500, transcript_homes=(str(manifest["home"]),),
                                     scopes=(entry,)))


def _build_variant(work: Path, name: str, seed: int, extra_sessions: int,
                   scopes: Sequence[QualifyScope]) -> Variant:
    info = build_fixture(work / name, seed=seed, extra_sessions=extra_sessions)
    manifest = json.loads(info.manifest_path.read_text(encoding="utf-8"))
    configs: dict[tuple[str, int], Path] = {}
    for n, scope in enumerate(scopes):
        for index, cell in enumerate(scope.cells):
            path = work / f"{name}-config-{n}-{index}.json"
            _write_config(path, scope, cell, manifest)
            configs[(scope.label, index)] = path
    return Variant(name, info.db_path, info.home, manifest, configs)


def build_corpus(work: Path, scopes: Sequence[QualifyScope], *, seed: int, extra_sessions: int) -> Corpus:
    base = _build_variant(work, "base", seed, extra_sessions, scopes)
    stale = _build_variant(work, "stale", seed, extra_sessions, scopes)
    incomplete = _build_variant(work, "incomplete", seed, extra_sessions, scopes)
    tool_messages, session_of, texts, meta = _read_corpus_tables(base.db_path)
    return Corpus(base, stale, incomplete, _facts(base.manifest, tool_messages), session_of, texts, meta)


def cell_sessions(corpus: Corpus, scope: QualifyScope, cell: Cell) -> set[str]:
    roots = repo_roots(corpus.base.manifest, cell.repo)
    return {sid for sid, (src, path) in corpus.session_meta.items() if src in scope.sources and under_root(path, roots)}


def in_cell(fact: Fact, cell: Cell, manifest: Mapping[str, Any]) -> bool:
    return any(a in cell.agents for a in fact.agents) and fact.repo in _repo_group(manifest, cell.repo)


# --------------------------------------------------------------------------------------------------------
# Variants: stale (append after the build) and incomplete (an index_state row deleted)
# --------------------------------------------------------------------------------------------------------


def _cell_units(variant: Variant, cell: Cell) -> list[dict[str, Any]]:
    group = _repo_group(variant.manifest, cell.repo)
    return [s for s in variant.manifest["sessions"]
            if s["agent"] in cell.agents and s["repo"] in group and s.get("kind") != "canary"]


def make_stale(variant: Variant, cell: Cell) -> float | None:
    """Append one transcript line to a session of the cell; the monotonic time of the change (None: no unit)."""
    units = _cell_units(variant, cell)
    if not units:
        return None
    unit = units[0]
    if unit["source"] == "codex":
        line: dict[str, Any] = {"timestamp": now_iso(), "type": "event_msg",
                                "payload": {"type": "agent_message", "message": "appended after the build"}}
    else:
        line = {"type": "user", "cwd": unit["project_path"], "sessionId": unit["id"], "uuid": os.urandom(8).hex(),
                "timestamp": now_iso(), "message": {"role": "user", "content": "appended after the build"}}
    changed = time.monotonic()
    with Path(unit["jsonl_path"]).open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(line) + "\n")
    return changed


def make_incomplete(variant: Variant, cell: Cell) -> None:
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
