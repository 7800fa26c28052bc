"""Listing directories and finding transcript units in a home, per provider layout (Claude, Codex, Kimi, Pi).

Every listing goes through :func:`scan`, which checks the assessment's deadline between entries, so a huge
directory ends a request at its deadline as a long file read does.
"""

from __future__ import annotations

import os
import stat as stat_mod
from collections.abc import Callable, Iterator, Mapping
from itertools import islice
from typing import Final

from .context import Ctx, Unit

#: Directory entries read between two deadline checks.
ENTRIES_PER_CHECK: Final = 256


def scan(ctx: Ctx, path: str) -> list[os.DirEntry[str]]:
    """Entries of a directory, ``ctx.check`` called before every ``ENTRIES_PER_CHECK`` of them (its exception
    ends the listing); a missing directory is empty, an unreadable one is recorded."""
    entries: list[os.DirEntry[str]] = []
    try:
        with os.scandir(path) as it:
            while True:
                if ctx.check is not None:
                    ctx.check()
                batch = list(islice(it, ENTRIES_PER_CHECK))
                entries += batch
                if len(batch) < ENTRIES_PER_CHECK:
                    return entries
    except FileNotFoundError:
        return []
    except (OSError, ValueError):
        ctx.reasons.add("unreadable_home")
        return []


def is_subdir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def is_file(entry: os.DirEntry[str], suffix: str) -> bool:
    try:
        return entry.name.endswith(suffix) and entry.is_file()
    except OSError:
        return False


def claude_slug(path: str) -> str:
    """Claude Code's project directory name for a path: every character but ASCII letters and digits is ``-``."""
    return "".join(c if c.isascii() and c.isalnum() else "-" for c in path)


def _claude_session_dir(ctx: Ctx, session_dir: str, parent: str) -> Iterator[Unit]:
    subagents = os.path.join(session_dir, "subagents")
    for entry in scan(ctx, subagents):
        if is_file(entry, ".jsonl"):
            yield Unit(entry.path, "claude", "jsonl", parent)
    for run in scan(ctx, os.path.join(subagents, "workflows")):
        if is_subdir(run):
            for entry in scan(ctx, run.path):
                if is_file(entry, ".jsonl"):
                    yield Unit(entry.path, "claude", "jsonl", parent)
    for entry in scan(ctx, os.path.join(session_dir, "workflows")):
        if is_file(entry, ".json"):
            yield Unit(entry.path, "claude", "workflow_json", parent)


def list_claude_project(ctx: Ctx, project: str, mains: list[str], units: list[Unit]) -> None:
    """The units of one Claude project directory: its main transcripts' paths onto ``mains`` (each stands for
    ``Unit(path, "claude", "jsonl")``: most are only judged, so none is built), subagent and workflow-run units
    onto ``units``."""
    for entry in scan(ctx, project):
        if is_file(entry, ".jsonl"):
            mains.append(entry.path)
        elif is_subdir(entry):
            units.extend(_claude_session_dir(ctx, entry.path, os.path.join(project, entry.name + ".jsonl")))


def _walk_claude(ctx: Ctx, home: str) -> Iterator[Unit]:
    for project in scan(ctx, os.path.join(home, ".claude", "projects")):
        if is_subdir(project):
            mains: list[str] = []
            units: list[Unit] = []
            list_claude_project(ctx, project.path, mains, units)
            yield from (Unit(path, "claude", "jsonl") for path in mains)
            yield from units


def walk_jsonl_tree(ctx: Ctx, top: str, source: str) -> Iterator[Unit]:
    """Every ``*.jsonl`` below ``top`` (depth first)."""
    stack = [top]
    while stack:
        for entry in scan(ctx, stack.pop()):
            if is_subdir(entry):
                stack.append(entry.path)
            elif is_file(entry, ".jsonl"):
                yield Unit(entry.path, source, "jsonl")


def _walk_codex(ctx: Ctx, home: str) -> Iterator[Unit]:
    codex = os.path.join(home, ".codex")
    yield from walk_jsonl_tree(ctx, os.path.join(codex, "sessions"), "codex")
    archived = os.path.join(codex, "archived_sessions")
    if any(path.startswith(archived + os.sep) for path in ctx.rows):
        yield from walk_jsonl_tree(ctx, archived, "codex")


def _walk_kimi(ctx: Ctx, home: str) -> Iterator[Unit]:
    for workspace in scan(ctx, os.path.join(home, ".kimi-code", "sessions")):
        if not is_subdir(workspace):
            continue
        for session in scan(ctx, workspace.path):
            if is_subdir(session) and kimi_files(ctx, session.path)[0]:
                yield Unit(session.path, "kimi", "kimi_dir")


def _walk_pi(ctx: Ctx, home: str) -> Iterator[Unit]:
    yield from walk_jsonl_tree(ctx, os.path.join(home, ".pi", "agent", "sessions"), "pi")


#: Every unit of a source in a home (the full walk; ``candidates`` narrows Claude and Codex to a scope).
WALKERS: Final[Mapping[str, Callable[[Ctx, str], Iterator[Unit]]]] = {
    "claude": _walk_claude,
    "codex": _walk_codex,
    "kimi": _walk_kimi,
    "pi": _walk_pi,
}


def kimi_files(ctx: Ctx, session_dir: str) -> tuple[list[str], str | None]:
    """(``state.json`` if any, then the wire files; ``state.json`` or None) of one Kimi session directory."""
    wires: list[str] = []
    state: str | None = None
    for entry in scan(ctx, session_dir):
        if entry.name == "state.json" and is_file(entry, ".json"):
            state = entry.path
        elif entry.name == "wire.jsonl" and is_file(entry, ".jsonl"):
            wires.append(entry.path)
    for agent in scan(ctx, os.path.join(session_dir, "agents")):
        wire = os.path.join(agent.path, "wire.jsonl")
        if is_subdir(agent) and _is_regular(ctx, wire):
            wires.append(wire)
    if state is not None:
        return [state, *wires], state
    return wires, None


def _is_regular(ctx: Ctx, path: str) -> bool:
    try:
        return stat_mod.S_ISREG(ctx.stat(path).st_mode)
    except (OSError, ValueError):
        return False
