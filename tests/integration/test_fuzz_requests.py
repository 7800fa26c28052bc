"""Issue 6, item 4: bad requests. Hypothesis generates valid requests, mutated requests and raw byte payloads
(well over 10,000 cases in total); every case gives exactly one envelope whose outcome (and, where the oracle
below is confident, whose error code) is what an independent oracle in this file computes from the README's
rules, never from provider code. Oversize stdin is read only up to a bound, with a small peak RSS.
"""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.strategies import DrawFn
from obelisk_session_evidence.contract.models import HistoricalEvidenceResponseV0
from obelisk_session_evidence.fixtures.builder import build_fixture
from obelisk_session_evidence.service import answer

from tests.conftest import CLI, REPO, run_cli, write_config

# --- the rules, as the README states them (the oracle's only source) -------------------------------------

MAX_REQUEST_BYTES = 64 * 1024  # "request over 64 KiB"
MAX_DEPTH = 8  # "nesting deeper than 8"
SCHEMA = "historical_evidence_request_v0"
TRIGGERS = ("replan_repetition", "hypothesis_history_gap", "resume_or_handoff_gap", "operator_requested_history")
STAGE_TRIGGERS = {1: {"operator_requested_history"}, 2: set(TRIGGERS)}
TYPES = ("prior_failure", "decision", "file_history", "tool_outcome", "summary")
TOP_FIELDS = {"schema_version", "request_id", "situation_id", "trigger", "scope", "revision", "evidence_types",
              "query_terms", "limits"}
TOP_REQUIRED = TOP_FIELDS - {"revision"}
SCOPE_FIELDS = {"agent_id", "project_id", "repository_id", "allow_cross_agent", "allow_cross_project"}
REVISION_FIELDS = {"current", "merge_base"}
LIMIT_NAMES = ("max_sessions", "max_items", "max_snippet_chars", "max_total_chars")
EXIT = {"ok": 0, "rejected": 2, "failed": 3}

#: The test's own config: ceilings chosen here, so the oracle never reads the provider's defaults.
CEILINGS = {"max_sessions": 20, "max_items": 20, "max_snippet_chars": 1000, "max_total_chars": 10000,
            "max_query_terms": 8, "max_term_chars": 64}


@dataclass(frozen=True)
class Scope:
    agent_id: str
    project_id: str
    repository_id: str
    repo: str  # the fixture repository whose root is bound
    sources: tuple[str, ...]
    stage: int


SCOPES = (Scope("claude-agent", "demo", "alpha-svc", "alpha-svc", ("claude",), 1),
          Scope("codex-agent", "demo", "beta-web", "beta-web", ("codex",), 2))
KNOWN_IDS = ["claude-agent", "codex-agent", "demo", "alpha-svc", "beta-web", "alpha-svc-wt", "other", "",
             "CLAUDE-AGENT", "claude-agent ", "demo/..", "alpha-svc-evil"]


@dataclass(frozen=True)
class Expect:
    outcome: str
    code: str | None  # None for ok
    confident: bool = True
    request_id: str | None = None


def _reject(code: str, obj: dict[str, Any] | None = None, confident: bool = True) -> Expect:
    request_id = obj.get("request_id") if obj is not None else None
    return Expect("rejected", code, confident, request_id if isinstance(request_id, str) else None)


class _Dup(ValueError):
    pass


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _Dup
        out[key] = value
    return out


def _no_constants(_: str) -> Any:
    raise ValueError("NaN/Infinity")


