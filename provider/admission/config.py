"""The provider's configuration: enabled scopes, ceilings, deadline and recency window.

Default-off: a missing config file means no enabled scope. The file lives in the platform config directory
(``platformdirs``), or where ``OBELISK_SESSION_EVIDENCE_CONFIG`` says, and is written atomically with
owner-only permissions. The Obelisk database a command reads by default (``$OBELISK_DB``, else
``~/.obelisk/obelisk.sqlite``) is named here too, beside the config it is configured with.
"""

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, NamedTuple

from .._version import PROVIDER_ID
from ..contract.parse import DuplicateKey, object_without_duplicates
from ..digest import ensure_key
from ..errors import ConfigInvalid
from ..inputs import NotRegularFile, open_regular, private_problem, read_fd
from ..outputs import write_file_in
from ..paths import Roots

CONFIG_ENV = "OBELISK_SESSION_EVIDENCE_CONFIG"
DB_ENV = "OBELISK_DB"
APP_NAME = PROVIDER_ID
MAX_CONFIG_BYTES = 1024 * 1024


class Ceilings(NamedTuple):
    """Upper bounds no request may exceed (a request above one is rejected, naming it)."""

    max_sessions: int = 50
    max_items: int = 50
    max_snippet_chars: int = 2000
    max_total_chars: int = 32000
    max_query_terms: int = 16
    max_term_chars: int = 200


#: The range each ceiling may be configured to, inclusive.
CEILING_RANGES: dict[str, tuple[int, int]] = {
    "max_sessions": (1, 1000), "max_items": (1, 1000), "max_snippet_chars": (40, 20000),
    "max_total_chars": (100, 1_000_000), "max_query_terms": (1, 64), "max_term_chars": (3, 1000),
}


class RepositoryIdentity(NamedTuple):
    kind: Literal["git", "directory"]
    root_commit: str | None = None
    remote_digests: tuple[str, ...] = ()
    worktrees: tuple[str, ...] = ()


class QualificationRecord(NamedTuple):
    report_digest: str
    passed: bool
    generated_at: str
    #: ``replay``: the scope's own history (``qualify --replay``); ``synthetic``: the generated corpus
    #: (``qualify --self-test``), accepted only with ``--accept-synthetic-qualification``, recorded here.
    kind: Literal["replay", "synthetic"] = "synthetic"
    synthetic_accepted: bool = False


#: The checks of ``enable`` an operator may waive for one scope, each recorded in it (``allowances``).
ALLOWANCES: tuple[str, ...] = ("broad_root", "shared_root")


class EnabledScope(NamedTuple):
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
    #: What ``enable`` was told to allow for this scope and needed: ``broad_root`` (``--allow-broad-root``),
    #: ``shared_root`` (``--allow-shared-root``); ``status`` shows them.
    allowances: tuple[str, ...] = ()

    def bound_roots(self) -> Roots:
        """The roots as retrieval compares them: every spelling for the SQL prefilter, real paths to decide."""
        return Roots.of(self.roots, self.real_roots)


#: The range of each numeric setting, inclusive.
SETTING_RANGES: dict[str, tuple[int, int]] = {
    "deadline_ms": (50, 60000), "recency_days": (1, 36500), "revision_slack_days": (0, 3650),
}


class ProviderConfig(NamedTuple):
    config_version: Literal[1] = 1
    deadline_ms: int = 2000
    recency_days: int = 365
    revision_slack_days: int = 7
    ceilings: Ceilings = Ceilings()
    transcript_homes: tuple[str, ...] = ()
    scopes: tuple[EnabledScope, ...] = ()


# --- reading the file: exact JSON types, known keys only, every number in its range ----------------------


class _Bad(ValueError):
    """The config does not validate (never carries its content)."""


