"""tools/mutate itself, on a tiny throwaway project: a kill counts only when a test that passed on the unmutated
copy fails; the copy holds every file the tests read (the README, uncommitted edits); a baseline failure never
kills; a hang is reported apart; only the test files that import the module run; the checkout is untouched."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO

MODULE = '''"""A module to mutate."""

LIMIT = 10


def clamp(value: int) -> int:
    if value > LIMIT:
        return LIMIT
    return value


def count_up(n: int) -> int:
    i = 0
    while i < n:
        i += 1
    return i
'''

TESTS = '''from pathlib import Path

from tiny.limits import clamp, count_up


def test_clamp():
    assert clamp(50) == 10
    assert clamp(3) == 3


def test_count_up():
    assert count_up(3) == 3


def test_the_readme_states_the_limit():
    assert "The limit is 10." in (Path(__file__).parents[1] / "README.md").read_text()


def test_always_fails():
    assert False
'''

PYPROJECT = '''[project]
name = "tiny"
version = "0"

[tool.setuptools]
package-dir = { "tiny" = "src" }
'''


def _git(project: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args], cwd=project,
                          env=env, capture_output=True, text=True, check=True).stdout


def _state(project: Path) -> dict[str, str]:
    """Every file under the project except git's own, with a digest of its bytes."""
    return {p.relative_to(project).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(project.rglob("*")) if p.is_file() and ".git" not in p.relative_to(project).parts}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    if shutil.which("git") is None:
        pytest.fail("git is needed: tools/mutate copies what `git ls-files` lists")
    root = tmp_path / "tiny"
    for rel, text in {"pyproject.toml": PYPROJECT, "README.md": "The limit is 9.\n", "src/__init__.py": "",
                      "src/limits.py": MODULE, "tests/test_limits.py": TESTS,
                      "tests/test_other.py": "def test_unrelated():\n    assert True\n"}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    (root / "tools").mkdir()
    shutil.copy2(REPO / "tools" / "mutate", root / "tools" / "mutate")
    _git(root, "init", "-q")
    _git(root, "add", ".")
    _git(root, "commit", "-qm", "tiny")
    # An uncommitted edit the README test needs: the copies are made from the working tree, not from HEAD.
    (root / "README.md").write_text("The limit is 10.\n", encoding="utf-8")
    return root


def _mutate(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(project / "tools" / "mutate"), *args], cwd=project,
                          capture_output=True, text=True, timeout=600, check=False)


def _by_mutation(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {m["name"].split(" ", 1)[1]: m for m in doc["mutants"]}


def test_kills_are_honest_and_the_checkout_is_untouched(project: Path) -> None:
    before, status = _state(project), _git(project, "status", "--porcelain")
    proc = _mutate(project, "--mode", "generated", "src/limits.py", "--json", "--timeout", "20")
    assert proc.stderr == ""  # progress only on a terminal
    doc = json.loads(proc.stdout)
    assert proc.returncode == 1  # the baseline failure makes the run unclean
    assert doc["baseline"]["failed"] == ["tests/test_limits.py::test_always_fails"]
    assert doc["baseline"]["passed"] == 3  # the README test passes: the copy holds the edited README
    assert doc["baseline"]["test_files"] == ["tests/test_limits.py"]  # test_other.py does not import the module

    mutants = _by_mutation(doc)
    # Equivalent or unguarded: no test that passed at baseline fails (test_always_fails fails, and never counts).
    assert mutants["compare: value > LIMIT -> value >= LIMIT"]["status"] == "survived"
    assert mutants["constant: 0 -> 1"]["status"] == "survived"
    # The loop no longer advances: reported apart from the kills.
    assert mutants["statement: i += 1 -> pass"]["status"] == "timed out"
    assert mutants["constant: 10 -> 11"]["killed_by"] == "tests/test_limits.py::test_clamp"
    assert mutants["compare: i < n -> i <= n"]["killed_by"] == "tests/test_limits.py::test_count_up"
    others = {name: m["status"] for name, m in mutants.items() if m["status"] != "killed"}
    assert others == {"compare: value > LIMIT -> value >= LIMIT": "survived", "constant: 0 -> 1": "survived",
                      "statement: i += 1 -> pass": "timed out"}
    assert doc["modules"] == [{"module": "src/limits.py", "run": len(mutants), "killed": len(mutants) - 3,
                               "survived": 2, "timed_out": 1, "baseline_failures": 1,
                               "test_files": ["tests/test_limits.py"]}]
    assert {(m["file"], m["line"]) for m in doc["survivors"]} == {("src/limits.py", 7), ("src/limits.py", 13)}

    assert _state(project) == before  # nothing written (no __pycache__, no .pytest_cache, no mutant left)
    assert _git(project, "status", "--porcelain") == status


def test_the_operators_and_the_test_selection_are_listed(project: Path) -> None:
    proc = _mutate(project, "--mode", "generated", "src/limits.py", "--list")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    operators = {line.split(" ", 2)[1].rstrip(":") for line in lines[:-1]}
    assert operators == {"compare", "condition", "constant", "return", "statement"}  # no and/or/not to swap
    assert all(line.endswith("[tests/test_limits.py]") for line in lines[:-1])
    assert "src/limits.py:7:8 condition: value > LIMIT -> not value > LIMIT" in "\n".join(lines)
    assert _mutate(project, "--mode", "generated", "src/limits.py", "--tests", "tests/test_other.py",
                   "--list").stdout.splitlines()[0].endswith("[tests/test_other.py]")
