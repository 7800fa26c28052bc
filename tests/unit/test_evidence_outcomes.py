"""Issue 11 item 1: every tool-output format is read right, and a failure is never labelled ``[ok]``.

One fixture session per agent holds one call per format, written the way the tools write them today. Each
call carries its own marker term (none a substring of another), so each request finds exactly that call. For
every format the test asserts both the label (the Python reader) and that a failure reaches ``prior_failure``
(the SQL prefilter): the two must agree.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from obelisk_session_evidence.fixtures.transcripts import ClaudeTranscript, CodexTranscript
from obelisk_session_evidence.retrieval.evidence import tool_outcome_of
from obelisk_session_evidence.retrieval.outcome import read_outcome, tail_output

from tests.evidence_home import EvidenceHome, build_home

DOCKER = ('#8 [builder 4/5] RUN poetry install --no-root\n#8 0.231 /bin/sh: 1: poetry: not found\n'
          '#8 ERROR: process "/bin/sh -c poetry install --no-root" did not complete successfully: exit code: 127\n'
          'ERROR: failed to solve: process "/bin/sh -c poetry install --no-root" did not complete '
          'successfully: exit code: 127')
MAKE = "cc -c main.c\nmain.c:3:1: error: unknown type name 'mkx'\nmake: *** [Makefile:12: build] Error 2"
NPM = ("> web@1.0.0 build\n> tsc -p .\n\nnpm ERR! code ELIFECYCLE\nnpm ERR! errno 2\n"
       "npm ERR! web@1.0.0 build: `tsc -p .`")

#: (marker, source, expected label, failed)
CASES = [
    ("mkclaudeexit", "claude", "failed exit 1", True),
    ("mkclaudedocker", "claude", "failed exit 1; inner step exit 127", True),
    ("mkclaudepass", "claude", "ok", False),
    ("mkjsonfail", "codex", "failed exit 1", True),
    ("mkjsonpass", "codex", "ok", False),
    ("mktextfail", "codex", "failed exit 2", True),
    ("mktextcut", "codex", "failed exit 1", True),
    ("mktextpass", "codex", "ok", False),
    ("mkexecfail", "codex", "failed exit 1", True),
    ("mkexecpass", "codex", "ok", False),
    ("mkshellcmd", "codex", "failed exit 128", True),
    ("mkdocker", "codex", "failed exit 1; inner step exit 127", True),
    ("mkmake", "codex", "failed exit 2; make Error 2", True),
    ("mknpm", "codex", "failed exit 1; npm ELIFECYCLE", True),
]


def _claude(t: ClaudeTranscript, repo: Path) -> None:
    t.user("Run the checks.")
    t.bash("pytest -q tests/test_mk.py", "Run pytest",
           "F\nE   ValueError: mkclaudeexit bad value\n1 failed in 0.12s", exit_code=1)
    t.bash("docker build -t web:mkclaudedocker .", "Build image", DOCKER, exit_code=1)
    t.bash("ruff check mkclaudepass", "Lint", "All checks passed!")
    t.say("Checked.")


def _codex(x: CodexTranscript, repo: Path) -> None:
    x.user("Run the checks.")
    x.shell("pytest -q -k mkjsonfail", "E   ValueError: bad\n1 failed", exit_code=1, form="json")
    x.shell(["pytest", "-q", "-k", "mkjsonpass"], "3 passed in 0.2s", form="json")
    x.shell(["npm", "run", "lint", "--", "mktextfail"], "src/a.ts\n  1:1  error  x is unused\n1 problem",
            exit_code=2, form="text")
    x.shell("npm test -- mktextcut", "…\n × retries\n   → upstream timed out\n…\n Test Files  1 failed",
            exit_code=1, form="text", total_lines=318)
    x.shell("npm run lint -- mktextpass", "lint clean: 0 problems", form="text")
    x.exec_command("npm publish mkexecfail", "npm ERR! 403 Forbidden - token lacks scope", exit_code=1)
    x.exec_command("npm publish mkexecpass", "+ @web/ui@1.0.0")
    x.shell_command("git push origin mkshellcmd", "fatal: could not read Username", exit_code=128)
    x.shell("docker build -t web:mkdocker .", DOCKER, exit_code=1, form="text")
    x.shell("make build mkmake", MAKE, exit_code=2, form="text")
    x.exec_command("npm run build mknpm", NPM, exit_code=1)
    x.say("Checked.")


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> EvidenceHome:
    return build_home(tmp_path_factory.mktemp("outcomes"), claude=[_claude], codex=[_codex])


@pytest.mark.parametrize(("marker", "source", "label", "failed"), CASES, ids=[c[0] for c in CASES])
def test_every_output_format_is_labelled_right_and_failures_reach_prior_failure(
        home: EvidenceHome, marker: str, source: str, label: str, failed: bool) -> None:
    items = home.items(source, [marker], ["prior_failure", "tool_outcome"])
    assert items, marker
    assert all(i["snippet"].startswith(f"[{label}] ") for i in items), items
    types = {i["evidence_type"] for i in items}
    if failed:
        assert "prior_failure" in types, items  # the SQL prefilter admitted it and the reader agreed
        assert not any(i["snippet"].startswith("[ok]") for i in items)
    else:
        assert types == {"tool_outcome"}, items  # a success is never a prior failure


def test_a_failed_step_shows_its_diagnostic_and_summary(home: EvidenceHome) -> None:
    [item] = [i for i in home.items("codex", ["mkdocker"], ["prior_failure"])]
    assert "did not complete successfully: exit code: 127" in item["snippet"]
    assert "poetry: not found" in item["snippet"]  # the cause line before the failed step is kept


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
