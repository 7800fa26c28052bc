"""The warm path (issue 13.4): a remembered scope read never changes an answer, over a live writer.

A real writer process (``tests/writer_proc.py``) commits, checkpoints, rebuilds and swaps the database while
this process answers the same requests twice in a row: warm (one ``WarmState`` kept across the whole run, as
``serve`` keeps it) and cold (a new ``WarmState``). Whenever the index's state did not move across the pair,
the two envelopes must be equal (but for the elapsed time and the marker age, which follow the clock); when it
moved, each answer must still be a state the writer committed (``tests/integration/test_live_writer.py`` checks that in
depth).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from obelisk_session_evidence import service
from obelisk_session_evidence.index.memo import index_state

from tests.conftest import REPO, make_request, scope_entry, write_config

pytestmark = pytest.mark.heavy

SECONDS = 12.0
MIN_EQUAL_PAIRS = 30
#: A hang guard, not a timing threshold: on a loaded machine the run goes on until MIN_EQUAL_PAIRS pairs.
GUARD_SECONDS = 600.0


def _comparable(envelope: dict[str, Any]) -> dict[str, Any]:
    doc = json.loads(json.dumps(envelope))
    meta = doc.get("provider_meta") or {}
    meta.pop("elapsed_ms", None)
    (meta.get("freshness_detail") or {}).pop("last_build_age_ms", None)
    return doc


def test_warm_answers_equal_cold_answers_over_a_live_writer(tmp_path: Path) -> None:
    repos = tmp_path / "repos"
    roots = {"in": repos / "acme-api", "other": repos / "other-repo", "evil": repos / "acme-api-evil"}
    for root in roots.values():
        root.mkdir(parents=True)
    home = tmp_path / "home"
    home.mkdir()
    folder = tmp_path / "obelisk"
    folder.mkdir()
    db = folder / "obelisk.sqlite"
    config = write_config(tmp_path / "config.json",
                          [scope_entry("claude-main", "acme", "acme-api", ["claude"], [str(roots["in"])])])
    log, stop = tmp_path / "writer-log.jsonl", tmp_path / "stop-writer"
    roots_json = json.dumps({"home": str(home), **{k: str(v) for k, v in roots.items()}})
    writer = subprocess.Popen(
        [sys.executable, str(REPO / "tests" / "writer_proc.py"), "--db", str(db), "--log", str(log),
         "--roots-json", roots_json, "--stop", str(stop), "--rebuild-at", "3", "--swap-at", "6",
         "--pause-ms", "40", "--max-seconds", str(GUARD_SECONDS + 30)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO)
    assert writer.stdout is not None
    assert writer.stdout.readline().strip() == b"ready"
    equal = moved = 0
    mismatches: list[tuple[dict[str, Any], dict[str, Any]]] = []
    kept = service.WarmState()
    started = time.monotonic()
    index = 0
    try:
        while time.monotonic() - started < GUARD_SECONDS and (
                time.monotonic() - started < SECONDS or equal < MIN_EQUAL_PAIRS or moved < 1):
            request = json.dumps(make_request(
                request_id=f"warm-{index}", evidence_types=["prior_failure", "tool_outcome"],
                query_terms=["zorblax"], limits={"max_sessions": 10, "max_items": 40, "max_snippet_chars": 300,
                                                 "max_total_chars": 20000})).encode()
            index += 1
            state = index_state(db)
            warm = service.answer(request, db_path=db, config_path=config, warm=kept)
            cold = service.answer(request, db_path=db, config_path=config, warm=service.WarmState())
            if state is None or index_state(db) != state:
                moved += 1
                continue
            if _comparable(warm.envelope) == _comparable(cold.envelope):
                equal += 1
            else:
                mismatches.append((warm.envelope, cold.envelope))
            # leave the kept state warm for the next pair's warm answer
            service.answer(request, db_path=db, config_path=config, warm=kept)
    finally:
        stop.write_text("stop")
        _out, err = writer.communicate(timeout=60)
    assert writer.returncode == 0, err.decode(errors="replace")
    hits = kept.stats()["hits"]
    print(f"\nWARM-CACHE: pairs={index} equal={equal} state_moved={moved} mismatches={len(mismatches)} "
          f"hits={hits}")
    assert not mismatches, mismatches[0]
    assert equal >= MIN_EQUAL_PAIRS
    assert moved >= 1  # the writer really moved the index under some pairs
    assert hits >= equal  # the warm answers did come from the cache
