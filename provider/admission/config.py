"""The provider's configuration: enabled scopes, ceilings, deadline and recency window.

Default-off: a missing config file means no enabled scope. The file lives in the platform config directory
(``platformdirs``), or where ``OBELISK_SESSION_EVIDENCE_CONFIG`` says, and is written atomically with
owner-only permissions.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .._version import PROVIDER_ID
from ..digest import ensure_key
from ..errors import ConfigInvalid
from ..paths import Roots

CONFIG_ENV = "OBELISK_SESSION_EVIDENCE_CONFIG"
APP_NAME = PROVIDER_ID
MAX_CONFIG_BYTES = 1024 * 1024


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class Ceilings(_Model):
    """Upper bounds no request may exceed (a request above one is rejected, naming it)."""

    max_sessions: int = Field(default=50, ge=1, le=1000)
    max_items: int = Field(default=50, ge=1, le=1000)
    max_snippet_chars: int = Field(default=2000, ge=40, le=20000)
    max_total_chars: int = Field(default=32000, ge=100, le=1_000_000)
    max_query_terms: int = Field(default=16, ge=1, le=64)
    max_term_chars: int = Field(default=200, ge=3, le=1000)


class RepositoryIdentity(_Model):
    kind: Literal["git", "directory"]
    root_commit: str | None = None
    remote_digests: tuple[str, ...] = ()
    worktrees: tuple[str, ...] = ()


class QualificationRecord(_Model):
    report_digest: str
    passed: bool
    generated_at: str
    #: ``replay``: the scope's own history (``qualify --replay``); ``synthetic``: the generated corpus
    #: (``qualify --self-test``), accepted only with ``--accept-synthetic-qualification``, recorded here.
    kind: Literal["replay", "synthetic"] = "synthetic"
    synthetic_accepted: bool = False


class EnabledScope(_Model):
    agent_id: str
    project_id: str
    repository_id: str
    sources: tuple[str, ...]
    roots: tuple[str, ...]
    #: The real paths of ``roots`` (symlinks resolved) recorded at enable; empty in configs written before.
    real_roots: tuple[str, ...] = ()
    stage: Literal[1, 2] = 1
    enabled_at: str = ""
    repository_identity: RepositoryIdentity | None = None
    qualification: QualificationRecord | None = None

    def bound_roots(self) -> Roots:
        """The roots as retrieval compares them: every spelling for the SQL prefilter, real paths to decide."""
        return Roots.of(self.roots, self.real_roots)


class ProviderConfig(_Model):
    config_version: Literal[1] = 1
    deadline_ms: int = Field(default=2000, ge=50, le=60000)
    recency_days: int = Field(default=365, ge=1, le=36500)
    revision_slack_days: int = Field(default=7, ge=0, le=3650)
    ceilings: Ceilings = Ceilings()
    transcript_homes: tuple[str, ...] = ()
    scopes: tuple[EnabledScope, ...] = ()


def default_config_path(env: Mapping[str, str]) -> Path:
    override = env.get(CONFIG_ENV)
    if override:
        return Path(override)
    from platformdirs import user_config_dir  # imported lazily: only when no override is given

    return Path(user_config_dir(APP_NAME)) / "config.json"


def _private_problem(st: os.stat_result, what: str, path: Path, fix: str) -> str | None:
    """Why ``st`` is not private to this user (as ssh judges its files), or None."""
    if st.st_uid not in (os.geteuid(), 0):
        return f"the provider configuration {what} {path} is owned by another user; fix: chown $USER {path}"
    if st.st_mode & 0o022:
        return f"the provider configuration {what} {path} is group- or world-writable; fix: {fix} {path}"
    return None


def load_config(path: Path, *, must_exist: bool = False) -> ProviderConfig:
    """Read the config; a missing file at the default path is the default (nothing enabled).

    ``must_exist`` is set when the operator named the file (``--config`` or ``$OBELISK_SESSION_EVIDENCE_CONFIG``):
    then a missing file is ``config_invalid``, naming the path. The file must be a regular file, owned by this
    user (or root) and writable by no one else, in a directory of which the same holds; it is read up to
    :data:`MAX_CONFIG_BYTES`. Error details name the config path (the operator's own, for the local operator).
    """
    from ..inputs import NotRegularFile, open_regular, read_fd

    try:
        fd, st = open_regular(path)
    except FileNotFoundError:
        if must_exist:
            raise ConfigInvalid(f"the provider configuration {path} does not exist") from None
        return ProviderConfig()
    except NotRegularFile:
        raise ConfigInvalid(f"the provider configuration {path} is not a regular file") from None
    except OSError:
        raise ConfigInvalid("provider configuration could not be read") from None
    try:
        problem = _private_problem(st, "file", path, "chmod 600")
        if problem is None:
            parent = path.absolute().parent
            problem = _private_problem(os.stat(parent), "directory", parent, "chmod 700")
        if problem is not None:
            raise ConfigInvalid(problem)
        raw = read_fd(fd, MAX_CONFIG_BYTES)
    except OSError:
        raise ConfigInvalid("provider configuration could not be read") from None
    finally:
        os.close(fd)
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigInvalid(f"the provider configuration is larger than {MAX_CONFIG_BYTES} bytes")
    try:
        return ProviderConfig.model_validate_json(raw, strict=False)
    except ValidationError:
        raise ConfigInvalid from None


def save_config(path: Path, config: ProviderConfig) -> None:
    """Write atomically: a temp file in the same directory (0600), fsync, rename over the old file.

    The install's digest key (``provider/digest.py``) is created beside the config first when there is none.
    """
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    ensure_key(path)
    data = json.dumps(config.model_dump(mode="json"), indent=2, sort_keys=True) + "\n"
    fd, tmp = tempfile.mkstemp(prefix=".config-", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
