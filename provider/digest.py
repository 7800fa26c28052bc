"""Every digest the provider makes: canonical JSON, content digests, and keyed public digests.

Two kinds, never mixed up:

* ``content_digest`` / ``bytes_digest``: plain sha256, for what is not private and must be comparable across
  installs (a schema snapshot, a qualification report, a template, the index revision inside the private
  result).
* ``DigestKey.of`` / ``DigestKey.of_text``: HMAC-SHA256 under a per-install key, for every public digest of
  something private or guessable (a receipt's query, scope, result and index-revision digests; a root and a
  repository remote in ``status`` and the ``enable`` summary; the database path in ``check-schema --format
  json``). Without the key an unsalted digest would let anyone confirm a guess
  ("did the agent search for this CVE?"); with it, the same install still gives the same digests, so replay
  and dedupe work.

The key is 32 random bytes, hex-encoded, in ``digest.key`` beside ``config.json`` (mode 0600). It is created
only by the config writer (``enable``), atomically and never over an existing key; a query never creates it:
a config with an enabled scope and no key is refused with ``config_invalid`` (nothing is written at run time).
It is read as the config is (a regular file, never through a link, private: the config's own check, stricter
here: no one else may even read it); ``rotate-key`` (``provider/commands/rotation.py``) replaces it.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from .errors import ConfigInvalid
from .inputs import private_problem
from .outputs import write_file_in

KEY_FILE: Final = "digest.key"
KEY_BYTES: Final = 32
#: Read at most this much of the key file (the key is 64 hex characters and a newline).
_KEY_READ_LIMIT: Final = 256
CONTENT_PREFIX: Final = "sha256:"
KEYED_PREFIX: Final = "hmac-sha256:"


def canonical_json(value: Any) -> bytes:
    """Sorted keys, no insignificant whitespace, UTF-8, no NaN: the same value always gives the same bytes."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode("utf-8")


def bytes_digest(data: bytes) -> str:
    """``sha256:<hex>`` of raw bytes (unkeyed)."""
    return CONTENT_PREFIX + hashlib.sha256(data).hexdigest()


def content_digest(value: Any) -> str:
    """``sha256:<hex>`` of a value's canonical JSON (unkeyed: for content that is not private)."""
    return bytes_digest(canonical_json(value))


@dataclass(frozen=True, slots=True)
class DigestKey:
    """The per-install key of the public digests: immutable, equal by its secret, which its repr never shows."""

    secret: bytes = field(repr=False)

    def of(self, value: Any) -> str:
        """``hmac-sha256:<hex>`` of a value's canonical JSON."""
        return KEYED_PREFIX + hmac.new(self.secret, canonical_json(value), hashlib.sha256).hexdigest()

    def of_text(self, text: str) -> str:
        """``hmac-sha256:<hex>`` of a string's bytes (a local path: surrogates kept as the file system gave them)."""
        data = text.encode("utf-8", "surrogateescape")
        return KEYED_PREFIX + hmac.new(self.secret, data, hashlib.sha256).hexdigest()


def scope_basis(agent_id: str, project_id: str, repository_id: str, sources: Sequence[str],
                roots: Sequence[str]) -> dict[str, Any]:
    """What a scope digest is taken over: the ids, the sorted sources and the sorted bound roots. Keyed with the
    install's key it is the receipts' ``scope_digest``, the replay report's, and what ``enable --stage 2``
    compares."""
    return {"agent_id": agent_id, "project_id": project_id, "repository_id": repository_id,
            "sources": sorted(sources), "roots": sorted(roots)}


def key_path(config_path: Path) -> Path:
    """Where the key of the install whose config is ``config_path`` lives (beside it)."""
    return config_path.parent / KEY_FILE


_MISSING_KEY = "the digest key file beside the config file is missing: run `rotate-key` to make a new one"
_BAD_KEY = ("the digest key file beside the config file is unreadable or malformed: run `rotate-key` to replace "
            "it")
#: The fix for a key others could read: make it private, and replace it (its secret may be known).
_KEY_FIX = "chmod 600, then run `rotate-key` (others may have read it)"


def load_key(config_path: Path) -> DigestKey:
    """The install's key; ``ConfigInvalid`` (with a fix) when it is missing, unreadable, malformed, or not private
    (the config's check, :func:`provider.inputs.private_problem`: owned by another user, or readable or writable
    by anyone else; its directory writable by anyone else)."""
    path = key_path(config_path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise ConfigInvalid(_MISSING_KEY) from None
    except OSError:
        raise ConfigInvalid(_BAD_KEY) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ConfigInvalid(_BAD_KEY)
        problem = private_problem(st, "the digest key file", _KEY_FIX, mask=0o077)
        if problem is None:
            problem = private_problem(os.stat(path.absolute().parent), "the config directory", "chmod 700")
        if problem is not None:
            raise ConfigInvalid(problem)
        raw = os.read(fd, _KEY_READ_LIMIT)
    except OSError:
        raise ConfigInvalid(_BAD_KEY) from None
    finally:
        os.close(fd)
    try:
        secret = bytes.fromhex(raw.decode("ascii").strip())
    except (UnicodeDecodeError, ValueError):
        raise ConfigInvalid(_BAD_KEY) from None
    if len(secret) != KEY_BYTES:
        raise ConfigInvalid(_BAD_KEY)
    return DigestKey(secret)


def key_if_present(config_path: Path) -> DigestKey | None:
    """The install's key when a well-formed, private one exists beside ``config_path``, else None (for the
    operator diagnostics that run without a config, such as ``check-schema``: they omit a keyed digest rather
    than fail or fall back to an unkeyed one)."""
    try:
        return load_key(config_path)
    except ConfigInvalid:
        return None


def new_secret() -> bytes:
    """A fresh key's secret (``enable``'s first key, ``rotate-key``'s next one)."""
    import secrets  # it loads random and base64: only the config writers make a key

    return secrets.token_bytes(KEY_BYTES)


def write_key(config_path: Path, secret: bytes, *, replace: bool) -> None:
    """Write ``secret`` as the install's key: a new 0600 file created exclusively, fsynced, then given the name
    (``provider/outputs.py``); with ``replace`` over the old key, else only where there is none
    (``FileExistsError``). A link or a non-regular file at the name is ``UnsafeWriteTarget``."""
    path = key_path(config_path)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    write_file_in(path.parent, path.name, (secret.hex() + "\n").encode("ascii"), role="the digest key file",
                  mode=0o600, exclusive=not replace)


def ensure_key(config_path: Path) -> DigestKey:
    """The install's key, created first when there is none (the config writer's job, never a query's).

    Created atomically and never over an existing key (:func:`write_key`): when a concurrent ``enable`` made one
    first, that key is kept and returned. A link planted at the name is refused (``UnsafeWriteTarget``).
    """
    try:
        regular = stat.S_ISREG(os.lstat(key_path(config_path)).st_mode)
    except FileNotFoundError:
        regular = False
    if not regular:  # absent, or a link or other non-file there, which write_key refuses
        with contextlib.suppress(FileExistsError):
            write_key(config_path, new_secret(), replace=False)
    return load_key(config_path)
