"""Real Claude Code and Codex transcripts (``tests/data/real_transcripts/``), indexed the way Obelisk indexes them.

The fixture writers (``obelisk_session_evidence.fixtures``) write a transcript and its rows together; a
transcript the tools themselves wrote has no rows yet, so this module reads its records into the rows Obelisk
derives from them (``shared/obelisk-db-interface.md`` §3, §4, §6; ``shared/real-obelisk-formats/README.md``,
"How each format looks once stored") and hands them to the same writer (``home_db.write_home_db``): the file
laid out byte for byte under an Obelisk home, one indexer transaction per file, then the finalize transaction.

Only what the provider reads is derived: sessions, messages (text and thinking joined, cut to 10,000
characters; meta and hidden rows marked), tool calls (each string leaf cut; ``file_path`` for the four file
tools), tool results, away summaries and titles. Subagent files, workflows and token counts are left out.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from obelisk_session_evidence.fixtures.encoding import Json, Row, claude_slug, codex_slug, cut_leaves, cut_text, dumps
from obelisk_session_evidence.fixtures.transcript_base import Unit

from .home_db import write_home_db

REPO: Final = Path(__file__).resolve().parents[2]
#: The transcripts and their README (origin, licence, SHA-256 of each file).
DATA_DIR: Final = REPO / "tests" / "data" / "real_transcripts"
_FILE_TOOLS: Final = ("Read", "Edit", "Write", "NotebookEdit")
_META_PREFIXES: Final = ("<command-name>", "<task-notification", "<system-reminder", "<local-command")
_HIDDEN_PREFIXES: Final = ("<environment_context>", "<codex_internal_context>")


@dataclass(frozen=True)
class RealTranscript:
    """One transcript file of ``DATA_DIR``: which tool wrote it, its SHA-256 (README), where it goes in a home."""

    name: str
    provider: str  # "claude" | "codex"
    sha256: str

    @property
    def path(self) -> Path:
        return DATA_DIR / self.name

    def records(self) -> list[Json]:
        return [json.loads(line) for line in self.path.read_bytes().decode("utf-8").splitlines() if line.strip()]

    def cwd(self) -> str:
        """The working directory the tool recorded (the session's project path once indexed)."""
        for record in self.records():
            if self.provider == "codex" and record.get("type") == "session_meta":
                return str(record["payload"]["cwd"])
            if self.provider == "claude" and isinstance(record.get("cwd"), str):
                return str(record["cwd"])
        raise ValueError(f"{self.name}: no working directory recorded")


#: The transcripts, as the README lists them (name, tool, SHA-256 of the bytes).
TRANSCRIPTS: Final = (
    RealTranscript("4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl", "claude",
                   "7e6ad93af5b727aa486e600f27f67c00391be304fc27372e1de839449a415376"),
    RealTranscript("tool_heavy.jsonl", "claude", "036f9a476f513bb56bad7b9e8d15826aacc8515a57d531487799a51deb41d8cb"),
    RealTranscript("short.jsonl", "claude", "237dc80e7f705386591cee61b21fa209a59a11c6366d20fda227ec878848c74b"),
    RealTranscript("rollout-2026-01-02T18-39-45-019b7f94-51b4-7593-922e-ba12b5b73b52.jsonl", "codex",
                   "8106ce5b2afdd3e6f8ba87801a08101b624004eed7d82eceddaadc0b9b7cd59a"),
)


def _text_of(content: Any) -> tuple[str | None, str]:
    """A Claude message's text and content type: text and thinking blocks joined with a line break."""
    if isinstance(content, str):
        return content, "text"
    if not isinstance(content, list):
        return None, "unknown"
    kinds = {b.get("type") for b in content if isinstance(b, dict)}
    parts = [str(b.get("text") if b.get("type") == "text" else b.get("thinking") or "")
             for b in content if isinstance(b, dict) and b.get("type") in ("text", "thinking")]
    kind = kinds.pop() if len(kinds) == 1 else "unknown"
    return ("\n".join(parts) if parts else None), str(kind or "unknown")


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def claude_rows(records: Sequence[Json], session_id: str, path: Path) -> list[tuple[str, Row]]:
    """The rows Obelisk derives from a Claude Code main transcript (``session_id``: the file name's stem)."""
    rows: list[tuple[str, Row]] = []
    stamps: list[str] = []
    branch = version = title = None
    cwds: list[str] = []
    for record in records:
        kind = record.get("type")
        if kind == "ai-title":
            title = record.get("aiTitle") or title
        if kind == "system" and record.get("subtype") == "away_summary" and record.get("uuid"):
            rows.append(("summaries", {
                "id": record["uuid"], "session_id": session_id, "timestamp": record.get("timestamp"),
                "source": "away_summary", "content": record.get("content"), "visibility": "visible",
                "input_tokens": None, "output_tokens": None}))
        if kind not in ("user", "assistant"):
            continue
        if record.get("timestamp"):
            stamps.append(str(record["timestamp"]))
        branch = record.get("gitBranch") or branch
        version = record.get("version") or version
        if isinstance(record.get("cwd"), str):
            cwds.append(record["cwd"])
        uid = record.get("uuid")
        if not uid:
            continue
        message = record.get("message") or {}
        content = message.get("content")
        text, content_type = _text_of(content)
        is_meta = bool(record.get("isMeta")) or (text or "").startswith(_META_PREFIXES)
        rows.append(("messages", {
            "uuid": uid, "session_id": session_id, "type": kind, "parent_uuid": record.get("parentUuid"),
            "timestamp": record.get("timestamp"), "role": message.get("role") or kind, "text": cut_text(text),
            "content_type": content_type, "is_meta": int(is_meta), "visibility": "visible",
            "model": message.get("model"), "is_sidechain": int(bool(record.get("isSidechain"))),
            "agent_id": record.get("agentId"), "input_tokens": None, "output_tokens": None,
            "cwd": record.get("cwd"), "skill": None, "turn_duration_ms": None, "source": "claude"}))
        for block in content if isinstance(content, list) else ():
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_use":
                tool_input = block.get("input") or {}
                name = str(block.get("name"))
                rows.append(("tool_calls", {
                    "id": block.get("id"), "message_uuid": uid, "session_id": session_id, "name": name,
                    "presentation": "default", "input_json": dumps(cut_leaves(tool_input)),
                    "file_path": tool_input.get("file_path") if name in _FILE_TOOLS else None}))
            elif block.get("type") == "tool_result":
                used = record.get("toolUseResult")
                rows.append(("tool_results", {
                    "tool_use_id": block.get("tool_use_id"), "message_uuid": uid, "session_id": session_id,
                    "content": cut_text(_result_text(block.get("content"))),
                    "file_path": used.get("filePath") if isinstance(used, dict) else None,
                    "is_error": int(bool(block.get("is_error")))}))
    session = {"id": session_id, "title": title, "project": claude_slug(Path(cwds[0])) if cwds else None,
               "project_path": None, "started_at": min(stamps), "ended_at": max(stamps), "git_branch": branch,
               "version": version, "message_count": len(stamps), "jsonl_path": str(path), "source": "claude"}
    return [("sessions", session), *rows]


def codex_rows(records: Sequence[Json], path: Path) -> list[tuple[str, Row]]:
    """The rows Obelisk derives from a Codex rollout (messages from ``event_msg``; a ``response_item`` message
    only when no event repeats it; calls and their outputs by ``call_id``)."""
    meta = next(r["payload"] for r in records if r.get("type") == "session_meta")
    thread = str(meta["id"])
    session_id = f"codex:{thread}"
    cwd = str(meta.get("cwd"))
    events = {(p.get("type"), p.get("message")) for r in records if r.get("type") == "event_msg"
              for p in [r.get("payload") or {}]}
    rows: list[tuple[str, Row]] = []
    calls: dict[str, str] = {}
    model = None
    last_stamp = str(meta.get("timestamp") or records[0].get("timestamp"))

    def message(line: int, stamp: Any, role: str, text: str | None, content_type: str, *, hidden: bool) -> str:
        uid = f"codex:{thread}:{line:06d}"
        rows.append(("messages", {
            "uuid": uid, "session_id": session_id, "type": role, "parent_uuid": None, "timestamp": stamp,
            "role": role, "text": cut_text(text), "content_type": content_type, "is_meta": int(hidden),
            "visibility": "hidden" if hidden else "visible", "model": model, "is_sidechain": 0, "agent_id": None,
            "input_tokens": None, "output_tokens": None, "cwd": cwd, "skill": None, "turn_duration_ms": None,
            "source": "codex"}))
        return uid

    for line, record in enumerate(records, 1):
        kind, payload, stamp = record.get("type"), record.get("payload") or {}, record.get("timestamp")
        last_stamp = str(stamp or last_stamp)
        ptype = payload.get("type")
        if kind == "turn_context":
            cwd = str(payload.get("cwd") or cwd)
            model = payload.get("model") or model
        elif kind == "event_msg" and ptype in ("user_message", "agent_message"):
            message(line, stamp, "user" if ptype == "user_message" else "assistant", payload.get("message"),
                    "text", hidden=False)
        elif kind == "event_msg" and ptype == "agent_reasoning":
            message(line, stamp, "assistant", payload.get("text"), "thinking", hidden=False)
        elif kind == "response_item" and ptype == "message" and payload.get("role") in ("user", "assistant"):
            role = str(payload["role"])
            text = "\n".join(str(c.get("text", "")) for c in payload.get("content") or [] if isinstance(c, dict))
            if (f"{role}_message" if role == "user" else "agent_message", text) in events:
                continue
            message(line, stamp, role, text, "text", hidden=text.lstrip().startswith(_HIDDEN_PREFIXES))
        elif kind == "response_item" and ptype in ("function_call", "custom_tool_call"):
            raw = payload.get("arguments") if ptype == "function_call" else payload.get("input")
            try:
                tool_input = json.loads(str(raw)) if ptype == "function_call" else raw
            except ValueError:
                tool_input = raw
            uid = message(line, stamp, "assistant", None, "tool_use", hidden=False)
            call_id = f"codex:{thread}:{payload.get('call_id')}"
            calls[str(payload.get("call_id"))] = uid
            rows.append(("tool_calls", {
                "id": call_id, "message_uuid": uid, "session_id": session_id, "name": payload.get("name"),
                "presentation": "default", "input_json": dumps(cut_leaves(tool_input)), "file_path": None}))
        elif kind == "response_item" and ptype in ("function_call_output", "custom_tool_call_output"):
            output = payload.get("output")
            rows.append(("tool_results", {
                "tool_use_id": f"codex:{thread}:{payload.get('call_id')}",
                "message_uuid": calls.get(str(payload.get("call_id")), ""), "session_id": session_id,
                "content": cut_text(output if isinstance(output, str) else dumps(output)), "file_path": None,
                "is_error": int(bool(payload.get("is_error")))}))
    visible = sum(1 for t, r in rows if t == "messages" and r["visibility"] == "visible")
    session = {"id": session_id, "title": None, "project": codex_slug(Path(str(meta.get("cwd")))),
               "project_path": None, "started_at": meta.get("timestamp") or records[0].get("timestamp"),
               "ended_at": last_stamp, "git_branch": (meta.get("git") or {}).get("branch"),
               "version": meta.get("cli_version"), "message_count": visible, "jsonl_path": str(path),
               "source": "codex"}
    return [("sessions", session), *rows]


def home_path(home: Path, transcript: RealTranscript) -> Path:
    """Where the tool that wrote ``transcript`` keeps it under ``home``."""
    if transcript.provider == "claude":
        return home / ".claude" / "projects" / claude_slug(Path(transcript.cwd())) / transcript.name
    meta = transcript.records()[0]
    day = str(meta.get("timestamp") or "1970-01-01")[:10].split("-")
    return home / ".codex" / "sessions" / day[0] / day[1] / day[2] / transcript.name


def check_bytes(transcript: RealTranscript) -> None:
    """Refuse a transcript whose bytes are not those the README records."""
    digest = hashlib.sha256(transcript.path.read_bytes()).hexdigest()
    if digest != transcript.sha256:
        raise ValueError(f"{transcript.name}: SHA-256 {digest} is not the recorded {transcript.sha256}")


def write_real_home(db_path: Path, home: Path, transcripts: Iterable[RealTranscript], *, now_ms: int) -> None:
    """Lay ``transcripts`` out under ``home`` byte for byte and index them into a new database at ``db_path``."""
    units = []
    for transcript in transcripts:
        check_bytes(transcript)
        data = transcript.path.read_bytes()
        path = home_path(home, transcript)
        records = transcript.records()
        rows = (claude_rows(records, path.stem, path) if transcript.provider == "claude"
                else codex_rows(records, path))
        # The file's time as the indexer saw it: a minute before the build (never the checkout's own mtime).
        units.append(Unit(transcript.provider, path, data, rows, (now_ms - 60_000) * 1_000_000))
    write_home_db(db_path, home, units, now_ms=now_ms)
