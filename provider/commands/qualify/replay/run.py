"""Time-travel replay: answer each mined pair and negative as LoopX would have asked it, with the index as it
stood before the later session began (the templates' bound ``:until``), in process and read-only."""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from ....admission.config import ProviderConfig
from ....contract.wire import EvidenceType
from ....digest import DigestKey
from ....paths import Roots
from ....service import WarmState, answer
from ..arms import native_search, open_native
from .mine import Negative, Pair
from .signature import Kind

#: Evidence types asked per signature kind (what a replan on a repetition needs to see).
TYPES: Final[dict[Kind, tuple[EvidenceType, ...]]] = {
    "failure": ("prior_failure", "tool_outcome"),
    "command": ("tool_outcome", "prior_failure"),
    "edit": ("file_history",),
}
#: What counts as recognising the earlier attempt, per kind: an item of one of these types from it.
RECOGNISES: Final[dict[Kind, frozenset[str]]] = {
    "failure": frozenset({"prior_failure"}),
    "command": frozenset({"tool_outcome", "prior_failure"}),
    "edit": frozenset({"file_history"}),
}
#: Items that would tell the agent "you met this before", per kind: a false match on a negative. A failure
#: never met before may still show the same command's earlier success (a tool outcome): that is no claim
#: that the failure happened before.
CLAIMS_PRIOR: Final[dict[Kind, frozenset[str]]] = {
    "failure": frozenset({"prior_failure"}),
    "command": frozenset({"tool_outcome", "prior_failure"}),
    "edit": frozenset({"file_history"}),
}
LIMITS: Final = {"max_sessions": 10, "max_items": 10, "max_snippet_chars": 600, "max_total_chars": 6000}


@dataclass(frozen=True)
class ScopeRef:
    """The enabled scope the replay runs for: its ids, sources, bound roots and their real paths at enable."""

    agent_id: str
    project_id: str
    repository_id: str
    sources: tuple[str, ...]
    roots: tuple[str, ...]
    real_roots: tuple[str, ...] = ()

    def bound_roots(self) -> Roots:
        """The roots as retrieval compares them (every spelling for the SQL, real paths to decide)."""
        return Roots.of(self.roots, self.real_roots)


@dataclass
class Replay:
    """One replayed request and what its answer held (private to the run: never written as such)."""

    digest: str  # content-free name of the case
    negative: bool
    kind: Kind
    outcome: str
    freshness: str | None
    items: int
    recognised: bool
    false_match: bool
    outside_scope: int
    chars: int
    result_chars: int
    ceiling_chars: int
    latency_ms: float
    days_between: float | None
    over_budget: bool
    index_revision: str


def case_digest(digest_key: DigestKey, kind: str, key: str, session: str) -> str:
    """The content-free name of a replayed case (the slowest are listed by it): keyed with the install's key,
    since a signature and a session id are private and guessable; 16 hex digits."""
    return digest_key.of([kind, key, session]).split(":", 1)[1][:16]


def request(scope: ScopeRef, kind: Kind, terms: Sequence[str], rid: str) -> bytes:
    """The request LoopX sends on a repetition: canonical situation fields only (never raw chat)."""
    return json.dumps({
        "schema_version": "historical_evidence_request_v0", "request_id": rid, "situation_id": rid,
        "trigger": "replan_repetition",
        "scope": {"agent_id": scope.agent_id, "project_id": scope.project_id, "repository_id": scope.repository_id,
                  "allow_cross_agent": False, "allow_cross_project": False},
        "evidence_types": list(TYPES[kind]), "query_terms": list(dict.fromkeys(terms)), "limits": LIMITS,
    }).encode()


@dataclass(frozen=True)
class _Case:
    kind: Kind
    key: str
    terms: tuple[str, ...]
    later: str  # the session replayed
    until: str  # its start: nothing at or after it is read
    earlier: frozenset[str] | None  # None for a negative
    days: float | None


def replay_all(db_path: Path, loaded: tuple[ProviderConfig, DigestKey], scope: ScopeRef,
               in_scope: frozenset[str], *,
               pairs: Sequence[Pair], negatives: Sequence[Negative]) -> list[Replay]:
    """Answer every pair and negative at its moment; check every item row by row against the scope and the cut."""
    cases = [_Case(p.kind, p.key, p.terms, p.later, p.later_start, p.earlier, p.days_between) for p in pairs]
    cases += [_Case(n.kind, n.key, n.terms, n.session, n.session_start, None, None) for n in negatives]
    native = open_native(db_path)
    warm = WarmState()  # the cases are answered as one serve process answers them
    try:
        return [_one(db_path, loaded, scope, in_scope, native=native, case=case, warm=warm) for case in cases]
    finally:
        native.close()


#: The largest recency window a config allows (``ProviderConfig.recency_days``).
_MAX_RECENCY_DAYS: Final = 36500


def as_of(config: ProviderConfig, until: str, now_s: float) -> ProviderConfig:
    """``config`` with its recency window measured back from the replayed moment ``until`` instead of from now,
    as LoopX would have had it then (the window is widened by the whole days since the moment; ``until`` is
    the upper bound). Unchanged when ``until`` is not a time."""
    try:
        moment = datetime.fromisoformat(until.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return config
    elapsed_days = max(0, math.ceil((now_s - moment) / 86400.0))
    return config._replace(recency_days=min(_MAX_RECENCY_DAYS, config.recency_days + elapsed_days))


def _one(db_path: Path, loaded: tuple[ProviderConfig, DigestKey], scope: ScopeRef, in_scope: frozenset[str], *,
         native: Any, case: _Case, warm: WarmState) -> Replay:
    kind, key, terms, later, until, earlier, days = (case.kind, case.key, case.terms, case.later, case.until,
                                                    case.earlier, case.days)
    digest = case_digest(loaded[1], kind, key, later)
    raw = request(scope, kind, terms, f"replay-{digest}")
    started = time.perf_counter()
    # The staged config and key are in memory (``preloaded``): no config file is read or written.
    config = as_of(loaded[0], until, time.time())
    response = answer(raw, db_path=db_path, config_path=Path(os.devnull), until=until,
                      preloaded=(config, loaded[1]), warm=warm)
    latency = (time.perf_counter() - started) * 1000.0
    envelope = response.envelope
    result = envelope.get("result") or {}
    items: list[dict[str, Any]] = list(result.get("items") or [])
    outside = sum(1 for i in items if i.get("session_ref") not in in_scope or i.get("session_ref") == later
                  or str(i.get("observed_at") or "") >= until)
    recognised = earlier is not None and any(
        i.get("session_ref") in earlier and i.get("evidence_type") in RECOGNISES[kind] for i in items)
    false_match = earlier is None and any(i.get("evidence_type") in CLAIMS_PRIOR[kind] for i in items)
    chars = sum(len(str(i.get("snippet", ""))) for i in items)
    ceiling = native_search(native, terms, scope.bound_roots().spellings, until=until)
    return Replay(digest, earlier is None, kind, str(envelope.get("outcome")), result.get("freshness"), len(items),
                  recognised, false_match, outside, chars,
                  len(json.dumps(result, ensure_ascii=False)) if result else 0, ceiling.chars, latency, days,
                  chars > LIMITS["max_total_chars"], str(result.get("index_revision") or ""))
