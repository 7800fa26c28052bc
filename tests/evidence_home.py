"""A small Obelisk home written the way Claude Code and Codex write transcripts today, for evidence tests.

:func:`build_home` runs caller-supplied writers against one Claude Code session and one Codex session of one
repository (each agent its own scope), writes the transcripts and the index built from them, and returns an
:class:`EvidenceHome` whose :meth:`EvidenceHome.ask` sends one request through the real service.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from obelisk_session_evidence.fixtures.encoding import uuid4
from obelisk_session_evidence.fixtures.transcripts import ClaudeTranscript, CodexTranscript
from obelisk_session_evidence.service import answer

from tests.conftest import make_request, scope_entry, write_config
from tools.devkit.home_db import write_home_db

START_MS = 1_790_000_000_000
AGENTS = {"claude": "claude-main", "codex": "codex-main"}
LIMITS = {"max_sessions": 5, "max_items": 8, "max_snippet_chars": 600, "max_total_chars": 6000}
ALL_TYPES = ["prior_failure", "decision", "file_history", "tool_outcome", "summary"]


@dataclass
class EvidenceHome:
    db: Path
    home: Path
    repo: Path
    config: Path
    sessions: dict[str, list[str]]  # source -> session ids, in writing order

    def ask(self, source: str, terms: Sequence[str], types: Sequence[str] = tuple(ALL_TYPES),
            limits: dict[str, int] | None = None) -> dict[str, Any]:
        request = make_request(
            scope={"agent_id": AGENTS[source], "project_id": "demo", "repository_id": "web",
                   "allow_cross_agent": False, "allow_cross_project": False},
            evidence_types=list(types), query_terms=list(terms), limits=limits or LIMITS)
        envelope: dict[str, Any] = answer(json.dumps(request).encode(), db_path=self.db,
                                          config_path=self.config).envelope
        assert envelope["outcome"] == "ok", envelope["error"]
        return envelope

    def items(self, source: str, terms: Sequence[str], types: Sequence[str] = tuple(ALL_TYPES),
              limits: dict[str, int] | None = None) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = self.ask(source, terms, types, limits)["result"]["items"]
        return items


ClaudeWriter = Callable[[ClaudeTranscript, Path], None]
CodexWriter = Callable[[CodexTranscript, Path], None]


def build_home(tmp: Path, *, claude: Sequence[ClaudeWriter] = (), codex: Sequence[CodexWriter] = (),
               seed: str = "evidence") -> EvidenceHome:
    """One session per writer (Claude Code sessions first, then Codex), all in one repository ``web``."""
    home = tmp / "home"
    repo = home / "src" / "web"
    repo.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    units = []
    sessions: dict[str, list[str]] = {"claude": [], "codex": []}
    clock = START_MS
    for write_claude in claude:
        t = ClaudeTranscript(rng=rng, home=home, session_id=uuid4(rng), cwd=repo, branch="main", start_ms=clock)
        write_claude(t, repo)
        t.rows.insert(0, ("sessions", t.session_row()))
        units.append(t.to_unit())
        sessions["claude"].append(t.session_id)
        clock = t.clock + 3_600_000
    index = []
    for write_codex in codex:
        x = CodexTranscript(rng=rng, home=home, thread_id=uuid4(rng), cwd=repo, branch="main", start_ms=clock)
        x.env_context()
        x.turn_context()
        write_codex(x, repo)
        x.token_count()
        x.rows.insert(0, ("sessions", x.session_row(None)))
        units.append(x.to_unit())
        sessions["codex"].append(f"codex:{x.thread_id}")
        index.append({"id": x.thread_id, "thread_name": "", "updated_at": "2026-09-12T14:24:35.546Z"})
        clock = x.clock + 3_600_000
    db = tmp / "obelisk.sqlite"
    write_home_db(db, home, units, now_ms=clock)
    config = write_config(tmp / "config.json", [
        scope_entry(AGENTS["claude"], "demo", "web", ["claude"], [str(repo)]),
        scope_entry(AGENTS["codex"], "demo", "web", ["codex"], [str(repo)]),
    ], transcript_homes=[str(home)])
    return EvidenceHome(db=db, home=home, repo=repo, config=config, sessions=sessions)
