"""``status``: what the provider would read, and how far it can be trusted, without answering anything.

Reports the provider and contract versions, whether the config and the database are present, the open mode,
the schema verdict and FTS tokenizer, the index freshness of every enabled scope, Obelisk writer activity
(``__app_heartbeat__``, ``__last_build__`` age, a partial app build, a ``-wal`` file beside the database) and
the enabled scopes.

Privacy split (RFC section 11): ``--format json`` is what a controller may log, so it carries ids, sources,
stages, counts, ages, verdicts and digests, never a local path (roots are keyed HMAC-SHA256 digests, the stale and
unindexed units are counts). The text view is for the local operator at a terminal and also names the
config and database paths, the plain roots and the stale/unindexed transcript paths.

The database is read once, through :func:`provider.index.connection.read_index` (read-only, hardened, one
snapshot, a deadline) which creates no file beside it. Exit 0 whenever a report could be made (also when
the database is missing or unreadable: the report says so), 1 when the config cannot be read or the digest
key beside it is unusable (malformed, not private, or missing while a scope is enabled: every query would be
refused with ``config_invalid``); the report then says why and how to fix it, in both views.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from .._version import CONTRACT_VERSION, PROVIDER_ID, PROVIDER_VERSION
from ..admission.config import EnabledScope, ProviderConfig, load_config
from ..digest import DigestKey, key_path, load_key
from ..errors import ConfigInvalid, ProviderError
from ..index.connection import Deadline, ReadSnapshot, read_index
from ..index.freshness import FreshnessReport, Verdict, assess_freshness
from ..index.revision import IndexRow, read_index_state, transcript_homes_from
from ..retrieval.engine import scope_sessions
from ..templates.catalog import scope_template
from .check_schema import schema_verdict
from .lifecycle import scope_summary

__all__ = ["STATUS_DEADLINE_MS", "StatusReport", "collect_status", "render_text", "status_command"]

#: ``status`` is an operator command: it reads every ``index_state`` row, so it gets at least this budget.
STATUS_DEADLINE_MS = 10_000
#: Worst first: the overall freshness is the worst verdict over the enabled scopes.
_VERDICT_ORDER: tuple[Verdict, ...] = ("incomplete", "stale", "unknown", "fresh")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


@dataclass
class _IndexRead:
    schema_verdict: str
    schema_problems: list[str]
    tokenizer: str | None
    rows: tuple[IndexRow, ...]
    index_revision: str | None
    #: Sessions of the index (any time) each enabled scope's sources and roots match, by position; None when
    #: the scope template cannot run on this schema.
    scope_sessions: tuple[int | None, ...] = ()


@dataclass
class StatusReport:
    """Everything ``status`` found; :meth:`public` is the JSON view, :func:`render_text` the local one."""

    config_path: Path
    db_path: Path
    config_present: bool
    config_valid: bool
    config: ProviderConfig
    database_present: bool
    database_error: str | None = None
    open_mode: str | None = None
    wal_present: bool = False
    index: _IndexRead | None = None
    markers: FreshnessReport | None = None
    transcript_homes: tuple[str, ...] = ()
    scopes: list[tuple[EnabledScope, FreshnessReport | None]] = field(default_factory=list)
    config_detail: str = ""  # why the config was refused (local view only: it may name the path)
    digest_key: DigestKey | None = None  # root digests are keyed; without the install's key none are shown
    #: Why the install's key is unusable, with the fix (path-free); None when it is fine or not needed yet.
    digest_key_error: str | None = None
    digest_key_exists: bool = False  # something is at the key's name (a link or a malformed file included)

    @property
    def overall_freshness(self) -> Verdict | None:
        verdicts = [report.verdict if report else "unknown" for _scope, report in self.scopes]
        if not verdicts:
            return None
        return next(v for v in _VERDICT_ORDER if v in verdicts)

    def sessions_in_index(self, position: int) -> int | None:
        """How many sessions of the index the scope at ``position`` matches (None: could not be counted)."""
        counts = self.index.scope_sessions if self.index else ()
        return counts[position] if position < len(counts) else None

    def writer_activity(self) -> dict[str, Any]:
        markers = self.markers
        return {
            "heartbeat_fresh": markers.heartbeat_fresh if markers else None,
            "last_build_age_ms": _round(markers.last_build_age_ms) if markers else None,
            "app_build_partial": markers.app_build_partial if markers else None,
            "wal_present": self.wal_present,
        }

    def public(self) -> dict[str, Any]:
        """The JSON view: no local path, no transcript path, no query text (status reads none)."""
        index = self.index
        scopes: list[dict[str, Any]] = []
        for position, (scope, report) in enumerate(self.scopes):
            entry = scope_summary(scope, self.digest_key)
            entry["freshness"] = report.to_public() if report else None
            sessions = self.sessions_in_index(position)
            entry["sessions_in_index"] = sessions
            entry["degradations"] = ["scope_matches_no_session"] if sessions == 0 else []
            scopes.append(entry)
        return {
            "provider_id": PROVIDER_ID,
            "provider_version": PROVIDER_VERSION,
            "contract_version": CONTRACT_VERSION,
            "config_present": self.config_present,
            "config_valid": self.config_valid,
            "digest_key": "present" if self.digest_key else ("unusable" if self.digest_key_exists else "absent"),
            "digest_key_error": self.digest_key_error,
            "database_present": self.database_present,
            "database_error": self.database_error,
            "open_mode": self.open_mode,
            "schema_verdict": index.schema_verdict if index else "unknown",
            "schema_problems": list(index.schema_problems) if index else [],
            "tokenizer": index.tokenizer if index else None,
            "index_revision": index.index_revision if index else None,
            "indexed_units": _unit_count(index.rows) if index else None,
            "transcript_homes": len(self.transcript_homes),
            "writer_activity": self.writer_activity(),
            "freshness": self.overall_freshness,
            "deadline_ms": self.config.deadline_ms,
            "recency_days": self.config.recency_days,
            "revision_slack_days": self.config.revision_slack_days,
            "ceilings": self.config.ceilings._asdict(),
            "enabled_scopes": len(self.scopes),
            "scopes": scopes,
        }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def _unit_count(rows: Sequence[IndexRow]) -> int:
    return sum(1 for path, *_ in rows if not (path.startswith("__") and path.endswith("__")))


def _scope_session_counts(snap: ReadSnapshot, verdict: Any, scopes: Sequence[EnabledScope]) -> tuple[int | None, ...]:

    template = scope_template()
    unmet = {t.template: list(t.missing) for t in verdict.templates}
    if verdict.verdict == "incompatible" or unmet.get(template.key, ["unknown template"]):
        return tuple(None for _ in scopes)
    return tuple(len(scope_sessions(snap, template, sources=s.sources, roots=s.bound_roots(), since="")[0])
                 for s in scopes)


def _read(snap: ReadSnapshot, scopes: Sequence[EnabledScope] = ()) -> _IndexRead:

    verdict = schema_verdict(snap)
    rows: tuple[IndexRow, ...] = ()
    revision = None
    state_table = next((t for t in verdict.live["tables"] if t["name"] == "index_state"), None)
    columns = {c["name"] for c in state_table["columns"]} if state_table else set()
    if {"jsonl_path", "mtime", "lines_processed"} <= columns:
        state = read_index_state(snap, has_cursor="cursor" in columns, schema_cookie=verdict.schema_cookie,
                                 identity=snap.identity)
        rows, revision = state.rows, state.revision
    return _IndexRead(verdict.verdict, list(verdict.problems), verdict.tokenizer, rows, revision,
                      _scope_session_counts(snap, verdict, scopes))


def _present(path: Path) -> bool:
    """``path.exists()``, except that a path that cannot be inspected (EACCES on a parent directory, which
    ``Path.exists`` raises before Python 3.12) counts as present: reading it then reports it unreadable."""
    try:
        return path.exists()
    except OSError:
        return True


def collect_status(*, db_path: Path, config_path: Path, now: Callable[[], float] = time.time,
                   config_must_exist: bool = False) -> StatusReport:
    """Gather the report. Never raises; a config that cannot be read gives ``config_valid=False`` (and, for
    the text view only, the detail: it may name the config path)."""
    config_present = _present(config_path)
    config_detail = ""
    try:
        config = load_config(config_path, must_exist=config_must_exist)
        config_valid = True
    except ConfigInvalid as err:
        config, config_valid, config_detail = ProviderConfig(), False, err.detail
    report = StatusReport(config_path=config_path, db_path=db_path, config_present=config_present,
                          config_valid=config_valid, config=config, database_present=_present(db_path),
                          wal_present=os.path.exists(f"{db_path}-wal"), config_detail=config_detail)
    report.digest_key_exists = os.path.lexists(key_path(config_path))
    try:
        report.digest_key = load_key(config_path)
    except ConfigInvalid as err:
        # No key is fine until a scope is enabled (``enable`` makes it); a key that is there must be usable.
        if report.digest_key_exists or config.scopes:
            report.digest_key_error = err.detail
    if report.database_present:
        deadline = Deadline(max(config.deadline_ms, STATUS_DEADLINE_MS))
        try:
            report.index, mode = read_index(db_path, lambda snap: _read(snap, config.scopes), deadline=deadline)
            report.open_mode = mode
        except ProviderError as err:
            report.database_error = err.code
        except Exception:  # noqa: BLE001 - status reports, it does not crash
            report.database_error = "internal_error"
    rows = report.index.rows if report.index else ()
    now_ms = now() * 1000.0
    if report.index is not None:
        # No root: nothing is walked; only the marker rows (heartbeat, last build, app build) are judged.
        report.markers = assess_freshness(rows, roots=[], sources=[], transcript_homes=[], now_ms=now_ms)
    report.transcript_homes = tuple(config.transcript_homes) or transcript_homes_from(rows)
    homes = [Path(home) for home in report.transcript_homes]
    for scope in config.scopes:
        fresh = None
        if report.index is not None:
            fresh = assess_freshness(rows, roots=scope.roots, sources=scope.sources, transcript_homes=homes,
                                     now_ms=now_ms)
        report.scopes.append((scope, fresh))
    return report


# ------------------------------------------------------------------------------------------------ text


def _safe(text: object) -> str:
    """Terminal-safe: control characters (from file names, ids) are shown escaped, never interpreted."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group(0)):02x}", str(text))


