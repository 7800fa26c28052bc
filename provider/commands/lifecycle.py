"""``enable`` and ``disable``: the only writers of the provider config, and of nothing else.

The provider is off until an operator enables one (agent_id, project_id, repository_id) scope; one agent and
project may have several repositories, each its own entry. ``enable`` checks every root, checks each
``--source`` against the sources the index knows (read-only, one fixed statement: provider/commands/sources.py),
records the repository identity, the agent's sources and the stage, and adds the entry. An entry with the same
key is replaced only with ``--replace`` (else ``enable`` refuses, naming the ids it found); no other entry is
ever touched, so it can never widen another scope. A source the index does not know is refused, naming the
known ones, unless ``--allow-unknown-source`` (an agent that has not run yet); when the index is missing or
unreadable the sources cannot be checked: ``enable`` goes ahead and says so (``sources_checked: false``), and
``status`` reports a scope that matches no session. A qualification report, required for ``--stage 2``, is
checked whenever one is given (also at stage 1, where a report that does not qualify this scope is refused
rather than silently ignored). ``disable`` removes one repository's entry (``--repository-id``) or every
repository of the agent and project, listing them. Only ``enable`` opens the Obelisk database (read-only);
neither writes any file but the config.

What a scope binds is checked before anything is written (``binding.py``, issue 30): a root that is ``/``,
the home directory, or holds another repository is refused (``root_too_broad``, ``root_too_large``) unless
``--allow-broad-root``; a bound root that overlaps another enabled scope's with a common source is refused
(``root_overlaps_scope``) unless ``--allow-shared-root``. A waiver is recorded in the scope (``allowances``)
only when it was needed. A worktree git lists is bound (``--include-worktrees``) only when it is a checkout
of this repository (``identity.py``), not too broad either, and holds no bound root; the others are reported
(``worktrees_refused``: keyed digests and reasons).

Output: one JSON line on ``out``. Success prints a summary whose roots are digests only; failure prints
``{"ok": false, "error": {"code": ..., "detail": ...}}`` with a content-free detail (roots are named by
their position, never by their path). Exit codes: 0 done, 2 refused (bad argument, not enabled,
qualification required), 1 the config could not be read or written.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, NamedTuple, TextIO

from ..admission.config import (
    EnabledScope,
    ProviderConfig,
    QualificationRecord,
    RepositoryIdentity,
    load_config,
    save_config,
)
from ..digest import KEYED_PREFIX, DigestKey, bytes_digest, ensure_key, key_path, load_key, scope_basis
from ..errors import ConfigInvalid
from ..inputs import NotRegularFile, read_regular_file
from ..paths import within
from . import binding
from .binding import breadth, home_dirs, overlaps
from .identity import Binding, repository_binding
from .sources import known_sources

__all__ = ["MAX_ID_CHARS", "MAX_REPORT_BYTES", "SOURCE_RE", "disable_scope", "enable_scope", "normalize_root",
           "scope_summary"]

EXIT_OK, EXIT_CONFIG, EXIT_REFUSED = 0, 1, 2
MAX_ID_CHARS = 256
MAX_REPORT_BYTES = 4 * 1024 * 1024
#: A source name as Obelisk writes it in ``sessions.source`` (claude, codex, kimi, pi, ...).
SOURCE_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,63}$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class _Refused(Exception):
    """A refusal of ``enable``/``disable``: ``code`` is one of ``errors.LIFECYCLE_CODES``."""

    def __init__(self, code: str, detail: str, exit_code: int = EXIT_REFUSED) -> None:
        super().__init__(detail)
        self.code = code
        self.detail = detail
        self.exit_code = exit_code


def _emit(out: TextIO, document: Mapping[str, Any]) -> None:
    out.write(json.dumps(document, ensure_ascii=False, separators=(",", ":"), sort_keys=False) + "\n")
    out.flush()


def _fail(out: TextIO, err: _Refused) -> int:
    _emit(out, {"ok": False, "error": {"code": err.code, "detail": err.detail}})
    return err.exit_code


def _check_id(name: str, value: str) -> str:
    if not isinstance(value, str) or not value:
        raise _Refused("invalid_argument", f"--{name} must not be empty")
    if value != value.strip() or _CONTROL.search(value) or len(value) > MAX_ID_CHARS:
        raise _Refused("invalid_argument",
                       f"--{name} must be at most {MAX_ID_CHARS} characters, without control characters "
                       "or surrounding whitespace")
    return value


def _check_sources(sources: Sequence[str] | None) -> tuple[str, ...]:
    if not sources:
        raise _Refused("invalid_argument", "at least one --source is required")
    for index, source in enumerate(sources, 1):
        if not isinstance(source, str) or not SOURCE_RE.match(source):
            raise _Refused("invalid_argument",
                           f"--source #{index} must match [a-z0-9][a-z0-9_.-]* (at most 64 characters)")
    return tuple(dict.fromkeys(sources))


def normalize_root(root: str) -> str:
    """``os.path.abspath`` without a trailing separator (``/`` stays ``/``)."""
    path = os.path.abspath(root)
    return path.rstrip(os.sep) or os.sep


def _check_roots(roots: Sequence[str] | None) -> tuple[str, ...]:
    if not roots:
        raise _Refused("invalid_argument", "at least one --root is required")
    normalized: list[str] = []
    for index, root in enumerate(roots, 1):
        if not isinstance(root, str) or not root or "\x00" in root:
            raise _Refused("root_not_directory", f"--root #{index} is not an existing directory")
        path = normalize_root(root)
        if not os.path.isdir(path):
            raise _Refused("root_not_directory", f"--root #{index} is not an existing directory")
        normalized.append(path)
    return tuple(dict.fromkeys(normalized))


def _merge_identity(identities: Sequence[RepositoryIdentity]) -> RepositoryIdentity:
    """One identity for the scope: the first git root's kind and root commit, the union of remotes/worktrees.

    Roots that belong to different repositories are the operator's explicit choice; their root commits are
    not merged (the first one is recorded), their remote digests and worktrees are.
    """
    gits = [ident for ident in identities if ident.kind == "git"]
    if not gits:
        return RepositoryIdentity(kind="directory")
    remotes = sorted({d for ident in gits for d in ident.remote_digests})
    worktrees = list(dict.fromkeys(w for ident in gits for w in ident.worktrees))
    root_commit = next((ident.root_commit for ident in gits if ident.root_commit), None)
    return RepositoryIdentity(kind="git", root_commit=root_commit, remote_digests=tuple(remotes),
                              worktrees=tuple(worktrees))


def _read_report(path: str) -> tuple[bytes, dict[str, Any]]:
    try:  # an untrusted file: a FIFO or a device there is refused, never opened blocking
        raw = read_regular_file(path, MAX_REPORT_BYTES)
    except NotRegularFile:
        raise _Refused("qualification_required", "the qualification report is not a regular file") from None
    except OSError:
        raise _Refused("qualification_required", "the qualification report could not be read") from None
    if len(raw) > MAX_REPORT_BYTES:
        raise _Refused("qualification_required", "the qualification report is too large")
    try:
        report = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise _Refused("qualification_required", "the qualification report is not JSON") from None
    if not isinstance(report, dict):
        raise _Refused("qualification_required", "the qualification report is not a JSON object")
    return raw, report


def _sources_match(value: object, sources: Sequence[str]) -> bool:
    if not isinstance(value, list) or not all(isinstance(s, str) for s in value):
        return False
    return set(value) == set(sources)


#: A qualification report older than this many days is refused (``enable --max-report-age-days``).
MAX_REPORT_AGE_DAYS = 30


def _qualification(path: str, *, agent_id: str, project_id: str, repository_id: str,
                   sources: Sequence[str], roots: Sequence[str], key: DigestKey | None,
                   accept_synthetic: bool = False, max_age_days: int = MAX_REPORT_AGE_DAYS) -> QualificationRecord:
    """Accept a passing report written by ``qualify`` for exactly this scope, or refuse.

    A replay report (``qualify --replay``) must carry this scope's keyed digest (``provider/digest.py``
    ``scope_basis`` under the install's ``key``, the receipts' scope digest; no key yet: no replay report can
    match); a generated-corpus report (``qualify --self-test``) is accepted only with
    ``accept_synthetic``. Either is refused when older than ``max_age_days``.
    """
    raw, report = _read_report(path)
    if report.get("passed") is not True:
        raise _Refused("qualification_required", "the qualification report did not pass")
    scope = report.get("scope")
    if not isinstance(scope, dict):
        raise _Refused("qualification_required", "the qualification report names no scope")
    wanted = {"agent_id": agent_id, "project_id": project_id, "repository_id": repository_id}
    if any(scope.get(key) != value for key, value in wanted.items()):
        raise _Refused("qualification_required", "the qualification report is for another scope")
    for holder in (scope, report):
        if "sources" in holder and not _sources_match(holder["sources"], sources):
            raise _Refused("qualification_required", "the qualification report is for other sources")
    generated_at = report.get("generated_at")
    if not isinstance(generated_at, str) or not generated_at:
        raise _Refused("qualification_required", "the qualification report has no generated_at")
    try:
        made = datetime.fromisoformat(generated_at.replace("Z", "+00:00"))
        age_days = (datetime.now(UTC) - made).total_seconds() / 86400.0
    except (ValueError, TypeError):
        raise _Refused("qualification_required", "the qualification report's generated_at is not a time") from None
    if made.tzinfo is None:
        raise _Refused("qualification_required", "the qualification report's generated_at has no time zone")
    if age_days > max_age_days or age_days < -1:
        raise _Refused("qualification_required", f"the qualification report is {age_days:.0f} days old; at most "
                       f"{max_age_days} days are accepted (--max-report-age-days): run `qualify --replay` again")
    kind: Literal["replay", "synthetic"] = "replay" if report.get("kind") == "replay" else "synthetic"
    if kind == "replay":
        from .qualify.replay.document import REPLAY_FORMAT  # its package loads all of qualification

        if report.get("format") != REPLAY_FORMAT:
            raise _Refused("qualification_required", "the replay report has an unknown format")
        wanted_digest = key.of(scope_basis(agent_id, project_id, repository_id, sources, roots)) if key else None
        if wanted_digest is None or report.get("scope_digest") != wanted_digest:
            raise _Refused("qualification_required", "the replay report is for another scope: its keyed scope "
                           "digest differs from this scope's (other sources or roots, or another install); run "
                           "`qualify --replay` for this scope")
    elif not accept_synthetic:
        raise _Refused("qualification_required", "the qualification report comes from a generated corpus "
                       "(qualify --self-test), not this scope's history; run `qualify --replay`, or pass "
                       "--accept-synthetic-qualification to accept synthetic evidence (RFC §9)")
    return QualificationRecord(report_digest=bytes_digest(raw), passed=True, generated_at=generated_at,
                               kind=kind, synthetic_accepted=kind == "synthetic")


def _load(config_path: Path) -> ProviderConfig:
    try:
        return load_config(config_path)
    except ConfigInvalid:
        raise _Refused("config_invalid", "the provider configuration is unreadable or invalid; "
                       "it was left unchanged", EXIT_CONFIG) from None


def _save(config_path: Path, config: ProviderConfig) -> None:
    try:
        save_config(config_path, config)
    except OSError:
        raise _Refused("config_write_failed", "the provider configuration could not be written",
                       EXIT_CONFIG) from None


def _digest_key(config_path: Path) -> DigestKey:
    """The install's key, made beside the config on the first enable (``ensure_key``; never replaced)."""
    try:
        return ensure_key(config_path)
    except ConfigInvalid as err:  # made, but not private (its folder): the reason and fix ``status`` gives
        raise _Refused("config_invalid", err.detail, EXIT_CONFIG) from None
    except OSError:
        raise _Refused("config_write_failed", "the digest key beside the provider configuration could not be "
                       "created or read", EXIT_CONFIG) from None


