"""Failure signatures, commands and edited files of one tool call, normalised so that repeats compare equal.

A signature holds no absolute path (paths under the scope's roots become repository-relative), no number and
no hash (masked as ``#`` and ``<h>``), so the same failure met on another day, line or commit reads the same.
The tool output is read by the evidence reader (:func:`provider.retrieval.evidence.tool_outcome_of`), the
command by :func:`provider.retrieval.evidence.command_text` and the edits by
:func:`provider.retrieval.edits.read_edits`: one reader of each, shared with retrieval.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from ....paths import relative_to_roots, strip_roots
from ....retrieval.edits import edit_paths, read_edits
from ....retrieval.evidence import command_text, tool_outcome_of

Kind = Literal["failure", "command", "edit"]
KINDS: Final[tuple[Kind, ...]] = ("failure", "command", "edit")

_HASH = re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,64}\b", re.IGNORECASE)
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_SPACE = re.compile(r"\s+")
#: An exception or error class name: ``ModuleNotFoundError``, ``sqlalchemy.exc.OperationalError``.
_ERROR_CLASS = re.compile(r"\b((?:[A-Za-z_][\w]*\.)*[A-Z][\w]*(?:Error|Exception|Exit|Interrupt))\b")
_DIAGNOSTIC = re.compile(r"\b(error|failed|failure|fatal|denied|refused|not found|cannot|unable)\b", re.IGNORECASE)


def mask(text: str, roots: Sequence[str]) -> str:
    """``text`` repository-relative, hashes and numbers masked, whitespace squashed."""
    text = strip_roots(text, roots)
    text = _HASH.sub("<h>", text)
    text = _NUMBER.sub("#", text)
    return _SPACE.sub(" ", text).strip()


def is_command(call_input: str | None) -> bool:
    """A shell call: its input names a ``command`` (Claude Bash, Codex shell/exec)."""
    try:
        parsed = json.loads(call_input or "")
    except ValueError:
        return False
    return isinstance(parsed, dict) and bool(parsed.get("command") or parsed.get("cmd"))


@dataclass(frozen=True)
class Diagnostic:
    """The error class when the output names one, else the first diagnostic line, masked."""

    error_class: str | None
    line: str

    @property
    def text(self) -> str:
        return self.error_class or self.line


def diagnostic(output: str, roots: Sequence[str], exit_code: int | None) -> Diagnostic:
    found = _ERROR_CLASS.search(output)
    if found:
        return Diagnostic(found.group(1), found.group(1))
    for line in output.splitlines():
        if _DIAGNOSTIC.search(line):
            return Diagnostic(None, mask(line, roots)[:120])
    return Diagnostic(None, f"exit {exit_code}" if exit_code is not None else "failed")


@dataclass(frozen=True)
class Signature:
    """One normalised key a repeat is recognised by, and the request terms LoopX would derive from it."""

    kind: Kind
    key: str
    terms: tuple[str, ...]  # canonical situation fields: the command, the error class, the file


def signatures(row: Mapping[str, Any], roots: Sequence[str]) -> list[Signature]:
    """The signatures of one joined tool call row (``call_name``, ``call_input``, ``file_path``,
    ``result_head``, ``result_tail``, ``is_error``)."""
    name, raw = row.get("call_name"), row.get("call_input")
    out: list[Signature] = []
    if is_command(raw):
        command = mask(command_text(name, raw), roots)
        if command:
            out.append(Signature("command", command, (_term(command_text(name, raw), roots),)))
            if row.get("result_head") is not None:
                outcome, _tail, _cut = tool_outcome_of(row)
                if outcome.failed:
                    diag = diagnostic(outcome.output, roots, outcome.exit_code)
                    terms = (_term(command_text(name, raw), roots),) + \
                        ((diag.error_class,) if diag.error_class else ())
                    out.append(Signature("failure", f"{command} ⟂ {diag.text}", terms))
    for path in edit_paths(read_edits(name, raw, row.get("file_path"))):
        rel = relative_to_roots(path, roots)
        if rel != path or not path.startswith("/"):
            out.append(Signature("edit", mask(rel, ()), (rel,)))
    return out


def _term(command: str, roots: Sequence[str]) -> str:
    """A request term from a command: repository-relative, at most 120 characters (the contract's terms are
    short phrases; the head of a command is what names it)."""
    return strip_roots(_SPACE.sub(" ", command).strip(), roots)[:120]
