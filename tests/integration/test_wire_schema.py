"""The exported JSON Schema is the runtime contract, and the wire matches the RFC's TypeScript types (10.7).

* ``schema``: optional fields are not null-able, limits have ``minimum: 1``, ``error.code`` is the enum of
  ``ERROR_CODES``; the schema refuses what the runtime refuses (a null optional field, a limit of 0, an unknown
  code): tests/unit/test_exported_schema.py; here, the ``schema`` command prints that document.
* A corpus of envelopes of every outcome the provider can be driven to here, produced by real requests on a
  real fixture database, validates against it with ``jsonschema`` (the suite validates every other envelope
  too: tests/conftest.py).
* ``tsc --strict`` compiles those envelopes' results and receipts, and requests, against the RFC §5 types
  copied into ``tests/ts/contract_types.ts``, and refuses a deliberately wrong sample. Without ``tsc`` on PATH
  the TypeScript test skips, saying so, unless ``OSE_REQUIRE_TSC=1`` (``.ci/run`` installs it and sets that).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from obelisk_session_evidence.contract.models import (
    RESPONSE_SCHEMA,
    export_json_schema,
)
from obelisk_session_evidence.service import answer

from tests.conftest import make_request, run_cli, scope_entry, write_config
from tests.envelope_schema import problems

TS_TYPES = Path(__file__).parents[1] / "ts" / "contract_types.ts"


def test_schema_command_prints_the_exported_schema(isolated_env: dict[str, str]) -> None:
    assert json.loads(run_cli("schema", env=isolated_env).stdout) == export_json_schema()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Envelopes of every outcome reachable with real requests on a real fixture database."""
    from obelisk_session_evidence.fixtures.builder import build_fixture

    base = tmp_path_factory.mktemp("wire")
    info = build_fixture(base / "fx", generation="current")
    manifest = json.loads(info.manifest_path.read_text(encoding="utf-8"))
    scope = {"agent_id": "claude-agent", "project_id": "demo", "repository_id": "alpha-svc",
             "allow_cross_agent": False, "allow_cross_project": False}
    entry = scope_entry("claude-agent", "demo", "alpha-svc", ["claude"], [manifest["repos"]["alpha-svc"]])
    config = write_config(base / "config.json", [entry], transcript_homes=[manifest["home"]])
    junk = base / "junk.sqlite"
    junk.write_bytes(b"this is not a database" * 100)
    bad_config = base / "bad.json"
    bad_config.write_text("{not json")
    ok = make_request(scope=scope, evidence_types=["prior_failure", "decision", "file_history", "tool_outcome",
                                                   "summary"], query_terms=["ModuleNotFoundError", "stripe"])
    cases: dict[str, tuple[bytes, Path, Path]] = {
        "ok": (json.dumps(ok).encode(), info.db_path, config),
        "ok_revision": (json.dumps({**ok, "revision": {"current": "main", "merge_base": "0" * 40}}).encode(),
                        info.db_path, config),
        "malformed_json": (b"{", info.db_path, config),
        "request_too_large": (b" " * (70 * 1024), info.db_path, config),
        "unknown_field": (json.dumps({**ok, "x": 1}).encode(), info.db_path, config),
        "invalid_request": (json.dumps({**ok, "trigger": "x"}).encode(), info.db_path, config),
        "cross_scope_requested": (json.dumps({**ok, "scope": {**scope, "allow_cross_agent": True}}).encode(),
                                  info.db_path, config),
        "trigger_not_admitted": (json.dumps({**ok, "trigger": "replan_repetition"}).encode(), info.db_path, config),
        "not_enabled": (json.dumps({**ok, "scope": {**scope, "agent_id": "x"}}).encode(), info.db_path, config),
        "scope_mismatch": (json.dumps({**ok, "scope": {**scope, "repository_id": "x"}}).encode(), info.db_path,
                           config),
        "limit_over_ceiling": (json.dumps({**ok, "limits": {**ok["limits"], "max_items": 10_000}}).encode(),
                               info.db_path, config),
        "invalid_query_terms": (json.dumps({**ok, "query_terms": []}).encode(), info.db_path, config),
        "config_invalid": (json.dumps(ok).encode(), info.db_path, bad_config),
        "index_missing": (json.dumps(ok).encode(), base / "none.sqlite", config),
        "index_unreadable": (json.dumps(ok).encode(), junk, config),
    }
    return {name: answer(raw, db_path=db, config_path=cfg).envelope for name, (raw, db, cfg) in cases.items()}


def test_corpus_of_every_outcome_validates(corpus: dict[str, dict[str, Any]]) -> None:
    for name, envelope in corpus.items():
        assert problems(RESPONSE_SCHEMA, envelope) == [], name
        expected = "-" if name.startswith("ok") else name
        assert (envelope["error"] or {}).get("code", "-") == expected, (name, envelope["error"])
    assert {e["outcome"] for e in corpus.values()} == {"ok", "rejected", "failed"}
    assert corpus["ok"]["result"]["items"], "the ok case must carry items for the TypeScript check"


def _tsc() -> str:
    tsc = shutil.which("tsc")
    if tsc is None:
        if os.environ.get("OSE_REQUIRE_TSC") == "1":
            pytest.fail("tsc is required (OSE_REQUIRE_TSC=1) but not on PATH: .ci/run installs typescript")
        pytest.skip("tsc not on PATH: install TypeScript (npm install typescript) to compile the RFC types; "
                    ".ci/run installs it, so CI never skips this test")
    return tsc


def _compile(tsc: str, folder: Path, body: str) -> subprocess.CompletedProcess[str]:
    shutil.copyfile(TS_TYPES, folder / "contract_types.ts")
    sample = folder / "samples.ts"
    sample.write_text('import type { HistoricalEvidenceRequestV0, HistoricalEvidenceResultV0, '
                      'HistoricalEvidenceReceiptV0 } from "./contract_types";\n' + body, encoding="utf-8")
    return subprocess.run([tsc, "--strict", "--noEmit", "--exactOptionalPropertyTypes", "--target", "es2020",
                           "--module", "es2020", "--moduleResolution", "node", str(sample)],
                          capture_output=True, text=True, timeout=300, check=False, cwd=folder)


def test_envelopes_compile_against_the_rfc_typescript_types(corpus: dict[str, dict[str, Any]],
                                                           tmp_path: Path) -> None:
    tsc = _tsc()
    lines: list[str] = []
    n = 0
    for envelope in corpus.values():
        if envelope["result"] is not None:
            lines.append(f"export const result{n}: HistoricalEvidenceResultV0 = {json.dumps(envelope['result'])};")
            lines.append(f"export const receipt{n}: HistoricalEvidenceReceiptV0 = "
                         f"{json.dumps(envelope['receipt'])};")
            n += 1
    request = make_request(revision={"current": "main"})
    lines.append(f"export const request: HistoricalEvidenceRequestV0 = {json.dumps(request)};")
    done = _compile(tsc, tmp_path, "\n".join(lines) + "\n")
    assert done.returncode == 0, done.stdout + done.stderr
    assert n >= 4
    # The check is real: a null optional field (which the provider never emits) does not compile.
    item = dict(corpus["ok"]["result"]["items"][0], message_ref=None)
    wrong = dict(corpus["ok"]["result"], items=[item])
    bad = _compile(tsc, tmp_path, f"export const bad: HistoricalEvidenceResultV0 = {json.dumps(wrong)};\n")
    assert bad.returncode != 0 and "TS2322" in bad.stdout, bad.stdout
