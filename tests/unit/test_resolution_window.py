"""``evidence.resolution_window`` computes in Python what ``prior_failure.resolution_messages`` computed in
SQL before (its window around the first resolution cue, and its cue count): checked against SQLite itself
(``lower()``, ``instr()``, ``substr()``, ``json_each``) on generated texts, the old expressions verbatim.

One difference, on purpose: a message holding a NUL. SQLite's ``substr()`` ends a text at its first NUL, so the
template's ``substr(m.text, 1, :cap)`` hands Python the text before it, and the window is taken there; the old
SQL searched the cues past the NUL too and then showed an empty window when the first cue lay beyond it."""

from __future__ import annotations

import json

import apsw
from hypothesis import given, settings
from hypothesis import strategies as st
from obelisk_session_evidence.retrieval.evidence import resolution_window
from obelisk_session_evidence.retrieval.snippets import ReadWindow
from obelisk_session_evidence.retrieval.terms import CUE_HEAD, RESOLUTION_CUES

#: The select-list of prior_failure.resolution_messages.v1 before the window moved to Python.
OLD_SQL = """SELECT max(1, COALESCE((SELECT min(instr(lower(:text), c.value)) FROM json_each(:cues) AS c
                         WHERE instr(lower(:text), c.value) > 0), 1) - :pre) AS window_start,
       substr(:text, max(1, COALESCE((SELECT min(instr(lower(:text), c.value)) FROM json_each(:cues) AS c
                                        WHERE instr(lower(:text), c.value) > 0), 1) - :pre), :window) AS body,
       (SELECT count(*) FROM json_each(:cues) AS c WHERE instr(lower(substr(:text, 1, :head)), c.value) > 0)
         AS score"""

CONN = apsw.Connection(":memory:")
PIECES = st.sampled_from([*RESOLUTION_CUES[:12], *RESOLUTION_CUES[-10:], "Root Cause", "FIXED", "ÉTÉ", "İ",
                          "ǅ", "ß", "\u00e9", "x", " ", "\n", "😀", "Ａ", "修复"])


def sqlite_window(text: str, cues: tuple[str, ...], read: ReadWindow) -> tuple[int, str, int]:
    row = CONN.execute(OLD_SQL, {"text": text, "cues": json.dumps(list(cues)), "pre": read.sql_pre,
                                 "window": read.length, "head": CUE_HEAD}).fetchone()
    assert row is not None
    return int(row[0]), str(row[1]), int(row[2])


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(PIECES, st.text(max_size=30)), max_size=40), st.integers(40, 2000),
       st.integers(0, 5000))
def test_the_python_window_equals_the_sqlite_one(pieces: list[str], budget: int, pad: int) -> None:
    text = (("y" * pad if pad % 3 == 0 else "") + "".join(pieces)).replace("\x00", "")  # NUL: see below
    read = ReadWindow(budget)
    assert resolution_window(text, RESOLUTION_CUES, read) == sqlite_window(text, RESOLUTION_CUES, read)


def test_chosen_texts() -> None:
    read = ReadWindow(300)
    for text in ("", "nothing here", "The Root Cause was X", "x" * 5000 + " the fix was", "修复 " * 3,
                 "ÉTÉ granted İ granted", "a" * 3999 + "fixed", "a" * 4000 + "fixed"):
        assert resolution_window(text, RESOLUTION_CUES, read) == sqlite_window(text, RESOLUTION_CUES, read)
    start, body, score = resolution_window("x" * 5000 + " the fix was", RESOLUTION_CUES, read)
    assert start > 1 and body.endswith("the fix was") and score == 0  # past the head: not counted


def test_a_message_holding_a_nul_is_windowed_on_the_text_before_it() -> None:
    stored = "before the fix was made\x00 root cause hidden"
    row = CONN.execute("SELECT substr(:t, 1, 12000)", {"t": stored}).fetchone()
    assert row is not None and row[0] == "before the fix was made"  # what the template returns
    start, body, score = resolution_window(row[0], RESOLUTION_CUES, ReadWindow(300))
    assert (start, body) == (1, "before the fix was made") and score >= 1