def _existing_key(config_path: Path, config: ProviderConfig) -> DigestKey | None:
    """The install's key (a replay report is keyed with it); None only when there is none and no scope is enabled
    yet (the first enable makes it). A key that is there but unusable (not private, malformed, a link), or
    missing while scopes keyed with it are enabled, is refused with ``status``'s reason and fix: a new key made
    here would leave their digests under a key nobody has (``rotate-key`` re-makes them)."""
    try:
        return load_key(config_path)
    except ConfigInvalid as err:
        if config.scopes or os.path.lexists(key_path(config_path)):
            raise _Refused("config_invalid", err.detail, EXIT_CONFIG) from None
        return None


def _utc_now() -> str:
    return datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def scope_summary(scope: EnabledScope, key: DigestKey | None) -> dict[str, Any]:
    """The public view of one enabled scope: ids, sources, stage, keyed root and remote digests (no root
    digest without the install's key). No plain path, no unkeyed digest."""
    identity = scope.repository_identity
    return {
        "agent_id": scope.agent_id,
        "project_id": scope.project_id,
        "repository_id": scope.repository_id,
        "sources": list(scope.sources),
        "stage": scope.stage,
        "enabled_at": scope.enabled_at,
        "roots": len(scope.roots),
        "root_digests": [key.of_text(root) for root in scope.roots] if key else [],
        "repository_kind": identity.kind if identity else None,
        "root_commit": identity.root_commit if identity else None,
        # Keyed remote digests only: a config written before they were keyed holds plain sha256 digests,
        # which would confirm a guessed remote; they are not shown (``enable --replace`` re-keys them).
        "remote_digests": [d for d in identity.remote_digests if d.startswith(KEYED_PREFIX)] if identity else [],
        "worktrees_found": len(identity.worktrees) if identity else 0,
        "qualified": scope.qualification is not None and scope.qualification.passed,
        "qualification_kind": scope.qualification.kind if scope.qualification else None,
        "synthetic_qualification_accepted": bool(scope.qualification and scope.qualification.synthetic_accepted),
        "allowances": list(scope.allowances),
    }


