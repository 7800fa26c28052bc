"""The transcript writers derive the rows the real Obelisk indexer derives, for every record form.

One Claude Code session and one Codex session (with a subagent and a child thread) exercise every record
form of ``shared/real-obelisk-formats``. Each stored row is reduced to its *shape* (table, key columns,
NULL-ness, JSON kind of ``input_json``, the header form of a tool output, the prefix class of a message):
the set of shapes our builder produces must equal the set the real indexer stored in ``formats.sqlite``,
so the builder neither misses a form nor invents one. The invented text is never compared.
"""

from __future__ import annotations

import json
import random
import re
import sqlite3
import tarfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from obelisk_session_evidence.fixtures.encoding import dumps, uuid4
from obelisk_session_evidence.fixtures.patches import add, delete, update
from obelisk_session_evidence.fixtures.transcript_base import Unit
from obelisk_session_evidence.fixtures.transcripts import ClaudeTranscript, CodexTranscript

from tests.realobelisk import shared_dir
from tools.devkit.home_db import write_home_db

START_MS = 1_790_000_000_000
Shape = tuple[Any, ...]


def _formats_db() -> Path:
    path = shared_dir() / "real-obelisk-formats" / "formats.sqlite"
    if not path.is_file():
        pytest.skip(f"real-obelisk-formats not found at {path}")
    return path


def _claude_session(home: Path, cwd: Path) -> list[Unit]:
    rng = random.Random("formats-claude")
    t = ClaudeTranscript(rng=rng, home=home, session_id=uuid4(rng), cwd=cwd, branch="main", start_ms=START_MS)
    t.snapshot_line()
    t.user("<command-name>/clear</command-name>\n            <command-message>clear</command-message>\n"
           "            <command-args></command-args>")
    t.user("Run the ratelimit tests and fix the drift.")
    t.think("The drift probably comes from the wall clock.")
    t.bash("ruff check src tests", "Lint sources", "All checks passed!")
    t.bash("pytest tests/test_ratelimit.py -q", "Run pytest", "F.\nE   TokenBucketDrift\n1 failed", exit_code=1)
    t.say("The refill reads the wall clock.")
    t.read(cwd / "src/rl.py", "import time\n")
    t.edit(cwd / "src/rl.py", "time.time()", "time.monotonic()")
    t.multi_edit(cwd / "src/rl.py", [("round(x)", "floor(x)"), ("import time", "import math\nimport time")])
    t.write(cwd / "tests/conftest.py", "import pytest\n")
    t.notebook_edit(cwd / "nb/budget.ipynb", "cell-3", "plot_budget()")
    call = t.call("Task", {"description": "Find clock reads", "prompt": "List clock reads.",
                           "subagent_type": "Explore"})
    sub = ClaudeTranscript(rng=rng, home=home, session_id=t.session_id, cwd=cwd, branch="main",
                           start_ms=t.clock, agent_short="19aebd7b6ab5c4f14")
    sub.user("List clock reads.")
    sub.tool("Grep", {"pattern": "time\\.", "path": str(cwd / "src"), "output_mode": "content", "-n": True},
             f"{cwd}/src/rl.py:3: time.time()")
    sub.say("refill() reads time.time().")
    sub.add("subagents", {"agent_id": sub.agent_id, "session_id": sub.session_id,
                          "parent_tool_use_id": call.tool_id, "agent_type": "Explore",
                          "description": "Find clock reads", "duration_ms": 1000, "total_tokens": 10})
    t.clock = sub.clock + 1000
    t.task_result(call, "refill() reads time.time().", "19aebd7b6ab5c4f14")
    t.compaction("Analysis: the refill reads the wall clock; switched to time.monotonic().")
    t.say("Done.")
    t.turn_duration()
    t.away_summary("Still chasing the drift.")
    t.legacy_summary_line("Ratelimit drift triage")
    t.ai_title("Investigate drift")
    t.rows.insert(0, ("sessions", t.session_row()))
    return [t.to_unit(), sub.to_unit()]


