"""``terms.has_resolution_cue`` decides in Python what ``prior_failure.resolution_messages`` decided in SQL
before: whether an agent message's first 4,000 characters hold a resolution cue. Checked against SQLite itself
(the old predicate verbatim: ``lower()``, ``instr()``, ``substr()``, ``json_each``) on generated texts and BLOBs.
The paged reading of the template: tests/integration/test_resolution_pages.py."""

from __future__ import annotations

import json

import apsw
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