def _draft_scope(*, agent_id: str, project_id: str, repository_id: str, sources: Sequence[str],
                 roots: Sequence[str], stage: int, qualification_report: str | None) -> EnabledScope:
    """The scope as the arguments give it, every argument checked; no repository identity yet (that needs the
    install's digest key, which is made only once nothing refuses the enable)."""
    agent_id = _check_id("agent-id", agent_id)
    project_id = _check_id("project-id", project_id)
    repository_id = _check_id("repository-id", repository_id)
    clean_sources = _check_sources(sources)
    clean_roots = _check_roots(roots)
    if stage not in (1, 2):
        raise _Refused("invalid_argument", "--stage must be 1 or 2")
    if stage == 2 and not qualification_report:
        raise _Refused("qualification_required", "--stage 2 requires --qualification-report FILE from a "
                       "passing qualification of this scope")
    return EnabledScope(
        agent_id=agent_id,
        project_id=project_id,
        repository_id=repository_id,
        sources=clean_sources,
        roots=clean_roots,
        stage=2 if stage == 2 else 1,
        enabled_at=_utc_now(),
        qualification=None,  # checked once the bound roots are known (the report's scope digest covers them)
    )


class _Plan(NamedTuple):
    """What a scope will bind, every root checked: the roots (the operator's, then worktrees), their real
    paths, each operator root's repository, the worktrees refused and the breadth waivers used."""

    roots: tuple[str, ...]
    real_roots: tuple[str, ...]
    bindings: tuple[Binding, ...]
    worktrees_bound: int
    refused: tuple[tuple[str, str], ...]
    allowed: tuple[dict[str, Any], ...]