def _object(value: Any, required: tuple[str, ...], optional: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(value, dict) or not set(required) <= value.keys() or not value.keys() <= {*required,
                                                                                               *optional}:
        raise _Bad
    return value


def _str(value: Any) -> str:
    if not isinstance(value, str):
        raise _Bad
    return value


def _bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise _Bad
    return value


def _int(value: Any, bounds: tuple[int, int]) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not bounds[0] <= value <= bounds[1]:
        raise _Bad
    return value


def _list(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise _Bad
    return value


def _strings(value: Any) -> tuple[str, ...]:
    return tuple(_str(v) for v in _list(value))


def _one_of(value: Any, allowed: tuple[Any, ...]) -> Any:
    if isinstance(value, bool) or type(value) not in {type(a) for a in allowed} or value not in allowed:
        raise _Bad
    return value


def _identity(value: Any) -> RepositoryIdentity | None:
    if value is None:
        return None
    data = _object(value, ("kind",), ("root_commit", "remote_digests", "worktrees"))
    commit = data.get("root_commit")
    return RepositoryIdentity(kind=_one_of(data["kind"], ("git", "directory")),
                              root_commit=None if commit is None else _str(commit),
                              remote_digests=_strings(data.get("remote_digests", [])),
                              worktrees=_strings(data.get("worktrees", [])))


def _qualification(value: Any) -> QualificationRecord | None:
    if value is None:
        return None
    data = _object(value, ("report_digest", "passed", "generated_at"), ("kind", "synthetic_accepted"))
    return QualificationRecord(report_digest=_str(data["report_digest"]), passed=_bool(data["passed"]),
                               generated_at=_str(data["generated_at"]),
                               kind=_one_of(data.get("kind", "synthetic"), ("replay", "synthetic")),
                               synthetic_accepted=_bool(data.get("synthetic_accepted", False)))


def _scope(value: Any) -> EnabledScope:
    data = _object(value, ("agent_id", "project_id", "repository_id", "sources", "roots"),
                   ("real_roots", "stage", "enabled_at", "repository_identity", "qualification", "allowances"))
    return EnabledScope(agent_id=_str(data["agent_id"]), project_id=_str(data["project_id"]),
                        repository_id=_str(data["repository_id"]), sources=_strings(data["sources"]),
                        roots=_strings(data["roots"]), real_roots=_strings(data.get("real_roots", [])),
                        stage=_one_of(data.get("stage", 1), (1, 2)), enabled_at=_str(data.get("enabled_at", "")),
                        repository_identity=_identity(data.get("repository_identity")),
                        qualification=_qualification(data.get("qualification")),
                        allowances=tuple(_one_of(a, ALLOWANCES) for a in _strings(data.get("allowances", []))))


def _ceilings(value: Any) -> Ceilings:
    data = _object(value, (), tuple(CEILING_RANGES))
    defaults = Ceilings()
    return Ceilings(**{name: _int(data.get(name, getattr(defaults, name)), bounds)
                       for name, bounds in CEILING_RANGES.items()})


def config_from_json(value: Any) -> ProviderConfig:
    """The config a JSON document describes, or :class:`ConfigInvalid` (naming nothing from the file)."""
    try:
        data = _object(value, (), ("config_version", "ceilings", "transcript_homes", "scopes", *SETTING_RANGES))
        defaults = ProviderConfig()
        scopes = _list(data.get("scopes", []))
        return ProviderConfig(
            config_version=_one_of(data.get("config_version", 1), (1,)),
            ceilings=_ceilings(data.get("ceilings", {})),
            transcript_homes=_strings(data.get("transcript_homes", [])),
            scopes=tuple(_scope(s) for s in scopes),
            **{name: _int(data.get(name, getattr(defaults, name)), bounds) for name, bounds in SETTING_RANGES.items()},
        )
    except _Bad:
        raise ConfigInvalid from None


def _plain(value: Any) -> Any:
    """A config value as JSON data: a record (a NamedTuple) as an object of its fields, any other tuple as a
    list of its items."""
    if isinstance(value, tuple):
        names = getattr(value, "_fields", None)
        if names is not None:
            return {name: _plain(getattr(value, name)) for name in names}
        return [_plain(item) for item in value]
    return value


def config_to_json(config: ProviderConfig) -> dict[str, Any]:
    """The JSON document :func:`config_from_json` reads back to ``config``."""
    return json.loads(json.dumps(_plain(config)))  # type: ignore[no-any-return]  # a fresh JSON document


def default_config_path(env: Mapping[str, str]) -> Path:
    override = env.get(CONFIG_ENV)
    if override:
        return Path(override)
    from platformdirs import user_config_dir  # heavy (it loads tempfile): only when no config is named

    return Path(user_config_dir(APP_NAME)) / "config.json"


def default_db_path(env: Mapping[str, str]) -> Path:
    """The Obelisk database a command reads when none is named: ``$OBELISK_DB``, else Obelisk's own place."""
    override = env.get(DB_ENV)
    return Path(override) if override else Path(env.get("HOME", str(Path.home()))) / ".obelisk" / "obelisk.sqlite"


def load_config(path: Path, *, must_exist: bool = False) -> ProviderConfig:
    """Read the config; a missing file at the default path is the default (nothing enabled).

    ``must_exist`` is set when the operator named the file (``--config`` or ``$OBELISK_SESSION_EVIDENCE_CONFIG``):
    then a missing file is ``config_invalid``. The file must be a regular file, owned by this user (or root)
    and writable by no one else, in a directory of which the same holds; it is read up to
    :data:`MAX_CONFIG_BYTES` and may not repeat a key. Error details name the config by its role ("the config
    file", "the config directory"), never by its path: they reach the response envelope (``status`` shows the
    path to the local operator).
    """
    try:
        fd, st = open_regular(path)
    except FileNotFoundError:
        if must_exist:
            raise ConfigInvalid(f"the config file named by --config or ${CONFIG_ENV} does not exist") from None
        return ProviderConfig()
    except NotRegularFile:
        raise ConfigInvalid("the config file is not a regular file") from None
    except OSError:
        raise ConfigInvalid("the config file could not be read") from None
    try:
        problem = private_problem(st, "the config file", "chmod 600")
        if problem is None:
            problem = private_problem(os.stat(path.absolute().parent), "the config directory", "chmod 700")
        if problem is not None:
            raise ConfigInvalid(problem)
        raw = read_fd(fd, MAX_CONFIG_BYTES)
    except OSError:
        raise ConfigInvalid("the config file could not be read") from None
    finally:
        os.close(fd)
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigInvalid(f"the config file is larger than {MAX_CONFIG_BYTES} bytes")
    try:
        document = json.loads(raw, object_pairs_hook=object_without_duplicates)
    except DuplicateKey:
        raise ConfigInvalid("the config file repeats a key") from None
    except (ValueError, RecursionError):  # also bad UTF-8, integers past the digit limit, deep nesting
        raise ConfigInvalid from None
    return config_from_json(document)


def save_config(path: Path, config: ProviderConfig) -> None:
    """Write the config (:func:`write_config_file`); the install's digest key (``provider/digest.py``) is
    created beside it first when there is none."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    ensure_key(path)
    write_config_file(path, config)


def write_config_file(path: Path, config: ProviderConfig) -> None:
    """Write the config file alone, atomically, mode 0600, never through a link (``provider/outputs.py``)."""
    data = json.dumps(config_to_json(config), indent=2, sort_keys=True) + "\n"
    write_file_in(path.parent, path.name, data.encode("utf-8"), role="the config file", mode=0o600)
