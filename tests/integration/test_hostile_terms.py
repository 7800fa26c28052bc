"""Issue 6, item 5: hostile query terms. A corpus of FTS5 syntax, column filters, NEAR, quotes, full-width
operators, NUL and control characters, SQL fragments, over-long, CJK, emoji, RTL, zero-width and lone-surrogate
terms (``tests/data/hostile_terms.json``) runs against fixture databases whose canary rows (the word CANARYTERM
and the same failure text, in another repository or agent) lie outside the scope, under the unicode61 and the
trigram generation, for every evidence type: zero crashes, zero FTS errors reaching the caller (every outcome
is ``ok`` or a typed rejection), and no canary session, ref or word is ever returned.
"""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from obelisk_session_evidence.contract.models import HistoricalEvidenceResponseV0
from obelisk_session_evidence.fixtures.builder import FixtureInfo, build_fixture
from obelisk_session_evidence.service import answer

from tests.conftest import CLI, REPO, make_request, write_config

CORPUS = Path(__file__).parents[1] / "data" / "hostile_terms.json"
TYPES = ["prior_failure", "decision", "file_history", "tool_outcome", "summary"]
CEILINGS = {"max_sessions": 50, "max_items": 50, "max_snippet_chars": 2000, "max_total_chars": 32000,
            "max_query_terms": 16, "max_term_chars": 200}
LIMITS = {"max_sessions": 20, "max_items": 30, "max_snippet_chars": 400, "max_total_chars": 8000}
#: The scopes asked: the canaries (alpha-svc-evil, a path-boundary neighbour, and a Codex beta-web session of
#: the other agent) are outside both.
SCOPES = (("claude-agent", "alpha-svc"), ("codex-agent", "alpha-svc"))
#: Typed rejections a hostile term may earn. A lone surrogate (a \ud800 escape) is not UTF-8 text: the
#: request is refused as malformed_json before anything reads it.
TERM_REJECTIONS = {"invalid_query_terms", "invalid_request"}
SURROGATE_REJECTIONS = {"malformed_json"}


def load_corpus() -> list[dict[str, str]]:
    doc = json.loads(CORPUS.read_text(encoding="utf-8"))
    entries: list[dict[str, str]] = doc["terms"]
    return entries


def _has_surrogate(text: str) -> bool:
    return any(0xD800 <= ord(c) <= 0xDFFF for c in text)


@dataclass
class Tally:
    requests: int = 0
    ok: int = 0
    rejected: Counter[str] = field(default_factory=Counter)
    crashes: int = 0
    fts_errors: int = 0
    canary_hits: int = 0
    failures: list[str] = field(default_factory=list)


TALLY = Tally()


@dataclass(frozen=True)
class Db:
    generation: str
    info: FixtureInfo
    manifest: dict[str, Any]
    configs: dict[tuple[str, str], Path]

    def canary_strings(self) -> list[str]:
        found = ["CANARYTERM", "canaryterm"]
        for canary in self.manifest["canaries"]:
            found.append(canary["session_id"])
            found += [str(ref) for ref in canary["refs"]]
        return found

    def in_scope_sessions(self, agent: str, repo: str) -> set[str]:
        return {s["id"] for s in self.manifest["sessions"] if s["agent"] == agent and s["repo"] == repo}


@pytest.fixture(scope="module", autouse=True)
def _private_cache(tmp_path_factory: pytest.TempPathFactory) -> Any:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg-cache")))
        yield