_BROAD = {
    "home_directory": "is the home directory: it holds every repository of this user",
    "contains_home_directory": "contains the home directory: it holds every repository of this user",
}


def _broad_refusal(position: int, reason: str, level: int) -> _Refused:
    where = f"--root #{position}"
    if reason == "filesystem_root":
        return _Refused("root_too_broad", f"{where} is /: it holds every repository on this machine and no "
                        "session path matches under it; name the repository's own directory (no flag allows /)")
    if reason == "too_large_to_check":
        return _Refused("root_too_large", f"{where} holds more than {binding.WALK_ENTRIES} entries within "
                        f"{binding.WALK_DEPTH} levels, so enable cannot tell whether it holds another repository; "
                        "name the repository's own directory, or pass --allow-broad-root")
    what = _BROAD.get(reason, f"holds another git repository (or a worktree of one) {level} level(s) below "
                              "it, whose sessions would be read as this repository's")
    return _Refused("root_too_broad", f"{where} {what}; bind each repository as its own scope, or pass "
                    "--allow-broad-root")


def _real(path: str) -> str:
    return os.path.realpath(path)


def _plan(draft: EnabledScope, *, include_worktrees: bool, allow_broad_root: bool) -> _Plan:
    """Check each operator root's breadth (refusing unless ``allow_broad_root``), and each worktree candidate
    of its repository when ``include_worktrees`` (refused ones are left out and reported)."""
    homes = home_dirs(os.environ.get("HOME"))
    bindings = tuple(repository_binding(root) for root in draft.roots)
    allowed: list[dict[str, Any]] = []
    for position, (root, repo) in enumerate(zip(draft.roots, bindings, strict=True), 1):
        found = breadth(root, repo.common_dir, homes)
        if found.reason is None:
            continue
        if not allow_broad_root or found.reason == "filesystem_root":
            raise _broad_refusal(position, found.reason, found.level)
        allowed.append({"allowance": "broad_root", "root": position, "reason": found.reason})
    own = {_real(r) for r in draft.roots}
    bound: list[str] = []
    refused: list[tuple[str, str]] = [pair for b in bindings for pair in b.refused]
    for repo in bindings if include_worktrees else ():
        for worktree in repo.worktrees:
            real = _real(worktree)
            if real in own or worktree in bound:
                continue
            if any(within(r, real) for r in own):
                refused.append((worktree, "contains_bound_root"))
                continue
            reason = breadth(worktree, repo.common_dir, homes).reason
            if reason is not None:
                refused.append((worktree, reason))
                continue
            bound.append(worktree)
    all_roots = tuple(dict.fromkeys(normalize_root(r) for r in (*draft.roots, *bound)))
    return _Plan(roots=all_roots, real_roots=tuple(dict.fromkeys(_real(r) for r in all_roots)), bindings=bindings,
                 worktrees_bound=len(all_roots) - len(draft.roots), refused=tuple(dict.fromkeys(refused)),
                 allowed=tuple(allowed))


