"""Run every situation of an :class:`EvalSet` in-process through :func:`service.answer` and score it.

For each situation: which required facts an item shows (same session, an accepted evidence type, the key
phrase inside the snippet, whitespace-insensitive), the false items of a negative situation, the answer's
characters (snippet characters and the whole result JSON), the in-process latency and every item whose
session lies outside the request's scope (a scope violation). The config and a copy of the database live in
a temporary directory that is removed afterwards; the evaluated database is never written.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .situation import EvalSet, Fact, ScopeSpec, Situation

PROJECT_ID = "eval"


@dataclass(frozen=True)
class Limits:
    max_sessions: int = 8
    max_items: int = 8
    max_snippet_chars: int = 800
    max_total_chars: int = 6000

    def as_json(self) -> dict[str, int]:
        return {"max_sessions": self.max_sessions, "max_items": self.max_items,
                "max_snippet_chars": self.max_snippet_chars, "max_total_chars": self.max_total_chars}


@dataclass
class Outcome:
    situation: Situation
    outcome: str
    items: int
    found: list[bool]
    false_items: int
    scope_violations: int
    snippet_chars: int
    result_chars: int
    latency_ms: float
    missing: list[Fact] = field(default_factory=list)
    item_chars: list[int] = field(default_factory=list)  # snippet characters of each item


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _config(scopes: list[ScopeSpec]) -> dict[str, Any]:
    return {"config_version": 1, "recency_days": 36500, "scopes": [{
        "agent_id": s.agent_id, "project_id": PROJECT_ID, "repository_id": s.repository, "sources": [s.source],
        "roots": list(s.roots)} for s in scopes]}


def _request(sit: Situation, scope: ScopeSpec, limits: Limits) -> bytes:
    limits = Limits(max_sessions=limits.max_sessions, max_items=sit.max_items or limits.max_items,
                    max_snippet_chars=limits.max_snippet_chars,
                    max_total_chars=sit.max_total_chars or limits.max_total_chars)
    return json.dumps({
        "schema_version": "historical_evidence_request_v0", "request_id": f"eval-{sit.id}",
        "situation_id": sit.id, "trigger": "operator_requested_history",
        "scope": {"agent_id": scope.agent_id, "project_id": PROJECT_ID, "repository_id": scope.repository,
                  "allow_cross_agent": False, "allow_cross_project": False},
        "evidence_types": list(sit.evidence_types), "query_terms": list(sit.terms), "limits": limits.as_json(),
    }).encode()


def _shows(item: dict[str, Any], fact: Fact) -> bool:
    snippet = _norm(str(item.get("snippet", "")))
    return (item.get("session_ref") in (fact.session_id, *fact.or_sessions)
            and item.get("evidence_type") in fact.evidence_types
            and all(_norm(p) in snippet for p in (fact.phrase, *fact.with_phrases))
            and not any(_norm(p) in snippet for p in fact.without_phrases))


def _found(items: list[dict[str, Any]], fact: Fact) -> bool:
    """Whether an item shows ``fact``; a fact that ``leads`` only by the first item of its evidence types."""
    if fact.leads:
        first = next((i for i in items if i.get("evidence_type") in fact.evidence_types), None)
        return first is not None and _shows(first, fact)
    return any(_shows(i, fact) for i in items)


def score(sit: Situation, evalset: EvalSet, envelope: dict[str, Any], latency_ms: float) -> Outcome:
    """How one answer scores against its situation: which facts it shows (session, evidence type and key
    phrase), its false items on a negative, and its items from outside the situation's scope."""
    result = envelope.get("result") or {}
    items: list[dict[str, Any]] = list(result.get("items") or [])
    violations = sum(1 for i in items
                     if evalset.sessions.get(str(i.get("session_ref"))) != (sit.source, sit.repository))
    found = [_found(items, fact) for fact in sit.facts]
    false_items = 0
    if sit.negative:
        phrase = sit.forbidden_phrase
        false_items = sum(1 for i in items
                          if phrase is None or _norm(phrase) in _norm(str(i.get("snippet", ""))))
    return Outcome(
        situation=sit, outcome=str(envelope.get("outcome")), items=len(items), found=found,
        false_items=false_items, scope_violations=violations,
        snippet_chars=sum(len(str(i.get("snippet", ""))) for i in items),
        result_chars=len(json.dumps(result, ensure_ascii=False)) if result else 0, latency_ms=latency_ms,
        missing=[f for f, ok in zip(sit.facts, found, strict=True) if not ok],
        item_chars=[len(str(i.get("snippet", ""))) for i in items],
    )


def run_evalset(evalset: EvalSet, *, limits: Limits | None = None) -> list[Outcome]:
    """Answer every situation of ``evalset`` (on a private copy of its database) and score the answers."""
    from obelisk_session_evidence.digest import ensure_key
    from obelisk_session_evidence.service import WarmState, answer  # the query path loads only when an evaluation runs

    limits = limits or Limits()
    work = Path(tempfile.mkdtemp(prefix="obelisk-eval-"))
    try:
        db = work / "index.sqlite"
        shutil.copyfile(evalset.db_path, db)
        config = work / "config.json"
        config.write_text(json.dumps(_config(evalset.scopes)), encoding="utf-8")
        ensure_key(config)  # the per-install digest key an enabled config needs (enable makes it)
        outcomes = []
        warm = WarmState()  # the situations are answered as one serve process answers them
        for sit in evalset.situations:
            raw = _request(sit, evalset.scope(sit.source, sit.repository), limits)
            started = time.perf_counter()
            response = answer(raw, db_path=db, config_path=config, warm=warm)
            latency = (time.perf_counter() - started) * 1000
            outcomes.append(score(sit, evalset, response.envelope, latency))
        return outcomes
    finally:
        shutil.rmtree(work, ignore_errors=True)
