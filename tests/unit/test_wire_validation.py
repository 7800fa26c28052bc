"""The request path's validator (``contract.wire``, no pydantic) against the contract of record (the pydantic
``HistoricalEvidenceRequestV0``): on every generated input both accept or both refuse, with the same typed
rejection and detail, and an accepted request carries the same values.

The oracle below is the pydantic model and the rule that maps its first error to a rejection (unknown fields
first, then a cross-scope flag, then the first problem by field path, an explicit null named). Hypothesis
draws valid requests and then mutates them: fields removed, added, nulled, retyped, nested values swapped.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.strategies import DrawFn
from obelisk_session_evidence.contract.models import HistoricalEvidenceRequestV0
from obelisk_session_evidence.contract.wire import validate_request
from obelisk_session_evidence.errors import CrossScopeRequested, InvalidRequest, ProviderError, UnknownField
from pydantic import ValidationError

from tests.conftest import make_request


def _path(loc: tuple[int | str, ...]) -> str:
    return ".".join(part for part in loc if isinstance(part, str))


def oracle(data: dict[str, Any]) -> dict[str, Any] | ProviderError:
    """What the pydantic model says: the request's wire form, or the rejection of its first error."""
    try:
        model = HistoricalEvidenceRequestV0.model_validate(data, strict=True)
    except ValidationError as exc:
        errors = exc.errors(include_url=False, include_input=False, include_context=False)
        for err in errors:
            if err["type"] == "extra_forbidden":
                parent = _path(err["loc"][:-1])
                where = f"in {parent}" if parent else "at the top level of the request"
                return UnknownField(f"request carries a field the contract does not define ({where})")
        for err in errors:
            loc = err["loc"]
            if loc[:1] == ("scope",) and loc[-1] in ("allow_cross_agent", "allow_cross_project"):
                return CrossScopeRequested(f"scope.{loc[-1]} must be false: cross-agent or cross-project "
                                           "retrieval is not offered")
        first = errors[0]
        where = _path(first["loc"])
        message = str(first.get("msg", ""))
        if "must be absent, not null" in message:
            name = message.split("'")[1]
            return InvalidRequest(f"field {'.'.join(p for p in (where, name) if p)} must be absent, not null")
        return InvalidRequest(f"field {where or 'request'} is missing or has the wrong type or value")
    return model.model_dump(mode="json", exclude_none=True)


def ours(data: dict[str, Any]) -> dict[str, Any] | ProviderError:
    try:
        return validate_request(data).as_dict()
    except ProviderError as err:
        return err


def same(a: dict[str, Any] | ProviderError, b: dict[str, Any] | ProviderError) -> bool:
    if isinstance(a, ProviderError) or isinstance(b, ProviderError):
        return type(a) is type(b) and getattr(a, "detail", None) == getattr(b, "detail", None)
    return a == b


# --- inputs ----------------------------------------------------------------------------------------------

ODD_VALUES = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.floats(allow_nan=False, width=16),
                       st.text(max_size=4), st.just([]), st.just({}), st.just(["prior_failure"]),
                       st.just({"current": "x"}), st.just("prior_failure"), st.just("operator_requested_history"),
                       st.just("historical_evidence_request_v0"), st.just(0.0), st.just(1.0),
                       # around the request_id bound (128 characters), and control characters (C0, DEL, C1)
                       st.text(alphabet="ab\u00e9", min_size=126, max_size=130),
                       st.text(alphabet=st.sampled_from(["a", "\x00", "\n", "\x1f", "\x7f", "\x85", "\x9f",
                                                         "\xa0", "\u2028"]), min_size=1, max_size=4))
FIELDS = ("schema_version", "request_id", "situation_id", "trigger", "scope", "revision", "evidence_types",
          "query_terms", "limits", "scope.agent_id", "scope.project_id", "scope.repository_id",
          "scope.allow_cross_agent", "scope.allow_cross_project", "revision.current", "revision.merge_base",
          "limits.max_sessions", "limits.max_items", "limits.max_snippet_chars", "limits.max_total_chars",
          "evidence_types.0", "query_terms.0")


def _holder(request: dict[str, Any], dotted: str) -> tuple[Any, str | int] | None:
    *parents, last = dotted.split(".")
    node: Any = request
    for part in parents:
        node = node.get(part) if isinstance(node, dict) else None
    if isinstance(node, list):
        return (node, int(last)) if node and last.isdigit() else None
    return (node, last) if isinstance(node, dict) else None