def _check_overlap(plan: _Plan, draft: EnabledScope, scopes: Sequence[EnabledScope], *,
                   allow_shared_root: bool) -> list[dict[str, Any]]:
    """Refuse (``root_overlaps_scope``, naming the other scope's ids) a bound root that is, contains or lies in
    a root of another enabled scope with a common source, unless ``allow_shared_root``; the waivers used."""
    others = [s for s in scopes if _key(s) != _key(draft)]
    allowed: list[dict[str, Any]] = []
    for position, other, source in overlaps([_real(r) for r in plan.roots], draft.sources, others):
        if not allow_shared_root:
            where = f"--root #{position + 1}" if position < len(draft.roots) else "a worktree bound with it"
            raise _Refused("root_overlaps_scope",
                           f"{where} is, contains or lies in a root of agent {other.agent_id}, project "
                           f"{other.project_id}, repository {other.repository_id}, which reads source {source} too: "
                           "both scopes would read the same sessions; bind disjoint roots, or pass "
                           "--allow-shared-root")
        allowed.append({"allowance": "shared_root", "root": position + 1, **_ids(other)})
    return allowed


def _bound_scope(draft: EnabledScope, plan: _Plan, key: DigestKey, allowed: Sequence[dict[str, Any]]) -> EnabledScope:
    """The scope to record: the plan's roots and real roots, the merged identity (remotes keyed with ``key``;
    the worktrees refused here left out) and the waivers used."""
    left_out = {path for path, _reason in plan.refused}
    identities = [b.identity(key, [w for w in b.worktrees if w not in left_out]) for b in plan.bindings]
    return draft._replace(roots=plan.roots, real_roots=plan.real_roots,
                          repository_identity=_merge_identity(identities),
                          allowances=tuple(sorted({a["allowance"] for a in allowed})))


def _source_check(db_path: Path | None, sources: Sequence[str], allow_unknown: bool) -> dict[str, Any]:
    """Refuse a source the index does not know (naming the known ones); disclose when none could be checked."""
    if db_path is None:
        return {"sources_checked": False, "sources_not_checked_because": "no_database_given"}
    known, why = known_sources(db_path)
    if known is None:
        return {"sources_checked": False, "sources_not_checked_because": why}
    unknown = [s for s in sources if s not in known]
    if unknown and not allow_unknown:
        raise _Refused("unknown_source",
                       f"--source {', '.join(unknown)} is not a source the index knows; known: "
                       f"{', '.join(known) or '(none)'} (an agent that has not run yet: --allow-unknown-source)")
    return {"sources_checked": True, "unknown_sources_allowed": unknown}


def _ids(scope: EnabledScope) -> dict[str, str]:
    return {"agent_id": scope.agent_id, "project_id": scope.project_id, "repository_id": scope.repository_id}


def _key(scope: EnabledScope) -> tuple[str, str, str]:
    return scope.agent_id, scope.project_id, scope.repository_id


