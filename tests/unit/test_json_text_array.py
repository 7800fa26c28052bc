"""The JSON array of paths ``read_unit_rows`` binds (``index.scope_state.json_text_array``) against
``json.dumps``, ``json.loads`` and SQLite's own ``json_each``, in memory (the reads that bind it, on index
files: tests/integration/test_scope_state.py)."""

from __future__ import annotations

import apsw
from hypothesis import given, settings
from hypothesis import strategies as st
from obelisk_session_evidence.index.scope_state import json_text_array


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from('/a."\\\x00\x1f\x7f\u00e9\u2028\U0001f600\ud800'), max_size=6),
                max_size=5))
def test_json_text_array_holds_the_texts_as_json_each_reads_them(texts: list[str]) -> None:
    """The array ``read_unit_rows`` binds: what ``json.dumps`` encodes, to ``json.loads`` and to SQLite's
    ``json_each``, whether the texts are joined as they are or escaped (quote, backslash, control characters,
    non-ASCII, a lone surrogate)."""
    import json

    text = json_text_array(texts)
    assert json.loads(text) == texts
    if any("\ud800" in t for t in texts):
        assert text == json.dumps(texts)  # not UTF-8: escaped as before (SQLite then decodes it to no text)
        return
    conn = apsw.Connection(":memory:")
    try:
        got = [row[0] for row in conn.execute("SELECT value FROM json_each(?)", (text,))]
        want = [row[0] for row in conn.execute("SELECT value FROM json_each(?)", (json.dumps(texts),))]
    finally:
        conn.close()
    assert got == want
