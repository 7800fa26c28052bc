"""Qualification cases: replan questions (dead ends, same routes), matched negatives, cross-scope and
unknown-option requests, and the freshness questions asked on the three corpus variants."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from .corpus import Corpus, Fact, cell_sessions, in_cell, relative_to_repo
from .scopes import QualifyScope

#: The bounded limits every qualification request asks for (well under the provider's ceilings).
LIMITS: Final[dict[str, int]] = {"max_sessions": 5, "max_items": 8, "max_snippet_chars": 300,
                                 "max_total_chars": 3000}


@dataclass
class Case:
    id: str
    kind: str  # dead_end | same_route | negative | cross_scope | unknown_option | freshness
    request: dict[str, Any]
    terms: tuple[str, ...] = ()
    target: Fact | None = None
    truth: tuple[Fact, ...] = ()
    variant: str = "base"
    expect: str = ""
    question: str = ""  # prior_failure | same_route | summary (precision class)
    cell: int = 0
    relevant: tuple[Fact, ...] = ()  # in-cell facts about the same route, any evidence type (precision)


def _request(rid: str, scope: QualifyScope, trigger: str, types: Sequence[str], terms: Sequence[str],
             **overrides: Any) -> dict[str, Any]:
    request: dict[str, Any] = {
        "schema_version": "historical_evidence_request_v0",
        "request_id": rid,
        "situation_id": f"qualify-{rid}",
        "trigger": trigger,
        "scope": {"agent_id": scope.agent_id, "project_id": scope.project_id,
                  "repository_id": scope.repository_id, "allow_cross_agent": False,
                  "allow_cross_project": False},
        "evidence_types": list(types),
        "query_terms": list(terms),
        "limits": dict(LIMITS),
    }
    request.update(overrides)
    return request


def _overlaps(terms: Sequence[str], fact: Fact) -> bool:
    lowered = [t.lower() for t in terms]
    return any(t in key or key in t for t in lowered for key in fact.keys)


def _phrasings(fact: Fact, raw: Mapping[str, Any], manifest: Mapping[str, Any]) -> list[tuple[str, ...]]:
    """Ways a replan situation names the same route, keyed the way its evidence type is keyed (RFC §5.1:
    terms come from canonical situation fields, not from chat).

    A failure: its words (all, the first two, the first), its command, command and first word. A decision or
    summary: its words (all, the first two, each). A tool outcome: its command (with the first word). A file:
    its repository-relative path and its file name.
    """
    terms = [str(t) for t in raw.get("terms", ()) if len(str(t)) >= 3]
    command = str(raw["command"]) if raw.get("command") else None
    options: list[tuple[str, ...]] = []
    if fact.evidence_type == "prior_failure":
        options += [tuple(terms), tuple(terms[:2]), tuple(terms[:1])]
        if command:
            options += [(command,), (command, *terms[:1])]
    elif fact.evidence_type in ("decision", "summary"):
        options += [tuple(terms), tuple(terms[:2]), *((t,) for t in terms)]
    elif fact.evidence_type == "tool_outcome":
        options += [(command,), (command, *terms[:1])] if command else [tuple(terms[:2])]
    elif fact.evidence_type == "file_history":
        path = raw.get("relative_path") or (relative_to_repo(str(raw["file_path"]), manifest)
                                            if raw.get("file_path") else None)
        if path:
            options.append((str(path),))
        options += [(t,) for t in terms if "." in t or "/" in t]
    found: list[tuple[str, ...]] = []
    for option in options:
        if option and option not in found:
            found.append(option)
    return found


def _spelling(manifest: Mapping[str, Any]) -> dict[str, str]:
    """Lower-case key -> the spelling the history uses (requests use the history's spelling)."""
    spelled: dict[str, str] = {}
    for raw in [*manifest["facts"], *manifest.get("canaries", ())]:
        for term in [*raw.get("terms", ()), *([raw["command"]] if raw.get("command") else [])]:
            spelled.setdefault(str(term).lower(), str(term))
    return spelled


_KINDS: Final[dict[str, tuple[tuple[str, ...], str, str, str]]] = {
    # evidence type -> (requested types, trigger, case kind, precision class)
    "prior_failure": (("prior_failure", "tool_outcome"), "replan_repetition", "dead_end", "prior_failure"),
    "tool_outcome": (("tool_outcome",), "hypothesis_history_gap", "same_route", "same_route"),
    "file_history": (("file_history",), "hypothesis_history_gap", "same_route", "same_route"),
    "decision": (("decision",), "resume_or_handoff_gap", "same_route", "same_route"),
    "summary": (("summary",), "resume_or_handoff_gap", "same_route", "summary"),
}


def positive_cases(corpus: Corpus, scope: QualifyScope) -> list[Case]:
    manifest = corpus.base.manifest
    raw_facts = {str(f["id"]): f for f in manifest["facts"]}
    cases: list[Case] = []
    for index, cell in enumerate(scope.cells):
        own = [f for f in corpus.facts if in_cell(f, cell, manifest)]
        for fact in own:
            types, trigger, kind, question = _KINDS[fact.evidence_type]
            number = corpus.facts.index(fact)  # case ids name facts by number: reports stay content-free
            for n, terms in enumerate(_phrasings(fact, raw_facts[fact.id], manifest)):
                rid = f"{scope.label}:{index}:{kind}:f{number}:{n}"
                relevant = tuple(f for f in own if _overlaps(terms, f))
                cases.append(Case(id=rid, kind=kind, request=_request(rid, scope, trigger, types, terms),
                                  terms=terms, target=fact, question=question, cell=index, relevant=relevant,
                                  truth=tuple(f for f in relevant if f.evidence_type in types)))
    return cases


def negative_cases(corpus: Corpus, scope: QualifyScope) -> list[Case]:
    """Matched negatives: each term occurs in another agent's or repository's session, in none of the cell's."""
    manifest = corpus.base.manifest
    spelled = _spelling(manifest)
    cases: list[Case] = []
    for index, cell in enumerate(scope.cells):
        mine = cell_sessions(corpus, scope, cell)
        pools: list[tuple[str, Sequence[str]]] = [(f"f{n}", f.keys) for n, f in enumerate(corpus.facts)
                                                  if not in_cell(f, cell, manifest)]
        pools += [(f"c{n}", [str(t).lower() for t in c.get("terms", ())])
                  for n, c in enumerate(manifest.get("canaries", ()))]
        seen: set[tuple[str, ...]] = set()
        for origin, keys in pools:
            terms = [k for k in keys if len(k) >= 3
                     and not any(k in corpus.session_text.get(s, "") for s in mine)
                     and any(k in text for s, text in corpus.session_text.items() if s not in mine)]
            picked = tuple(spelled.get(t, t) for t in terms[:2])
            if not picked or picked in seen:
                continue
            seen.add(picked)
            rid = f"{scope.label}:{index}:negative:{origin}"
            request = _request(rid, scope, "replan_repetition",
                               ["prior_failure", "decision", "file_history", "tool_outcome", "summary"], picked)
            cases.append(Case(id=rid, kind="negative", request=request, terms=picked, expect="empty",
                              cell=index))
    return cases


def cross_scope_cases(scope: QualifyScope) -> list[Case]:
    base = _request("x", scope, "operator_requested_history", ["prior_failure"], ["error"])
    variants: dict[str, dict[str, Any]] = {
        "other_repository": {"scope": {**base["scope"], "repository_id": scope.repository_id + "-other"}},
        "other_agent": {"scope": {**base["scope"], "agent_id": "qualify-intruder-agent"}},
        "other_project": {"scope": {**base["scope"], "project_id": scope.project_id + "-other"}},
        "allow_cross_agent": {"scope": {**base["scope"], "allow_cross_agent": True}},
        "allow_cross_project": {"scope": {**base["scope"], "allow_cross_project": True}},
    }
    return [Case(id=f"{scope.label}:cross_scope:{name}", kind="cross_scope", expect="rejected",
                 request={**base, "request_id": f"{scope.label}:cross_scope:{name}", **override})
            for name, override in variants.items()]


def unknown_option_cases(scope: QualifyScope) -> list[Case]:
    base = _request("u", scope, "operator_requested_history", ["prior_failure"], ["error"])
    variants: dict[str, dict[str, Any]] = {
        "top_level_option": {"options": {"include_other_agents": True}},
        "raw_sql": {"sql": "SELECT text FROM messages"},
        "scope_option": {"scope": {**base["scope"], "include_worktrees": True}},
        "limits_option": {"limits": {**base["limits"], "max_tokens": 100}},
        "revision_option": {"revision": {"current": "HEAD", "branch": "main"}},
        "unknown_evidence_type": {"evidence_types": ["raw_transcript"]},
    }
    return [Case(id=f"{scope.label}:unknown_option:{name}", kind="unknown_option", expect="rejected",
                 request={**base, "request_id": f"{scope.label}:unknown_option:{name}", **override})
            for name, override in variants.items()]


def freshness_cases(positives: Sequence[Case], scope: QualifyScope) -> list[Case]:
    """The first two questions of each cell, asked again on the three variants."""
    cases = []
    for index in range(len(scope.cells)):
        mine = [c for c in positives if c.cell == index]
        picked = ([c for c in mine if c.kind == "dead_end"] + [c for c in mine if c.kind != "dead_end"])[:2]
        for variant, expect in (("base", "fresh"), ("stale", "stale"), ("incomplete", "incomplete")):
            for case in picked:
                rid = f"{case.id}:{variant}"
                cases.append(Case(id=rid, kind="freshness", request={**case.request, "request_id": rid},
                                  terms=case.terms, variant=variant, expect=expect, cell=index))
    return cases
