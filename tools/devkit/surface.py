"""The integration surface's shipped files, made from the code: the JSON Schemas, the TypeScript declarations and
one example envelope per outcome (``schemas/``; ``tools/write-surface`` writes them,
``tests/integration/test_surface.py`` makes them again and compares).

The examples are real answers of :func:`obelisk_session_evidence.service.answer` on the demo fixture (the
``demo`` command's index), under a fixed digest key so that their digests are the same on every run. Each names
the setup it was answered in (``demo``, ``missing_index``, ``invalid_config``, ``expired_deadline``), so an
integrator can replay it through ``serve --stdio`` and expect the same outcome. What still moves from run to run
(timings, ages, the recency window's lower bound, the index revision and the digests over it, which hash file
times) is normalised by :func:`normalised` before a comparison.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from obelisk_session_evidence.admission.config import EnabledScope, ProviderConfig, save_config
from obelisk_session_evidence.commands.ping import pong
from obelisk_session_evidence.contract.models import export_json_schema, typescript_declarations
from obelisk_session_evidence.digest import write_key
from obelisk_session_evidence.fixtures.builder import build_fixture
from obelisk_session_evidence.service import answer

#: The folder of the shipped files in the repository (the package's ``schemas`` data).
SURFACE_DIR = Path(__file__).resolve().parents[2] / "schemas"
DECLARATIONS = "obelisk-session-evidence.d.ts"
#: The examples' digest key: fixed, so a regenerated example keeps its digests (an install's key is random).
EXAMPLE_KEY = bytes(range(32))


def schema_files() -> dict[str, str]:
    """Every schema file and the declarations, by file name, as the code makes them."""
    files = {f"{name}.schema.json": json.dumps(schema, indent=2, ensure_ascii=False) + "\n"
             for name, schema in export_json_schema().items()}
    files[DECLARATIONS] = typescript_declarations()
    return files


@dataclass(frozen=True)
class Setup:
    """The demo fixture and the files each example's setup names."""

    db: Path
    config: Path
    invalid_config: Path
    missing_db: Path

    def paths(self, setup: str) -> tuple[Path, Path]:
        """The database and config an example's setup answers with."""
        return {"demo": (self.db, self.config), "expired_deadline": (self.db, self.config),
                "missing_index": (self.missing_db, self.config),
                "invalid_config": (self.db, self.invalid_config)}[setup]


def build_setup(base: Path) -> Setup:
    """The demo fixture in ``base``: one enabled scope (claude-agent, demo, alpha-svc; stage 1), its key fixed."""
    info = build_fixture(base / "index", generation="current")
    manifest = json.loads(info.manifest_path.read_text(encoding="utf-8"))
    repos = manifest["repos"]
    scope = EnabledScope(agent_id="claude-agent", project_id="demo", repository_id="alpha-svc", sources=("claude",),
                         roots=(repos["alpha-svc"], repos["alpha-svc-wt"]), stage=1)
    config = base / "config" / "config.json"
    config.parent.mkdir(mode=0o700)
    save_config(config, ProviderConfig(recency_days=36500, transcript_homes=(str(info.home),), scopes=(scope,)))
    write_key(config, EXAMPLE_KEY, replace=True)  # save_config made a random one
    invalid = base / "invalid" / "config.json"
    invalid.parent.mkdir(mode=0o700)
    invalid.write_text('{"config_version": 1, "deadline_ms": "soon"}\n', encoding="utf-8")
    invalid.chmod(0o600)
    return Setup(db=info.db_path, config=config, invalid_config=invalid, missing_db=base / "no-index.sqlite")


def request(request_id: str, **overrides: Any) -> dict[str, Any]:
    """A request for the demo scope (every field may be overridden)."""
    base: dict[str, Any] = {
        "schema_version": "historical_evidence_request_v0", "request_id": request_id,
        "situation_id": f"situation-{request_id}", "trigger": "operator_requested_history",
        "scope": {"agent_id": "claude-agent", "project_id": "demo", "repository_id": "alpha-svc",
                  "allow_cross_agent": False, "allow_cross_project": False},
        "evidence_types": ["prior_failure", "decision", "file_history", "tool_outcome", "summary"],
        "query_terms": ["ModuleNotFoundError", "stripe"],
        "limits": {"max_sessions": 5, "max_items": 8, "max_snippet_chars": 300, "max_total_chars": 3000},
    }
    return {**base, **overrides}


def _scope(**changes: Any) -> dict[str, Any]:
    return {**request("x")["scope"], **changes}


