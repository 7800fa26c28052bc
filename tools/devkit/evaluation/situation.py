"""What an evaluation asks and what it expects: situations, their required facts, scopes and sessions.

A :class:`Situation` is one realistic request (an agent and a repository scope, evidence types and query
terms taken from canonical situation fields: a command, an error class, a file). A positive situation lists
:class:`Fact` s: a session, the evidence types an item may carry, and a key phrase the item's snippet must
contain; a fact may also ask what the same item says besides (``with_phrases``, a marker such as
``superseded_by``), must not say (``without_phrases``), and where it stands (``leads``: the first item of its
evidence types). A negative situation expects no item (or, with ``forbidden_phrase``, no item showing that
phrase). A situation may ask under tighter limits than the runner's (``max_items``, ``max_total_chars``).
An :class:`EvalSet` binds situations to one database, its enabled scopes and the scope each session belongs
to (for the scope-violation count).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from obelisk_session_evidence.contract.wire import EvidenceType


@dataclass(frozen=True)
class Fact:
    """A required fact: an item of ``session_id`` with one of ``evidence_types`` whose snippet shows ``phrase``."""

    session_id: str
    evidence_types: tuple[EvidenceType, ...]
    phrase: str
    kind: str
    #: Phrases the same item must show as well (a label the provider adds: ``superseded_by``, ``regression``).
    with_phrases: tuple[str, ...] = ()
    #: Phrases the same item must not show (the current decision carries no ``superseded_by``).
    without_phrases: tuple[str, ...] = ()
    #: The item must be the first of the answer's items whose evidence type is one of ``evidence_types``.
    leads: bool = False
    #: Other sessions whose item shows the fact as well (one failure repeated in many sessions: any of them).
    or_sessions: tuple[str, ...] = ()

    @property
    def evidence_type(self) -> EvidenceType:
        """The type the fact is reported under (the first accepted one)."""
        return self.evidence_types[0]


@dataclass(frozen=True)
class Situation:
    id: str
    source: str
    repository: str
    evidence_types: tuple[EvidenceType, ...]
    terms: tuple[str, ...]
    facts: tuple[Fact, ...] = ()
    negative: bool = False
    forbidden_phrase: str | None = None  # negative: None = any item is false; else items showing the phrase
    classes: tuple[str, ...] = ()
    max_items: int | None = None  # None: the runner's limit
    max_total_chars: int | None = None


@dataclass(frozen=True)
class ScopeSpec:
    """One enabled scope: an agent (one transcript source) in one repository (its roots, worktrees too)."""

    source: str
    repository: str
    roots: tuple[str, ...]

    @property
    def agent_id(self) -> str:
        return f"{self.source}-agent"


@dataclass
class EvalSet:
    name: str
    db_path: Path
    scopes: list[ScopeSpec]
    sessions: dict[str, tuple[str, str]]  # session id -> (source, repository)
    situations: list[Situation] = field(default_factory=list)

    def scope(self, source: str, repository: str) -> ScopeSpec:
        return next(s for s in self.scopes if s.source == source and s.repository == repository)