def _depth(value: Any) -> int:
    """Container nesting depth of a parsed JSON value (a top-level object is 1); iterative."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        node, level = stack.pop()
        if isinstance(node, dict):
            deepest = max(deepest, level)
            stack.extend((v, level + 1) for v in node.values())
        elif isinstance(node, list):
            deepest = max(deepest, level)
            stack.extend((v, level + 1) for v in node)
    return deepest


def _has_surrogate(value: Any) -> bool:
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            if any(0xD800 <= ord(c) <= 0xDFFF for c in node):
                return True
        elif isinstance(node, dict):
            stack.extend(node.keys())
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return False


def _is_str(value: Any) -> bool:
    return type(value) is str


def _is_int(value: Any) -> bool:
    return type(value) is int  # JSON true/false are not integers; 5.0 is not an integer


def expected(raw: bytes, scopes: tuple[Scope, ...] = SCOPES) -> Expect:
    """The oracle: README rules applied in README order (bytes, JSON, contract, admission, terms)."""
    if len(raw) > MAX_REQUEST_BYTES:
        return _reject("request_too_large")
    try:
        text = raw.decode("utf-8", errors="strict")
        obj = json.loads(text, object_pairs_hook=_pairs, parse_constant=_no_constants)
    except (ValueError, RecursionError):  # invalid UTF-8, not JSON, duplicate key, NaN, digit limit, BOM
        return _reject("malformed_json")
    if _depth(obj) > MAX_DEPTH or not isinstance(obj, dict) or _has_surrogate(obj):
        return _reject("malformed_json")
    return expected_for(obj, scopes)


def _bounded_id(value: Any) -> bool:
    """README: a ``request_id`` is at most 128 characters, none of them a C0 or C1 control or DEL."""
    return _is_str(value) and len(value) <= 128 and not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F
                                                            for c in value)


def _contract_code(obj: dict[str, Any]) -> str | None:
    if "revision" in obj and obj["revision"] is None:
        return "invalid_request"  # an optional field given as null: refused before anything else
    unknown = cross = invalid = False
    unknown |= bool(set(obj) - TOP_FIELDS)
    invalid |= bool(TOP_REQUIRED - set(obj))
    if "schema_version" in obj and not (_is_str(obj["schema_version"]) and obj["schema_version"] == SCHEMA):
        invalid = True
    if "request_id" in obj and not _bounded_id(obj["request_id"]):
        invalid = True
    if "situation_id" in obj and not _is_str(obj["situation_id"]):
        invalid = True
    if "trigger" in obj and not (_is_str(obj["trigger"]) and obj["trigger"] in TRIGGERS):
        invalid = True
    if "scope" in obj:
        scope = obj["scope"]
        if isinstance(scope, dict):
            unknown |= bool(set(scope) - SCOPE_FIELDS)
            invalid |= any(not _is_str(scope.get(n)) for n in ("agent_id", "project_id", "repository_id"))
            cross |= any(n not in scope or scope[n] is not False
                         for n in ("allow_cross_agent", "allow_cross_project"))
        else:
            invalid = True
    if "revision" in obj:
        revision = obj["revision"]
        if not isinstance(revision, dict):
            invalid = True
        elif "merge_base" in revision and revision["merge_base"] is None:
            invalid = True  # refused before its other fields are looked at
        else:
            unknown |= bool(set(revision) - REVISION_FIELDS)
            invalid |= not _is_str(revision.get("current"))
            invalid |= "merge_base" in revision and not _is_str(revision["merge_base"])
    if "evidence_types" in obj:
        types = obj["evidence_types"]
        invalid |= not (isinstance(types, list) and all(_is_str(t) and t in TYPES for t in types))
    if "query_terms" in obj:
        terms = obj["query_terms"]
        invalid |= not (isinstance(terms, list) and all(_is_str(t) for t in terms))
    if "limits" in obj:
        limits = obj["limits"]
        if isinstance(limits, dict):
            unknown |= bool(set(limits) - set(LIMIT_NAMES))
            invalid |= any(not _is_int(limits.get(n)) for n in LIMIT_NAMES)
        else:
            invalid = True
    if unknown:
        return "unknown_field"
    if cross:
        return "cross_scope_requested"
    return "invalid_request" if invalid else None


def term_class(term: str) -> str:
    """searchable / empty / unknown under unicode61 after NFKC and control stripping."""
    folded = unicodedata.normalize("NFKC", term)
    if any(c.isascii() and c.isalnum() for c in folded):
        return "searchable"
    if all(c.isascii() for c in folded):
        return "empty"  # ASCII punctuation, spaces and controls only: no token
    return "unknown"  # other scripts, symbols, marks: depends on the tokenizer's Unicode tables


def expected_for(obj: dict[str, Any], scopes: tuple[Scope, ...] = SCOPES) -> Expect:
    code = _contract_code(obj)
    if code is not None:  # request_id is kept whenever the request carried a string one (issue 10.6)
        return _reject(code, obj)
    request_id = obj["request_id"]
    asked = obj["scope"]
    same = [s for s in scopes if s.agent_id == asked["agent_id"] and s.project_id == asked["project_id"]]
    if not same:
        return _reject("not_enabled", obj)
    exact = [s for s in same if s.repository_id == asked["repository_id"]]
    if not exact:
        return _reject("scope_mismatch", obj)
    if obj["trigger"] not in STAGE_TRIGGERS[exact[0].stage]:
        return _reject("trigger_not_admitted", obj)
    types = obj["evidence_types"]
    if not types or len(set(types)) != len(types):
        return _reject("invalid_request", obj)
    for name in LIMIT_NAMES:
        value = obj["limits"][name]
        if value < 1:
            return _reject("invalid_request", obj)
        if value > CEILINGS[name]:
            return _reject("limit_over_ceiling", obj)
    terms = obj["query_terms"]
    if not terms or len(terms) > CEILINGS["max_query_terms"]:
        return _reject("invalid_query_terms", obj)
    if any(len(t) > CEILINGS["max_term_chars"] for t in terms):
        return _reject("invalid_query_terms", obj)
    classes = {term_class(t) for t in terms}
    if "searchable" in classes:
        return Expect("ok", None, True, request_id)
    if classes == {"empty"}:
        return _reject("invalid_query_terms", obj)
    return Expect("ok", None, False, request_id)  # or invalid_query_terms: the tokenizer decides


def test_oracle_knows_the_readme_examples() -> None:
    """The oracle itself, on hand-checked cases (so a wrong oracle cannot silently agree with a bug)."""
    good = _base_request(SCOPES[0])
    assert expected(json.dumps(good).encode()).outcome == "ok"
    assert expected(b"{" + b" " * MAX_REQUEST_BYTES + b"}").code == "request_too_large"
    assert expected(b'{"a": 1, "a": 2}').code == "malformed_json"
    assert expected(b"\xef\xbb\xbf{}").code == "malformed_json"
    assert expected(b'{"a": [[[[[[[[1]]]]]]]]}').code == "malformed_json"  # depth 9
    assert expected(b'{"a": [[[[[[[1]]]]]]]}').code == "unknown_field"  # depth 8: parsed, then refused
    assert expected_for({**good, "allow": 1}).code == "unknown_field"
    assert expected_for({**good, "revision": None, "allow": 1}).code == "invalid_request"
    assert expected_for({**good, "scope": {**good["scope"], "allow_cross_agent": 0}}).code == \
        "cross_scope_requested"
    assert expected_for({**good, "limits": {**good["limits"], "max_items": True}}).code == "invalid_request"
    assert expected_for({**good, "limits": {**good["limits"], "max_items": 10**40}}).code == "limit_over_ceiling"
    assert expected_for({**good, "query_terms": ["(", "\x00"]}).code == "invalid_query_terms"
    assert expected_for({**good, "trigger": "replan_repetition"}).code == "trigger_not_admitted"


# --- fixture, config, counters --------------------------------------------------------------------------


@dataclass(frozen=True)
class Env:
    db: Path
    config: Path
    cli_env: dict[str, str]


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    base = tmp_path_factory.mktemp("fuzz")
    info = build_fixture(base / "current", generation="current")
    manifest = json.loads(info.manifest_path.read_text(encoding="utf-8"))
    scopes = [{"agent_id": s.agent_id, "project_id": s.project_id, "repository_id": s.repository_id,
               "sources": list(s.sources), "roots": [manifest["repos"][s.repo]], "stage": s.stage}
              for s in SCOPES]
    config = write_config(base / "config.json", scopes, transcript_homes=[str(info.home)], deadline_ms=60000,
                          ceilings=CEILINGS)
    home = base / "home"
    home.mkdir()
    cli_env = {"HOME": str(home), "XDG_CACHE_HOME": str(base / "xdg-cache"),
               "XDG_CONFIG_HOME": str(base / "xdg-config")}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CACHE_HOME", cli_env["XDG_CACHE_HOME"])  # the template-verdict cache, in-process
        yield Env(info.db_path, config, cli_env)


CASES: Counter[str] = Counter()
OUTCOMES: Counter[str] = Counter()


def check(envelope: dict[str, Any], exit_code: int, expect: Expect, raw: bytes) -> None:
    text = json.dumps(envelope, ensure_ascii=False)
    HistoricalEvidenceResponseV0.model_validate_json(text)
    code = envelope["error"]["code"] if envelope["error"] else None
    OUTCOMES[f"{envelope['outcome']}:{code or '-'}"] += 1
    assert code != "internal_error", raw[:300]
    assert exit_code == EXIT[envelope["outcome"]], (exit_code, envelope["error"])
    if expect.confident:
        assert (envelope["outcome"], code) == (expect.outcome, expect.code), (expect, envelope["error"], raw[:300])
    else:  # only the tokenizer knows whether such terms leave anything searchable
        assert (envelope["outcome"], code) in {("ok", None), ("rejected", "invalid_query_terms")}, \
            (envelope["error"], raw[:300])
    assert envelope["request_id"] == expect.request_id
    if envelope["outcome"] == "rejected":
        assert envelope["result"] is None and envelope["receipt"] is None
    else:
        assert envelope["result"] is not None and envelope["receipt"] is not None


def run_in_process(env: Env, raw: bytes) -> None:
    response = answer(raw, db_path=env.db, config_path=env.config)
    check(response.envelope, response.exit_code, expected(raw), raw)


# --- strategies -----------------------------------------------------------------------------------------

WORDS = ["stripe", "ModuleNotFoundError", "billing", "pytest -k billing", "checkout", "TS2345", "webhook",
         "retry", "jwt", "deploy", "Button", "数据库", "数据库连接错误", "ZeroDivisionError", "requirements.txt"]
HOSTILE = ['"', '""', "'", "(", ")", "*", "^", "-", ":", "AND", "OR", "NOT", "NEAR", "NEAR(a b, 3)",
           "text:stripe", "{uuid text}:x", "uuid:*", '"unbalanced', "a OR b", "ＡＮＤ", "＂", "\x00", "\x00stripe",
           "\u200b", "\ufeff", "\u202e", "%", "_", "'; DROP TABLE messages; --", ") OR 1=1 --", "UNION SELECT",
           "🙂", "😀stripe", "مرحبا", "שלום", "\u0301", "٣", "ⅷ", "·", "　", "\t\n", "…", "—", "₀"]

json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-(10**20), 10**20),
                         st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=12))
json_values = st.recursive(json_scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                                 st.dictionaries(st.text(max_size=6), inner,
                                                                                 max_size=3)),
                           max_leaves=10)


def _deep(depth: int) -> Any:
    value: Any = "x"
    for i in range(depth):
        value = [value] if i % 2 else {"k": value}
    return value


nested_junk = st.integers(1, 12).map(_deep)
terms_any = st.one_of(
    st.sampled_from(WORDS),
    st.sampled_from(HOSTILE),
    st.text(max_size=20),
    st.text(st.characters(), max_size=12),  # every plane
    st.tuples(st.text(max_size=4), st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF))
    .map("".join),  # a lone surrogate: json.dumps sends it as a \udXXX escape
    st.text(st.characters(max_codepoint=0x7F), max_size=10),
    st.integers(CEILINGS["max_term_chars"] - 2, CEILINGS["max_term_chars"] + 2).map(lambda n: "a" * n),
    st.integers(CEILINGS["max_term_chars"] - 1, CEILINGS["max_term_chars"] + 1).map(lambda n: "数" * n),
)
limit_values = st.one_of(st.integers(-3, 3), st.integers(15, 1100), st.sampled_from([10**k for k in (3, 18, 19,
                                                                                                    40, 400)]),
                         st.booleans(), st.sampled_from([1.0, 5.0, 2.5, -0.0]), st.none(), st.text(max_size=3),
                         st.integers(-(2**64), -(2**63)))


def _base_request(scope: Scope, trigger: str = "operator_requested_history") -> dict[str, Any]:
    return {"schema_version": SCHEMA, "request_id": "req-fuzz", "situation_id": "sit-fuzz", "trigger": trigger,
            "scope": {"agent_id": scope.agent_id, "project_id": scope.project_id,
                      "repository_id": scope.repository_id, "allow_cross_agent": False,
                      "allow_cross_project": False},
            "evidence_types": ["prior_failure"], "query_terms": ["stripe"],
            "limits": {"max_sessions": 5, "max_items": 5, "max_snippet_chars": 300, "max_total_chars": 3000}}


@st.composite
def valid_requests(draw: DrawFn) -> dict[str, Any]:
    scope = draw(st.sampled_from(SCOPES))
    request = _base_request(scope, draw(st.sampled_from(sorted(STAGE_TRIGGERS[scope.stage]))))
    request["request_id"] = draw(st.text(max_size=16))
    request["situation_id"] = draw(st.text(max_size=8))
    request["evidence_types"] = draw(st.lists(st.sampled_from(TYPES), min_size=1, max_size=2, unique=True))
    request["query_terms"] = draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=3))
    request["limits"] = {n: draw(st.integers(1, CEILINGS[n])) for n in LIMIT_NAMES}
    if draw(st.integers(0, 9)) == 0:
        request["revision"] = {"current": draw(st.sampled_from(["HEAD", "main", "deadbeef", "v1.0"]))}
        if draw(st.booleans()):
            request["revision"]["merge_base"] = draw(st.sampled_from(["HEAD~1", "origin/main", "--all"]))
    return request


def _containers(request: dict[str, Any]) -> list[tuple[dict[str, Any], set[str]]]:
    found: list[tuple[dict[str, Any], set[str]]] = [(request, TOP_FIELDS)]
    for name, fields in (("scope", SCOPE_FIELDS), ("limits", set(LIMIT_NAMES)), ("revision", REVISION_FIELDS)):
        if isinstance(request.get(name), dict):
            found.append((request[name], fields))
    return found


Mutation = Callable[[DrawFn, dict[str, Any]], None]


def _drop(draw: DrawFn, request: dict[str, Any]) -> None:
    container, _ = draw(st.sampled_from(_containers(request)))
    if container:
        del container[draw(st.sampled_from(sorted(container)))]


def _add_unknown(draw: DrawFn, request: dict[str, Any]) -> None:
    container, fields = draw(st.sampled_from(_containers(request)))
    key = draw(st.text(max_size=10).filter(lambda k: k not in fields))
    container[key] = draw(json_values)


def _wrong_type(draw: DrawFn, request: dict[str, Any]) -> None:
    container, _ = draw(st.sampled_from(_containers(request)))
    if container:
        container[draw(st.sampled_from(sorted(container)))] = draw(st.one_of(json_values, nested_junk))


def _limit(draw: DrawFn, request: dict[str, Any]) -> None:
    if isinstance(request.get("limits"), dict):
        request["limits"][draw(st.sampled_from(LIMIT_NAMES))] = draw(limit_values)


def _cross(draw: DrawFn, request: dict[str, Any]) -> None:
    if isinstance(request.get("scope"), dict):
        name = draw(st.sampled_from(["allow_cross_agent", "allow_cross_project"]))
        value = draw(st.sampled_from([True, 1, 0, "false", None, [], False, "drop"]))
        if value == "drop":
            request["scope"].pop(name, None)
        else:
            request["scope"][name] = value


def _trigger(draw: DrawFn, request: dict[str, Any]) -> None:
    request["trigger"] = draw(st.sampled_from([*TRIGGERS, "", "operator", "OPERATOR_REQUESTED_HISTORY",
                                               "operator_requested_history ", "replan"]))


def _types(draw: DrawFn, request: dict[str, Any]) -> None:
    request["evidence_types"] = draw(st.one_of(st.just([]), st.lists(st.sampled_from([*TYPES, "bogus", ""]),
                                                                     max_size=7), json_values))


def _terms(draw: DrawFn, request: dict[str, Any]) -> None:
    request["query_terms"] = draw(st.one_of(
        st.lists(terms_any, min_size=1, max_size=4),
        st.lists(terms_any, min_size=0, max_size=CEILINGS["max_query_terms"] + 3),
        st.lists(st.sampled_from(["", " ", "\x00", "\t", "()", '"', "\u200b"]), min_size=1, max_size=3),
        json_values))


def _identity(draw: DrawFn, request: dict[str, Any]) -> None:
    if isinstance(request.get("scope"), dict):
        name = draw(st.sampled_from(["agent_id", "project_id", "repository_id"]))
        request["scope"][name] = draw(st.sampled_from(KNOWN_IDS))


def _revision(draw: DrawFn, request: dict[str, Any]) -> None:
    request["revision"] = draw(st.sampled_from([None, {"current": "HEAD", "merge_base": None}, {"current": 5},
                                                "main", {}, {"current": "HEAD", "extra": 1},
                                                {"current": "-x", "merge_base": "--output=/tmp/x"}]))


def _schema(draw: DrawFn, request: dict[str, Any]) -> None:
    request["schema_version"] = draw(st.sampled_from(["historical_evidence_request_v1", "", None,
                                                      "HISTORICAL_EVIDENCE_REQUEST_V0"]))


MUTATIONS: list[Mutation] = [_drop, _add_unknown, _wrong_type, _limit, _cross, _trigger, _types, _terms,
                             _identity, _revision, _schema]


@st.composite
def mutated_requests(draw: DrawFn) -> dict[str, Any]:
    request = copy.deepcopy(draw(valid_requests()))
    for mutation in draw(st.lists(st.sampled_from(MUTATIONS), max_size=3)):
        mutation(draw, request)
    return request


def _encode(request: dict[str, Any]) -> bytes:
    return json.dumps(request).encode()  # ensure_ascii: a lone surrogate travels as a \udXXX escape


@st.composite
def raw_payloads(draw: DrawFn) -> bytes:
    base = _encode(draw(st.one_of(valid_requests(), mutated_requests())))
    kind = draw(st.sampled_from(["invalid_utf8", "duplicate_key", "deep", "huge_number", "bom", "trailing",
                                 "constant", "not_object", "binary", "text", "size", "surrogate", "whitespace"]))
    if kind == "invalid_utf8":
        at = draw(st.integers(0, len(base)))
        bad = draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xc0\xaf", b"\x80", b"\xf8\x88\x80\x80"]))
        return base[:at] + bad + base[at:]
    if kind == "duplicate_key":  # repeats a key the mutated request (usually) has, at one of three levels
        opener, key = draw(st.sampled_from([(b"{", b'"request_id": "dup", '),
                                            (b'"scope": {', b'"agent_id": "dup", '),
                                            (b'"limits": {', b'"max_items": 1, ')]))
        return base.replace(opener, opener + key, 1)
    if kind == "deep":
        depth = draw(st.integers(5, 200))
        return base.replace(b'"query_terms": ', b'"query_terms": ' + b"[" * depth + b'"stripe"' + b"]" * depth
                            + b', "x": ', 1) if draw(st.booleans()) else (b"[" * depth + b"]" * depth)
    if kind == "huge_number":
        digits = draw(st.sampled_from([19, 400, 4299, 4300, 4301, 5000, 20000]))
        number = draw(st.sampled_from([b"9" * digits, b"-" + b"9" * digits, b"1e999", b"-1e999", b"1.5", b"1E2",
                                       b"0." + b"0" * digits + b"1"]))
        name = draw(st.sampled_from([n.encode() for n in LIMIT_NAMES]))
        return re.sub(rb'"' + name + rb'": -?\d+', b'"' + name + b'": ' + number, base, count=1)
    if kind == "bom":
        return b"\xef\xbb\xbf" + base
    if kind == "trailing":
        return base + draw(st.sampled_from([b"x", b"{}", b"]", b"\x00", b",", b"}", b'"', b"/* c */"]))
    if kind == "whitespace":
        return draw(st.sampled_from([b" ", b"\n", b"\t\r\n"])) + base + draw(st.sampled_from([b"", b"\n\n", b" "]))
    if kind == "constant":
        return base.replace(b'"max_items": ', b'"max_items": ' + draw(st.sampled_from([b"NaN", b"Infinity",
                                                                                     b"-Infinity"])) + b", \"y\": ",
                            1)
    if kind == "not_object":
        return draw(st.sampled_from([b"", b" ", b"[]", b"null", b"1", b'"str"', b"true", b"[" + base + b"]"]))
    if kind == "binary":
        return draw(st.binary(max_size=300))
    if kind == "text":
        return draw(st.text(max_size=100)).encode("utf-8", "surrogatepass")
    if kind == "surrogate":
        escape = draw(st.sampled_from([b"\\ud800", b"\\udfff", b"\\udc00\\ud800", b"\\ud83d\\ude00"]))
        return base.replace(b'"request_id": "', b'"request_id": "' + escape, 1) if draw(st.booleans()) else \
            base.replace(b'"query_terms": [', b'"query_terms": ["' + escape + b'", ', 1)
    # size: pad with whitespace to just under, at, or over the bound (still one valid JSON document)
    target = MAX_REQUEST_BYTES + draw(st.sampled_from([-1, 0, 1, 2, 4096]))
    return base[:-1] + b" " * max(0, target - len(base)) + b"}"


FUZZ = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                      HealthCheck.filter_too_much], database=None)


# --- the tests ------------------------------------------------------------------------------------------


@pytest.mark.heavy
@settings(FUZZ, max_examples=4500)
@given(request=mutated_requests())
def test_valid_and_mutated_requests(env: Env, request: dict[str, Any]) -> None:
    CASES["mutated"] += 1
    run_in_process(env, _encode(request))


@pytest.mark.heavy
@settings(FUZZ, max_examples=5000)
@given(raw=raw_payloads())
def test_raw_payloads(env: Env, raw: bytes) -> None:
    CASES["raw"] += 1
    run_in_process(env, raw)


@settings(FUZZ, max_examples=700)
@given(request=valid_requests(), terms=st.lists(terms_any, min_size=1, max_size=5))
def test_term_lists(env: Env, request: dict[str, Any], terms: list[str]) -> None:
    """Valid envelopes around arbitrary term lists: every term class reaches the tokenizer."""
    CASES["terms"] += 1
    request["query_terms"] = terms
    run_in_process(env, _encode(request))


@pytest.mark.heavy
@settings(FUZZ, max_examples=100)
@given(raw=st.one_of(mutated_requests().map(_encode), raw_payloads()))
def test_through_the_cli_subprocess(env: Env, raw: bytes) -> None:
    """~100 cases through ``python -m obelisk_session_evidence query``: exactly one JSON document, stderr empty."""
    CASES["cli"] += 1
    result = run_cli("query", "--db", str(env.db), "--config", str(env.config), stdin=raw, env=env.cli_env,
                     timeout=60)
    assert result.stderr == "", result.stderr[-2000:]
    # One '\n'-terminated document (not str.splitlines(): a raw U+2028/U+0085 inside a JSON string, which the
    # CLI writes unescaped, is not a line break of the stream).
    assert result.stdout.endswith("\n") and result.stdout.count("\n") == 1
    check(json.loads(result.stdout), result.code, expected(raw[: MAX_REQUEST_BYTES + 1]), raw)


@pytest.fixture(scope="module", autouse=True)
def case_count_and_summary() -> Iterator[None]:
    """After every test of this module, whatever order they ran in (or however few were selected): print the
    summary, and check that the total is at least 10,000 when every fuzz test ran."""
    CASES.clear()
    OUTCOMES.clear()
    yield
    total = sum(CASES.values())
    print(f"\nFUZZ: cases={total} by_test={dict(CASES)} outcomes={dict(sorted(OUTCOMES.items()))}")
    if {"mutated", "raw", "terms", "cli"} <= set(CASES):
        assert total >= 10_000, CASES


# --- oversize stdin -------------------------------------------------------------------------------------

#: Runs in a fresh, small interpreter: Linux carries a process's peak RSS across fork (and vfork) + exec, so
#: a provider spawned straight from this (large) pytest process would report pytest's own peak.
_FEEDER = r"""
import json, os, subprocess, sys, threading, time
size, args = int(sys.argv[1]), sys.argv[2:]
started = time.monotonic()
proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
written = [0]
def feed():
    chunk = b" " * 65536
    try:
        proc.stdin.write(b"{")
        while written[0] < size:
            proc.stdin.write(chunk)
            written[0] += len(chunk)
        proc.stdin.close()
    except OSError:
        pass  # EPIPE: the provider stopped reading at its bound and exited
