"""Issue 11 items 2 and 3: every edit form is file history, and file history says what changed.

Codex sends ``apply_patch`` as its own function call, as a freeform custom tool call, through the shell as an
argv, and through ``bash -lc`` with a heredoc; patches Add, Update (with a ``@@`` symbol), Delete and Move.
Claude Code edits with Edit, MultiEdit (file_path NULL in the index), Write and NotebookEdit (notebook_path,
file_path NULL). Each edit names a file of its own, so each request finds exactly that edit.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from obelisk_session_evidence.fixtures.patches import add, delete, update
from obelisk_session_evidence.fixtures.transcripts import ClaudeTranscript, CodexTranscript
from obelisk_session_evidence.retrieval.edits import read_edits

from tests.evidence_home import EvidenceHome, build_home


def _claude(t: ClaudeTranscript, repo: Path) -> None:
    t.user("Fix the rate limiter.")
    t.edit(repo / "src/limiter.py", "now = time.time()", "now = time.monotonic()")
    t.multi_edit(repo / "src/bucket.py", [("int(elapsed)", "round(elapsed)"), ("import time", "import math")])
    t.write(repo / "tests/conftest_clock.py", "import pytest\n\n@pytest.fixture\ndef frozen_clock():\n    return 1")
    t.notebook_edit(repo / "notebooks/budget.ipynb", "cell-3", "plot_budget(window='sliding')")
    t.edit(repo / "src/twice.py", "retries = 1", "retries = 3")
    t.edit(repo / "src/twice.py", "timeout = 5", "timeout = 30")
    t.say("Done.")


def _codex(x: CodexTranscript, repo: Path) -> None:
    x.user("Apply the changes.")
    x.patch([update("src/cli_fn.py", ["timeout=30"], ["timeout=30, steal_stale_after=600"],
                    context="def migrate(args):")], via="function")
    x.patch([add("src/lib/retry_free.ts", "export const attempts = 3; // retry-helper-v2"),
             delete("src/lib/legacy_free.ts")], via="freeform", form="text")
    x.patch([update("Dockerfile.argv", ["RUN poetry install"], ["RUN pip install poetry && poetry install"],
                    move_to="docker/release.Dockerfile")], via="argv", form="text")
    x.patch([update("CHANGELOG_heredoc.md", [], ["## 0.9.2", "- published with write:packages"])],
            via="heredoc", form="text")
    x.say("Applied.")


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> EvidenceHome:
    return build_home(tmp_path_factory.mktemp("edits"), claude=[_claude], codex=[_codex])


#: (source, term, text the file-history item must show)
CASES = [
    ("claude", "limiter.py", ["edit src/limiter.py", "now = time.time() → now = time.monotonic()"]),
    ("claude", "bucket.py", ["edit src/bucket.py", "- int(elapsed)", "+ round(elapsed)", "+ import math"]),
    ("claude", "conftest_clock.py", ["write tests/conftest_clock.py", "+ import pytest", "+ def frozen_clock():"]),
    ("claude", "budget.ipynb", ["notebook notebooks/budget.ipynb", "+ plot_budget(window='sliding')"]),
    ("codex", "cli_fn.py", ["update src/cli_fn.py @@ def migrate(args):", "+ timeout=30, steal_stale_after=600"]),
    ("codex", "retry_free.ts", ["add src/lib/retry_free.ts", "retry-helper-v2", "delete src/lib/legacy_free.ts"]),
    ("codex", "legacy_free.ts", ["delete src/lib/legacy_free.ts"]),
    ("codex", "Dockerfile.argv", ["update Dockerfile.argv\n*** Move to: docker/release.Dockerfile",
                                  "+ RUN pip install poetry && poetry install"]),
    ("codex", "release.Dockerfile", ["update Dockerfile.argv\n*** Move to: docker/release.Dockerfile"]),
    ("codex", "CHANGELOG_heredoc.md", ["update CHANGELOG_heredoc.md", "+ - published with write:packages"]),
]


@pytest.mark.parametrize(("source", "term", "shown"), CASES, ids=[c[1] for c in CASES])
def test_every_edit_form_is_file_history_with_its_substance(home: EvidenceHome, source: str, term: str,
                                                            shown: list[str]) -> None:
    items = home.items(source, [term], ["file_history"])
    assert items, term
    assert any(all(s in i["snippet"] for s in shown) for i in items), items
    assert all(i["session_ref"] == home.sessions[source][0] for i in items)


def test_a_path_term_finds_the_relative_and_the_absolute_spelling(home: EvidenceHome) -> None:
    absolute = str(home.repo / "src/cli_fn.py")  # the patch names it repository-relative
    assert any("update src/cli_fn.py" in i["snippet"] for i in home.items("codex", [absolute], ["file_history"]))
    relative = "src/limiter.py"  # Claude's call names it absolute
    assert any("edit src/limiter.py" in i["snippet"] for i in home.items("claude", [relative], ["file_history"]))


def test_two_different_edits_of_one_file_never_look_identical(home: EvidenceHome) -> None:
    items = home.items("claude", ["twice.py"], ["file_history"])
    assert len(items) == 2, items
    assert items[0]["snippet"] != items[1]["snippet"]
    assert not any(i["snippet"].startswith("[repeated") for i in items)


def test_a_cut_input_still_names_its_files() -> None:
    cut = '{"command":["apply_patch","*** Begin Patch\\n*** Update File: src/a.py\\n@@ def f():\\n-x = 1\\n+x = '
    [edit] = read_edits("shell", cut)
    assert (edit.op, edit.path, edit.symbols, edit.removed) == ("update", "src/a.py", ["def f():"], ["x = 1"])
    assert [e.path for e in read_edits("MultiEdit", '{"file_path":"/r/b.py","edits":[{"old_str')] == ["/r/b.py"]