def _codex_session(home: Path, cwd: Path) -> tuple[list[Unit], dict[str, Any]]:
    rng = random.Random("formats-codex")
    x = CodexTranscript(rng=rng, home=home, thread_id=uuid4(rng), cwd=cwd, branch="main", start_ms=START_MS)
    x.env_context()
    x.developer("<permissions instructions>\nworkspace-write\n</permissions instructions>")
    x.turn_context()
    x.user("Build the image and tell me why it fails.")
    x.reason("Check the Dockerfile first.")
    x.shell("python -m kite.cli migrate --dry-run", "Traceback …\nSchemaLockTimeout", exit_code=1)
    x.shell(["python", "-m", "kite.cli", "locks", "--release"], "released lock")
    x.shell(["npm", "run", "lint"], "error  'retryCount' is assigned", exit_code=1, form="text")
    x.shell("npm test", "1 failed", exit_code=1, form="text", total_lines=318, exec_end=True)
    x.shell_command("git tag --list 'v0.*'", "v0.8.0")
    x.exec_command("npm publish --workspace packages/ui", "npm ERR! code E403", exit_code=1)
    x.patch([update("src/cli.py", ["timeout=30"], ["timeout=120"], context="def migrate(args):")],
            via="function")
    x.patch([add("src/lib/retry.ts", "export const a = 1;"), update("src/lib/api.ts", ["x"], ["y"]),
             delete("src/lib/legacyRetry.ts")], via="freeform", form="text")
    x.patch([update("src/budget.py", [], ["MIN_RESERVE = 5"])], via="freeform")
    x.patch([update("Dockerfile", ["RUN poetry install"], ["RUN pip install poetry"],
                    move_to="docker/release.Dockerfile")], via="argv", form="text")
    x.patch([update("CHANGELOG.md", [], ["## 0.9.2"])], via="heredoc", form="text")
    x.compacted("Context checkpoint: image builds.")
    x.say("The build fails inside the image.")
    x.token_count()
    child = CodexTranscript(rng=rng, home=home, thread_id=uuid4(rng), cwd=cwd, branch="main",
                            start_ms=x.clock, instructions=False, parent=x, nickname="retry-reviewer",
                            role="reviewer")
    spawn = x.spawn(child, "Audit src/lib/retry.ts.", "retry-reviewer", "reviewer")
    child.env_context()
    child.turn_context()
    child.user("Audit src/lib/retry.ts.")
    child.shell('grep -n "attempts" src/lib/retry.ts', "1:export async function withRetry", form="text")
    child.say("No unbounded retries.")
    child.token_count()
    child.child_row(spawn, "retry-reviewer", "reviewer")
    x.clock = max(x.clock, child.clock)
    x.say("The reviewer found nothing.")
    x.token_count()
    x.task_complete("done")
    x.rows.insert(0, ("sessions", x.session_row("Release image")))
    entry = {"id": x.thread_id, "thread_name": "Release image", "updated_at": "2026-09-12T14:24:35.546Z"}
    return [x.to_unit(), child.to_unit()], entry


def _codex_untitled(home: Path, cwd: Path) -> Unit:
    """A thread with no ``session_index.jsonl`` entry: its session has no title."""
    rng = random.Random("formats-codex-untitled")
    x = CodexTranscript(rng=rng, home=home, thread_id=uuid4(rng), cwd=cwd, branch="feat/x", start_ms=START_MS,
                        instructions=False)
    x.env_context()
    x.turn_context()
    x.user("Add a reserve.")
    x.patch([update("src/budget.py", [], ["MIN_RESERVE = 5"])], via="freeform")
    x.say("Added.")
    x.token_count()
    x.rows.insert(0, ("sessions", x.session_row(None)))
    return x.to_unit()


# --- shapes ------------------------------------------------------------------------------------------------

def _id_kind(value: str | None) -> str:
    if value is None:
        return "null"
    if re.fullmatch(r"codex:[0-9a-f-]{36}:\d{6}", value):
        return "codex-line"
    if re.fullmatch(r"codex:[0-9a-f-]{36}:call_\w+", value):
        return "codex-call"
    if re.fullmatch(r"codex:[0-9a-f-]{36}", value):
        return "codex-thread"
    if re.fullmatch(r"agent-[0-9a-f]+", value):
        return "claude-agent"
    if re.fullmatch(r"toolu_\w+", value):
        return "toolu"
    if re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", value):
        return "uuid"
    return "other"


_TEXT_CLASSES = (("<command-name>", "slash-command"), ("<environment_context>", "environment"),
                 ("<user_instructions>", "agents-md"),
                 ("This session is being continued from a previous conversation", "compaction"))


def _text_class(text: str | None) -> str:
    if text is None:
        return "null"
    return next((name for prefix, name in _TEXT_CLASSES if text.startswith(prefix)), "text")


def _output_class(content: str | None) -> str:
    if content is None:
        return "null"
    if content.startswith('{"output":'):
        inner = json.loads(content)["output"]
        return "json+" + ("patch-success" if inner.startswith("Success. Updated") else "plain")
    body = content
    head = ""
    if m := re.match(r"Exit code: \d+\nWall time: [\d.]+ seconds\n(Total output lines: \d+\n)?Output:\n", content):
        head, body = ("text-header+total" if m.group(1) else "text-header"), content[m.end():]
    elif m := re.match(r"Chunk ID: \w+\nWall time: [\d.]+ seconds\nProcess exited with code \d+\n"
                       r"Original token count: \d+\nOutput:\n", content):
        head, body = "unified-exec", content[m.end():]
    elif re.match(r"Exit code \d+\n", content):
        return "claude-exit-code"
    for prefix, name in (("Success. Updated the following files:", "patch-success"),
                         ("Applied ", "multiedit"), ("File created successfully", "write"),
                         ("Updated cell", "notebook"), ("The file ", "edit"), ("     1\u2192", "read")):
        if body.startswith(prefix):
            return f"{head}+{name}" if head else name
    return f"{head}+plain" if head else "plain"


