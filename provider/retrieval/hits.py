"""A row a template returned, and the scope re-check every such row passes before anything reads it."""

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple, cast

from ..contract.wire import EvidenceType
from ..errors import ScopeViolation
from ..paths import Roots
from ..templates.catalog import SCOPE_KIND, Template


class RawHit(NamedTuple):
    """A row of ``template``'s, as ``plan`` read it (None: the template itself): a plan's rows are its template's."""

    template: Template
    row: Mapping[str, Any]
    plan: Template | None = None

    @property
    def evidence_type(self) -> EvidenceType:
        kind = self.template.evidence_type
        if kind == SCOPE_KIND:  # pragma: no cover - the scope template never yields evidence rows
            raise TypeError("the scope template yields no evidence")
        return cast("EvidenceType", kind)


#: Session ids of rows joined in from other tables (a message, a tool result), where a template projects them.
JOINED_SESSION_COLUMNS = ("msg_session_id", "result_session_id")
#: Every column :func:`check_scope` reads: a row's verdict is a function of these alone.
SCOPE_COLUMNS = frozenset({"session_id", "session_source", "session_path", "msg_cwd", *JOINED_SESSION_COLUMNS})


def check_scope(hit: RawHit, sources: Sequence[str], roots: Roots, in_scope: frozenset[str]) -> None:
    """Fail the whole result when a row lies outside the requested scope: never filter it away.

    A row is in scope when its session is in the scope set, its source is bound, its session's project path
    lies inside a root by real path, its message's recorded cwd (where there is one) does too, and every row
    joined into it (message, tool result) carries the same session id: a NULL or different one fails, as no
    FOREIGN KEY enforces it.
    """
    row = hit.row
    session = row.get("session_id")
    if session is None or session not in in_scope:
        raise ScopeViolation
    if row.get("session_source") not in sources:
        raise ScopeViolation
    if not roots.contains(row.get("session_path")):
        raise ScopeViolation
    cwd = row.get("msg_cwd")
    if cwd is not None and not roots.contains(cwd):
        raise ScopeViolation
    for joined in JOINED_SESSION_COLUMNS:
        if joined in row and row[joined] != session:
            raise ScopeViolation
