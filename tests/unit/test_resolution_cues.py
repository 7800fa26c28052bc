"""``terms.has_resolution_cue`` decides in Python what ``prior_failure.resolution_messages`` decided in SQL
before: whether an agent message's first 4,000 characters hold a resolution cue. Checked against SQLite itself
(the old predicate verbatim: ``lower()``, ``instr()``, ``substr()``, ``json_each``) on generated texts and BLOBs,
and the paged reading of the template (``engine.paged_rows``) against one page holding every row."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import apsw
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from obelisk_session_evidence.retrieval.terms import CUE_HEAD, RESOLUTION_CUES, has_resolution_cue

#: The cue predicate of prior_failure.resolution_messages.v1 before it moved to Python.
OLD_SQL = ("SELECT EXISTS (SELECT 1 FROM json_each(:cues) AS c "
           "WHERE instr(lower(substr(:text, 1, :head)), c.value) > 0)")

CONN = apsw.Connection(":memory:")
PIECES = st.sampled_from([*RESOLUTION_CUES[:15], *RESOLUTION_CUES[-12:], "Root Cause", "FIXED", "The Fix",
                          "ROOT CAUSE", "İnstalled", "ǅ", "ß", "\u212a", "WOR\u212aS NOW", "\u00e9", "x", " ", "\n",
                          "😀", "Ａ", "修", "复"])


def sqlite_has_cue(text: str | bytes) -> bool:
    row = CONN.execute(OLD_SQL, {"text": text, "cues": json.dumps(list(RESOLUTION_CUES)),
                                 "head": CUE_HEAD}).fetchone()
    assert row is not None
    return bool(row[0])


@settings(max_examples=500, deadline=None)
@given(st.lists(st.one_of(PIECES, st.text(max_size=20)), max_size=30), st.integers(0, 4100))
def test_the_python_cue_test_equals_the_sqlite_one(pieces: list[str], pad: int) -> None:
    text = ("y" * pad if pad % 2 else "") + "".join(pieces)
    text = text.split("\x00", 1)[0]  # the template hands Python the text before a NUL, as substr() does
    assert has_resolution_cue(text) == sqlite_has_cue(text)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(PIECES, st.text(max_size=10)), max_size=20), st.integers(0, 4100))
def test_a_blob_is_tested_by_its_bytes_as_sqlite_does(pieces: list[str], pad: int) -> None:
    blob = (b"\x00z" * (pad // 2)) + "".join(pieces).encode("utf-8", "surrogatepass")
    assert has_resolution_cue(blob) == sqlite_has_cue(blob)


def test_chosen_texts() -> None:
    for text in ("", "nothing here", "The Root Cause was X", "x" * 3990 + " the fix", "x" * 3993 + " the fix",
                 "修复了", "ÉTÉ Granted", "İnstalled", "it WOR\u212aS NOW", "a" * 3995 + "fixed", "a" * 3996 + "fixed"):
        assert has_resolution_cue(text) == sqlite_has_cue(text), text[-20:]
    assert not has_resolution_cue("it WOR\u212aS NOW")  # the Kelvin sign is not ASCII: SQLite keeps it
    assert has_resolution_cue("THE ROOT CAUSE") and not has_resolution_cue("nothing") and not has_resolution_cue(None)
    assert has_resolution_cue("a" * 3995 + "fixed") and not has_resolution_cue("a" * 3996 + "fixed")


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
