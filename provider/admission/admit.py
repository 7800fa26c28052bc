"""Admission: a pure function of (request, config) that yields the scope to read or a typed rejection.

Nothing here touches the index, the clock or the filesystem, so every branch is tested exhaustively.
"""

from typing import NamedTuple

from ..contract.wire import EvidenceType, Limits, Request, Trigger
from ..errors import (
    InvalidQueryTerms,
    InvalidRequest,
    LimitOverCeiling,
    NotEnabled,
    ScopeMismatch,
    TriggerNotAdmitted,
)
from .config import EnabledScope, ProviderConfig

STAGE_TRIGGERS: dict[int, frozenset[Trigger]] = {
    1: frozenset({"operator_requested_history"}),
    2: frozenset({"operator_requested_history", "replan_repetition", "hypothesis_history_gap",
                  "resume_or_handoff_gap"}),
}


class AdmittedRequest(NamedTuple):
    """What retrieval may read: exactly one enabled scope, and the request's bounded asks."""

    request: Request
    scope: EnabledScope
    evidence_types: tuple[EvidenceType, ...]
    query_terms: tuple[str, ...]
    limits: Limits


def _find_scope(request: Request, config: ProviderConfig) -> EnabledScope:
    asked = request.scope
    same_agent_project = [s for s in config.scopes
                          if s.agent_id == asked.agent_id and s.project_id == asked.project_id]
    if not same_agent_project:
        raise NotEnabled
    exact = [s for s in same_agent_project if s.repository_id == asked.repository_id]
    if not exact:
        raise ScopeMismatch
    return exact[0]


def _check_limits(limits: Limits, config: ProviderConfig) -> None:
    ceilings = config.ceilings
    for name in ("max_sessions", "max_items", "max_snippet_chars", "max_total_chars"):
        value = getattr(limits, name)
        if value < 1:
            raise InvalidRequest(f"limits.{name} must be a positive integer")
        ceiling = getattr(ceilings, name)
        if value > ceiling:
            raise LimitOverCeiling(f"limits.{name} is above the provider ceiling of {ceiling}")


def _check_terms(terms: tuple[str, ...], config: ProviderConfig) -> tuple[str, ...]:
    ceilings = config.ceilings
    if not terms or len(terms) > ceilings.max_query_terms:
        raise InvalidQueryTerms("query_terms must hold between 1 and max_query_terms terms")
    if any(len(term) > ceilings.max_term_chars for term in terms):
        raise InvalidQueryTerms("a query term is longer than max_term_chars")
    return terms


def admit(request: Request, config: ProviderConfig) -> AdmittedRequest:
    """Admit a validated request against the operator's config, or raise a typed rejection."""
    scope = _find_scope(request, config)
    if request.trigger not in STAGE_TRIGGERS[scope.stage]:
        raise TriggerNotAdmitted
    if not request.evidence_types:
        raise InvalidRequest("evidence_types must not be empty")
    if len(set(request.evidence_types)) != len(request.evidence_types):
        raise InvalidRequest("evidence_types must not repeat a type")
    _check_limits(request.limits, config)
    terms = _check_terms(request.query_terms, config)
    return AdmittedRequest(
        request=request,
        scope=scope,
        evidence_types=tuple(request.evidence_types),
        query_terms=terms,
        limits=request.limits,
    )
