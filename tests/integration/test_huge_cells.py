"""Issue 30 item 2: one huge tool cell neither breaks the deadline nor hides a term the search reaches.

Obelisk cuts each string leaf of ``input_json`` to 10,000 characters, not the cell: a Claude ``MultiEdit`` of
many edits is one cell of megabytes. The tool templates search a cell's first ``SEARCH_CHARS`` characters only,
so a request at the ceilings (16 terms of 200 characters, every evidence type) over such cells costs bounded
work per term variant. The tests assert the typed outcome (``ok`` under the default 2,000 ms deadline, where
searching whole cells took about 10 s; ``ok`` or ``timeout`` under a short one), never a wall-clock margin;
``tools/bench_deadline.py`` measures the overrun and the memory.
"""

from __future__ import annotations

import itertools
import json
import random
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import apsw
import pytest
from obelisk_session_evidence.fixtures.encoding import cut_leaves, dumps
from obelisk_session_evidence.fixtures.transcripts import ClaudeTranscript
from obelisk_session_evidence.retrieval.engine import READ_HEAD, READ_TAIL, SEARCH_CHARS
from obelisk_session_evidence.service import answer

from tests.conftest import make_request, write_config
from tests.evidence_home import AGENTS, ALL_TYPES, EvidenceHome, build_home

CEILINGS = {"max_sessions": 50, "max_items": 50, "max_snippet_chars": 2000, "max_total_chars": 32000}
#: Characters of one edit string: Obelisk keeps 10,000 of it and appends ``...[truncated]``.
LEAF = 10_500
EDITS = 1000  # about 20 MB of input_json
NEAR = "mkwithinsearch"  # in the cell's first SEARCH_CHARS characters, past what the snippet shows
FAR = "mkpastsearch"  # megabytes into the cell


def _source(rng: random.Random, chars: int) -> str:
    words = ("value", "result", "handler", "config", "items", "parse", "index", "cache")
    lines = []
    while sum(map(len, lines)) < chars:
        lines.append(f"    {rng.choice(words)}_{rng.randrange(1000)} = {rng.choice(words)}({rng.choice(words)})\n")
    return "".join(lines)[:chars]


def ceiling_terms() -> list[str]:
    """16 terms of 200 characters that no cell holds (every cell is searched to its end), written as phrases with
    hyphens, underscores and a quote: the most match variants a term has."""
    rng = random.Random(30)
    terms = []
    for n in range(16):
        words = [f"qz{n}{''.join(rng.choice('abcdefghijklmnop') for _ in range(6))}" for _ in range(40)]
        terms.append((f'"{n}" ' + " ".join(f"{w}-x_{w}" if i % 3 == 0 else w for i, w in enumerate(words)))[:200])
    return terms


def _multi_edit(t: ClaudeTranscript, repo: Path) -> None:
    """A Claude session rewriting a module in one MultiEdit of 1,000 edits (the call as Claude Code writes it:
    ``file_path`` and ``edits``), with NEAR in the third edit and FAR in the 900th."""
    rng = random.Random("huge-cells")
    old, new = _source(rng, LEAF), _source(rng, LEAF)
    edits = [{"old_string": old, "new_string": new} for _ in range(EDITS)]
    edits[2] = {"old_string": old, "new_string": f"    # {NEAR}: keep the loader name\n" + new}
    edits[900] = {"old_string": old, "new_string": f"    # {FAR}: keep the loader name\n" + new}
    t.user("Rename the settings loader everywhere in src/app/settings.py.")
    t.say("I'll rewrite the loader in one MultiEdit.")
    call = t.call("MultiEdit", {"file_path": f"{repo}/src/app/settings.py", "edits": edits})
    t.result(call, f"Applied {EDITS} edits to {repo}/src/app/settings.py")
    t.bash("pytest -q tests/test_settings.py", "Run pytest",
           "E   ModuleNotFoundError: No module named 'yaml'\n1 failed in 0.3s", exit_code=1)
    t.say("The loader is renamed; the settings test fails on a missing yaml package.")


@pytest.fixture(scope="module")
def huge(tmp_path_factory: pytest.TempPathFactory) -> EvidenceHome:
    return build_home(tmp_path_factory.mktemp("huge-cells"), claude=[_multi_edit])


def _ask(home: EvidenceHome, terms: list[str], *, config: Path | None = None,
         types: list[str] = ALL_TYPES) -> dict[str, Any]:
    request = make_request(
        scope={"agent_id": AGENTS["claude"], "project_id": "demo", "repository_id": "web",
               "allow_cross_agent": False, "allow_cross_project": False},
        evidence_types=types, query_terms=terms, limits=CEILINGS)
    envelope: dict[str, Any] = answer(json.dumps(request).encode(), db_path=home.db,
                                      config_path=config or home.config).envelope
    return envelope


