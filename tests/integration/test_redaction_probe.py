"""Issue 30, item 1, end to end: every secret class through the service, on a real fixture index.

Each shape of ``tests/unit/test_redact_classes.py`` is written into its own Claude Code session and its own Codex
session (transcripts as those agents write them, indexed the way Obelisk indexes them): in a tool's output
(a failed ``cat`` of the agent's notes) and in the assistant's next message. One request per session, all
evidence types, the widest limits. The check: the evidence came back (its marker is in the snippets and the
class's placeholder with it), and no 8-byte piece of any secret appears anywhere in the envelope, in its JSON
line or in any string of it once decoded. ``-s`` prints one ``REDACTION-PROBE`` line per agent.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from obelisk_session_evidence.fixtures.transcripts import ClaudeTranscript, CodexTranscript

from tests.evidence_home import ALL_TYPES, EvidenceHome, build_home
from tests.unit.test_redact_classes import POSITIVE

LIMITS = {"max_sessions": 50, "max_items": 50, "max_snippet_chars": 2000, "max_total_chars": 32000}


def marker(i: int) -> str:
    return f"mkprobe{i}q"


def _claude(i: int, text: str) -> Any:
    def write(t: ClaudeTranscript, repo: Path) -> None:
        t.user(f"Why does the deploy fail? Look at the notes ({marker(i)}).")
        t.bash(f"cat ~/notes/{marker(i)}.txt", "Show the deploy notes", f"{marker(i)}\n{text}\nerror: deploy failed",
               exit_code=1)
        t.say(f"I decided to rotate what {marker(i)} exposed:\n{text}")
    return write


def _codex(i: int, text: str) -> Any:
    def write(x: CodexTranscript, repo: Path) -> None:
        x.user(f"Why does the deploy fail? Look at the notes ({marker(i)}).")
        x.exec_command(f"cat notes/{marker(i)}.txt", f"{marker(i)}\n{text}\nerror: deploy failed", exit_code=1)
        x.say(f"I decided to rotate what {marker(i)} exposed:\n{text}")
    return write


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> EvidenceHome:
    return build_home(tmp_path_factory.mktemp("probe"),
                      claude=[_claude(i, case[2]) for i, case in enumerate(POSITIVE)],
                      codex=[_codex(i, case[2]) for i, case in enumerate(POSITIVE)], seed="probe")


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _hits(envelope: dict[str, Any], secret: str) -> int:
    """How many 8-byte pieces of ``secret`` appear in the envelope's JSON line or in its decoded strings."""
    line = json.dumps(envelope, ensure_ascii=False, separators=(",", ":")).encode()
    decoded = "\n".join(_strings(envelope)).encode()
    raw = secret.encode()
    pieces = {raw[i:i + 8] for i in range(max(1, len(raw) - 7))}
    return sum(1 for piece in pieces if piece in line or piece in decoded)


@pytest.mark.parametrize("source", ["claude", "codex"])
def test_no_piece_of_any_secret_reaches_the_envelope(home: EvidenceHome, source: str) -> None:
    hits: Counter[str] = Counter()
    leaked: Counter[str] = Counter()
    unseen: list[str] = []
    for i, (name, kind, _text, secrets) in enumerate(POSITIVE):
        envelope = home.ask(source, [marker(i)], ALL_TYPES, LIMITS)
        snippets = [item["snippet"] for item in envelope["result"]["items"] if marker(i) in item["snippet"]]
        if len(snippets) < 2 or not any(f"[REDACTED:{kind}]" in s for s in snippets):
            unseen.append(f"{i}:{name}")
        for secret in secrets:
            found = _hits(envelope, secret)
            hits[name] += found
            leaked[name] += int(found > 0)
    print(f"\nREDACTION-PROBE[{source}]: cases={len(POSITIVE)} classes={len({c[0] for c in POSITIVE})} "
          f"secrets={sum(len(c[3]) for c in POSITIVE)} leaked={sum(leaked.values())} hits={sum(hits.values())} "
          f"by_class={dict(sorted((+leaked).items()))}")
    assert not +leaked, dict(+leaked)
    # The evidence came back: both texts (the tool's output, the message), the secret replaced in them.
    assert not unseen, unseen
