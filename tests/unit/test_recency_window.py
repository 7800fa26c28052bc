"""The searched time window without a revision: the recency bound, a pure function of the config and the clock
(the merge-base window through git: tests/integration/test_window.py)."""

from __future__ import annotations

import json

import pytest
from obelisk_session_evidence.admission.admit import AdmittedRequest, admit
from obelisk_session_evidence.admission.config import EnabledScope, ProviderConfig
from obelisk_session_evidence.admission.window import since_for
from obelisk_session_evidence.contract.parse import parse_request

from tests.conftest import make_request


def _admitted(root: str) -> tuple[AdmittedRequest, EnabledScope]:
    scope = EnabledScope(agent_id="claude-main", project_id="acme", repository_id="acme-api", sources=("claude",),
                         roots=(root,))
    request = parse_request(json.dumps(make_request()).encode())
    return admit(request, ProviderConfig(scopes=(scope,))), scope


@pytest.mark.parametrize(("recency_days", "now_s", "since"), [
    (1, 86400 + 0.9999996, "1970-01-01T00:00:01.000Z"),  # rounded to microseconds first: the next second
    (1, 86400 + 0.9999994, "1970-01-01T00:00:00.000Z"),
    (1, 86400 - 0.5, "1969-12-31T23:59:59.000Z"),  # before the epoch: the second below
    (1, 86400 - 5e-7, "1969-12-31T23:59:59.000Z"),
    (7, 1791633600.9999996 + 7 * 86400, "2026-10-10T12:00:01.000Z"),
    (7, 1791633600.9999994 + 7 * 86400, "2026-10-10T12:00:00.000Z"),
    (365, 1791633600.0, "2025-10-10T12:00:00.000Z"),
    (36500, 1791633600.5, "1926-11-04T12:00:00.000Z"),  # the longest recency window a config may set
])
def test_recency_bound_is_the_rounded_utc_second(recency_days: int, now_s: float, since: str) -> None:
    """The bound is the UTC second of ``now - recency``, its fraction rounded to microseconds first (each
    expected value is the one the provider gave before it formatted the bound with ``datetime``)."""
    admitted, scope = _admitted("/nonexistent")
    config = ProviderConfig(recency_days=recency_days, scopes=(scope,))
    assert since_for(admitted, config, now_s) == since
