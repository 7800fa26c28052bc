"""Whose checkout is a directory: its ``.git`` read as untrusted input, never through git.

``enable`` must tell a worktree or submodule of the repository it binds from another repository (issue 30):
``git worktree list`` repeats whatever a ``.git/worktrees/<name>/gitdir`` file says, and anyone who can write
there can name any directory. So the directory's own ``.git`` is read: a regular file (a symlink is not
followed), at most :data:`MAX_LINK_BYTES`, one line ``gitdir: <path>`` (a relative path is taken from the
directory, as git does), or a ``.git`` directory. Nothing here raises; what cannot be read is "not ours".
"""

from __future__ import annotations

import os
import stat
from typing import Literal

__all__ = ["MAX_LINK_BYTES", "Owner", "link_target", "main_checkout_of", "owner", "read_small", "worktree_of"]

#: A ``.git`` or ``gitdir`` file holds one path; anything longer is not one git wrote.
MAX_LINK_BYTES = 4096
Owner = Literal["this", "other", "none"]


def read_small(path: str) -> str | None:
    """The text of the regular file ``path`` (not a symlink) without its line end, when it is one line of at
    most :data:`MAX_LINK_BYTES` bytes of UTF-8 without NUL; else None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except (OSError, ValueError):
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        raw = os.read(fd, MAX_LINK_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(raw) > MAX_LINK_BYTES or b"\x00" in raw:
        return None
    try:
        text = raw.decode("utf-8").rstrip("\r\n")
    except UnicodeDecodeError:
        return None
    return None if "\n" in text or "\r" in text else text


def _real(base: str, path: str) -> str | None:
    try:
        return os.path.realpath(path if os.path.isabs(path) else os.path.join(base, path))
    except (OSError, ValueError):
        return None


def link_target(directory: str) -> str | None:
    """The real path a ``directory/.git`` file names (``gitdir: <path>``), or None when it is no such file."""
    text = read_small(os.path.join(directory, ".git"))
    if text is None or not text.startswith("gitdir: ") or not text[len("gitdir: "):]:
        return None
    return _real(directory, text[len("gitdir: "):])


def owner(directory: str, common_dir: str | None) -> Owner:
    """``none`` when ``directory`` holds no ``.git``; ``this`` when it is a checkout of the repository whose
    common git directory is ``common_dir`` (its ``.git`` is that directory, or a file naming
    ``<common_dir>/worktrees/<name>`` or a submodule's ``<common_dir>/modules/...``); ``other`` otherwise,
    a ``.git`` that cannot be read included."""
    dot_git = os.path.join(directory, ".git")
    try:
        st = os.lstat(dot_git)
    except FileNotFoundError:
        return "none"
    except (OSError, ValueError):
        return "other"
    if common_dir is None:
        return "other"
    common = _real("/", common_dir)
    if common is None:
        return "other"
    if not stat.S_ISREG(st.st_mode):
        return "this" if _real(directory, ".git") == common and os.path.isdir(dot_git) else "other"
    target = link_target(directory)
    if target is None:
        return "other"
    parent = os.path.dirname(target)
    if parent == os.path.join(common, "worktrees") or target.startswith(os.path.join(common, "modules") + "/"):
        return "this"
    return "other"


def worktree_of(directory: str, common_dir: str) -> bool:
    """True when ``directory`` is a linked worktree of the repository at ``common_dir``, both ways: its
    ``.git`` file names ``<common_dir>/worktrees/<name>``, and that entry's ``gitdir`` file names this
    ``.git`` file back. A forged ``worktrees/<name>/gitdir`` pointing at another checkout or at a plain
    directory fails the first test; a copied ``.git`` file the second."""
    common = _real("/", common_dir)
    target = link_target(directory)
    if common is None or target is None or os.path.dirname(target) != os.path.join(common, "worktrees"):
        return False
    back = read_small(os.path.join(target, "gitdir"))
    if not back:
        return False
    return _real(target, back) == _real(directory, ".git")


def main_checkout_of(directory: str, common_dir: str) -> bool:
    """True when ``directory/.git`` is the directory ``common_dir`` itself (the main checkout)."""
    dot_git = os.path.join(directory, ".git")
    common = _real("/", common_dir)
    return common is not None and os.path.isdir(dot_git) and _real(directory, ".git") == common