@pytest.fixture(scope="module", params=["current", "trigram"])
def db(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Db:
    generation = str(request.param)
    base = tmp_path_factory.mktemp(f"hostile-{generation}")
    info = build_fixture(base / generation, generation=generation)  # type: ignore[arg-type]
    manifest = json.loads(info.manifest_path.read_text(encoding="utf-8"))
    assert manifest["canaries"] and manifest["canary_term"] == "CANARYTERM"
    configs = {}
    for agent, repo in SCOPES:
        scope = {"agent_id": agent, "project_id": "demo", "repository_id": repo,
                 "sources": manifest["agents"][agent], "roots": [manifest["repos"][repo]], "stage": 1}
        configs[(agent, repo)] = write_config(base / f"config-{agent}.json", [scope],
                                              transcript_homes=[str(info.home)], ceilings=CEILINGS)
    return Db(generation, info, manifest, configs)


def request_bytes(agent: str, repo: str, types: list[str], terms: list[str], request_id: str) -> bytes:
    request = make_request(request_id=request_id,
                           scope={"agent_id": agent, "project_id": "demo", "repository_id": repo,
                                  "allow_cross_agent": False, "allow_cross_project": False},
                           evidence_types=types, query_terms=terms, limits=LIMITS)
    return json.dumps(request).encode()  # ensure_ascii: NUL, controls and lone surrogates travel as escapes


def judge(db: Db, agent: str, repo: str, terms: list[str], envelope: dict[str, Any], exit_code: int) -> None:
    """Tally one envelope and record (not raise) what is wrong, so the summary counts everything."""
    TALLY.requests += 1
    label = f"{db.generation}/{agent}/{terms!r}"[:200]
    try:
        HistoricalEvidenceResponseV0.model_validate_json(json.dumps(envelope))
    except ValueError as exc:
        TALLY.failures.append(f"shape {label}: {exc}")
    outcome = envelope["outcome"]
    code = envelope["error"]["code"] if envelope["error"] else None
    if code == "internal_error" or exit_code == 1:
        TALLY.crashes += 1
        TALLY.failures.append(f"crash {label}")
        return
    if outcome == "failed":
        TALLY.fts_errors += 1  # a hostile term made the index read fail: that is what must never happen
        TALLY.failures.append(f"failed {label}: {code}")
        return
    if outcome == "rejected":
        TALLY.rejected[str(code)] += 1
        allowed = SURROGATE_REJECTIONS if any(_has_surrogate(t) for t in terms) else TERM_REJECTIONS
        if code not in allowed:
            TALLY.failures.append(f"rejected {label}: {code}")
        return
    TALLY.ok += 1
    result_text = json.dumps(envelope["result"], ensure_ascii=False)
    whole = json.dumps(envelope, ensure_ascii=False)
    hits = [c for c in db.canary_strings() if c in result_text or c in whole]
    hits += [i["session_ref"] for i in envelope["result"]["items"]
             if i["session_ref"] not in db.in_scope_sessions(agent, repo)]
    if "canaryterm" in result_text.lower():
        hits.append("CANARYTERM (any case)")
    if hits:
        TALLY.canary_hits += 1
        TALLY.failures.append(f"canary {label}: {hits}")


def ask(db: Db, agent: str, repo: str, types: list[str], terms: list[str]) -> dict[str, Any]:
    raw = request_bytes(agent, repo, types, terms, f"req-{TALLY.requests}")
    try:
        response = answer(raw, db_path=db.info.db_path, config_path=db.configs[(agent, repo)])
    except Exception as exc:  # answer() must never raise
        TALLY.requests += 1
        TALLY.crashes += 1
        TALLY.failures.append(f"raised {db.generation}/{agent}/{terms!r}: {type(exc).__name__}")
        return {}
    judge(db, agent, repo, terms, response.envelope, response.exit_code)
    return response.envelope


CORPUS_TERMS = [entry["term"] for entry in load_corpus()]


def test_corpus_is_large_and_varied() -> None:
    entries = load_corpus()
    assert len(entries) >= 100
    assert len(set(CORPUS_TERMS)) == len(CORPUS_TERMS)
    kinds = Counter(e["kind"] for e in entries)
    for kind in ("fts_operator", "near", "column_filter", "quotes", "fullwidth", "control", "sql", "long",
                 "cjk", "emoji", "rtl", "zero_width", "surrogate", "canary"):
        assert kinds[kind] >= 1, kind
    lengths = {len(t) for t in CORPUS_TERMS}
    assert CEILINGS["max_term_chars"] in lengths and CEILINGS["max_term_chars"] + 1 in lengths
    assert "\x00" in CORPUS_TERMS and "CANARYTERM" in CORPUS_TERMS


@pytest.mark.heavy
def test_every_hostile_term_for_every_evidence_type(db: Db) -> None:
    before = len(TALLY.failures)
    for term in CORPUS_TERMS:
        for etype in TYPES:  # one template family at a time: a failure names the evidence type
            ask(db, "claude-agent", "alpha-svc", [etype], [term])
        for agent, repo in SCOPES:  # combined with the canary's own words, every type at once
            ask(db, agent, repo, TYPES, [term, "CANARYTERM", "stripe", "ModuleNotFoundError"])
    assert TALLY.failures[before:] == []


def test_ceiling_boundary_and_canary_only_requests(db: Db) -> None:
    at, over = "a" * CEILINGS["max_term_chars"], "a" * (CEILINGS["max_term_chars"] + 1)
    assert ask(db, "claude-agent", "alpha-svc", TYPES, [at])["outcome"] == "ok"
    rejected = ask(db, "claude-agent", "alpha-svc", TYPES, [over])
    assert rejected["error"]["code"] == "invalid_query_terms"
    # Every canary spelling at once, every type, both scopes: found nothing, said nothing.
    canary_terms = [t for t in CORPUS_TERMS if "CANARY" in t.upper() and not _has_surrogate(t)][:16]
    for agent, repo in SCOPES:
        envelope = ask(db, agent, repo, TYPES, canary_terms)
        assert envelope["outcome"] in {"ok", "rejected"}
    # The canary rows really are there, and match, for the scope that owns them (the test has teeth).
    evil = {"agent_id": "claude-agent", "project_id": "demo", "repository_id": "alpha-svc-evil",
            "sources": ["claude"], "roots": [db.manifest["repos"]["alpha-svc-evil"]], "stage": 1}
    config = write_config(db.info.db_path.parent / "config-evil.json", [evil],
                          transcript_homes=[str(db.info.home)], ceilings=CEILINGS)
    raw = request_bytes("claude-agent", "alpha-svc-evil", TYPES, ["CANARYTERM", "stripe"], "req-evil")
    owned = answer(raw, db_path=db.info.db_path, config_path=config).envelope
    assert owned["outcome"] == "ok"
    assert any(i["session_ref"] == db.manifest["canaries"][0]["session_id"] for i in owned["result"]["items"])
    assert TALLY.failures == [], TALLY.failures[:20]


def test_hostile_terms_through_serve_stdio(db: Db, tmp_path: Path) -> None:
    """The whole corpus through one real ``serve --stdio`` process: one envelope per line, stderr empty."""
    lines = [request_bytes("claude-agent", "alpha-svc", TYPES, [term, "stripe"], f"req-{i}")
             for i, term in enumerate(CORPUS_TERMS)]
    env = {"HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([*CLI, "serve", "--stdio", "--db", str(db.info.db_path),
                           "--config", str(db.configs[("claude-agent", "alpha-svc")])],
                          input=b"\n".join(lines) + b"\n", capture_output=True, env=env, cwd=REPO, timeout=300,
                          check=False)
    assert proc.returncode == 0 and proc.stderr == b"", proc.stderr[-2000:]
    out = proc.stdout.decode("utf-8").splitlines()
    assert len(out) == len(CORPUS_TERMS)
    for term, line in zip(CORPUS_TERMS, out, strict=True):
        envelope = json.loads(line)
        outcome = envelope["outcome"]
        code = {"ok": 0, "rejected": 2, "failed": 3}[outcome] if not envelope["error"] or \
            envelope["error"]["code"] != "internal_error" else 1
        judge(db, "claude-agent", "alpha-svc", [term, "stripe"], envelope, code)
    assert TALLY.failures == [], TALLY.failures[:20]


@pytest.fixture(scope="module", autouse=True)
def summary() -> Iterator[None]:
    """After every test of this module, whatever order they ran in: print the tally and check it."""
    yield
    rejected = dict(sorted(TALLY.rejected.items()))
    print(f"\nHOSTILE: terms={len(CORPUS_TERMS)} requests={TALLY.requests} ok={TALLY.ok} rejected={rejected} "
          f"crashes={TALLY.crashes} fts_errors={TALLY.fts_errors} canary_hits={TALLY.canary_hits}")
    assert TALLY.crashes == 0 and TALLY.fts_errors == 0 and TALLY.canary_hits == 0, TALLY.failures[:20]