def _with_deadline(home: EvidenceHome, tmp: Path, deadline_ms: int) -> Path:
    document = json.loads(home.config.read_text(encoding="utf-8"))
    return write_config(tmp / "config.json", document["scopes"], transcript_homes=document["transcript_homes"],
                        deadline_ms=deadline_ms)


def _cell(db: Path) -> str:
    con = sqlite3.connect(db)
    try:
        return str(con.execute("SELECT input_json FROM tool_calls WHERE name = 'MultiEdit'").fetchone()[0])
    finally:
        con.close()


def test_the_cell_is_as_obelisk_stores_it(huge: EvidenceHome) -> None:
    """The premise: one cell of about 20 MB (each leaf cut, the cell whole), NEAR inside the searched prefix but
    past the head the snippet shows, FAR megabytes past it."""
    cell = _cell(huge.db)
    assert len(cell) > 19_000_000 and cell.count("...[truncated]") == 2 * EDITS
    assert cell == dumps(cut_leaves(json.loads(cell)))
    assert READ_HEAD < cell.index(NEAR) < SEARCH_CHARS - 1000
    assert cell.index(FAR) > 100 * SEARCH_CHARS


def test_terms_at_the_ceilings_are_answered_within_the_default_deadline(huge: EvidenceHome) -> None:
    """16 terms of 200 characters over a 20 MB cell: searching it whole took about 10 s (a ``timeout`` at the
    default 2,000 ms); within the bounded prefix the answer is ``ok``."""
    envelope = _ask(huge, ceiling_terms())
    assert envelope["outcome"] == "ok", envelope["error"]
    assert envelope["result"]["items"] == []


@pytest.mark.parametrize("deadline_ms", [50, 200])
def test_a_short_deadline_gives_a_typed_answer(huge: EvidenceHome, tmp_path: Path, deadline_ms: int) -> None:
    envelope = _ask(huge, ceiling_terms(), config=_with_deadline(huge, tmp_path, deadline_ms))
    if envelope["outcome"] == "failed":
        assert envelope["error"]["code"] == "timeout", envelope["error"]
        assert envelope["result"]["items"] == [] and envelope["receipt"]["result_count"] == 0
    else:
        assert envelope["outcome"] == "ok", envelope["error"]


def test_a_term_within_the_searched_prefix_is_found(huge: EvidenceHome) -> None:
    """NEAR lies past the 4,000 characters the snippet shows but within SEARCH_CHARS: the MultiEdit is found as
    file history and, asked alone, as a tool outcome (together, the call is shown once, as file history), next
    to the ceiling terms."""
    call_id = _call_id(huge.db)
    for kind in ("file_history", "tool_outcome"):
        envelope = _ask(huge, [NEAR, *ceiling_terms()[:15]], types=[kind])
        assert envelope["outcome"] == "ok", envelope["error"]
        found = [(i["evidence_type"], i.get("message_ref")) for i in envelope["result"]["items"]]
        assert found == [(kind, call_id)], found


def test_a_term_past_the_searched_prefix_is_not_searched(huge: EvidenceHome) -> None:
    """The bound is real: FAR, megabytes into the cell, is not searched (searching there is what broke the
    deadline); ``engine.SEARCH_CHARS`` says so."""
    envelope = _ask(huge, [FAR], types=["file_history", "tool_outcome"])
    assert envelope["outcome"] == "ok", envelope["error"]
    assert envelope["result"]["items"] == []


def _call_id(db: Path) -> str:
    con = sqlite3.connect(db)
    try:
        return str(con.execute("SELECT id FROM tool_calls WHERE name = 'MultiEdit'").fetchone()[0])
    finally:
        con.close()


def test_a_huge_output_is_searched_within_bounds_and_its_tail_still_decides(huge: EvidenceHome,
                                                                            tmp_path: Path) -> None:
    """A tool output of 20 MB (another writer's database: Obelisk keeps 10,000 characters) whose failure shows
    only in its last lines: the prefilter reads the output's head and tail, so the failure is found, within the
    default deadline, next to the ceiling terms."""
    db = tmp_path / "huge-output.sqlite"
    shutil.copyfile(huge.db, db)
    content = ("collecting ...\n" + "tests/test_settings.py::test_case PASSED\n" * 500_000
               + "E   ModuleNotFoundError: No module named 'yaml'\nProcess exited with code 1")
    con = sqlite3.connect(db)
    with con:
        con.execute("UPDATE tool_results SET content = ?, is_error = 0 WHERE tool_use_id = "
                    "(SELECT id FROM tool_calls WHERE name = 'Bash')", (content,))
        bash = str(con.execute("SELECT id FROM tool_calls WHERE name = 'Bash'").fetchone()[0])
    con.close()
    home = EvidenceHome(db=db, home=huge.home, repo=huge.repo, config=huge.config, sessions=huge.sessions)
    envelope = _ask(home, ["ModuleNotFoundError", *ceiling_terms()[:15]], types=["prior_failure", "tool_outcome"])
    assert envelope["outcome"] == "ok", envelope["error"]
    failures = [i for i in envelope["result"]["items"] if i["evidence_type"] == "prior_failure"]
    assert [i.get("message_ref") for i in failures] == [bash], envelope["result"]["items"]
    assert "failed exit 1" in failures[0]["snippet"]


