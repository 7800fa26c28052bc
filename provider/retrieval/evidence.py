"""Turn template rows into evidence candidates: a short, readable text per row, with a fold key.

Recalled text is data: nothing in it changes what the provider does. Parsing of tool inputs and outputs is
defensive (values may be truncated JSON); anything unparseable falls back to plain text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..contract.models import EvidenceType
from ..paths import relative_to_roots, strip_roots
from .engine import RawHit

_WS = re.compile(r"\s+")
_PATCH_PATH = re.compile(r"\*\*\* (?:Update|Add|Delete) File: ([^\n\\]+)")
_EXIT_CODE_LINE = re.compile(r"^Exit code (\d+)")
_JSON_EXIT = re.compile(r'"exit_code"\s*:\s*(-?\d+)')
_PROCESS_EXIT = re.compile(r"Process exited with code (-?\d+)")
_ERROR_LINE = re.compile(
    r"(Error|error|ERROR|Exception|FAILED|failed|Traceback|refused|denied|not found|cannot|Cannot|fatal)")
_DIAGNOSTIC = re.compile(
    r"\b[A-Za-z_.]*(Error|Exception|Exit|Fault)\b\s*:|\berror [A-Z]{1,4}\d{2,6}\b|^E\s{2,}\S|\bfatal:|"
    r"\bpanicked at\b|\bSegmentation fault\b")
_TRACEBACK_HEAD = re.compile(r"^Traceback \(most recent call last\):?$")
_FOLD_NOISE = re.compile(r"\b\d+(?:\.\d+)?\s*(?:ms|s|sec|seconds)\b|\b[0-9a-f]{8,}\b|\d{4}-\d\d-\d\dT[\d:.]+Z?")


@dataclass(frozen=True)
class Candidate:
    evidence_type: EvidenceType
    session_ref: str
    message_ref: str | None
    observed_at: str | None
    revision_ref: str | None
    text: str
    score: float
    sidechain: bool
    fold_key: str
    #: Tie-break after score: a recorded tool outcome (0) outranks the agent's narration of it (1).
    priority: int = 0


def _squash(text: str) -> str:
    return _WS.sub(" ", text).strip()


def trim_cut_edges(text: str, *, cut_start: bool, cut_end: bool) -> str:
    """Drop the partial token at an edge where a read window cut the text.

    A secret split by the cut would otherwise show its visible part, which no redaction pattern can
    recognise any more (a token's tail, a key body without its BEGIN line); a whole token is either shown
    whole, and so redacted, or not at all.
    """
    if cut_start:
        first = _WS.search(text)
        text = text[first.end():] if first else ""
    if cut_end:
        last = max(text.rfind(ch) for ch in " \t\n\r")
        text = text[:last] if last >= 0 else ""
    return text


def _loads(value: str | None) -> Any:
    if not value:
        return None
    try:
        return json.loads(value)
    except ValueError:
        return None


def command_text(call_name: str | None, call_input: str | None) -> str:
    """The command or tool input a human would recognise: Bash command, Codex shell argv, or the tool."""
    name = call_name or "tool"
    parsed = _loads(call_input)
    if isinstance(parsed, dict):
        command = parsed.get("command") or parsed.get("cmd")
        if isinstance(command, list) and command:
            words = [str(w) for w in command]
            if len(words) >= 3 and words[0] in ("bash", "sh", "zsh") and words[1] in ("-lc", "-c"):
                return _squash(words[2])
            return _squash(" ".join(words))
        if isinstance(command, str):
            return _squash(command)
        for key in ("file_path", "path", "pattern", "description", "query", "url"):
            if isinstance(parsed.get(key), str):
                return f"{name} {_squash(parsed[key])}"
    raw = parsed if isinstance(parsed, str) else (call_input or "")
    shown = _squash(raw)
    if len(shown) > 200:
        shown = trim_cut_edges(shown[:200], cut_start=False, cut_end=True) + " …"
    return f"{name} {shown}".strip()


def _result_body(head: str | None, tail: str | None) -> tuple[str, int | None]:
    """The output text (Codex JSON unwrapped) and an exit code if one is stated.

    A non-empty ``tail`` means the cell was longer than the head read: the head was cut at its end and the
    tail at its start, so the partial tokens at both cuts are dropped before anything is shown.
    """
    if tail:
        text = trim_cut_edges(head or "", cut_start=False, cut_end=True) + "\n" + \
            trim_cut_edges(tail, cut_start=True, cut_end=False)
    else:
        text = head or ""
    exit_code: int | None = None
    parsed = _loads(head)
    if isinstance(parsed, dict) and isinstance(parsed.get("output"), str):
        meta = parsed.get("metadata")
        if isinstance(meta, dict) and isinstance(meta.get("exit_code"), int):
            exit_code = meta["exit_code"]
        text = parsed["output"]
    for pattern in (_EXIT_CODE_LINE, _JSON_EXIT, _PROCESS_EXIT):
        found = pattern.search(text if pattern is not _JSON_EXIT else (head or "") + (tail or ""))
        if exit_code is None and found:
            exit_code = int(found.group(1))
    return text, exit_code


def error_line(text: str, terms: Sequence[str]) -> str:
    """The most telling line of an output: one naming a term and an error, else the last error line."""
    lines = [ln.strip(" =\t") for ln in text.splitlines() if ln.strip(" =\t")]
    if not lines:
        return ""
    errors = [ln for ln in lines
              if _ERROR_LINE.search(ln) and not _EXIT_CODE_LINE.match(ln) and not _TRACEBACK_HEAD.match(ln)]
    if not errors:
        return lines[-1]
    lowered_terms = [t for t in terms if t]

    def telling(indexed: tuple[int, str]) -> tuple[bool, int, int]:
        index, line = indexed
        # A diagnostic (an exception name, a compiler error code, pytest's "E" line) first, then the line
        # naming the most query terms, then the latest.
        return (bool(_DIAGNOSTIC.search(line)), sum(t in line.lower() for t in lowered_terms), index)

    return max(enumerate(errors), key=telling)[1]


def _outcome_label(is_error: int, exit_code: int | None) -> tuple[str, bool]:
    failed = bool(is_error) or (exit_code is not None and exit_code != 0)
    if failed:
        return (f"failed exit {exit_code}" if exit_code is not None else "failed"), True
    return "ok", False


def _last_line(text: str) -> str:
    lines = [ln.strip(" =\t") for ln in text.splitlines() if ln.strip(" =\t")]
    return lines[-1] if lines else ""


def _tool_text(row: Mapping[str, Any], terms: Sequence[str]) -> str:
    command = command_text(row.get("call_name"), row.get("call_input"))
    body, exit_code = _result_body(row.get("result_head"), row.get("result_tail"))
    label, failed = _outcome_label(int(row.get("is_error") or 0), exit_code)
    line = error_line(body, terms) if failed else _last_line(body)
    return f"[{label}] {command} => {_squash(line)}"


def _file_text(row: Mapping[str, Any], roots: Sequence[str]) -> str:
    name = row.get("call_name") or "edit"
    path = row.get("file_path")
    if path:
        paths = [relative_to_roots(str(path), roots)]
    else:
        raw = row.get("call_input") or ""
        decoded = _loads(raw)
        patch = decoded if isinstance(decoded, str) else raw
        paths = sorted({relative_to_roots(p.strip(), roots) for p in _PATCH_PATH.findall(patch)})
    status = "failed" if int(row.get("is_error") or 0) else "applied"
    return f"[{name} {status}] " + ", ".join(paths)


def _window_text(row: Mapping[str, Any], window: int, prefix: str = "") -> str:
    raw = str(row.get("body") or "")
    start = int(row.get("window_start") or 1)
    cut_end = len(raw) >= window
    body = _squash(trim_cut_edges(raw, cut_start=start > 1, cut_end=cut_end))
    return f"{prefix}{'…' if start > 1 else ''}{body}{' …' if cut_end else ''}"


def candidate(hit: RawHit, *, terms: Sequence[str], roots: Sequence[str], window: int) -> Candidate:
    row = hit.row
    template_id = hit.template.id
    if template_id in ("prior_failure.tool_results", "tool_outcome.tool_calls"):
        text = _tool_text(row, terms)
    elif template_id == "file_history.tool_calls":
        text = _file_text(row, roots)
    elif template_id == "summary.summaries":
        text = _window_text(row, window, f"[{row.get('summary_kind') or 'summary'}] ")
    elif template_id == "summary.titles":
        text = "[session title] " + _squash(str(row.get("body") or ""))
    else:
        text = _window_text(row, window)
    text = strip_roots(text, roots)  # paths inside a bound root: repository-relative
    sidechain = bool(row.get("sidechain"))
    if sidechain:
        text = "[subagent] " + text
    fold_basis = _FOLD_NOISE.sub("#", text.lower())
    return Candidate(
        evidence_type=hit.evidence_type,
        session_ref=str(row["session_id"]),
        message_ref=str(row["message_ref"]) if row.get("message_ref") is not None else None,
        observed_at=str(row["observed_at"]) if row.get("observed_at") else None,
        revision_ref=str(row["git_branch"]) if row.get("git_branch") else None,
        text=text,
        score=float(row.get("score") or 0),
        sidechain=sidechain,
        fold_key=f"{hit.evidence_type}\x1f{_squash(fold_basis)}",
        priority=0 if template_id.endswith(("tool_results", "tool_calls", "summaries")) else 1,
    )
