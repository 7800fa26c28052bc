"""The ``index_state.cursor`` shapes Obelisk writes, parsed (``index.cursors.parse_cursor``): every shape, and
anything malformed or odd is an unknown cursor, never an exception (the rules that judge a transcript by its
cursor, on real files: tests/integration/test_freshness_rules.py)."""

from __future__ import annotations

import base64
import json
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from obelisk_session_evidence.index.cursors import (
    CodexV4Cursor,
    KimiAggregateCursor,
    LegacyCursor,
    PiSnapshotCursor,
    SignatureCursor,
    TombstoneCursor,
    UnknownCursor,
    decode_codex_v4_source_size,
    parse_cursor,
)
from obelisk_session_evidence.index.freshness.scope import norm_path


def _b64(obj: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")


def test_parse_every_cursor_shape() -> None:
    assert parse_cursor("1794132423000:8") == LegacyCursor(1794132423000.0, 8)
    assert parse_cursor("1794132423000.123:8:4523:1794132423001.5:12345") == SignatureCursor(
        1794132423000.123, 8, 4523, 1794132423001.5, 12345
    )
    v4 = parse_cursor(f"1000:10:900:1001:77:{_b64({'sourceSize': 950, 'bloom': 'AAAA'})}")
    assert v4 == CodexV4Cursor(1000.0, 10, 900, 1001.0, 77, 950)
    assert parse_cursor("1000:42", source="kimi") == KimiAggregateCursor(1000.0, 42)
    assert parse_cursor("1000:0:pi-snapshot-v1:1001:500:88") == PiSnapshotCursor(1000.0, 1001.0, 500, 88)
    assert parse_cursor("0:0") == TombstoneCursor()
    assert parse_cursor(None, mtime=1000.0, lines_processed=3) == LegacyCursor(1000.0, 3, True)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "abc",
        "1:2:3",
        "1:2:3:4",
        "NaN:1",
        "Infinity:1",
        "-5:1",
        "1:-1",
        "1:1.5",
        "1_000:2",
        "1:2:3:4:5:6:7",
        "1:2:3:4:5:!!notbase64!!",
        f"1:2:3:4:5:{_b64([1, 2])}",
        f"1:2:3:4:5:{_b64({'sourceSize': -1})}",
        f"1:2:3:4:5:{_b64({'sourceSize': True})}",
        f"1:2:3:4:5:{_b64({'other': 1})}",
        "1:2:3:4:5:" + "A" * (1024 * 1024 + 8),
        "1:2:3:4:5:" + base64.urlsafe_b64encode(b"\xff\xfe").decode(),
    ],
)
def test_malformed_cursors_are_unknown(text: str) -> None:
    assert isinstance(parse_cursor(text), UnknownCursor)


def test_null_cursor_and_odd_types_never_raise() -> None:
    assert isinstance(parse_cursor(None), UnknownCursor)
    assert isinstance(parse_cursor(12345), UnknownCursor)
    assert isinstance(parse_cursor(None, mtime=float("nan"), lines_processed=1), UnknownCursor)
    assert isinstance(parse_cursor("1:2:3:4:5", source="kimi"), UnknownCursor)
    assert parse_cursor("1:2:3:4:1.2e+19").ino == 12_000_000_000_000_000_000  # type: ignore[union-attr]
    assert decode_codex_v4_source_size(_b64({"sourceSize": 10}), max_chars=4) is None


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.none(), st.text(max_size=200), st.from_regex(r"[0-9.:eE+\-a-z=_]{0,60}")))
def test_parse_cursor_never_raises(text: str | None) -> None:
    parse_cursor(text, mtime=None, lines_processed=None)
    parse_cursor(text, source="kimi")


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="/.ab\x00", max_size=14))
def test_norm_path_shortcut_for_normal_paths(text: str) -> None:
    """``norm_path`` returns an already normal absolute path as it is: the same as normalising it."""
    expected = None if "\x00" in text or not os.path.isabs(text) else os.path.normpath(text)
    assert norm_path(text) == expected
