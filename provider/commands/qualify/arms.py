"""The arms a case runs under (RFC §10), besides ``current_context`` (no history read, nothing added):

* ``native_ceiling``: an Obelisk-style search over the same database, written with plain read-only apsw
  queries: the top 20 whole messages by bm25 for the raw terms (OR of quoted phrases) with 6 neighbouring
  messages each (3 before, 3 after, same session), filtered by the repository's project paths only;
* ``provider``: the typed request through :func:`service.answer` in-process, a few re-run through a real
  ``python -m obelisk_session_evidence query`` subprocess (which must agree), and the freshness questions on
  the variants.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import apsw

from ..._resources import PACKAGE
from ...service import WarmState, answer
from ...templates.params import NO_UPPER_BOUND
from .cases import Case
from .corpus import Corpus, Variant, make_incomplete, make_stale, ro_uri
from .scopes import QualifyScope
from .stats import dist

#: The Obelisk-style ceiling: top-N whole messages, each with this many neighbours (half before, half after).
NATIVE_TOP: Final = 20
NATIVE_NEIGHBOURS: Final = 6



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
  AND COALESCE(m.timestamp, '') < :until
ORDER BY bm25(messages_fts)
LIMIT :limit"""
_NATIVE_BEFORE: Final = """
SELECT rowid, uuid, session_id, timestamp FROM messages
WHERE session_id = :sid AND (timestamp < :ts OR (timestamp = :ts AND rowid < :rid))
  AND COALESCE(timestamp, '') < :until
ORDER BY timestamp DESC, rowid DESC LIMIT :n"""
_NATIVE_AFTER: Final = """
SELECT rowid, uuid, session_id, timestamp FROM messages
WHERE session_id = :sid AND (timestamp > :ts OR (timestamp = :ts AND rowid > :rid))
  AND COALESCE(timestamp, '') < :until
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
                  neighbours: int = NATIVE_NEIGHBOURS, until: str = NO_UPPER_BOUND) -> NativeResult:
    """Top ``top`` whole messages by bm25 for the raw terms, each with ``neighbours`` session neighbours.

    ``until``: the same cut of the index as the provider's (a replay reads nothing at or after it).

    ``conn`` is an open apsw (or sqlite3) connection to the index; only SELECTs are run.
    """
    started = time.perf_counter()
    expression = native_match_expression(terms)
    if expression is None:
        return NativeResult((), 0.0)
    roots_json = json.dumps([r.rstrip("/") or "/" for r in roots])
    hits = list(conn.execute(_NATIVE_HITS, {"q": expression, "roots": roots_json, "limit": top, "until": until}))
    chosen: dict[int, tuple[str, str, bool]] = {}
    order: list[int] = []
    half = neighbours // 2
    for rowid, uid, sid, ts in hits:
        around = [*reversed(list(conn.execute(_NATIVE_BEFORE, {"sid": sid, "ts": ts, "rid": rowid, "n": half,
                                                                  "until": until}))),
                  (rowid, uid, sid, ts),
                  *conn.execute(_NATIVE_AFTER, {"sid": sid, "ts": ts, "rid": rowid,
                                                "n": neighbours - half, "until": until})]
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
    return apsw.Connection(ro_uri(db_path), flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)


# --------------------------------------------------------------------------------------------------------
# The provider arm: in-process answers, the CLI cross-check, the freshness variants
# --------------------------------------------------------------------------------------------------------


@dataclass
class CaseOutcome:
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


def _config(variant: Variant, scope: QualifyScope, case: Case) -> Path:
    return variant.configs[(scope.label, case.cell)]


def run_provider(case: Case, variant: Variant, scope: QualifyScope, warm: WarmState) -> CaseOutcome:
    """The provider's answer in process, as a warm ``serve`` gives it (``warm``: kept across the run)."""
    raw = json.dumps(case.request).encode("utf-8")
    started = time.perf_counter()
    response = answer(raw, db_path=variant.db_path, config_path=_config(variant, scope, case), warm=warm)
    elapsed = (time.perf_counter() - started) * 1000.0
    return _outcome_from(case, response.envelope, elapsed)


def _outcome_from(case: Case, envelope: Mapping[str, Any], elapsed_ms: float) -> CaseOutcome:
    out = CaseOutcome(case, outcome=str(envelope.get("outcome")), elapsed_ms=elapsed_ms)
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


def subprocess_runs(outcomes: Sequence[CaseOutcome], corpus: Corpus, scope: QualifyScope,
                     count: int) -> dict[str, Any]:
    """Re-run a few answered cases through a real ``python -m obelisk_session_evidence query`` process and compare."""
    kinds = ("dead_end", "negative", "cross_scope", "unknown_option")
    picked = [next(o for o in outcomes if o.case.kind == k) for k in kinds
              if any(o.case.kind == k for o in outcomes)][:count]
    env = {k: v for k, v in os.environ.items() if not k.startswith("OBELISK")}
    agree = 0
    times: list[float] = []
    for outcome in picked:
        variant = corpus.base
        started = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", PACKAGE, "query", "--db", str(variant.db_path), "--config",
             str(_config(variant, scope, outcome.case))], input=json.dumps(outcome.case.request).encode(),
            capture_output=True, env=env, cwd=variant.db_path.parent, timeout=120, check=False)
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
    return {"runs": len(picked), "agree": agree, "latency_ms": dist(times)}


def run_freshness(corpus: Corpus, scope: QualifyScope, cases: Sequence[Case], warm: WarmState) -> list[CaseOutcome]:
    """Base first; then each cell's transcript is appended to and the stale questions asked at once (the
    lag from the change to the answer is the freshness latency); then index_state rows are deleted."""
    outcomes = [run_provider(c, corpus.base, scope, warm) for c in cases if c.variant == "base"]
    for index, cell in enumerate(scope.cells):
        changed = make_stale(corpus.stale, cell)
        for n, case in enumerate(c for c in cases if c.variant == "stale" and c.cell == index):
            outcome = run_provider(case, corpus.stale, scope, warm)
            if n == 0 and changed is not None:
                outcome.freshness_lag_ms = (time.monotonic() - changed) * 1000.0
            outcomes.append(outcome)
        make_incomplete(corpus.incomplete, cell)
        outcomes += [run_provider(c, corpus.incomplete, scope, warm) for c in cases
                     if c.variant == "incomplete" and c.cell == index]
    return outcomes