@st.composite
def requests(draw: DrawFn) -> dict[str, Any]:
    request = make_request(
        evidence_types=draw(st.lists(st.sampled_from(["prior_failure", "decision", "file_history",
                                                      "tool_outcome", "summary"]), min_size=0, max_size=3)),
        query_terms=draw(st.lists(st.text(max_size=6), max_size=3)),
    )
    if draw(st.booleans()):
        request["revision"] = {"current": "abc"} if draw(st.booleans()) else {"current": "abc", "merge_base": "d"}
    for _ in range(draw(st.integers(0, 3))):
        spot = _holder(request, draw(st.sampled_from(FIELDS)))
        if spot is None:
            continue
        node, key = spot
        action = draw(st.sampled_from(["drop", "set", "extra"]))
        if action == "drop" and isinstance(node, dict):
            node.pop(key, None)
        elif action == "set":  # null half the time: an explicit null is the subtlest case
            value = None if draw(st.booleans()) else copy.deepcopy(draw(ODD_VALUES))
            if isinstance(node, list):
                node[int(key)] = value
            else:
                node[key] = value
        elif action == "extra" and isinstance(node, dict):
            node[draw(st.sampled_from(["x", "team", "max_bytes", "Scope"]))] = draw(ODD_VALUES)
    return request


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(requests())
def test_the_request_path_validator_agrees_with_the_pydantic_contract(request: dict[str, Any]) -> None:
    expected, got = oracle(copy.deepcopy(request)), ours(copy.deepcopy(request))
    assert same(expected, got), (expected, got)


@pytest.mark.parametrize("request_", [
    make_request(),
    make_request(revision={"current": "abc", "merge_base": "def"}),
    make_request(revision=None),
    make_request(revision={"current": "abc", "merge_base": None}),
    make_request(revision={"current": "abc"}, extra=1),
    make_request(revision=None, extra=1),
    make_request(revision={"current": "abc", "merge_base": None, "x": 1}),
    make_request(revision={"merge_base": None}),
    make_request(limits={"max_sessions": True, "max_items": 1, "max_snippet_chars": 1, "max_total_chars": 1}),
    make_request(limits={"max_sessions": 1.0, "max_items": 1, "max_snippet_chars": 1, "max_total_chars": 1}),
    make_request(evidence_types=("prior_failure",)),
    make_request(evidence_types=["prior_failure", "everything"]),
    make_request(scope={"agent_id": "a", "project_id": "p", "repository_id": "r", "allow_cross_agent": 0,
                        "allow_cross_project": False}),
    make_request(scope={"agent_id": "a", "project_id": "p", "repository_id": "r", "allow_cross_project": False}),
    make_request(scope={"agent_id": "a", "project_id": "p", "allow_cross_agent": False, "allow_cross_project": False,
                        "team": "t"}),
    make_request(scope="everyone"),
    make_request(trigger=1),
    make_request(schema_version="historical_evidence_request_v1"),
    make_request(query_terms="ModuleNotFoundError"),
    make_request(request_id="r" * 128),
    make_request(request_id="r" * 129),
    make_request(request_id="\u00e9" * 128),
    make_request(request_id=""),
    make_request(request_id="a\nb"),
    make_request(request_id="a\x00"),
    make_request(request_id="\x7f"),
    make_request(request_id="a\x85b"),
    make_request(request_id="a\u2028b"),
    make_request(request_id="r" * 129, extra=1),
    make_request(request_id="\x1b[31m", trigger=1),
], ids=lambda r: str(sorted(r))[:0] or None)
def test_chosen_requests_agree(request_: dict[str, Any]) -> None:
    assert same(oracle(copy.deepcopy(request_)), ours(copy.deepcopy(request_)))


@pytest.mark.parametrize(("request_id", "accepted"), [
    ("r" * 128, True), ("\U0001f600" * 128, True), ("a\u2028b", True), ("r" * 129, False), ("a\tb", False),
    ("\x1b[2J", False), ("\x7f", False), ("\x9b", False)])
def test_request_id_is_bounded_and_free_of_control_characters(request_id: str, accepted: bool) -> None:
    """The receipt copies ``request_id`` verbatim: at most 128 characters (code points), no C0, DEL or C1."""
    expected = oracle(make_request(request_id=request_id))
    got = ours(make_request(request_id=request_id))
    assert same(expected, got)
    if accepted:
        assert isinstance(got, dict) and got["request_id"] == request_id
    else:
        assert isinstance(got, InvalidRequest)
        assert got.detail == "field request_id is missing or has the wrong type or value"


def test_the_comparison_can_tell_a_difference() -> None:
    """The property above would pass vacuously if ``same`` could not tell answers apart."""
    accepted = ours(make_request())
    assert isinstance(accepted, dict)
    assert not same(accepted, {**accepted, "request_id": "other"})
    assert not same(InvalidRequest("field limits is missing or has the wrong type or value"),
                    InvalidRequest("field scope is missing or has the wrong type or value"))
    assert not same(UnknownField("x"), InvalidRequest("x"))


def test_a_validated_request_is_immutable() -> None:
    request = validate_request(make_request())
    with pytest.raises(AttributeError):
        request.request_id = "other"  # type: ignore[misc]