def _input_class(input_json: str) -> Shape:
    value = json.loads(input_json)
    if isinstance(value, str):
        return ("string", value.startswith("*** Begin Patch"))
    keys = tuple(sorted(value))
    command = value.get("command")
    if isinstance(command, list):
        kind = ("argv:apply_patch" if command[0] == "apply_patch" else
                "argv:bash-lc-heredoc" if command[:2] == ["bash", "-lc"] and "<<" in command[2] else
                "argv:bash-lc" if command[:2] == ["bash", "-lc"] else "argv:plain")
    else:
        kind = "string" if isinstance(command, str) else "none"
    return ("object", keys, kind)


def _shapes(rows: Iterable[sqlite3.Row], table: str) -> set[Shape]:
    out: set[Shape] = set()
    for r in rows:
        if table == "sessions":
            out.add((r["source"], _id_kind(r["id"]), r["title"] is None, r["project_path"] is None,
                     r["git_branch"] is None, r["version"] is None))
        elif table == "messages":
            out.add((r["source"], _id_kind(r["uuid"]), r["role"], r["type"], r["content_type"], r["is_meta"],
                     r["visibility"], _text_class(r["text"]), r["is_sidechain"], _id_kind(r["agent_id"]),
                     r["model"] is None, r["input_tokens"] is None, r["output_tokens"] is None))
        elif table == "tool_calls":
            out.add((r["name"], _id_kind(r["id"]), _id_kind(r["message_uuid"]), r["file_path"] is None,
                     _input_class(r["input_json"])))
        elif table == "tool_results":
            out.add((_id_kind(r["tool_use_id"]), _id_kind(r["message_uuid"]), r["is_error"],
                     r["file_path"] is None, _output_class(r["content"])))
        elif table == "summaries":
            out.add((r["source"], r["visibility"], r["input_tokens"] is None))
        elif table == "subagents":
            out.add((_id_kind(r["agent_id"]), _id_kind(r["session_id"]), _id_kind(r["parent_tool_use_id"]),
                     r["description"] is None, r["agent_type"] is None))
    return out


TABLES = ("sessions", "messages", "tool_calls", "tool_results", "summaries", "subagents")


def _table_shapes(db: Path, table: str) -> set[Shape]:
    conn = sqlite3.connect(f"file:{db}?mode=ro&immutable=1", uri=True)
    conn.row_factory = sqlite3.Row
    try:
        return _shapes(conn.execute(f"SELECT * FROM {table}"), table)
    finally:
        conn.close()


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("forms")
    home = out / "home"
    claude_units = _claude_session(home, home / "src" / "kite-api")
    codex_units, entry = _codex_session(home, home / "src" / "kite-api")
    db = out / "obelisk.sqlite"
    untitled = _codex_untitled(home, home / "src" / "kite-api-wt")
    write_home_db(db, home, [*claude_units, *codex_units, untitled], codex_index=[entry], now_ms=START_MS + 10**8)
    return db


@pytest.mark.parametrize("table", TABLES)
def test_builder_row_shapes_equal_the_real_indexer(table: str, built: Path) -> None:
    real = _table_shapes(_formats_db(), table)
    ours = _table_shapes(built, table)
    assert ours - real == set(), f"{table}: shapes the real indexer never stored"
    assert real - ours == set(), f"{table}: real shapes the builder cannot write"


def test_transcript_lines_match_record_kinds(built: Path) -> None:
    """Every JSONL record kind the builder writes is one the real tools wrote (type/subtype/payload type)."""
    def kinds(root: Path) -> set[tuple[str, ...]]:
        found: set[tuple[str, ...]] = set()
        for path in root.rglob("*.jsonl"):
            if path.name == "session_index.jsonl":
                continue
            for line in path.read_text(encoding="utf-8").splitlines():
                rec = json.loads(line)
                payload = rec.get("payload") if isinstance(rec.get("payload"), dict) else {}
                found.add((str(rec.get("type")), str(rec.get("subtype", "")), str(payload.get("type", "")),
                           str(payload.get("role", ""))))
        return found
    real_dir = Path(str(built.parent)) / "real-transcripts"
    if not real_dir.exists():
        with tarfile.open(shared_dir() / "real-obelisk-formats" / "transcripts.tar.gz", "r:gz") as tar:
            tar.extractall(real_dir, filter="tar")
    ours, real = kinds(built.parent / "home"), kinds(real_dir)
    assert ours == real, (sorted(ours - real), sorted(real - ours))


def test_written_records_are_compact_json(built: Path) -> None:
    for path in (built.parent / "home").rglob("rollout-*.jsonl"):
        for line in path.read_text(encoding="utf-8").splitlines():
            assert dumps(json.loads(line)) == line
