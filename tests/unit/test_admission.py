"""Admission is a pure function of (request, config): every branch, exhaustively."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from obelisk_session_evidence.admission.admit import STAGE_TRIGGERS, admit
from obelisk_session_evidence.admission.config import Ceilings, EnabledScope, ProviderConfig
from obelisk_session_evidence.contract.parse import parse_request
from obelisk_session_evidence.errors import ProviderError

from tests.conftest import make_request

TRIGGERS = ["replan_repetition", "hypothesis_history_gap", "resume_or_handoff_gap",
            "operator_requested_history"]


def _config(stage: int = 1, **ceilings: int) -> ProviderConfig:
    scope = EnabledScope(agent_id="claude-main", project_id="acme", repository_id="acme-api",
                         sources=("claude",), roots=("/src/acme-api",), stage=stage)  # type: ignore[arg-type]
    return ProviderConfig(scopes=(scope,), ceilings=Ceilings(**ceilings))


def _admit(config: ProviderConfig, **overrides: Any) -> Any:
    return admit(parse_request(json.dumps(make_request(**overrides)).encode()), config)


def _code(config: ProviderConfig, **overrides: Any) -> str:
    try:
        _admit(config, **overrides)
    except ProviderError as err:
        assert err.outcome == "rejected"
        return err.code
    return "ok"


@pytest.mark.parametrize(("stage", "trigger"), list(itertools.product([1, 2], TRIGGERS)))
def test_stage_trigger_matrix(stage: int, trigger: str) -> None:
    expected = "ok" if trigger in STAGE_TRIGGERS[stage] else "trigger_not_admitted"
    assert _code(_config(stage), trigger=trigger) == expected


@pytest.mark.parametrize(("agent", "project", "repo", "code"), [
    ("claude-main", "acme", "acme-api", "ok"),
    ("codex-main", "acme", "acme-api", "not_enabled"),
    ("claude-main", "other", "acme-api", "not_enabled"),
    ("claude-main", "acme", "acme-web", "scope_mismatch"),
    ("claude-main", "acme", "ACME-API", "scope_mismatch"),
    ("Claude-main", "acme", "acme-api", "not_enabled"),
    ("", "", "", "not_enabled"),
])
def test_scope_must_match_exactly(agent: str, project: str, repo: str, code: str) -> None:
    scope = {"agent_id": agent, "project_id": project, "repository_id": repo,
             "allow_cross_agent": False, "allow_cross_project": False}
    assert _code(_config(), scope=scope) == code


def test_default_config_enables_nothing() -> None:
    assert _code(ProviderConfig()) == "not_enabled"


@pytest.mark.parametrize(("types", "code"), [
    (["prior_failure"], "ok"),
    (["prior_failure", "decision", "file_history", "tool_outcome", "summary"], "ok"),
    ([], "invalid_request"),
    (["decision", "decision"], "invalid_request"),
])
def test_evidence_types(types: list[str], code: str) -> None:
    assert _code(_config(), evidence_types=types) == code


@pytest.mark.parametrize("name", ["max_sessions", "max_items", "max_snippet_chars", "max_total_chars"])
@pytest.mark.parametrize(("value", "code"), [(0, "invalid_request"), (-1, "invalid_request"), (1, "ok"),
                                             (10**9, "limit_over_ceiling")])
def test_limits(name: str, value: int, code: str) -> None:
    limits = {"max_sessions": 5, "max_items": 5, "max_snippet_chars": 300, "max_total_chars": 3000,
              name: value}
    assert _code(_config(), limits=limits) == code


def test_limit_at_ceiling_is_admitted_and_above_is_named() -> None:
    config = _config(max_items=10)
    limits = {"max_sessions": 5, "max_items": 10, "max_snippet_chars": 300, "max_total_chars": 3000}
    assert _code(config, limits=limits) == "ok"
    with pytest.raises(ProviderError) as info:
        _admit(config, limits={**limits, "max_items": 11})
    assert info.value.code == "limit_over_ceiling" and "max_items" in info.value.detail


@pytest.mark.parametrize(("terms", "code"), [
    (["jwt"], "ok"),
    ([], "invalid_query_terms"),
    (["x"] * 16, "ok"),
    (["x"] * 17, "invalid_query_terms"),
    (["a" * 200], "ok"),
    (["a" * 201], "invalid_query_terms"),
])
def test_query_term_bounds(terms: list[str], code: str) -> None:
    assert _code(_config(), query_terms=terms) == code


def test_default_ceilings_meet_the_minimums() -> None:
    ceilings = Ceilings()
    assert ceilings.max_sessions >= 50 and ceilings.max_items >= 50
    assert ceilings.max_snippet_chars >= 2000 and ceilings.max_total_chars >= 32000


def test_admission_is_pure_and_deterministic(monkeypatch: pytest.MonkeyPatch) -> None:
    """Same request and config, same admission; and admission reads no clock, file or environment (each is
    made to raise while it runs). The admitted scope is the config's own entry, its asks the request's."""
    import builtins
    import os
    import time

    config = _config()
    request = parse_request(json.dumps(make_request()).encode())

    def forbidden(*_args: Any, **_kwargs: Any) -> Any:
        raise AssertionError("admission touched the clock, the filesystem or the environment")

    with monkeypatch.context() as m:
        for target, name in [(time, "time"), (time, "monotonic"), (os, "stat"), (os, "getenv"),
                             (builtins, "open"), (os, "listdir")]:
            m.setattr(target, name, forbidden)
        first, second = admit(request, config), admit(request, config)
    assert first == second and first is not second
    assert first.scope is config.scopes[0]
    assert first.request is request
    assert first.evidence_types == tuple(request.evidence_types) == ("prior_failure",)
    assert first.query_terms == tuple(request.query_terms) and first.limits == request.limits
