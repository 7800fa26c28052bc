"""Issue 12, item 1: the row re-check (``retrieval.hits.check_scope``), one promise at a time: a returned row
whose session, source, path or joined session lies outside the scope fails the whole result (the same rows
crafted into a real index: tests/integration/test_scope_paths.py)."""

from __future__ import annotations

from typing import Any

import pytest
from obelisk_session_evidence.errors import ScopeViolation
from obelisk_session_evidence.paths import Roots
from obelisk_session_evidence.retrieval.hits import RawHit, check_scope
from obelisk_session_evidence.templates.catalog import load_templates


def _hit(**overrides: Any) -> RawHit:
    template = next(t for t in load_templates() if t.id == "prior_failure.tool_results")
    row: dict[str, Any] = {"session_id": "s1", "session_source": "claude", "session_path": "/r/a",
                           "msg_cwd": "/r/a", "msg_session_id": "s1", "result_session_id": "s1"}
    row.update(overrides)
    return RawHit(template, row)


ROOTS = Roots.of(["/r"], ["/r"])


def test_check_scope_accepts_a_row_in_scope() -> None:
    check_scope(_hit(), ["claude"], ROOTS, frozenset({"s1"}))
    check_scope(_hit(msg_cwd=None), ["claude"], ROOTS, frozenset({"s1"}))
    bare = _hit()
    summary_row = {k: v for k, v in bare.row.items() if k not in ("msg_session_id", "result_session_id")}
    check_scope(RawHit(bare.template, summary_row), ["claude"], ROOTS, frozenset({"s1"}))  # nothing joined


@pytest.mark.parametrize(("overrides", "in_scope"), [
    ({}, frozenset({"s2"})),  # the session is not in the scope set
    ({"session_id": None}, frozenset({"s1"})),
    ({"session_source": "codex"}, frozenset({"s1"})),  # the source is not bound
    ({"session_source": None}, frozenset({"s1"})),
    ({"session_path": "/r/../x"}, frozenset({"s1"})),
    ({"session_path": "/rx"}, frozenset({"s1"})),
    ({"session_path": None, "msg_cwd": "/r/a"}, frozenset({"s1"})),
    ({"msg_cwd": "/r//../x"}, frozenset({"s1"})),
    ({"msg_session_id": None}, frozenset({"s1"})),
    ({"msg_session_id": "s2"}, frozenset({"s1", "s2"})),
    ({"result_session_id": None}, frozenset({"s1"})),
    ({"result_session_id": "s2"}, frozenset({"s1", "s2"})),
])
def test_check_scope_fails_every_out_of_scope_row(overrides: dict[str, Any], in_scope: frozenset[str]) -> None:
    with pytest.raises(ScopeViolation):
        check_scope(_hit(**overrides), ["claude"], ROOTS, in_scope)
