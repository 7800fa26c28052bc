"""Issue 3, items 3-4: the pinned schema snapshots as committed (valid digests, pretty sorted JSON, a hand edit
refused), ``diff`` and ``nearest`` on plain dictionaries, and the FTS5 tokenizer read from a declaration (the
verdicts on real and hand-broken databases, and ``check-schema``: tests/integration/test_schema_check.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from obelisk_session_evidence.index.live_schema import detect_tokenizer, parse_virtual_table
from obelisk_session_evidence.index.snapshots import (
    SNAPSHOT_DIR,
    Difference,
    SnapshotError,
    compute_digest,
    diff,
    load_snapshots,
    nearest,
    render,
)

from tests.conftest import REPO


def test_committed_snapshots_load_with_valid_digests() -> None:
    snapshots = load_snapshots()
    ids = [s["id"] for s in snapshots]
    assert ids == sorted(ids)
    assert {"fixture-current", "fixture-legacy", "fixture-migrated", "fixture-trigram",
            "obelisk-real-036ff1c"} <= set(ids)
    for snap in snapshots:
        assert snap["digest"] == compute_digest(snap)
        assert not str(snap["captured_from"]).startswith("/")
        assert "/tmp/" not in render(snap)
        assert str(REPO) not in render(snap)
        for key in ("tables", "indexes", "fts", "triggers", "virtual_tables"):
            names = [entry["name"] for entry in snap[key]]
            assert names == sorted(names), key
        shadows = ("sqlite_", "messages_fts_", "memories_fts_")
        assert not any(t["name"].startswith(shadows) for t in snap["tables"])


def test_committed_files_are_pretty_sorted_json() -> None:
    for path in SNAPSHOT_DIR.glob("*.json"):
        text = path.read_text(encoding="utf-8")
        assert text == render(json.loads(text)), path.name
        assert path.stem == json.loads(text)["id"]


def test_hand_edited_snapshot_is_refused(tmp_path: Path) -> None:
    pinned = json.loads((SNAPSHOT_DIR / "fixture-current.json").read_text(encoding="utf-8"))
    pinned["tables"][0]["columns"][0]["type"] = "BLOB"
    (tmp_path / "fixture-current.json").write_text(render(pinned), encoding="utf-8")
    with pytest.raises(SnapshotError, match="digest"):
        load_snapshots(tmp_path)


def test_digest_ignores_id_and_description() -> None:
    pinned = load_snapshots()[0]
    renamed = {**pinned, "id": "other", "captured_from": "elsewhere"}
    assert compute_digest(renamed) == pinned["digest"]


def _snap(**parts: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"format": 1, "id": "x", "captured_from": "", "tables": [], "indexes": [],
                            "fts": [], "virtual_tables": [], "triggers": []}
    base.update(parts)
    base["digest"] = compute_digest(base)
    return base


def _col(name: str, ctype: str = "TEXT") -> dict[str, Any]:
    return {"name": name, "type": ctype, "default": None, "notnull": False, "pk": 0}


def test_diff_kinds_and_order() -> None:
    pinned = _snap(tables=[{"name": "t", "columns": [_col("a"), _col("b"), _col("c")]}],
                   indexes=[{"name": "i", "table": "t", "columns": ["a"], "unique": False, "partial": None}])
    live = _snap(tables=[{"name": "t", "columns": [_col("b", "INTEGER"), _col("a"), _col("d")]},
                         {"name": "u", "columns": [_col("z")]}],
                 indexes=[{"name": "i", "table": "t", "columns": ["a"], "unique": False, "partial": "a > 1"}])
    found = diff(live, pinned)
    assert [(d.kind, d.object) for d in found] == sorted((d.kind, d.object) for d in found)
    assert {(d.kind, d.object) for d in found} == {
        ("added_table", "u"), ("added_column", "t.d"), ("missing_column", "t.c"), ("retyped_column", "t.b"),
        ("column_order", "t"), ("changed_index", "i")}
    assert Difference("added_table", "u").additive
    assert not Difference("missing_column", "t.c").additive
    assert diff(pinned, pinned) == []


def test_nearest_prefers_fewest_differences_then_id() -> None:
    a = {**_snap(tables=[{"name": "t", "columns": [_col("a")]}]), "id": "b-snap"}
    b = {**_snap(tables=[{"name": "t", "columns": [_col("a")]}]), "id": "a-snap"}
    far = {**_snap(tables=[{"name": "q", "columns": [_col("a")]}]), "id": "0-far"}
    live = _snap(tables=[{"name": "t", "columns": [_col("a"), _col("extra")]}])
    chosen, found = nearest(live, [a, far, b])
    assert chosen is not None
    assert chosen["id"] == "a-snap"
    assert [d.kind for d in found] == ["added_column"]
    assert nearest(live, []) == (None, [])


def test_nearest_with_an_exact_snapshot_is_the_rule_applied_to_every_snapshot() -> None:
    """With a snapshot whose digest is the live one, only snapshots of smaller ids can rank before it (with no
    difference either), so only they are compared; the choice is the rule's over every snapshot."""
    from obelisk_session_evidence.index.snapshots import SNAPSHOT_DIR, load_snapshots

    def every(live: dict[str, Any], snapshots: list[dict[str, Any]]) -> tuple[str | None, list[Difference]]:
        ranked = sorted((len(found), str(p["id"]), found) for p in snapshots
                        for found in [[] if p["digest"] == live["digest"] else diff(live, p)])
        return (ranked[0][1], ranked[0][2]) if ranked else (None, [])

    pinned = load_snapshots(SNAPSHOT_DIR)
    for live in pinned:
        chosen, found = nearest(live, pinned)
        assert chosen is not None and (chosen["id"], found) == every(live, pinned) == (live["id"], [])
    base = _snap(tables=[{"name": "t", "columns": [_col("a")]}])
    exact = {**base, "id": "m-exact"}
    twin = {**base, "id": "a-twin", "digest": "not the live digest"}  # no difference, yet compared by diff
    later = {**base, "id": "z-twin", "digest": "not the live digest"}
    other = {**_snap(tables=[{"name": "q", "columns": [_col("a")]}]), "id": "b-other"}
    for order in ([exact, twin, later, other], [later, other, twin, exact], [exact, later]):
        chosen, found = nearest(base, order)
        assert chosen is not None and (chosen["id"], found) == every(base, order)
    assert nearest(base, [exact, twin])[0] == twin  # a smaller id with no difference still ranks first


def test_tokenizer_detection() -> None:
    assert detect_tokenizer(None) == ("unicode61", None)
    assert detect_tokenizer("unicode61 remove_diacritics 1") == ("unicode61", None)
    assert detect_tokenizer("porter unicode61") == ("porter", "unicode61")
    assert detect_tokenizer("porter") == ("porter", "unicode61")
    assert detect_tokenizer("'porter' 'ascii'") == ("porter", "ascii")
    assert detect_tokenizer("trigram case_sensitive 0") == ("trigram", None)
    assert detect_tokenizer("ascii") == ("ascii", None)
    assert detect_tokenizer("nosuch") == (None, None)
    assert detect_tokenizer("porter nosuch") == (None, None)
    declared = parse_virtual_table(
        "CREATE VIRTUAL TABLE m USING fts5(uuid UNINDEXED, \"text\", content='messages', "
        "content_rowid=rowid, tokenize = \"porter 'unicode61' tokenchars '-,'\")")
    assert declared is not None
    assert declared.columns == ("uuid", "text")
    assert declared.unindexed == ("uuid",)
    assert declared.options == {"content": "messages", "content_rowid": "rowid",
                                "tokenize": "porter 'unicode61' tokenchars '-,'"}
