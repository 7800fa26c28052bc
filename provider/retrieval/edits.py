"""Read file edits from a tool call: which files changed, how, and what the change was.

Every edit form the agents write is read here, from the stored ``tool_calls.name`` and ``input_json``:

* Codex ``apply_patch`` grammar (``*** Begin Patch`` … ``*** Add File:`` / ``*** Update File:`` with optional
  ``*** Move to:`` / ``*** Delete File:`` … ``*** End Patch``), arriving as an ``apply_patch`` function call
  (``{"input": patch}``), a freeform ``custom_tool_call`` (``input_json`` is one JSON string), a shell argv
  ``["apply_patch", patch]``, or a ``bash -lc`` script running ``apply_patch <<'EOF' … EOF``;
* Claude ``Edit`` (``old_string`` → ``new_string``), ``MultiEdit`` (``edits`` list; ``file_path`` only in the
  input), ``Write`` (``content``) and ``NotebookEdit`` (``notebook_path``, ``new_source``).

The input may be cut (a head read, or Obelisk's own ``...[truncated]``): whatever cannot be parsed as JSON is
read as patch text, so the file names still come through.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

from .cells import cell_text, load_json


@functools.cache
def _patch_lines() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """The ``*** Add/Update/Delete File:`` and ``*** Move to:`` lines of a patch (compiled on first use: only
    a patch is read with them)."""
    return re.compile(r"^\*\*\* (Add|Update|Delete) File: (.+?)\s*$"), re.compile(r"^\*\*\* Move to: (.+?)\s*$")


_CLAUDE_EDITS = frozenset({"edit", "multiedit", "write", "notebookedit", "str_replace_based_edit_tool"})
PATCH_MARKER = "*** Begin Patch"


@dataclass(slots=True)
class FileEdit:
    """One file's change: ``op`` is add, update, delete, write, edit or notebook."""

    op: str
    path: str
    _: KW_ONLY
    moved_to: str | None = None
    symbols: list[str] = field(default_factory=list)  # ``@@`` context lines (the function or class touched)
    removed: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)


def _unescaped(raw: str) -> str:
    """Best-effort text of a cut JSON value (escapes decoded) so a cut patch is still readable."""
    return raw.replace("\\n", "\n").replace('\\"', '"').replace("\\t", "\t").replace("\\\\", "\\")


def parse_patch(text: str) -> list[FileEdit]:
    """The files of an ``apply_patch`` text (everything outside Begin/End Patch is ignored)."""
    start = text.find(PATCH_MARKER)
    if start < 0:
        return []
    edits: list[FileEdit] = []
    current: FileEdit | None = None
    patch_op, patch_move = _patch_lines()
    for line in text[start:].split("\n")[1:]:
        if line.startswith("*** End Patch"):
            break
        op = patch_op.match(line)
        if op:
            current = FileEdit(op=op.group(1).lower(), path=op.group(2))
            edits.append(current)
            continue
        if current is None:
            continue
        move = patch_move.match(line)
        if move:
            current.moved_to = move.group(1)
        elif line.startswith("@@"):
            symbol = line[2:].strip()
            if symbol:
                current.symbols.append(symbol)
        elif line.startswith("+"):
            current.added.append(line[1:])
        elif line.startswith("-"):
            current.removed.append(line[1:])
    return edits


def _patch_text(parsed: Any, raw: str) -> str | None:
    """The patch carried by any Codex form, or None when the input holds none."""
    if isinstance(parsed, str):
        return parsed
    if isinstance(parsed, dict):
        for key in ("input", "patch"):
            if isinstance(parsed.get(key), str) and PATCH_MARKER in parsed[key]:
                return str(parsed[key])
        command = parsed.get("command") or parsed.get("cmd")
        words = [str(w) for w in command] if isinstance(command, list) else [str(command or "")]
        for word in words:
            if PATCH_MARKER in word:
                return word  # ["apply_patch", patch] or ["bash", "-lc", "apply_patch <<'EOF' … EOF"]
        return None
    return _unescaped(raw) if PATCH_MARKER in raw else None


def _lines(value: Any) -> list[str]:
    if isinstance(value, list):
        value = "".join(str(v) for v in value)
    return str(value).split("\n") if isinstance(value, str) and value else []


def _claude_edits(name: str, parsed: dict[str, Any], file_path: str | None) -> list[FileEdit]:
    path = file_path or parsed.get("file_path") or parsed.get("notebook_path") or parsed.get("path")
    if not isinstance(path, str) or not path:
        return []
    kind = name.lower()
    if kind == "write":
        return [FileEdit(op="write", path=path, added=_lines(parsed.get("content")))]
    if kind == "notebookedit":
        return [FileEdit(op="notebook", path=path, added=_lines(parsed.get("new_source")))]
    edit = FileEdit(op="edit", path=path)
    listed = parsed.get("edits")
    pairs: list[Any] = listed if isinstance(listed, list) else [parsed]
    for pair in pairs:
        if isinstance(pair, dict):
            edit.removed.extend(_lines(pair.get("old_string") or pair.get("old_str")))
            edit.added.extend(_lines(pair.get("new_string") or pair.get("new_str")))
    return [edit]


def read_edits(call_name: object, call_input: object, file_path: str | None = None) -> list[FileEdit]:
    """Every file a tool call edits, in the order named. Empty when the call edits nothing. The cells may be of
    any type (``retrieval.cells``)."""
    name = cell_text(call_name)
    raw = cell_text(call_input)
    parsed = load_json(raw)
    if name.lower() in _CLAUDE_EDITS:
        if isinstance(parsed, dict):
            return _claude_edits(name, parsed, file_path)
        if file_path:
            return [FileEdit(op=name.lower(), path=file_path)]
        found = re.search(r'"(?:file_path|notebook_path)"\s*:\s*"([^"]+)"', raw)  # cut input
        return [FileEdit(op=name.lower(), path=found.group(1))] if found else []
    patch = _patch_text(parsed, raw)
    return parse_patch(patch) if patch else []


def edit_paths(edits: Sequence[FileEdit]) -> list[str]:
    out: list[str] = []
    for edit in edits:
        out.append(edit.path)
        if edit.moved_to:
            out.append(edit.moved_to)
    return out
