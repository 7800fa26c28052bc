"""Issue 12 item 4: redaction runs before any window is cut.

Every read the SQL cuts (a ``substr`` window around a term, the head and the tail of a long output) carries a
margin beyond what may be shown; redaction runs over margin and window together, and only then is the text
cut. The property: slide the read over every offset of a text that holds secrets, and no fragment of any
secret value ever appears in what is shown, whatever the filler around the secrets.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from obelisk_session_evidence.retrieval.outcome import read_outcome
from obelisk_session_evidence.retrieval.snippets import MARGIN, ReadWindow, tool_story, window_story

#: Secret lines of classes with a keyed rule (the value alone is not recognisable) and without one.
SECRETS = {
    '{"password": "Zq9xLmQ7Wv3kTr8"}': "Zq9xLmQ7Wv3kTr8",
    "AWS_SECRET_ACCESS_KEY=JFCU4q7kMuJUhdBmU0Wmsd0axyHhfR8XYIWEPanq": "JFCU4q7kMuJUhdBmU0Wmsd0axyHhfR8XYIWEPanq",
    "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abcDEF123456": "eyJhbGciOiJIUzI1NiJ9",
    "push with ghp_A1b2C3d4E5A1b2C3d4E5A1b2C3d4E5F6g7H8 failed": "ghp_A1b2C3d4E5A1b2C3d4E5A1b2C3d4E5F6g7H8",
}
#: Filler that shares no four-character run with any secret value.
WORDS = ("alpha", "beta", "gamma", "delta", "cache", "build", "queue", "retry", "error", "timeout")
FRAGMENT = 5
BUDGET = 160


def _fragments(value: str) -> set[str]:
    return {value[i:i + FRAGMENT] for i in range(len(value) - FRAGMENT + 1)}


LEAKS = set().union(*(_fragments(v) for v in SECRETS.values()))


def _text(draw_lines: list[tuple[int, str]]) -> str:
    return "\n".join(line if kind < 0 else list(SECRETS)[kind] for kind, line in draw_lines)


lines = st.lists(st.tuples(st.integers(-3, len(SECRETS) - 1),
                           st.lists(st.sampled_from(WORDS), min_size=1, max_size=8).map(" ".join)),
                 min_size=4, max_size=12)


def _assert_clean(shown: str, where: str) -> None:
    leaked = [f for f in LEAKS if f in shown]
    assert not leaked, (where, leaked, shown)


@settings(max_examples=6, deadline=None)
@given(lines, st.sampled_from(WORDS))
def test_a_window_read_at_any_offset_shows_no_secret_fragment(drawn: list[tuple[int, str]], term: str) -> None:
    text = _text(drawn)
    read = ReadWindow(BUDGET)
    for offset in range(len(text)):
        raw = text[offset:offset + read.length]  # what substr(text, offset + 1, :window) reads
        shown = window_story("", raw, terms=[term], cut_start=offset > 0, cut_end=offset + read.length < len(text),
                             pre=read.pre, budget=read.compose)
        _assert_clean(shown.text, f"window at {offset}")


@settings(max_examples=4, deadline=None)
@given(lines)
def test_a_head_or_tail_read_cut_at_any_offset_shows_no_secret_fragment(drawn: list[tuple[int, str]]) -> None:
    text = "\n".join([*_text(drawn).split("\n"), *(["retry build"] * 3)])
    for cut in range(1, len(text)):
        head, tail = text[:cut], text[cut:]  # a head read cut at `cut`, and a tail read starting there
        outcome = read_outcome(head, is_error=True)
        shown = tool_story("make build", outcome, tail, head_cut=True, terms=["retry"], budget=4 * BUDGET)
        _assert_clean(shown.text, f"head/tail cut at {cut}")


def test_the_margin_is_what_makes_it_hold() -> None:
    """A window that starts between a key and its value: with the margin the key is read and redaction fires."""
    text = "alpha beta " * 40 + '{"password": "Zq9xLmQ7Wv3kTr8"} gamma delta ' * 3
    start = text.index("Zq9x")
    raw = text[start - MARGIN:start - MARGIN + ReadWindow(BUDGET).length]
    shown = window_story("", raw, terms=["gamma"], cut_start=True, cut_end=True, pre=20, budget=BUDGET)
    assert "Zq9x" not in shown.text and shown.redactions["password_assignment"] >= 1