def test_a_huge_message_text_is_searched_within_bounds(huge: EvidenceHome, tmp_path: Path) -> None:
    """A 20 MB assistant message (another writer's database: Obelisk keeps 10,000 characters of a text) that FTS
    matches: the message templates search its first SEARCH_CHARS characters, so a request at the ceilings is
    answered within the default deadline (searched whole, it took about 5.7 s: a ``timeout``), and the failure
    it tells at its start is found."""
    db = tmp_path / "huge-text.sqlite"
    shutil.copyfile(huge.db, db)
    text = ("pytest failed: ModuleNotFoundError for yaml, the settings loader cannot start. "
            + "The loader value changed again while the settings were reloaded. " * 300_000)
    con = sqlite3.connect(db)
    with con:
        uuid = con.execute("SELECT uuid FROM messages WHERE role = 'assistant' AND text LIKE 'The loader is%'"
                           ).fetchone()[0]
        con.execute("UPDATE messages SET text = ? WHERE uuid = ?", (text, uuid))
    con.close()
    home = EvidenceHome(db=db, home=huge.home, repo=huge.repo, config=huge.config, sessions=huge.sessions)
    envelope = _ask(home, ["ModuleNotFoundError", *ceiling_terms()[:15]], types=["prior_failure", "decision"])
    assert envelope["outcome"] == "ok", envelope["error"]
    assert uuid in {i.get("message_ref") for i in envelope["result"]["items"]}, envelope["result"]["items"]
    short = _ask(home, ["ModuleNotFoundError", *ceiling_terms()[:15]], config=_with_deadline(huge, tmp_path, 200),
                 types=["prior_failure", "decision"])
    assert short["outcome"] == "ok" or short["error"]["code"] == "timeout", short["error"]


# --- issue 30 item 9, the rest: no whole-cell walk, a deadline check between any two huge cells ----------------

#: The tool cells: Obelisk keeps 10,000 characters of each string leaf of an input (a cell may hold megabytes)
#: and of an output (another writer's database may hold anything).
TOOL_CELLS = frozenset({"content", "input_json"})


def _walks(sql: str) -> list[str]:
    """Where a statement asks SQLite to walk a whole tool cell: ``substr(cell, -n)`` (a negative start counts the
    cell's characters from its beginning) or ``length(cell)`` (counts them all). The byte forms over
    ``CAST(cell AS BLOB)`` and ``length(substr(cell, n + 1, 1))`` read what they return only."""
    import sqlglot
    from sqlglot import exp

    def cell(node: exp.Expression | None) -> bool:
        return isinstance(node, exp.Column) and node.name.lower() in TOOL_CELLS

    def walk(node: exp.Expression) -> bool:
        if isinstance(node, exp.Substring):
            return isinstance(node.args.get("start"), exp.Neg) and cell(node.this)
        return isinstance(node, exp.Length) and cell(node.this)

    return [node.sql("sqlite") for node in sqlglot.parse_one(sql, read="sqlite").walk() if walk(node)]


def test_no_template_walks_a_whole_tool_cell() -> None:
    """A huge tool cell costs a row one load (SQLite reads a value whole), never a walk over its characters: the
    tail of an output is read from its last bytes, and "longer than n" asks for character n + 1. A whole-cell walk
    took about 80 ms per 130 MB, several per row, between two deadline checks (tools/bench_deadline.py)."""
    from obelisk_session_evidence.templates.catalog import TEMPLATE_DIR

    walks = {path.name: _walks(path.read_text(encoding="utf-8")) for path in sorted(TEMPLATE_DIR.glob("*.sql"))}
    assert {name: found for name, found in walks.items() if found} == {}
    assert _walks("SELECT substr(tr.content, -:tail), length(tc.input_json) FROM tool_results AS tr, "
                  "tool_calls AS tc") == ["SUBSTRING(tr.content, -:tail)", "LENGTH(tc.input_json)"]