out = {}
threads = [threading.Thread(target=feed, daemon=True),
           threading.Thread(target=lambda: out.__setitem__("stdout", proc.stdout.read()), daemon=True),
           threading.Thread(target=lambda: out.__setitem__("stderr", proc.stderr.read()), daemon=True)]
for t in threads:
    t.start()
while True:
    pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
    if pid:
        break
    if time.monotonic() - started > 30:
        proc.kill()
        pid, status, usage = os.wait4(proc.pid, 0)
        break
    time.sleep(0.005)
elapsed = time.monotonic() - started
proc.returncode = os.waitstatus_to_exitcode(status)
for t in threads:
    t.join(timeout=10)
print(json.dumps({"exit": proc.returncode, "elapsed_s": elapsed, "peak_rss_kib": usage.ru_maxrss,
                  "written": written[0], "stdout": out.get("stdout", b"").decode("utf-8", "replace"),
                  "stderr": out.get("stderr", b"").decode("utf-8", "replace")}))
"""


def test_fifty_megabytes_of_stdin_are_read_only_up_to_the_bound(env: Env) -> None:
    size = 50 * 1024 * 1024
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("OBELISK")}
    full_env.update(env.cli_env)
    provider = [*CLI, "query", "--db", str(env.db), "--config", str(env.config)]
    done = subprocess.run([sys.executable, "-c", _FEEDER, str(size), *provider], capture_output=True,
                          env=full_env, cwd=REPO, timeout=90, check=True)
    report = json.loads(done.stdout)
    peak_mb = report["peak_rss_kib"] / 1024  # ru_maxrss is in KiB on Linux
    print(f"STDIN50MB: exit={report['exit']} elapsed={report['elapsed_s']:.2f}s peak_rss={peak_mb:.1f}MB "
          f"accepted_before_exit={report['written'] / 1e6:.2f}MB of {size / 1e6:.0f}MB")
    assert report["exit"] == 2, report
    assert report["stderr"] == ""
    assert report["stdout"].count("\n") == 1
    assert json.loads(report["stdout"])["error"]["code"] == "request_too_large"
    assert report["written"] < size, "the provider read the whole 50 MB"
    assert report["elapsed_s"] < 10, report["elapsed_s"]
    assert peak_mb < 150, peak_mb