def _age(ms: float | None) -> str:
    if ms is None:
        return "unknown"
    if ms < 0:
        return "in the future (clock skew)"
    seconds = int(ms // 1000)
    days, rest = divmod(seconds, 86_400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d {hours}h ago"
    if hours:
        return f"{hours}h {minutes}m ago"
    if minutes:
        return f"{minutes}m {secs}s ago"
    return f"{secs}s ago"


def _yes(flag: bool | None) -> str:
    return "unknown" if flag is None else ("yes" if flag else "no")


def _freshness_lines(fresh: FreshnessReport) -> list[str]:
    lines = [
        f"    freshness  {fresh.verdict}: {fresh.units_in_scope} units in scope, "
        f"{fresh.up_to_date} up to date, {fresh.stale} stale, {fresh.unindexed} unindexed, "
        f"{fresh.missing_on_disk} missing on disk, "
        f"{fresh.unknown_cursor} unknown cursor, {fresh.unreadable_units} unreadable, "
        f"{fresh.unattributed_files} unattributed",
    ]
    if fresh.missing_provider_markers:
        lines.append("    replay pending for: " + ", ".join(_safe(s) for s in fresh.missing_provider_markers))
    if fresh.unknown_reasons:
        lines.append("    cannot judge: " + ", ".join(_safe(r) for r in fresh.unknown_reasons))
    lines.extend(f"    stale      {_safe(path)}" for path in fresh.stale_units)
    lines.extend(f"    unindexed  {_safe(path)}" for path in fresh.unindexed_units)
    return lines


def _qualified(scope: EnabledScope) -> str:
    """How the stage was earned: a replay of the scope's own history, or accepted synthetic evidence."""
    record = scope.qualification
    if record is None:
        return ""
    if record.synthetic_accepted:
        return " (qualified on synthetic evidence, accepted by the operator)"
    return f" (qualified: {record.kind})"


#: How ``status`` names a waiver ``enable`` recorded for a scope.
_ALLOWED = {
    "broad_root": "broad root (--allow-broad-root): a root is the home directory or holds another repository",
    "shared_root": "shared root (--allow-shared-root): a root overlaps another enabled scope with a common source",
}


def _scope_lines(scope: EnabledScope, fresh: FreshnessReport | None) -> list[str]:
    identity = scope.repository_identity
    lines = [
        f"  - agent {_safe(scope.agent_id)}  project {_safe(scope.project_id)}  "
        f"repository {_safe(scope.repository_id)}",
        f"    stage {scope.stage}{_qualified(scope)}, sources "
        f"{', '.join(_safe(s) for s in scope.sources)}, enabled {_safe(scope.enabled_at or 'unknown')}",
    ]
    if identity is not None:
        kind: str = identity.kind
        if kind == "git":
            kind += (f", root commit {_safe(identity.root_commit or 'none')}, "
                     f"{len(identity.remote_digests)} remote(s), {len(identity.worktrees)} other worktree(s)")
        lines.append(f"    identity   {kind}")
    lines.extend(f"    root       {_safe(root)}" for root in scope.roots)
    lines.extend(f"    allowed    {_ALLOWED.get(a, _safe(a))}" for a in scope.allowances)
    if identity is not None:
        bound = set(scope.roots)
        lines.extend(f"    worktree   {_safe(w)} (not bound; enable with --include-worktrees)"
                     for w in identity.worktrees if w not in bound)
    if fresh is None:
        lines.append("    freshness  unknown (the database could not be read)")
    else:
        lines.extend(_freshness_lines(fresh))
    return lines


def _located(detail: str, report: StatusReport) -> str:
    """A config or key problem as the local operator reads it: each file named by its role also by its path."""
    config = report.config_path
    for role, path in (("the config file", config), ("the config directory", config.absolute().parent),
                       ("the digest key file", key_path(config))):
        detail = detail.replace(role, f"{role} {path}")
    return detail


def render_text(report: StatusReport) -> str:
    """The local operator's view (plain paths included)."""
    pub = report.public()
    config_state = "present" if report.config_present else "absent (nothing enabled)"
    if not report.config_valid:
        config_state = "UNREADABLE OR INVALID" + (f": {_safe(_located(report.config_detail, report))}"
                                                  if report.config_detail else "")
    key_state = "present" if report.digest_key else "absent (made by the first enable)"
    if report.digest_key_error:
        key_state = (f"{pub['digest_key'].upper()}, every query is refused: "
                     f"{_safe(_located(report.digest_key_error, report))}")
    if report.database_present:
        db_state = f"present, open mode {report.open_mode}" if report.open_mode else \
            f"present but not readable ({report.database_error})"
    else:
        db_state = "absent"
    writer = report.writer_activity()
    heartbeat = writer["heartbeat_fresh"]
    heartbeat_text = "no heartbeat" if heartbeat is None else \
        ("live indexer" if heartbeat else "heartbeat not fresh")
    lines = [
        f"{PROVIDER_ID} {PROVIDER_VERSION} (contract {CONTRACT_VERSION})",
        f"config     {_safe(report.config_path)}: {config_state}",
        f"digest key {_safe(key_path(report.config_path))}: {key_state}",
        f"database   {_safe(report.db_path)}: {db_state}",
        f"schema     {pub['schema_verdict']}"
        + (f", FTS tokenizer {_safe(pub['tokenizer'])}" if pub["tokenizer"] else ""),
    ]
    lines.extend(f"           {_safe(problem)}" for problem in pub["schema_problems"])
    if report.index is not None:
        lines.append(f"index      revision {pub['index_revision'] or 'unknown'}, "
                     f"{pub['indexed_units']} indexed units, transcript homes: "
                     + (", ".join(_safe(h) for h in report.transcript_homes) or "none found"))
        lines.append(f"writer     {heartbeat_text}; last build {_age(writer['last_build_age_ms'])}; "
                     f"last app build partial: {_yes(writer['app_build_partial'])}; "
                     f"-wal file: {_yes(report.wal_present)}")
    ceilings = ", ".join(f"{k} {v}" for k, v in pub["ceilings"].items())
    lines.append(f"limits     deadline {pub['deadline_ms']} ms; recency window {pub['recency_days']} days "
                 f"(revision slack {pub['revision_slack_days']} days); ceilings: {ceilings}")
    overall = report.overall_freshness
    lines.append(f"scopes     {len(report.scopes)} enabled"
                 + (f", overall freshness {overall}" if overall else ""))
    for position, (scope, fresh) in enumerate(report.scopes):
        lines.extend(_scope_lines(scope, fresh))
        sessions = report.sessions_in_index(position)
        if sessions == 0:
            lines.append("    sessions   NONE in the index match this scope (scope_matches_no_session): check "
                         "--source and --root")
        elif sessions is not None:
            lines.append(f"    sessions   {sessions} in the index")
    return "\n".join(lines) + "\n"


def status_command(*, db_path: Path, config_path: Path, fmt: str, out: TextIO,
                   now: Callable[[], float] = time.time, config_must_exist: bool = False) -> int:
    """Print the status (``fmt`` ``json`` or ``text``). 0 reported, 1 the config could not be read or its digest
    key is unusable."""
    report = collect_status(db_path=db_path, config_path=config_path, now=now,
                            config_must_exist=config_must_exist)
    if fmt == "json":
        out.write(json.dumps(report.public(), ensure_ascii=False, separators=(",", ":")) + "\n")
    else:
        out.write(render_text(report))
    out.flush()
    return 0 if report.config_valid and report.digest_key_error is None else 1