#: (name, setup, request object or the raw request line, what it shows). One per outcome: ok, ok cut by the
#: limits, every rejection code but ``request_too_large`` (a line over 64 KiB; answered as ``malformed_json``
#: is, error only), a failure, a timeout.
EXAMPLE_CASES: tuple[tuple[str, str, dict[str, Any] | str, str], ...] = (
    ("ok", "demo", request("ok-1"), "evidence found: result and receipt"),
    ("ok_truncated", "demo", request("ok-2", limits={"max_sessions": 5, "max_items": 2, "max_snippet_chars": 80,
                                                     "max_total_chars": 300}),
     "the limits cut the answer: truncated, omitted_count says how many items were dropped"),
    ("rejected_malformed_json", "demo", '{"schema_version": "historical_evidence_request_v0", ',
     "not one JSON object: error only, request_id null"),
    ("rejected_unknown_field", "demo", {**request("rej-1"), "priority": "high"},
     "a field the contract does not define"),
    ("rejected_invalid_request", "demo", request("rej-2", trigger="replan"), "a field of the wrong value"),
    ("rejected_cross_scope_requested", "demo", request("rej-3", scope=_scope(allow_cross_agent=True)),
     "cross-agent retrieval asked for"),
    ("rejected_trigger_not_admitted", "demo", request("rej-4", trigger="replan_repetition"),
     "a replan trigger at stage 1"),
    ("rejected_not_enabled", "demo", request("rej-5", scope=_scope(agent_id="codex-agent", project_id="other")),
     "no enabled scope for this agent and project"),
    ("rejected_scope_mismatch", "demo", request("rej-6", scope=_scope(repository_id="gamma-cli")),
     "the repository is not the enabled scope's"),
    ("rejected_limit_over_ceiling", "demo", request("rej-7", limits={"max_sessions": 5, "max_items": 500,
                                                                     "max_snippet_chars": 300,
                                                                     "max_total_chars": 3000}),
     "a limit above the provider's ceiling (the detail names both)"),
    ("rejected_invalid_query_terms", "demo", request("rej-8", query_terms=[]), "no query terms"),
    ("rejected_config_invalid", "invalid_config", request("rej-9"), "the provider's config cannot be used"),
    ("failed_index_missing", "missing_index", request("fail-1"),
     "no database: a typed empty result and a receipt (the work lane goes on)"),
    ("failed_timeout", "expired_deadline", request("fail-2"),
     "the deadline expired before the index was read (retryable): a typed empty result and a receipt"),
)


def answer_example(setup: Setup, name: str) -> dict[str, Any]:
    """One example as shipped: its name, setup, description, request, exit code and the envelope answered."""
    _, where, sent, what = next(e for e in EXAMPLE_CASES if e[0] == name)
    db, config = setup.paths(where)
    raw = sent.encode() if isinstance(sent, str) else json.dumps(sent).encode()
    # The expired deadline: the request's clock started a minute ago (as a request read too slowly is).
    started = time.monotonic() - 60.0 if where == "expired_deadline" else None
    response = answer(raw, db_path=db, config_path=config, config_must_exist=True, started_at=started)
    document: dict[str, Any] = {"example": name, "description": what, "setup": where}
    document["request" if isinstance(sent, dict) else "request_line"] = sent
    document.update({"exit_code": response.exit_code, "envelope": response.envelope})
    return document


def examples(setup: Setup) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every example, then the ping and its reply, by file name."""
    for name, *_ in EXAMPLE_CASES:
        yield f"{name}.json", answer_example(setup, name)
    yield "ping.json", {"example": "ping", "description": "serve --stdio: who answers, its versions and ceilings",
                        "setup": "demo", "request": {"schema_version": "provider_ping_v0"},
                        "reply": pong(setup.config, must_exist=True)}


def example_files(setup: Setup) -> dict[str, str]:
    return {name: json.dumps(doc, indent=2, ensure_ascii=False) + "\n" for name, doc in examples(setup)}


#: Values that move from run to run: (path in the example, what replaces them).
_MOVING = ("elapsed_ms", "since", "last_build_age_ms", "index_revision", "index_revision_digest", "result_digest",
           "scope_digest")


def normalised(document: Any) -> Any:
    """``document`` with the moving values (timings, ages, the window's lower bound, the index revision and the
    digests over it) replaced by their name, so two runs compare equal when nothing else changed."""
    if isinstance(document, Mapping):
        return {key: f"<{key}>" if key in _MOVING else normalised(value) for key, value in document.items()}
    if isinstance(document, list):
        return [normalised(value) for value in document]
    return document
