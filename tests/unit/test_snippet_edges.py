"""Issue 36: the edges of ``retrieval.snippets`` that a generated mutation run found untested: a cut read is
trimmed back to a boundary, a window opens around its term, a gap of one line is marked, and a fully shown
edit ends without a gap mark."""

from __future__ import annotations

from obelisk_session_evidence.retrieval.edits import FileEdit
from obelisk_session_evidence.retrieval.outcome import read_outcome
from obelisk_session_evidence.retrieval.snippets import (
    ELLIPSIS,
    MARGIN,
    drop_cut_edge,
    edit_story,
    tool_story,
    window_story,
)


def test_a_read_cut_at_its_end_goes_back_to_a_boundary() -> None:
    """The margin the SQL read beyond the window is dropped, then the partial token before it (a secret split
    by the cut must not show its visible part); with no boundary left nothing is kept."""
    assert drop_cut_edge("one two three " + "y" * (MARGIN + 44), at_start=False, at_end=True) == "one two three"
    assert drop_cut_edge("y" * (MARGIN + 44), at_start=False, at_end=True) == ""


def test_a_window_opens_around_its_term_far_into_the_text() -> None:
    raw = "word " * 200 + "needle here" + " tail" * 10
    text = window_story("", raw, terms=["needle"], cut_start=False, cut_end=False, pre=20, budget=200).text
    assert text.startswith(ELLIPSIS) and "needle here" in text, text


def test_one_skipped_output_line_is_marked_as_a_gap() -> None:
    """Two shown lines with one line between them that is not shown: a ``…`` line stands between them, so
    they never read as adjacent."""
    out = "\n".join(["collecting", *(f"filler line {i} ok" for i in range(30)), "mkneedle one",
                     "plain middle line", "mkneedle two", *(f"more {i}" for i in range(30))])
    text = tool_story("make x", read_outcome(out, is_error=False), "", head_cut=False, terms=["mkneedle"],
                      budget=50).text
    assert text.split("\n") == ["[ok] make x", ELLIPSIS, "mkneedle one", ELLIPSIS, "mkneedle two", ELLIPSIS]


def test_a_fully_shown_edit_ends_without_a_gap_mark() -> None:
    text = edit_story("Write applied", [FileEdit("write", "src/a.py", added=["x = 1", "y = 2"])], terms=[],
                      budget=800).text
    assert text.split("\n") == ["[Write applied]", "write src/a.py", "+ x = 1", "+ y = 2"]
