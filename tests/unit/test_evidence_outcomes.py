"""Issue 11 item 1 and issue 36: the reader of tool outputs (``retrieval.outcome``) on the cells themselves.

Each output format's label (``failed exit N``, ``failed``, ``ok``) and output, the exit code of a cut JSON
wrapper found in its tail, the tail decoded only for the Codex wrapper, escapes read as JSON reads them, and an
exit code of any length. The same formats end to end through the index: tests/integration/test_outcome_labels.py.
"""

from __future__ import annotations

import pytest
from obelisk_session_evidence.retrieval.evidence import tool_outcome_of
from obelisk_session_evidence.retrieval.outcome import read_outcome, tail_output


@pytest.mark.parametrize(("content", "is_error", "label", "output"), [
    ('{"output":"boom","metadata":{"exit_code":3,"duration_seconds":1.0}}', False, "failed exit 3", "boom"),
    ('{"output":"fine","metadata":{"exit_code":0}}', False, "ok", "fine"),
    ('{"output":"line1\\nline2 cut he', False, "ok", "line1\nline2 cut he"),
    ("Exit code: 1\nWall time: 2.0 seconds\nTotal output lines: 9\nOutput:\nx", False, "failed exit 1", "x"),
    ("Exit code: 0\nWall time: 2.0 seconds\nOutput:\nTraceback (most recent call last): logged", False, "ok",
     "Traceback (most recent call last): logged"),
    ("Chunk ID: ab12\nWall time: 1.0 seconds\nProcess exited with code 7\nOriginal token count: 3\nOutput:\ny",
     False, "failed exit 7", "y"),
    ("Exit code 2\nerror TS2739", True, "failed exit 2", "error TS2739"),
    ("permission denied", True, "failed", "permission denied"),
    ("old runner\nProcess exited with code 4", False, "failed exit 4", "old runner\nProcess exited with code 4"),
    ("Traceback (most recent call last):\nValueError: x", False, "failed",
     "Traceback (most recent call last):\nValueError: x"),
    ("all good", False, "ok", "all good"),
])
def test_read_outcome(content: str, is_error: bool, label: str, output: str) -> None:
    outcome = read_outcome(content, is_error=is_error)
    assert outcome.label == label
    assert outcome.output == output


def test_a_cut_json_head_finds_its_exit_code_in_the_tail() -> None:
    head = '{"output":"' + "x\\n" * 10
    whole = head + '\n…","metadata":{"exit_code":2,"duration_seconds":1.0}}'
    assert read_outcome(head, is_error=False, whole=whole).label == "failed exit 2"


# --- issue 36: the tail of a cut output, and JSON escapes ----------------------------------------------------

#: A plain-text tail that looks like JSON in places: a backslash sequence, a quote, the wrapper's closing.
PLAIN_TAIL = 'printf "a\\tb\\n" > C:\\new\\table.txt\n\\u0041 "x","metadata":{"exit_code":0}\ndone \\"q\\"'


@pytest.mark.parametrize("head", [
    "Exit code: 1\nWall time: 2.0 seconds\nTotal output lines: 900\nOutput:\nstarting",
    "Exit code 1\nE   ValueError: bad",
    "Chunk ID: ab12\nWall time: 1.0 seconds\nProcess exited with code 1\nOriginal token count: 3\nOutput:\nx",
    '{"output": "spaced JSON is not the cut Codex wrapper',
    "",
])
def test_a_plain_text_tail_is_shown_as_written(head: str) -> None:
    """Only the tail of a cut Codex JSON wrapper is decoded; any other tail is the tool's own text, shown as is."""
    assert tail_output(head, PLAIN_TAIL) == PLAIN_TAIL
    assert tool_outcome_of({"result_head": head, "result_tail": PLAIN_TAIL, "is_error": 1})[1] == PLAIN_TAIL


