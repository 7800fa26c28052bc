"""Mine repeat pairs and matched negatives from a scope's own indexed sessions.

The scope's sessions come from the verified ``scope.sessions`` template (the same predicates every request
runs); their tool calls and results are then read by session id, in the same read-only snapshot
(:func:`provider.index.connection.read_index`), and every row is re-checked to belong to a scoped session.

* a **repeat pair** is a signature (:mod:`.signature`: a failure, a command or an edited file) that a later
  session meets again after at least one earlier session of the scope met it. The replay happens at the later
  session's start: the request it would have sent, against the index as it stood before that moment;
* a **matched negative** is a failure or command signature whose first occurrence in scope is in a session
  that is not the scope's first: nothing earlier in scope holds it, so any prior failure the provider
  returns for it is a false match.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from ....errors import ScopeViolation
from ....index.connection import Deadline, ReadSnapshot, read_index
from ....index.scope_state import read_scope_set
from ....paths import Roots
from ....retrieval.engine import READ_HEAD, READ_TAIL
from ....templates.catalog import scope_template
from .signature import Kind, Signature, signatures

#: Tool calls read per mining pass at most (a bound, like every read of the provider).
MINE_ROW_CEILING: Final = 200_000
#: The mining read's deadline: it is one offline pass over the scope, not a request.
MINE_DEADLINE_MS: Final = 120_000

# Reads the tool calls of the sessions the verified scope template returned (:ids), with their call
# message's time and the session's start; each row is re-checked in Python against the scope set.
_CALLS_SQL: Final = """
SELECT tc.session_id, s.started_at, m.timestamp, tc.name, substr(tc.input_json, 1, :head), tc.file_path,
       substr(tr.content, 1, :head), CASE WHEN length(tr.content) > :head THEN substr(tr.content, -:tail)
       ELSE '' END, COALESCE(tr.is_error, 0), s.project_path, COALESCE(s.source, 'claude'), m.session_id
FROM tool_calls AS tc
JOIN sessions AS s ON s.id = tc.session_id
JOIN messages AS m ON m.uuid = tc.message_uuid
LEFT JOIN tool_results AS tr ON tr.tool_use_id = tc.id
WHERE tc.session_id IN (SELECT value FROM json_each(:ids))
  AND COALESCE(m.visibility, 'visible') = 'visible'
  AND COALESCE(m.is_sidechain, 0) = 0
ORDER BY s.started_at, m.timestamp, tc.rowid
LIMIT :limit
"""


@dataclass(frozen=True)
class Occurrence:
    session_id: str
    session_start: str
    at: str  # the call message's time
    signature: Signature


@dataclass(frozen=True)
class Pair:
    """A signature met again: ``later`` at ``later_start`` (the replay moment) after ``earlier`` sessions."""

    kind: Kind
    key: str
    terms: tuple[str, ...]
    later: str
    later_start: str
    earlier: frozenset[str]
    days_between: float  # from the latest earlier occurrence to the later session's start


@dataclass(frozen=True)
class Negative:
    """A signature first met in ``session`` (not the scope's first session) and never before in scope."""

    kind: Kind
    key: str
    terms: tuple[str, ...]
    session: str
    session_start: str


@dataclass
class History:
    sessions: dict[str, str] = field(default_factory=dict)  # session id -> start
    occurrences: list[Occurrence] = field(default_factory=list)
    rows_read: int = 0
    ceiling_reached: bool = False


def read_history(db_path: Path, *, sources: Sequence[str], roots: Roots) -> History:
    """The scope's sessions and the signatures of their tool calls, in one read-only snapshot."""

    def work(snap: ReadSnapshot) -> History:
        scope = read_scope_set(snap, scope_template(), sources=sources, roots=roots, since="")
        history = History()
        if not scope.ids:
            return history
        rows = snap.rows(_CALLS_SQL, {"ids": json.dumps(sorted(scope.ids)), "head": READ_HEAD, "tail": READ_TAIL,
                                      "limit": MINE_ROW_CEILING})
        history.rows_read = len(rows)
        history.ceiling_reached = len(rows) >= MINE_ROW_CEILING
        for (sid, start, at, name, call_input, file_path, head, tail, is_error, path, source,
             msg_session) in rows:
            # Row by row: a scoped session, a bound source, a path inside a root by real path, the message of
            # the same session.
            if sid not in scope.ids or source not in sources or not roots.contains(path) or msg_session != sid:
                raise ScopeViolation
            started = str(start or at or "")
            history.sessions[sid] = started
            row: dict[str, Any] = {"call_name": name, "call_input": call_input, "file_path": file_path,
                                   "result_head": head, "result_tail": tail, "is_error": is_error}
            for sig in signatures(row, roots.spellings):
                history.occurrences.append(Occurrence(sid, started, str(at or started), sig))
        return history

    history, _mode = read_index(db_path, work, deadline=Deadline(MINE_DEADLINE_MS))
    return history


def _days(a: str, b: str) -> float:
    try:
        first = datetime.fromisoformat(a.replace("Z", "+00:00"))
        second = datetime.fromisoformat(b.replace("Z", "+00:00"))
    except ValueError:
        return 0.0
    return max(0.0, (second - first).total_seconds() / 86400.0)


def mine(history: History) -> tuple[list[Pair], list[Negative]]:
    """Repeat pairs and matched negatives of ``history`` (deterministic order)."""
    first: dict[tuple[Kind, str, str], Occurrence] = {}  # (kind, key, session) -> first occurrence there
    for occ in history.occurrences:
        first.setdefault((occ.signature.kind, occ.signature.key, occ.session_id), occ)
    by_key: dict[tuple[Kind, str], list[Occurrence]] = {}
    for (kind, key, _sid), occ in first.items():
        by_key.setdefault((kind, key), []).append(occ)
    opening = min(history.sessions.values(), default="")
    pairs: list[Pair] = []
    negatives: list[Negative] = []
    for (kind, key), occs in sorted(by_key.items()):
        occs.sort(key=lambda o: (o.session_start, o.session_id))
        for i, later in enumerate(occs):
            # Earlier: sessions that started before the later one and met the signature before its start.
            earlier = [o for o in occs[:i] if o.session_start < later.session_start and o.at < later.session_start]
            if earlier:
                pairs.append(Pair(kind, key, later.signature.terms, later.session_id, later.session_start,
                                  frozenset(o.session_id for o in earlier),
                                  _days(max(o.at for o in earlier), later.session_start)))
        head = occs[0]
        if kind != "edit" and head.session_start > opening and not any(
                o.session_start < head.session_start for o in occs[1:]):
            negatives.append(Negative(kind, key, head.signature.terms, head.session_id, head.session_start))
    return pairs, negatives
