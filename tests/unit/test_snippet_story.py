"""Issue 11 item 4: a snippet uses its budget to tell the story, with real content only.

The command (every line of a script or heredoc that fits, the one that runs kept first), the lines naming the
terms (inside a long line, the words around the term), the diagnostic block and the summary line; an edit's
changed lines while the budget lasts. Never above the budget, cuts at line or token boundaries, ``…`` for
every gap, and nothing shown that the transcript does not hold.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from obelisk_session_evidence.retrieval.edits import FileEdit
from obelisk_session_evidence.retrieval.evidence import command_text
from obelisk_session_evidence.retrieval.outcome import read_outcome
from obelisk_session_evidence.retrieval.snippets import ELLIPSIS, LINE_MAX, edit_story, tool_story

HEREDOC = ("cat > /tmp/seed.sql <<'SQL'\nINSERT INTO zones (code, name) VALUES\n  ('N', 'North quay'),\n"
           "  ('S', 'South quay');\nSQL\npsql -v ON_ERROR_STOP=1 -d harbor -f /tmp/seed.sql")
PSQL_ERROR = 'psql:/tmp/seed.sql:1: ERROR:  relation "zones" does not exist'


def _shown_lines(text: str) -> list[str]:
    return [ln.strip() for ln in text.split("\n")]


def test_a_heredoc_command_keeps_its_lines_and_the_command_that_runs() -> None:
    command = command_text("shell", '{"command": ["bash", "-lc", ' + _json(HEREDOC) + "]}")
    assert command.split("\n")[-1] == "psql -v ON_ERROR_STOP=1 -d harbor -f /tmp/seed.sql"
    outcome = read_outcome(f"Exit code 3\n{PSQL_ERROR}", is_error=True)
    text = tool_story(command, outcome, "", head_cut=False, terms=["zones"], budget=700).text
    lines = text.split("\n")
    assert lines[0] == "[failed exit 3] cat > /tmp/seed.sql <<'SQL'"
    # The script's lines are indented under the command; the output follows unindented.
    assert lines[1:6] == ["  INSERT INTO zones (code, name) VALUES", "  ('N', 'North quay'),",
                          "  ('S', 'South quay');", "  SQL", "  psql -v ON_ERROR_STOP=1 -d harbor -f /tmp/seed.sql"]
    assert lines[6] == PSQL_ERROR


def test_a_long_script_keeps_its_last_line_and_marks_the_gap() -> None:
    script = "\n".join([f"echo step {n} of the long setup script that prepares the database" for n in range(30)]
                       + ["psql -d harbor -f /tmp/seed.sql"])
    outcome = read_outcome(f"Exit code 3\n{PSQL_ERROR}", is_error=True)
    text = tool_story(command_text("Bash", '{"command": ' + _json(script) + "}"), outcome, "", head_cut=False,
                      terms=["zones"], budget=600).text
    assert len(text) <= 600
    lines = text.split("\n")
    assert "  psql -d harbor -f /tmp/seed.sql" in lines and "  " + ELLIPSIS in lines
    assert PSQL_ERROR in lines


def test_a_term_deep_inside_a_long_output_line_is_shown_in_context() -> None:
    line = "WARN " + " ".join(f"field{n}=value{n}" for n in range(80)) + " mkdeepterm exhausted the pool " + \
           " ".join(f"tail{n}" for n in range(40))
    outcome = read_outcome(f"Exit code 1\n{line}\nDone", is_error=True)
    text = tool_story("python -m app.sync", outcome, "", head_cut=False, terms=["mkdeepterm"], budget=700).text
    shown = next(ln for ln in text.split("\n") if "mkdeepterm" in ln)
    assert shown.startswith(ELLIPSIS + " ") and shown.endswith(" " + ELLIPSIS)
    assert len(shown) <= LINE_MAX
    # Every word shown is a whole word of the line (cut at token boundaries).
    assert all(word in line.split() for word in shown.split() if word != ELLIPSIS)


WRITTEN = [f"line_{n:02d} = compute({n})" for n in range(40)]


def test_an_edit_uses_the_budget_for_its_changed_lines() -> None:
    edit = FileEdit("write", "src/app/settings.py", added=list(WRITTEN))
    roomy = edit_story("Write applied", [edit], terms=[], budget=800).text
    assert "+ line_15 = compute(15)" in roomy  # more than the first few lines when the budget allows
    assert len(roomy) <= 800
    tight = edit_story("Write applied", [edit], terms=[], budget=200).text
    assert len(tight) <= 200 and tight.endswith(ELLIPSIS)
    assert _shown_lines(tight)[:3] == ["[Write applied]", "write src/app/settings.py", "+ line_00 = compute(0)"]


def test_an_edit_line_naming_a_term_is_kept_first_and_gaps_are_marked() -> None:
    edit = FileEdit("write", "src/app/settings.py", added=[*WRITTEN, "RETRY_BUDGET = 5  # mkbudget"])
    text = edit_story("Write applied", [edit], terms=["mkbudget"], budget=260).text
    assert "+ RETRY_BUDGET = 5  # mkbudget" in text
    lines = text.split("\n")
    assert lines[lines.index("+ RETRY_BUDGET = 5  # mkbudget") - 1] == ELLIPSIS  # the lines between are elided


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet="abc xyz=_()-", min_size=0, max_size=300), min_size=0, max_size=40),
       st.lists(st.text(alphabet="abc xyz=_()-", min_size=0, max_size=300), min_size=0, max_size=40),
       st.integers(60, 2000))
def test_an_edit_story_stays_within_its_budget_and_shows_only_recorded_lines(
        removed: list[str], added: list[str], budget: int) -> None:
    edit = FileEdit("update", "src/a.py", removed=removed, added=added)
    text = edit_story("apply_patch applied", [edit, edit], terms=["xyz"], budget=budget).text
    assert len(text) <= budget
    recorded = {f"- {ln.strip()}" for ln in removed} | {f"+ {ln.strip()}" for ln in added}
    for line in text.split("\n")[1:]:
        if line in (ELLIPSIS, "update src/a.py"):
            continue
        # A changed line is shown whole, or cut at a token boundary and marked.
        assert line in recorded or (line.endswith(" " + ELLIPSIS) and any(
            r.startswith(line[:-2]) for r in recorded)), line


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet="abc xyz=_()-:", min_size=0, max_size=120), min_size=1, max_size=12),
       st.lists(st.sampled_from(["ok", "Error: xyz broke", "3 passed, 1 failed", "abc " * 90, "",
                                 "E   ValueError: xyz", "x" * 400]), min_size=0, max_size=60),
       st.booleans(), st.integers(300, 2000))
def test_a_tool_story_stays_within_its_budget(command: list[str], output: list[str], failed: bool,
                                             budget: int) -> None:
    outcome = read_outcome(("Exit code 1\n" if failed else "") + "\n".join(output), is_error=failed)
    text = tool_story("\n".join(command), outcome, "", head_cut=False, terms=["xyz"], budget=budget).text
    assert len(text) <= budget, text


def _json(text: str) -> str:
    import json

    return json.dumps(text)
