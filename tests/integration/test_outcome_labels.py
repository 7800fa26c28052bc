"""Issue 11 item 1: every tool-output format is read right, and a failure is never labelled ``[ok]``.

One fixture session per agent holds one call per format, written the way the tools write them today. Each
call carries its own marker term (none a substring of another), so each request finds exactly that call. For
every format the test asserts both the label (the Python reader) and that a failure reaches ``prior_failure``
(the SQL prefilter): the two must agree. The reader alone, on the cells themselves:
tests/unit/test_evidence_outcomes.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from obelisk_session_evidence.fixtures.transcripts import ClaudeTranscript, CodexTranscript

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
