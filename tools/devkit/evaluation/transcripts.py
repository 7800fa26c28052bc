"""The evaluation set of the real transcripts (``tests/data/real_transcripts``): wrap-ups and tool names.

The transcripts are indexed into ``work`` the way Obelisk indexes them (``devkit.real_transcripts``); each
positive situation asks a term from a session's last assistant prose (its wrap-up) or a tool's name, with the
phrase the item must show; each negative asks what must not come back (a message the agent went on from,
another repository's tool or wrap-up, a session the agent never answered in).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Final

from obelisk_session_evidence.contract.wire import EvidenceType

from ..real_transcripts import TRANSCRIPTS, write_real_home
from .situation import EvalSet, Fact, ScopeSpec, Situation

_SU: Final[tuple[EvidenceType, ...]] = ("summary",)
_TO: Final[tuple[EvidenceType, ...]] = ("tool_outcome",)
_PF: Final[tuple[EvidenceType, ...]] = ("prior_failure",)
_ANY_TOOL: Final[tuple[EvidenceType, ...]] = ("tool_outcome", "prior_failure")
#: Repository (scope) names by the working directory the tool recorded (none of them is on this machine).
_REPOSITORIES: Final = {"/tmp/private": "private", "/home/marco/projects/spotter": "spotter",  # noqa: S108
                        "/Users/Nikita_Levyankov/repos/EPMCDME/codemie-ai/codemie-code": "codemie-code"}
_CODEMIE: Final = "4c2ddfdc-b619-4525-8d03-1950fb1b0257"
_ROLLOUT: Final = "codex:019b7f94-51b4-7593-922e-ba12b5b73b52"
#: (id, source, repository, evidence types, term, session, phrase the item shows, class): a positive situation.
_POSITIVES: Final[tuple[tuple[str, str, str, tuple[EvidenceType, ...], str, str, str, str], ...]] = (
    ("rt-wrapup-codemie", "claude", "private", _SU, "hello.js", _CODEMIE, "Done! I've deleted hello.js.",
     "wrapup"),
    ("rt-wrapup-tool-heavy", "claude", "spotter", _SU, "Phoenix server", "tool_heavy",
     "Phoenix server is starting in the background.", "wrapup"),
    ("rt-wrapup-short", "claude", "spotter", _SU, "project structure", "short",
     "Let me check the project structure and try running the server to see the error.", "wrapup"),
    ("rt-tool-write", "claude", "private", _TO, "Write", _CODEMIE, "Write hello.js", "tool_name"),
    ("rt-tool-edit", "claude", "private", _TO, "edit", _CODEMIE, "Edit hello.py", "tool_name"),
    ("rt-tool-websearch", "claude", "spotter", _TO, "WebSearch", "tool_heavy",
     "WebSearch xterm.js scroll not working embedded page captures scroll events", "tool_name"),
    ("rt-tool-webfetch", "claude", "spotter", _TO, "webfetch", "tool_heavy", "Scroll Issues in xterm.js",
     "tool_name"),
    ("rt-tool-glob-rejected", "claude", "spotter", _PF, "Glob", "short",
     "The user doesn't want to proceed with this tool use.", "tool_name"),
    ("rt-tool-codex-shell", "codex", "codemie-code", _TO, "shell", _ROLLOUT, "rg --files -g 'AGENTS.md'",
     "tool_name"),
)
#: (id, source, repository, evidence types, term, class): a negative situation (no item may come back).
_NEGATIVES: Final[tuple[tuple[str, str, str, tuple[EvidenceType, ...], str, str], ...]] = (
    ("neg-rt-wrapup-gone-on-from", "claude", "private", _SU, "created three files", "wrapup.negative"),
    ("neg-rt-wrapup-other-repo", "claude", "spotter", _SU, "hello.js", "wrapup.negative"),
    ("neg-rt-wrapup-never-answered", "codex", "codemie-code", _SU, "summarize purpuse", "wrapup.negative"),
    ("neg-rt-tool-other-repo", "claude", "private", _ANY_TOOL, "WebSearch", "tool_name.negative"),
    ("neg-rt-tool-never-called", "claude", "spotter", _ANY_TOOL, "TaskOutput", "tool_name.negative"),
    ("neg-rt-tool-other-agent", "codex", "codemie-code", _ANY_TOOL, "WebFetch", "tool_name.negative"),
    ("neg-rt-tool-part-of-name", "claude", "spotter", _ANY_TOOL, "WebSear", "tool_name.negative"),
)


def _situations() -> list[Situation]:
    positives = [Situation(sid, source, repo, types, (term,), (Fact(session, types, phrase, cls),), classes=(cls,))
                 for sid, source, repo, types, term, session, phrase, cls in _POSITIVES]
    negatives = [Situation(sid, source, repo, types, (term,), negative=True, classes=("negative", cls))
                 for sid, source, repo, types, term, cls in _NEGATIVES]
    return positives + negatives


def transcripts_evalset(work: Path) -> EvalSet:
    """Index the real transcripts into ``work`` and return their evaluation set."""
    home = work / "home"
    db = work / "obelisk.sqlite"
    write_real_home(db, home, TRANSCRIPTS, now_ms=int(time.time() * 1000))
    sessions: dict[str, tuple[str, str]] = {}
    for t in TRANSCRIPTS:
        session = t.path.stem if t.provider == "claude" else f"codex:{t.records()[0]['payload']['id']}"
        sessions[session] = (t.provider, _REPOSITORIES[t.cwd()])
    scopes = [ScopeSpec(source, repo, (root,)) for root, repo in _REPOSITORIES.items()
              for source in {t.provider for t in TRANSCRIPTS if t.cwd() == root}]
    return EvalSet("real-transcripts", db, scopes, sessions, _situations())