@pytest.mark.parametrize(("tail", "shown"), [
    ('caf\\u00e9 \\u00C9t\\u00e9 \\u4e2d\\u6587 \\u0041\\u005a\\u0030 \\u007e\\u00ff\\n","metadata":{"exit_code":1}}',
     "café Été 中文 AZ0 ~ÿ\n"),
    ('\\ud83d\\ude00 \\uD83D\\uDE80 lone \\ud800 and \\udc00 end","metadata":{"exit_code":1}}',
     "\U0001f600 \U0001f680 lone \ufffd and \ufffd end"),
    ('\\udbff\\udfff \\udfff \\ud7ff \\ue000 \\uffff","metadata":{"exit_code":1}}',
     "\U0010ffff \ufffd \ud7ff \ue000 \uffff"),
    ('q\\"x\\" a\\\\b \\\\u0041 \\/ \\t\\b\\f\\r\\n","metadata":{"exit_code":2,"duration_seconds":0.5}}',
     'q"x" a\\b \\u0041 / \t\b\f\r\n'),
    ('","metadata":{"exit_code":1}}', ""),
    ("cut before the wrapper closes \\u00e9", "cut before the wrapper closes é"),
])
def test_the_tail_of_a_cut_json_wrapper_is_decoded(tail: str, shown: str) -> None:
    """The head read cut a Codex JSON output: its tail is the rest of the JSON string, escapes decoded (``\\uXXXX``
    read in hexadecimal, a surrogate pair as its character, a lone surrogate as U+FFFD) and the closing
    ``","metadata":…`` removed."""
    head = '{"output":"' + "collecting\\n" * 400
    assert tail_output(head, tail) == shown
    _outcome, tail_read, head_cut = tool_outcome_of({"result_head": head, "result_tail": tail, "is_error": 0})
    assert tail_read == shown and head_cut


def test_a_cut_json_head_decodes_its_escapes() -> None:
    head = '{"output":"caf\\u00e9 \\u4e2d\\u6587 \\ud83d\\ude00 \\ud800\\nline 2 \\"quoted\\" \\\\n kept'
    assert read_outcome(head, is_error=False).output == 'café 中文 \U0001f600 \ufffd\nline 2 "quoted" \\n kept'


@pytest.mark.parametrize(("content", "label", "output"), [
    ('{"output":"x\\n","metadata":{"exit_code":5,"duration_seco', "failed exit 5",
     'x\n","metadata":{"exit_code":5,"duration_seco'),
    ('{"output":"fine","metadata":{"exit_code":true}}', "ok", "fine"),
    ('{"output":5,"metadata":{"exit_code":1}}', "failed exit 1", '{"output":5,"metadata":{"exit_code":1}}'),
    ('{"stdout":"x","exit_code":0}', "ok", '{"stdout":"x","exit_code":0}'),
    ('{not json, "exit_code": 4', "failed exit 4", '{not json, "exit_code": 4'),
    (' {"output":"spaced","metadata":{"exit_code":0}}', "ok", ' {"output":"spaced","metadata":{"exit_code":0}}'),
])
def test_only_the_codex_json_wrapper_is_unwrapped(content: str, label: str, output: str) -> None:
    """A cell that opens with ``{"output":`` and a string is the Codex wrapper (a cut one decoded up to the cut, its
    exit code read where the cut left it); anything else is the tool's own text; a boolean is no exit code."""
    outcome = read_outcome(content, is_error=False)
    assert (outcome.label, outcome.output) == (label, output)


@pytest.mark.parametrize(("code", "label"), [
    ("7", "failed exit 7"),
    ("1234567890123456789", "failed exit 1234567890123456789"),
    ("-123456789012345678", "failed exit -123456789012345678"),
    ("12345678901234567890", f"failed exit {2**63 - 1}"),
    ("9" * 5000, f"failed exit {2**63 - 1}"),
    ("-" + "9" * 5000, f"failed exit {-(2**63)}"),
    ("0" * 5000, "ok"),
    ("-" + "0" * 30, "ok"),
])
def test_an_exit_code_of_any_length_is_read(code: str, label: str) -> None:
    """A code too long for ``int`` (a hostile cell) still says whether the call failed, and with which sign."""
    for content in (f"Exit code: {code}\nWall time: 1.0 seconds\nOutput:\nx", f"Exit code {code}\nx",
                    f'{{"output":"x","metadata":{{"exit_code":{code}'):
        assert read_outcome(content, is_error=False).label == label, content[:40]
