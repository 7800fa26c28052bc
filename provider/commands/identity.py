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

Worktrees are taken from ``git worktree list`` only as candidates: one is kept when git does not mark it
prunable and its own ``.git`` points back into this repository's git directory (``gitlink.py``), so a planted
``.git/worktrees/<name>/gitdir`` naming another repository or the home directory binds nothing; the refused
candidates come back with a reason.
"""

from __future__ import annotations

import os
import re
import subprocess
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import Literal, NamedTuple

from ..admission.config import RepositoryIdentity
from ..digest import DigestKey
from .gitlink import main_checkout_of, worktree_of

__all__ = ["GIT_TIMEOUT_S", "Binding", "normalize_remote", "remote_digest", "repository_binding",
           "repository_identity"]

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
    try:
        return _normalize_remote(url.strip())
    except ValueError:  # urlsplit refuses some URLs (``https://[::1/x``: an unclosed IPv6 host)
        return None


def _normalize_remote(text: str) -> str | None:
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


def _remotes(root: str, env: Mapping[str, str]) -> tuple[str, ...]:
    """The normalised remotes (plain: digested only under the install's key, :meth:`Binding.identity`)."""
    out = _git(root, ["remote", "-v"], env)
    if out is None:
        return ()
    found: set[str] = set()
    for line in out.splitlines():
        fields = line.split("\t", 1)
        if len(fields) != 2:
            continue
        normalized = normalize_remote(fields[1].rsplit(" (", 1)[0])
        if normalized:
            found.add(normalized)
    return tuple(sorted(found))


def _same_dir(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return os.path.realpath(a) == os.path.realpath(b)


def _common_dir(root: str, env: Mapping[str, str]) -> str | None:
    """The repository's common git directory, real path (git prints it relative to ``root`` or absolute)."""
    out = _git(root, ["rev-parse", "--git-common-dir"], env)
    if out is None or not out.strip("\n"):
        return None
    return os.path.realpath(os.path.join(root, out.strip("\n")))


class _Record(NamedTuple):
    path: str
    main: bool
    bare: bool
    prunable: bool


def _records(root: str, env: Mapping[str, str]) -> list[_Record]:
    """``git worktree list --porcelain -z``: one record per worktree, the main one first (without ``-z``,
    git before 2.36, a record per block of lines)."""
    out, end = _git(root, ["worktree", "list", "--porcelain", "-z"], env), "\0"
    if out is None:
        out, end = _git(root, ["worktree", "list", "--porcelain"], env), "\n"
    records: list[_Record] = []
    fields: list[str] = []
    for field in (out or "").split(end):
        if field:
            fields.append(field)
            continue
        if fields and fields[0].startswith("worktree "):
            records.append(_Record(fields[0][len("worktree "):], not records, "bare" in fields,
                                   any(f == "prunable" or f.startswith("prunable ") for f in fields)))
        fields = []
    return records


def _judge(record: _Record, common_dir: str | None) -> str | None:
    """Why a worktree candidate is not bound, or None when it is a checkout of this repository."""
    if record.prunable:
        return "prunable"
    if record.bare:
        return "bare"
    if not os.path.isabs(record.path) or not os.path.isdir(record.path):
        return "missing"
    if common_dir is None:
        return "not_this_repository"
    ours = main_checkout_of(record.path, common_dir) if record.main else worktree_of(record.path, common_dir)
    return None if ours else "not_this_repository"


class Binding(NamedTuple):
    """What git and the disk say about the repository holding one root, before anything is keyed."""

    kind: Literal["git", "directory"]
    root_commit: str | None = None
    #: Normalised remotes, plain: kept only in memory, digested under the install's key by :meth:`identity`.
    remotes: tuple[str, ...] = ()
    common_dir: str | None = None
    #: The other worktrees that are checkouts of this repository (absolute, normalised).
    worktrees: tuple[str, ...] = ()
    #: The candidates ``git worktree list`` named that are not, each with its reason.
    refused: tuple[tuple[str, str], ...] = ()

    def identity(self, key: DigestKey, worktrees: Sequence[str] | None = None) -> RepositoryIdentity:
        """The recorded identity, remotes keyed with ``key``; ``worktrees`` replaces the verified list."""
        if self.kind != "git":
            return RepositoryIdentity(kind="directory")
        return RepositoryIdentity(
            kind="git", root_commit=self.root_commit,
            remote_digests=tuple(sorted({remote_digest(r, key) for r in self.remotes})),
            worktrees=tuple(self.worktrees if worktrees is None else worktrees))


def repository_binding(root: str, env: Mapping[str, str] | None = None) -> Binding:
    """The :class:`Binding` of the repository holding ``root`` (a plain directory: ``kind="directory"``).

    Every other worktree git lists is judged (``root`` and its top level excluded): kept when it is a checkout
    of this repository, else refused with a reason. Never raises.
    """
    git_env = _git_env(os.environ if env is None else env)
    top = _git(root, ["rev-parse", "--show-toplevel"], git_env)
    if top is None or not top.strip():
        return Binding(kind="directory")
    toplevel = os.path.normpath(top.strip()) if os.path.isabs(top.strip()) else None
    common_dir = _common_dir(root, git_env)
    kept: list[str] = []
    refused: list[tuple[str, str]] = []
    for record in _records(root, git_env):
        path = os.path.normpath(record.path) if os.path.isabs(record.path) else record.path
        if _same_dir(path, root) or (toplevel is not None and _same_dir(path, toplevel)):
            continue
        reason = _judge(record._replace(path=path), common_dir)
        if reason is None:
            kept.append(path)
        else:
            refused.append((path, reason))
    return Binding(kind="git", root_commit=_root_commit(root, git_env), remotes=_remotes(root, git_env),
                   common_dir=common_dir, worktrees=tuple(dict.fromkeys(kept)), refused=tuple(refused))


def repository_identity(root: str, *, include_worktrees: bool, key: DigestKey,
                        env: Mapping[str, str] | None = None) -> tuple[RepositoryIdentity, list[str]]:
    """The identity of the repository holding ``root`` and the worktree roots to bind; remote digests are
    keyed with ``key``.

    The identity lists every other worktree of this repository (absolute paths, the root itself excluded;
    see :func:`repository_binding`); the returned list holds the same paths when ``include_worktrees`` is
    set, else it is empty. Never raises.
    """
    binding = repository_binding(root, env)
    return binding.identity(key), list(binding.worktrees) if include_worktrees else []