def _merged(scopes: Sequence[EnabledScope], scope: EnabledScope, *,
            replace: bool) -> tuple[tuple[EnabledScope, ...], bool]:
    """The scopes with ``scope`` added, or replacing the entry of the same key (only with ``replace``)."""
    key = _key(scope)
    if not any(_key(s) == key for s in scopes):
        return (*scopes, scope), False
    if not replace:
        raise _Refused("already_enabled",
                       f"agent {scope.agent_id}, project {scope.project_id}, repository {scope.repository_id} "
                       "is already enabled; pass --replace to replace it")
    return tuple(scope if _key(s) == key else s for s in scopes), True


def enable_scope(*, config_path: Path, agent_id: str, project_id: str, repository_id: str,
                 sources: list[str], roots: list[str], stage: int, include_worktrees: bool,
                 qualification_report: str | None, out: TextIO, replace: bool = False,
                 db_path: Path | None = None, allow_unknown_source: bool = False, accept_synthetic: bool = False,
                 max_report_age_days: int = MAX_REPORT_AGE_DAYS, allow_broad_root: bool = False,
                 allow_shared_root: bool = False) -> int:
    """Enable the (agent_id, project_id, repository_id) scope, or replace it with ``replace``. Returns the exit
    code."""
    try:
        draft = _draft_scope(
            agent_id=agent_id, project_id=project_id, repository_id=repository_id, sources=sources,
            roots=roots, stage=stage, qualification_report=qualification_report)
        checked = _source_check(db_path, draft.sources, allow_unknown_source)
        config = _load(config_path)
        _merged(config.scopes, draft, replace=replace)  # a duplicate is refused before anything is written
        plan = _plan(draft, include_worktrees=include_worktrees, allow_broad_root=allow_broad_root)
        allowed = [*plan.allowed, *_check_overlap(plan, draft, config.scopes, allow_shared_root=allow_shared_root)]
        existing = _existing_key(config_path, config)
        if qualification_report:
            # The report is judged on the bound roots (worktrees included) under the install's key, before
            # anything is written: a refused report leaves no key and no config behind (without a key yet, no
            # replay report can match).
            draft = draft._replace(qualification=_qualification(
                qualification_report, agent_id=draft.agent_id, project_id=draft.project_id,
                repository_id=draft.repository_id, sources=draft.sources, roots=plan.roots, key=existing,
                accept_synthetic=accept_synthetic, max_age_days=max_report_age_days))
        digest_key = existing or _digest_key(config_path)  # made on the first enable; remote digests use it
        scope = _bound_scope(draft, plan, digest_key, allowed)
        key = _key(scope)
        scopes, replaced = _merged(config.scopes, scope, replace=replace)
        _save(config_path, config._replace(scopes=scopes))
    except _Refused as err:
        return _fail(out, err)
    summary = scope_summary(scope, digest_key)
    summary["worktrees_bound"] = plan.worktrees_bound
    summary["worktrees_refused"] = [{"digest": digest_key.of_text(path), "reason": reason}
                                    for path, reason in plan.refused]
    siblings = [s.repository_id for s in scopes if (s.agent_id, s.project_id) == key[:2]]
    _emit(out, {"ok": True, "action": "replaced" if replaced else "enabled", "scope": summary, **checked,
                "allowed": allowed, "repositories_of_agent_and_project": siblings})
    return EXIT_OK


def disable_scope(*, config_path: Path, agent_id: str, project_id: str, out: TextIO,
                  repository_id: str | None = None) -> int:
    """Remove one repository's entry, or (no ``repository_id``) every repository of the agent and project.
    Never touches the Obelisk database."""
    try:
        config = _load(config_path)

        def chosen(s: EnabledScope) -> bool:
            return (s.agent_id, s.project_id) == (agent_id, project_id) and \
                (repository_id is None or s.repository_id == repository_id)

        removed = [s for s in config.scopes if chosen(s)]
        if not removed:
            what = "agent and project" if repository_id is None else "agent, project and repository"
            return _fail(out, _Refused("not_enabled", f"no enabled scope for this {what}"))
        kept = tuple(s for s in config.scopes if not chosen(s))
        _save(config_path, config._replace(scopes=kept))
    except _Refused as err:
        return _fail(out, err)
    _emit(out, {"ok": True, "action": "disabled", "removed": [_ids(s) for s in removed],
                "remaining_scopes": len(kept)})
    return EXIT_OK
