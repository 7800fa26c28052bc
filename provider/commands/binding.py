"""What ``enable`` may bind: how broad a root is, and whether it overlaps another enabled scope (issue 30).

A root is one repository's checkout. ``/`` holds every repository of the machine (and the scope's path test
cannot match under it); the home directory holds the operator's whole life; a root that holds another
repository would hand that repository's sessions over as this one's. Two scopes with a common source and
roots that are the same directory, or one inside the other, read the same sessions under different ids.

The breadth test walks the root: :data:`WALK_DEPTH` levels, the most a ``~/src/host/org/repo`` layout puts
a repository below any parent an operator would name (each deeper level costs a listing of every directory
at the level above). It lists directories without following symlinks (a session under a symlink is judged by
its real path, outside the root), skips what it cannot read and stops after :data:`WALK_ENTRIES` entries, so
a huge tree answers "too large to tell" in well under a second instead of hanging ``enable``.
"""

from __future__ import annotations

import contextlib
import os
import pwd
from collections import deque
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from ..admission.config import EnabledScope
from ..paths import lexical, within
from .gitlink import owner

__all__ = ["WALK_DEPTH", "WALK_ENTRIES", "Breadth", "breadth", "home_dirs", "overlaps", "real_roots_of"]

#: Directories are looked into down to this many levels below a root (a repository at level 3:
#: ``ROOT/host/org/repo/.git``).
WALK_DEPTH = 3
#: Directory entries looked at, at most, per root; more and the root is "too large to tell".
WALK_ENTRIES = 100_000


class Breadth(NamedTuple):
    """Why a root is too broad to bind (``reason`` None: it is not), and at which level below it."""

    reason: str | None
    level: int = 0


def _real(path: str) -> str | None:
    try:
        return lexical(os.path.realpath(path))
    except (OSError, ValueError):
        return None


def home_dirs(env_home: str | None) -> frozenset[str]:
    """The real paths of this user's home directory: ``$HOME`` and the password database's entry."""
    found = {env_home} if env_home else set()
    with contextlib.suppress(KeyError, OSError):
        found.add(pwd.getpwuid(os.getuid()).pw_dir)
    return frozenset(r for r in map(_real, found) if r)


def _foreign_below(root: str, common_dir: str | None) -> Breadth:
    """Breadth-first walk of ``root`` for a ``.git`` that is not this repository's (see the module doc)."""
    queue: deque[tuple[str, int]] = deque([(root, 0)])
    seen = 0
    while queue:
        directory, level = queue.popleft()
        if level == WALK_DEPTH:  # the last level: only whether it is a checkout, no listing
            seen += 1
            if owner(directory, common_dir) == "other":
                return Breadth("contains_another_repository", level)
            continue
        try:
            entries = os.scandir(directory)
        except (OSError, ValueError):
            continue
        with entries:
            for entry in entries:
                seen += 1
                if seen > WALK_ENTRIES:
                    return Breadth("too_large_to_check", level)
                if entry.name == ".git":
                    if level and owner(directory, common_dir) == "other":
                        return Breadth("contains_another_repository", level)
                    continue
                try:
                    if entry.is_dir(follow_symlinks=False):
                        queue.append((entry.path, level + 1))
                except OSError:
                    continue
    return Breadth(None)


def breadth(root: str, common_dir: str | None, homes: Iterable[str]) -> Breadth:
    """Whether ``root`` (the repository at ``common_dir``, None for a plain directory) is too broad to bind:
    ``filesystem_root``, ``home_directory``, ``contains_home_directory``, ``contains_another_repository``
    (a repository or a worktree of another one inside it; a worktree or submodule of its own is fine) or
    ``too_large_to_check`` (the walk's entry bound was reached first)."""
    real = _real(root)
    if real is None or real == "/":
        return Breadth("filesystem_root")
    for home in homes:
        if real == home:
            return Breadth("home_directory")
        if within(home, real):
            return Breadth("contains_home_directory")
    return _foreign_below(real, common_dir)


def real_roots_of(scope: EnabledScope) -> tuple[str, ...]:
    """A scope's roots by real path: as recorded at enable, else resolved now (a config from before)."""
    recorded = tuple(r for r in map(lexical, scope.real_roots) if r)
    return recorded or tuple(r for r in map(_real, scope.roots) if r)


def overlaps(roots: Sequence[str], sources: Sequence[str],
             others: Iterable[EnabledScope]) -> list[tuple[int, EnabledScope, str]]:
    """Every (position in ``roots``, other scope, common source) where a root (real path) is the same
    directory as one of the other scope's roots, or one contains the other, and the scopes share a source:
    both would read the same sessions."""
    found: list[tuple[int, EnabledScope, str]] = []
    for other in others:
        common = [s for s in sources if s in other.sources]
        if not common:
            continue
        theirs = real_roots_of(other)
        for position, mine in enumerate(roots):
            if any(within(mine, t) or within(t, mine) for t in theirs):
                found.append((position, other, common[0]))
                break
    return found
