"""The paged reading of ``prior_failure.resolution_messages`` (``engine.paged_rows``) against one page holding
every row, on a generated index (split from tests/unit/test_resolution_cues.py, which checks the cue test itself
against SQLite in memory)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from obelisk_session_evidence.retrieval.terms import has_resolution_cue


def test_paged_rows_equal_one_page(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Pages of 7 and 20 rows (the key carried from page to page) give the rows and the answer of one page
    holding every candidate, on a generated index where a common term's failures have many later messages."""
    from obelisk_session_evidence.retrieval import engine
    from obelisk_session_evidence.service import WarmState, answer

    from tests.conftest import make_request, scope_entry, write_config
    from tools.devkit.large import build_large

    db = build_large(tmp_path / "obelisk.sqlite", messages=20_000).db_path
    manifest = json.loads((tmp_path / "obelisk.manifest.json").read_text(encoding="utf-8"))
    project = manifest["projects"]["mid"]
    Path(project["root"]).mkdir(parents=True, exist_ok=True)
    config = write_config(tmp_path / "cfg.json", [scope_entry("bench-agent", "demo", project["name"],
                                                              ["claude", "codex"], [project["root"]])],
                          transcript_homes=[str(manifest["home"])])
    request = json.dumps(make_request(
        scope={"agent_id": "bench-agent", "project_id": "demo", "repository_id": project["name"],
               "allow_cross_agent": False, "allow_cross_project": False},
        evidence_types=["prior_failure"], query_terms=[manifest["terms"]["common"]["term"]])).encode()
    seen: dict[int, list[list[dict[str, Any]]]] = {}
    original = engine.paged_rows

    def recording(snap: Any, template: Any, values: Any) -> Any:
        rows = original(snap, template, values)
        seen.setdefault(engine.RESOLUTION_PAGE, []).append([dict(zip(snap.last_columns, r, strict=True))
                                                            for r in rows])
        return rows

    tested: list[bool] = []

    def counting(text: object) -> bool:
        found = has_resolution_cue(text)
        tested.append(found)
        return found

    monkeypatch.setattr(engine, "paged_rows", recording)
    monkeypatch.setattr(engine, "has_resolution_cue", counting)
    answers = {}
    for page in (100_000, 7, 20):
        monkeypatch.setattr(engine, "RESOLUTION_PAGE", page)
        answers[page] = answer(request, db_path=db, config_path=config, warm=WarmState()).envelope
    rows = [row for batch in seen[100_000] for row in batch]
    assert len(rows) > 20, "too few resolution rows to span pages: the comparison shows little"
    assert tested.count(False) > 20, "few agent messages were passed over: the filter shows little"
    assert all("order_key" not in row and "message_rowid" not in row for row in rows)
    for page in (7, 20):
        assert answers[page]["outcome"] == "ok", answers[page]["error"]
        assert seen[page] == seen[100_000]
        assert answers[page]["result"]["items"] == answers[100_000]["result"]["items"]
