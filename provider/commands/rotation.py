"""``rotate-key``: replace the install's digest key, and re-make under the new key every keyed digest the config
stores.

The config stores one kind of keyed digest: each git scope's remote digests (``RepositoryIdentity``). It keeps
no remote URL, so they are made again from the roots' git remotes, as ``enable`` made them (``identity.py``).
Every other keyed digest (receipts, ``status``'s root digests, ``check-schema``'s ``db_digest``, a replay
report's scope digest) is computed when it is used and follows the new key by itself: digests from before the
rotation no longer match (no replay or dedupe across it), and a replay report made before it no longer
qualifies its scope for ``enable --stage 2`` (run ``qualify --replay`` again).

Each write is atomic and never through a link (``provider/outputs.py``); the order of the three writes is
explained where they happen. Output: one JSON line, as ``enable``'s (``{"ok": false, "error": {...}}`` on
failure). Exit codes: 0 rotated, 1 the config could not be read or written, 2 a link or non-regular file where
the key or the config is written (``unsafe_write_target``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import TextIO

from ..admission.config import EnabledScope, load_config, write_config_file
from ..digest import KEY_FILE, DigestKey, new_secret, write_key
from ..errors import ConfigInvalid, UnsafeWriteTarget
from ..outputs import refuse_unsafe_target
from .identity import repository_identity

__all__ = ["rotate_key"]

EXIT_OK, EXIT_CONFIG, EXIT_REFUSED = 0, 1, 2


def _remote_digests(scope: EnabledScope, key: DigestKey) -> tuple[str, ...]:
    """The scope's remote digests under ``key``, read again from its roots' git remotes."""
    return tuple(sorted({digest for root in scope.roots
                         for digest in repository_identity(root, include_worktrees=False, key=key)[0].remote_digests}))


def _with_remotes(scope: EnabledScope, digests: Iterable[str]) -> EnabledScope:
    identity = scope.repository_identity
    if identity is None or identity.kind != "git":
        return scope
    return scope._replace(repository_identity=identity._replace(remote_digests=tuple(sorted(set(digests)))))


def _stored(scope: EnabledScope) -> tuple[str, ...]:
    return scope.repository_identity.remote_digests if scope.repository_identity else ()


def _fail(out: TextIO, code: str, detail: str, exit_code: int) -> int:
    out.write(json.dumps({"ok": False, "error": {"code": code, "detail": detail}}) + "\n")
    out.flush()
    return exit_code


def rotate_key(*, config_path: Path, out: TextIO, must_exist: bool = False) -> int:
    """Rotate the key of the install whose config is ``config_path`` (see the module docstring)."""
    try:
        config = load_config(config_path, must_exist=must_exist)
    except ConfigInvalid as err:
        return _fail(out, err.code, f"{err.detail}; nothing was changed", EXIT_CONFIG)
    has_config = os.path.lexists(config_path)
    secret = new_secret()
    key = DigestKey(secret)
    new = [_remote_digests(s, key) if s.repository_identity and s.repository_identity.kind == "git" else ()
           for s in config.scopes]
    both = config._replace(scopes=tuple(_with_remotes(s, (*_stored(s), *d)) for s, d in zip(config.scopes, new,
                                                                                              strict=True)))
    rotated = config._replace(scopes=tuple(_with_remotes(s, d) for s, d in zip(config.scopes, new, strict=True)))
    try:
        refuse_unsafe_target(config_path.parent, KEY_FILE, role="the digest key file")
        # Config with old+new digests, then the key, then config with new only: every crash leaves them agreeing.
        if has_config:
            write_config_file(config_path, both)
        write_key(config_path, secret, replace=True)
        if has_config:
            write_config_file(config_path, rotated)
    except UnsafeWriteTarget as err:
        return _fail(out, err.code, err.detail, EXIT_REFUSED)
    except OSError:
        return _fail(out, "config_write_failed", "the digest key or the config file could not be written; run "
                     "`rotate-key` again", EXIT_CONFIG)
    out.write(json.dumps({
        "ok": True, "action": "rotated", "scopes": len(config.scopes),
        "remote_digests_before": sum(len(_stored(s)) for s in config.scopes),
        "remote_digests_after": sum(len(_stored(s)) for s in rotated.scopes),
    }) + "\n")
    out.flush()
    return EXIT_OK