def _tails_home(tmp: Path, tails: list[str]) -> EvidenceHome:
    """A Claude session of ``pytest`` runs, one per output (another writer's database: any length; the failure is
    read from the output, as for a Codex command, not from ``is_error``)."""

    def runs(t: ClaudeTranscript, repo: Path) -> None:
        t.user("The settings tests fail on CI, look into it.")
        for n in range(len(tails)):
            t.bash(f"pytest -q tests/test_settings_{n}.py", "Run pytest", "collecting ...", exit_code=1)

    home = build_home(tmp, claude=[runs])
    con = sqlite3.connect(home.db)
    with con:
        ids = [row[0] for row in con.execute("SELECT id FROM tool_calls WHERE name = 'Bash' ORDER BY rowid")]
        for call, tail in zip(ids, tails, strict=True):
            con.execute("UPDATE tool_results SET content = ?, is_error = 0 WHERE tool_use_id = ?", (tail, call))
    con.close()
    return home


@pytest.mark.parametrize("width", [1, 2, 3, 4])
def test_an_output_tail_is_its_last_characters(tmp_path: Path, width: int) -> None:
    """The tail of a long output is read from its last bytes: whatever the width of its characters in UTF-8 and
    wherever the byte edge falls in one, every template reading a tail returns the output's last READ_TAIL
    characters exactly (as a character count from the end gave them), never a broken character."""
    from obelisk_session_evidence.templates.catalog import load_templates
    from obelisk_session_evidence.templates.params import NO_UPPER_BOUND, bind

    char = {1: "x", 2: "é", 3: "€", 4: "𝄞"}[width]
    filler = "ok " * (READ_HEAD // 3 + 1000)  # past the head: the templates read a tail only beyond it
    tails = [f"collecting ...\n{filler}{'a' * shift}{char * (READ_TAIL + 7)}\nE   ModuleNotFoundError\n"
             f"Process exited with code {shift + 1}" for shift in range(4)]
    home = _tails_home(tmp_path, tails)
    values = {"sources": json.dumps(["claude"]), "roots": json.dumps([str(home.repo)]), "since": "",
              "scope_ids": json.dumps(home.sessions["claude"]), "terms": json.dumps(["modulenotfounderror"]),
              "head": READ_HEAD, "tail": READ_TAIL, "search": SEARCH_CHARS, "limit": 50, "until": NO_UPPER_BOUND,
              "failures": json.dumps([f"{home.sessions['claude'][0]}\x1f"])}
    ids = ("prior_failure.tool_results", "tool_outcome.tool_calls", "prior_failure.resolution_calls")
    con = apsw.Connection(str(home.db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        for template in [t for t in load_templates() if t.id in ids]:
            cursor = con.execute(template.sql, bind(template, values))
            columns = [d[0] for d in cursor.description]
            got = sorted(dict(zip(columns, row, strict=True))["result_tail"] for row in cursor)
            assert got == sorted(t[-READ_TAIL:] for t in tails), template.id
    finally:
        con.close()


class _CountingVFS(apsw.VFS):
    """The default VFS, counting the bytes SQLite reads through it."""

    def __init__(self, base: str) -> None:
        self.base, self.read = base, 0
        super().__init__("ose-counting", base, makedefault=True)

    def xOpen(self, name: Any, flags: list[int]) -> apsw.VFSFile:
        return _CountingFile(self, name, flags)


class _CountingFile(apsw.VFSFile):
    def __init__(self, vfs: _CountingVFS, name: Any, flags: list[int]) -> None:
        self.vfs = vfs
        super().__init__(vfs.base, name, flags)

    def xRead(self, amount: int, offset: int) -> bytes:
        self.vfs.read += amount
        return super().xRead(amount, offset)


def test_the_deadline_is_checked_between_any_two_huge_cells(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SQLite reads a cell whole, in one VM step that no deadline check can cut; a row of a tool template takes a
    few hundred steps. The deadline is checked often enough (index/connection.py) that no two of four huge
    outputs (3 MB each) are read between two checks. Counted in bytes read (a VFS), not time: checked every
    1,000 steps, all four were read between two checks."""
    from obelisk_session_evidence.index.connection import Deadline

    cell = 3_000_000
    tails = [f"collecting ...\n{'tests/test_settings.py::test_case PASSED' * (cell // 40)}\nProcess exited "
             f"with code {n + 1}" for n in range(4)]
    home = _tails_home(tmp_path, tails)
    checks: list[int] = []
    expired = Deadline.expired

    def counting(self: Deadline) -> bool:
        checks.append(vfs.read)
        return expired(self)

    vfs = _CountingVFS(apsw.vfs_names()[0])
    monkeypatch.setattr(Deadline, "expired", counting)
    try:
        envelope = home.ask("claude", ["settings"], types=["prior_failure", "tool_outcome"])
    finally:
        vfs.unregister()
    assert len(envelope["result"]["items"]) >= 4
    assert vfs.read > 8 * cell  # every output was read whole, by both templates
    assert max(b - a for a, b in itertools.pairwise(checks)) < 1.5 * cell
