"""Issue 12, item 7: the install's digest key as a file (made once, owner-only and atomically; a malformed key or
one that is not a regular file is refused), the provider id spelled once, and an absent optional field left out
of the result and of the JSON its digest is taken over. Receipts recomputed from real answers:
tests/integration/test_digest.py."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest
from obelisk_session_evidence.digest import DigestKey, canonical_json, ensure_key, key_path, load_key

from tests.conftest import REPO


@pytest.mark.parametrize("content", [b"", b"zz" * 32, b"ab" * 31 + b"\n", b"ab" * 33, b"\xff" * 64])
def test_a_malformed_key_is_refused(tmp_path: Path, content: bytes) -> None:
    config = tmp_path / "config.json"
    key_path(config).write_bytes(content)
    key_path(config).chmod(0o600)  # private: refused for its content alone
    with pytest.raises(Exception) as caught:
        load_key(config)
    assert getattr(caught.value, "code", None) == "config_invalid"


def test_a_key_that_is_not_a_regular_file_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    key_path(config).mkdir()
    with pytest.raises(Exception) as caught:
        load_key(config)
    assert getattr(caught.value, "code", None) == "config_invalid"
    os.rmdir(key_path(config))
    target = tmp_path / "elsewhere.key"
    target.write_text("ab" * 32)
    key_path(config).symlink_to(target)  # followed nowhere: O_NOFOLLOW
    with pytest.raises(Exception) as caught:
        load_key(config)
    assert getattr(caught.value, "code", None) == "config_invalid"


def test_the_key_is_made_once_owner_only_and_atomically(tmp_path: Path) -> None:
    config = tmp_path / "cfg" / "config.json"
    keys: list[DigestKey] = []
    threads = [threading.Thread(target=lambda: keys.append(ensure_key(config))) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(keys) == 8 and len({k.secret for k in keys}) == 1
    assert stat.S_IMODE(key_path(config).stat().st_mode) == 0o600
    assert sorted(os.listdir(config.parent)) == ["digest.key"]  # no temp file left behind
    assert ensure_key(config) == keys[0] == load_key(config)
    assert len(keys[0].secret) == 32
    assert keys[0].of({"a": 1}) == keys[0].of({"a": 1}) != DigestKey(b"\0" * 32).of({"a": 1})
    assert keys[0].of("x") != keys[0].of_text("x")  # canonical JSON of a string is its quoted form
    assert canonical_json("x") == b'"x"'


def test_the_provider_id_is_spelled_once() -> None:
    spelled = [path for path in (REPO / "provider").rglob("*.py")
               for _ in range(path.read_text(encoding="utf-8").count('"obelisk-session-evidence"'))]
    assert [p.relative_to(REPO).as_posix() for p in spelled] == ["provider/_version.py"]


def test_an_absent_optional_field_is_left_out_of_the_result_and_its_digest() -> None:
    """RFC §5 writes ``message_ref?: string``: an item with no message, time or branch carries no such key
    (never ``null``), in the envelope's result and in the JSON its ``result_digest`` is taken over."""
    from obelisk_session_evidence.bounding.receipt import build_receipt, build_result
    from obelisk_session_evidence.contract.models import HistoricalEvidenceResultV0
    from obelisk_session_evidence.contract.wire import EvidenceItem

    wire = build_result(request_id="r", index_revision="obx1-x", agent_id="a", project_id="p", repository_id="r",
                        freshness="fresh", truncated=False, omitted_count=0,
                        items=[EvidenceItem(session_ref="s1", evidence_type="summary", snippet="a title"),
                               EvidenceItem(session_ref="s2", message_ref="m2", evidence_type="decision",
                                            snippet="b", observed_at="2026-01-01T00:00:00Z", revision_ref="main")])
    assert wire["items"][0] == {"session_ref": "s1", "evidence_type": "summary", "snippet": "a title"}
    assert set(wire["items"][1]) == {"session_ref", "message_ref", "evidence_type", "snippet", "observed_at",
                                     "revision_ref"}
    # the contract of record reads it back to the same JSON (nothing dropped, nothing null)
    assert HistoricalEvidenceResultV0.model_validate(wire).model_dump(mode="json", exclude_none=True) == wire
    key = DigestKey(b"k" * 32)
    receipt = build_receipt(wire, scope_basis={}, query_basis={}, key=key)
    assert receipt["result_digest"] == key.of(wire)
    assert b"null" not in canonical_json(wire)
