"""Repository identity of an enabled root: git root commit, remote digests and worktrees, or a directory.

Git is asked through ``git -C <root> ...`` only: read-only subcommands, a 2 s timeout each, stdin closed,
no terminal prompt, optional locks off, fsmonitor off, and with every environment variable that would point
git at another repository removed. Any failure (git missing, not a repository, dubious ownership, timeout,
an empty repository) degrades to less identity, never to an exception.

Remote URLs are normalised to ``host/path`` (``git@github.com:acme/acme-api.git``,
``https://github.com/acme/acme-api`` and ``ssh://git@github.com/acme/acme-api.git`` all become
``github.com/acme/acme-api``) and only their keyed digests are kept (HMAC-SHA256 under the install's key,
``provider/digest.py``): credentials embedded in a URL never reach the config, neither does the URL itself, and
an unkeyed digest that would let anyone confirm a guessed remote ("is this agent working on acme/secret?")
is never made.
"""

from __future__ import annotations

import os
import re
import subprocess
import urllib.parse
from collections.abc import Mapping, Sequence

from ..digest import DigestKey
from .config import RepositoryIdentity

__all__ = ["GIT_TIMEOUT_S", "normalize_remote", "remote_digest", "repository_identity"]

GIT_TIMEOUT_S = 2.0
#: Variables that redirect git to another repository, index or object store than the one at ``-C root``.
_GIT_LOCATION_VARS = frozenset({
    "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR", "GIT_NAMESPACE", "GIT_CEILING_DIRECTORIES", "GIT_DISCOVERY_ACROSS_FILESYSTEM",
    "GIT_PREFIX", "GIT_QUARANTINE_PATH",
})
_SCP_LIKE = re.compile(r"^(?:[^@/\s]+@)?(\[[^\]]+\]|[^:/\s]+):(?!//)(.*)$")
_HEX40 = re.compile(r"^[0-9a-f]{40}(?:[0-9a-f]{24})?$")


def remote_digest(normalized: str, key: DigestKey) -> str:
    """The keyed digest of a normalised remote (``hmac-sha256:<hex>``)."""
    return key.of_text(normalized)


def _clean_path(path: str) -> str:
    path = path.strip().replace("\\", "/")
    path = re.sub(r"/{2,}", "/", path).strip("/")
    while path.endswith(".git"):
        path = path[: -len(".git")].rstrip("/")
    return path


def normalize_remote(url: str) -> str | None:
    """``host/path`` for a remote URL (lower-cased, no user, no port, no ``.git``), or None if empty.

    Local remotes (a path or ``file://``) normalise to their cleaned absolute path.
    """
    text = url.strip()
    if not text:
        return None
    if "://" in text:
        parts = urllib.parse.urlsplit(text)
        if parts.scheme.lower() == "file":
            local = _clean_path(urllib.parse.unquote(parts.path))
            return ("/" + local).lower() if local else None
        host = (parts.hostname or "").lower()
        path = _clean_path(urllib.parse.unquote(parts.path))
        if path.startswith("~"):
            path = path[1:].lstrip("/")
        joined = f"{host}/{path}" if path else host
        return joined.lower() or None
    scp = _SCP_LIKE.match(text)
    if scp and not text.startswith(("/", ".")):
        host = scp.group(1).strip("[]").lower()
        path = _clean_path(scp.group(2))
        if path.startswith("~"):
            path = path[1:].lstrip("/")
        return f"{host}/{path}".lower() if path else host
    local = _clean_path(text)
    return ("/" + local).lower() if local else None


def _git_env(env: Mapping[str, str]) -> dict[str, str]:
    clean = {k: v for k, v in env.items() if k not in _GIT_LOCATION_VARS}
    clean.update({"GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"})
    return clean


def _git(root: str, args: Sequence[str], env: Mapping[str, str]) -> str | None:
    """stdout of one git command, or None on any failure (never raises)."""
    cmd = ["git", "--no-optional-locks", "-c", "core.fsmonitor=false", "-C", root, *args]
    try:
        done = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, timeout=GIT_TIMEOUT_S,
                              env=dict(env), check=False)
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    if done.returncode != 0:
        return None
    return done.stdout.decode("utf-8", "surrogateescape")


def _root_commit(root: str, env: Mapping[str, str]) -> str | None:
    out = _git(root, ["rev-list", "--max-parents=0", "HEAD"], env)
    if out is None:
        return None
    commits = sorted(line.strip() for line in out.splitlines() if _HEX40.match(line.strip()))
    return commits[0] if commits else None


def _remote_digests(root: str, env: Mapping[str, str], key: DigestKey) -> tuple[str, ...]:
    out = _git(root, ["remote", "-v"], env)
    if out is None:
        return ()
    digests: set[str] = set()
    for line in out.splitlines():
        fields = line.split("\t", 1)
        if len(fields) != 2:
            continue
        url = fields[1].rsplit(" (", 1)[0]
        normalized = normalize_remote(url)
        if normalized:
            digests.add(remote_digest(normalized, key))
    return tuple(sorted(digests))


def _same_dir(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def _worktrees(root: str, toplevel: str | None, env: Mapping[str, str]) -> tuple[str, ...]:
    out = _git(root, ["worktree", "list", "--porcelain"], env)
    if out is None:
        return ()
    found: list[str] = []
    for line in out.splitlines():
        if not line.startswith("worktree "):
            continue
        path = line[len("worktree "):]
        if not os.path.isabs(path):
            continue
        path = os.path.normpath(path)
        if _same_dir(path, root) or (toplevel is not None and _same_dir(path, toplevel)):
            continue
        if os.path.isdir(path):
            found.append(path)
    return tuple(dict.fromkeys(found))


def repository_identity(root: str, *, include_worktrees: bool, key: DigestKey,
                        env: Mapping[str, str] | None = None) -> tuple[RepositoryIdentity, list[str]]:
    """The identity of the repository holding ``root`` and the worktree roots to bind; remote digests are
    keyed with ``key``.

    The identity lists every other worktree git knows of (absolute paths, the root itself excluded); the
    returned list holds the same paths when ``include_worktrees`` is set, else it is empty. Never raises.
    """
    git_env = _git_env(os.environ if env is None else env)
    top = _git(root, ["rev-parse", "--show-toplevel"], git_env)
    if top is None or not top.strip():
        return RepositoryIdentity(kind="directory"), []
    toplevel = os.path.normpath(top.strip()) if os.path.isabs(top.strip()) else None
    worktrees = _worktrees(root, toplevel, git_env)
    identity = RepositoryIdentity(
        kind="git",
        root_commit=_root_commit(root, git_env),
        remote_digests=_remote_digests(root, git_env, key),
        worktrees=worktrees,
    )
    return identity, list(worktrees) if include_worktrees else []
