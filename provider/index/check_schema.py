"""Live schema verification: one verdict per schema and per template, and the operators' ``check-schema``.

Verdicts, most severe first (the first that applies wins):

``incompatible``
    a core table or column is missing (``live_schema.CORE_COLUMNS``; :data:`CORE_REASONS` says why each is
    core), a scope column (:data:`SCOPE_COLUMNS`) has a collation other than BINARY, ``messages_fts`` is missing or not
    FTS5, its content table is not ``messages`` or its ``content_rowid`` not ``rowid``, or its tokenizer is
    unknown. Requests fail with ``schema_incompatible``.
``degraded``
    some template's needed column is missing: only the templates whose needs are met run, and the evidence
    types left without any runnable template are named as skipped.
``exact``
    the live schema's digest equals a pinned snapshot's (``schema_snapshots/``).
``compatible``
    every template can run. The differences from the nearest snapshot are listed, each marked additive
    (added tables, columns, indexes, triggers; column order) or not (e.g. a known tokenizer other than the
    pinned one, a missing index or trigger, a changed declaration): non-additive drift that no template
    depends on is reported, not failed on.

:func:`schema_verdict` is computed inside the request's read snapshot and cached in-process by the database
file's identity (device, inode) and SQLite's schema cookie, so a long-lived ``serve`` process pays for the
introspection once per schema. Exit codes of :func:`check_schema_command`: 0 exact or compatible,
1 degraded, 2 incompatible, unreadable or missing. The operator view shows the template table consistent with
the verdict (nothing runs when incompatible), calls out likely renames, and ends every non-exact verdict with a
next step; its JSON form names the database by a digest only (the text form, for the local operator, by path).

That ``db_digest`` is keyed (HMAC-SHA256 under the install's key, ``provider/digest.py``) when the key exists
beside the provider config; ``check-schema`` needs no config, and without a key ``db_digest`` is null: an
unkeyed digest of the path would confirm a guessed path (a user name, a project directory). ``live_digest``
stays a plain content digest: it must equal the pinned snapshots' digests on every install to say ``exact``,
and it digests Obelisk's schema (table and column declarations), not anything a user wrote.
"""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal, TextIO

from ..digest import DigestKey
from ..errors import ProviderError
from ..retrieval.templates import SCOPE_KIND, TEMPLATE_DIR, load_templates
from .connection import Deadline, ReadSnapshot, read_index
from .live_schema import LiveSchema, core_problems, read_live_schema, unmet_needs
from .snapshots import (
    SNAPSHOT_DIR,
    Difference,
    SnapshotError,
    capture,
    load_snapshots,
    nearest,
    render,
)

Verdict = Literal["exact", "compatible", "degraded", "incompatible"]
EXIT_FOR: Final[dict[str, int]] = {"exact": 0, "compatible": 0, "degraded": 1, "incompatible": 2,
                                   "unreadable": 2}
CHECK_DEADLINE_MS: Final = 10_000
_CACHE_SIZE: Final = 32
HEARTBEAT_FRESH_MS: Final = 60_000.0  # Obelisk's APP_HEARTBEAT_FRESH_MS


@dataclass(frozen=True)
class TemplateVerdict:
    template: str  # "<id>.v<version>"
    evidence_type: str
    missing: tuple[str, ...]  # "table.column" the live schema lacks; empty when runnable

    @property
    def runnable(self) -> bool:
        return not self.missing

    def to_dict(self) -> dict[str, Any]:
        return {"template": self.template, "evidence_type": self.evidence_type, "runnable": self.runnable,
                "missing": list(self.missing)}


@dataclass(frozen=True)
class SchemaVerdict:
    verdict: Verdict
    nearest: str | None  # id of the nearest pinned snapshot (None when none is pinned)
    differences: tuple[Difference, ...]  # from the nearest snapshot
    templates: tuple[TemplateVerdict, ...]
    tokenizer: str | None  # unicode61 / trigram / porter / ascii; None when unknown (or no messages_fts)
    tokenizer_spec: str | None  # the tokenize= value as declared, None when absent (default unicode61)
    tokenizer_wraps: str | None  # porter's parent tokenizer
    problems: tuple[str, ...]  # why incompatible (empty otherwise)
    schema_cookie: int
    live_digest: str
    live: dict[str, Any] = field(compare=False, repr=False)  # the captured snapshot (id "live")
    schema: LiveSchema = field(compare=False, repr=False)  # the introspection it was judged from

    @property
    def exact(self) -> bool:
        return self.nearest is not None and not self.differences

    @property
    def skipped_templates(self) -> tuple[str, ...]:
        return tuple(t.template for t in self.templates if not t.runnable)

    @property
    def skipped_evidence_types(self) -> tuple[str, ...]:
        """Evidence types none of whose templates can run (all of them when the scope template cannot)."""
        types = sorted({t.evidence_type for t in self.templates} - {SCOPE_KIND})
        if not all(t.runnable for t in self.templates if t.evidence_type == SCOPE_KIND):
            return tuple(types)
        return tuple(e for e in types if not any(t.runnable for t in self.templates if t.evidence_type == e))

    @property
    def exit_code(self) -> int:
        return EXIT_FOR[self.verdict]

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "nearest_snapshot": self.nearest,
            "exact": self.exact,
            "live_digest": self.live_digest,
            "schema_cookie": self.schema_cookie,
            "differences": [d.to_dict() for d in self.differences],
            "problems": list(self.problems),
            "tokenizer": {"name": self.tokenizer, "spec": self.tokenizer_spec, "wraps": self.tokenizer_wraps,
                          "known": self.tokenizer is not None},
            "templates": [{**t.to_dict(), "state": template_state(self, t),
                           "runnable": t.runnable and self.verdict != "incompatible"} for t in self.templates],
            "problems_explained": [explain_problem(p) for p in self.problems],
            "likely_renames": likely_renames(self.differences),
            "next_step": next_step(self),
            "skipped_templates": list(self.skipped_templates),
            "skipped_evidence_types": list(self.skipped_evidence_types),
        }


_CacheKey = tuple[int, int, int, str, str]
_cache: OrderedDict[_CacheKey, SchemaVerdict] = OrderedDict()
_cache_lock = threading.Lock()


def clear_cache() -> None:
    with _cache_lock:
        _cache.clear()


#: Why each core column is core (``live_schema.CORE_COLUMNS``): what breaks without it.
CORE_REASONS: Final[dict[str, str]] = {
    "sessions.id": "every row is tied to its session by it",
    "sessions.title": "session-title summaries",
    "sessions.project_path": "the scope check compares it with the enabled roots",
    "sessions.started_at": "the recency window and observed_at",
    "sessions.ended_at": "the recency window",
    "sessions.git_branch": "revision evidence",
    "messages.uuid": "message refs and tool joins",
    "messages.session_id": "the scope re-check of every message",
    "messages.timestamp": "observed_at and the recency window",
    "messages.role": "failure and decision narration is assistant text",
    "messages.text": "the FTS content searched",
    "messages.cwd": "the scope re-check of message paths",
    "tool_calls.id": "tool results are joined to their calls by it",
    "tool_calls.message_uuid": "message refs",
    "tool_calls.session_id": "the scope re-check of every tool call",
    "tool_calls.name": "tool outcomes and file history",
    "tool_calls.input_json": "commands and edited paths",
    "tool_calls.file_path": "file history",
    "tool_results.tool_use_id": "tool results are joined to their calls by it",
    "tool_results.message_uuid": "message refs",
    "tool_results.session_id": "the scope re-check of every tool result",
    "tool_results.content": "tool output (prior failures)",
    "tool_results.is_error": "failed tool outcomes",
    "index_state.jsonl_path": "freshness",
    "index_state.mtime": "freshness",
    "index_state.lines_processed": "freshness",
}

#: Columns the scope checks compare byte for byte: a collation other than BINARY on one of them would change
#: which rows the scope admits (e.g. NOCASE makes /src/Acme equal /src/acme), so the schema is incompatible.
SCOPE_COLUMNS: Final[dict[str, tuple[str, ...]]] = {
    "sessions": ("id", "source", "project_path"),
    "messages": ("session_id", "cwd"),
    "tool_calls": ("session_id",),
    "tool_results": ("session_id",),
    "summaries": ("session_id",),
}


def scope_collation_problems(captured: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    for table in captured.get("tables", ()):
        for column in table.get("columns", ()):
            if column["name"] in SCOPE_COLUMNS.get(table["name"], ()) and column.get("collation"):
                problems.append(f"scope column {table['name']}.{column['name']} has collation "
                                f"{column['collation']} (scope checks compare it byte for byte)")
    return problems


def explain_problem(problem: str) -> str:
    """A problem text with, for a missing core column, why that column is core."""
    if problem.startswith("missing column "):
        reason = CORE_REASONS.get(problem.removeprefix("missing column "))
        if reason:
            return f"{problem} (core: {reason})"
    return problem


def likely_renames(differences: Sequence[Difference]) -> list[dict[str, str]]:
    """One column missing and one added in the same table, of the same declared type: likely a rename."""
    out: list[dict[str, str]] = []
    tables = {d.object.split(".", 1)[0] for d in differences if d.kind in ("missing_column", "added_column")}
    for table in sorted(tables):
        gone = [d for d in differences if d.kind == "missing_column" and d.object.startswith(table + ".")]
        new = [d for d in differences if d.kind == "added_column" and d.object.startswith(table + ".")]
        if len(gone) == 1 and len(new) == 1 and gone[0].detail.split()[:1] == new[0].detail.split()[:1]:
            out.append({"table": table, "from": gone[0].object, "to": new[0].object,
                        "type": (gone[0].detail.split() or ["(no type)"])[0]})
    return out


def next_step(verdict: SchemaVerdict) -> str | None:
    """What to do about a non-exact verdict (None when exact)."""
    if verdict.verdict == "exact":
        return None
    capture_hint = ("capture this schema with `check-schema --snapshot-out FILE` and review the differences "
                    "against the templates (maintainers), or pin the Obelisk version that wrote the nearest "
                    f"snapshot ({verdict.nearest or 'none pinned'})")
    if verdict.verdict == "incompatible":
        return ("requests fail with schema_incompatible until this is fixed: pin the Obelisk version that wrote "
                f"a pinned snapshot ({verdict.nearest or 'none pinned'}), or, for a maintainer, {capture_hint}")
    if verdict.verdict == "degraded":
        return (f"the skipped evidence types stay unavailable on this schema: {capture_hint}")
    return f"answers are served; to make the verdict exact, {capture_hint}"


def template_state(verdict: SchemaVerdict, template: TemplateVerdict) -> str:
    """The template table's word for one template, consistent with the verdict: nothing runs when the schema
    is incompatible."""
    if verdict.verdict == "incompatible":
        return "not run: schema incompatible"
    return "runnable" if template.runnable else "skipped: missing " + ", ".join(template.missing)


def _judge(live: LiveSchema, captured: dict[str, Any], snapshots: Sequence[dict[str, Any]],
           template_dir: Path) -> SchemaVerdict:
    pinned, differences = nearest(captured, snapshots)
    problems = tuple(core_problems(live)) + tuple(scope_collation_problems(captured))
    templates = tuple(
        TemplateVerdict(t.key, t.evidence_type, tuple(unmet_needs(live, t.needs)))
        for t in load_templates(template_dir)
    )
    verdict: Verdict
    if problems:
        verdict = "incompatible"
    elif any(not t.runnable for t in templates):
        verdict = "degraded"
    elif pinned is not None and not differences:
        verdict = "exact"
    else:
        verdict = "compatible"
    return SchemaVerdict(
        verdict=verdict,
        nearest=None if pinned is None else str(pinned["id"]),
        differences=tuple(differences),
        templates=templates,
        tokenizer=live.tokenizer,
        tokenizer_spec=live.tokenizer_spec,
        tokenizer_wraps=live.tokenizer_wraps,
        problems=problems,
        schema_cookie=live.schema_cookie,
        live_digest=str(captured["digest"]),
        live=captured,
        schema=live,
    )


def schema_verdict(snap: ReadSnapshot, *, snapshot_dir: Path = SNAPSHOT_DIR,
                   template_dir: Path = TEMPLATE_DIR) -> SchemaVerdict:
    """The schema verdict of the database behind ``snap``, cached by (file identity, schema cookie).

    Raises :class:`~provider.index.snapshots.SnapshotError` when a pinned snapshot is malformed.
    """
    cookie_row = snap.one("PRAGMA schema_version")
    cookie = int(cookie_row[0]) if cookie_row else -1
    key: _CacheKey = (snap.identity.dev, snap.identity.ino, cookie, str(snapshot_dir), str(template_dir))
    with _cache_lock:
        cached = _cache.get(key)
        if cached is not None:
            _cache.move_to_end(key)
            return cached
    live = read_live_schema(snap)
    captured = capture(snap)
    computed = _judge(live, captured, load_snapshots(snapshot_dir), template_dir)
    with _cache_lock:
        _cache[key] = computed
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return computed


# --------------------------------------------------------------------------------------------------------
# freshness markers (index_state rows named __...__), for the operator view
# --------------------------------------------------------------------------------------------------------

_CANONICAL_SUFFIX = "_canonical_transcript_v"
_FTS_MARKERS = ("__messages_fts_synced__", "__fts_triggers_ready__")
_MAX_MARKERS = 200


def _age(rows: dict[str, float | None], name: str, now_ms: float) -> dict[str, Any]:
    if name not in rows:
        return {"present": False, "age_ms": None}
    value = rows[name]
    return {"present": True, "age_ms": None if value is None else round(now_ms - value, 1)}


def read_markers(snap: ReadSnapshot, live: LiveSchema, now_ms: float) -> dict[str, Any]:
    """The index's freshness markers: ``__last_build__`` age, heartbeat, app build, FTS/provider markers."""
    if not (live.has("index_state", "jsonl_path") and live.has("index_state", "mtime")):
        return {"available": False}
    rows: dict[str, float | None] = {}
    for name, mtime in snap.rows(
            "SELECT jsonl_path, mtime FROM index_state WHERE substr(jsonl_path, 1, 2) = '__' "
            "AND substr(jsonl_path, -2, 2) = '__' AND length(jsonl_path) > 4 ORDER BY jsonl_path LIMIT :n",
            {"n": _MAX_MARKERS}):
        rows[str(name)] = float(mtime) if isinstance(mtime, (int, float)) else None
    heartbeat = _age(rows, "__app_heartbeat__", now_ms)
    age = heartbeat["age_ms"]
    heartbeat["fresh"] = None if age is None else bool(0 <= age < HEARTBEAT_FRESH_MS)
    provider_markers = sorted(name for name in rows if _CANONICAL_SUFFIX in name)
    known = {"__last_build__", "__app_heartbeat__", "__app_last_successful_build__", *_FTS_MARKERS,
             *provider_markers}
    return {
        "available": True,
        "last_build": _age(rows, "__last_build__", now_ms),
        "app_heartbeat": heartbeat,
        "app_last_successful_build": _age(rows, "__app_last_successful_build__", now_ms),
        "fts_markers": {name: name in rows for name in _FTS_MARKERS},
        "provider_markers": provider_markers,
        "other_markers": sorted(name for name in rows if name not in known),
    }


# --------------------------------------------------------------------------------------------------------
# the operator command
# --------------------------------------------------------------------------------------------------------


def _human_age(age_ms: float | None) -> str:
    if age_ms is None:
        return "no time recorded"
    ahead = age_ms < 0
    seconds = abs(age_ms) / 1000.0
    for unit, size in (("d", 86_400.0), ("h", 3_600.0), ("min", 60.0)):
        if seconds >= size:
            text = f"{seconds / size:.1f} {unit}"
            break
    else:
        text = f"{seconds:.1f} s"
    return f"{text} in the future (clock skew?)" if ahead else f"{text} ago"


def _table(rows: Sequence[Sequence[str]], indent: str = "  ") -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [indent + "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in rows]


def _marker_lines(markers: dict[str, Any]) -> list[str]:
    if not markers.get("available"):
        return ["  index_state has no jsonl_path/mtime columns: no markers to read"]

    def state(entry: dict[str, Any]) -> str:
        return _human_age(entry["age_ms"]) if entry["present"] else "absent"

    heartbeat = markers["app_heartbeat"]
    beat = state(heartbeat)
    if heartbeat["present"] and heartbeat["fresh"] is not None:
        beat += " (fresh: the app daemon is running)" if heartbeat["fresh"] else " (not fresh)"
    rows = [
        ["__last_build__", state(markers["last_build"])],
        ["__app_heartbeat__", beat],
        ["__app_last_successful_build__", state(markers["app_last_successful_build"])],
    ]
    rows += [[name, "present" if present else "absent"] for name, present in markers["fts_markers"].items()]
    rows.append(["provider markers", ", ".join(markers["provider_markers"]) or "none"])
    if markers["other_markers"]:
        rows.append(["other markers", ", ".join(markers["other_markers"])])
    return _table(rows)


def render_text(verdict: SchemaVerdict, markers: dict[str, Any], *, db_path: Path, open_mode: str,
                snapshot_out: str | None) -> str:
    lines = [f"check-schema: {verdict.verdict} (exit {verdict.exit_code})", ""]
    tokenizer = verdict.tokenizer or "UNKNOWN"
    if verdict.tokenizer_wraps:
        tokenizer += f" wrapping {verdict.tokenizer_wraps}"
    declared = f"tokenize='{verdict.tokenizer_spec}'" if verdict.tokenizer_spec is not None else \
        "no tokenize= clause: FTS5 default unicode61"
    lines += _table([
        ["database", f"{db_path} (opened {open_mode})"],
        ["nearest snapshot", f"{verdict.nearest or 'none pinned'}"
                             f"{' (digest equal)' if verdict.exact else ''}"],
        ["live digest", verdict.live_digest],
        ["schema cookie", str(verdict.schema_cookie)],
        ["FTS tokenizer", f"{tokenizer} ({declared})"],
    ], indent="")
    lines += ["", f"Differences from {verdict.nearest or 'the pinned snapshots'}: {len(verdict.differences)}"]
    if verdict.differences:
        lines += _table([["KIND", "OBJECT", "ADDITIVE", "DETAIL"]] + [
            [d.kind, d.object, "yes" if d.additive else "no", d.detail] for d in verdict.differences])
    renames = likely_renames(verdict.differences)
    if renames:
        lines += ["", "Likely renamed (one column missing and one added in the same table, same type):"]
        lines += [f"  - {r['from']} -> {r['to']} ({r['type']})" for r in renames]
    if verdict.problems:
        lines += ["", "Incompatible because:"] + [f"  - {explain_problem(p)}" for p in verdict.problems]
    lines += ["", "Templates:"]
    template_rows = [["TEMPLATE", "EVIDENCE TYPE", "VERDICT"]]
    for t in verdict.templates:
        template_rows.append([t.template, t.evidence_type, template_state(verdict, t)])
    lines += _table(template_rows)
    skipped = verdict.skipped_evidence_types
    lines.append(f"Skipped evidence types: {', '.join(skipped) if skipped else 'none'}")
    lines += ["", "Freshness markers:", *_marker_lines(markers)]
    if snapshot_out:
        lines += ["", f"Snapshot written to {snapshot_out}"]
    step = next_step(verdict)
    if step:
        lines += ["", f"Next step: {step}"]
    return "\n".join(lines) + "\n"


UNREADABLE_STEP = ("check --db (or $OBELISK_DB) names the Obelisk database and that this user can read it; "
                   "run check-schema again")


def db_digest(db_path: Path, key: DigestKey | None) -> str | None:
    """The JSON form's name for the database: its path's keyed digest, or None without the install's key."""
    return key.of_text(str(db_path)) if key is not None else None


def _failure(out: TextIO, fmt: str, *, db_path: Path, code: str, detail: str, key: DigestKey | None) -> int:
    if fmt == "json":
        out.write(json.dumps({"command": "check-schema", "verdict": "unreadable", "exit_code": 2,
                              "db_digest": db_digest(db_path, key),
                              "error": {"code": code, "detail": detail},
                              "next_step": UNREADABLE_STEP},
                             sort_keys=True, indent=2) + "\n")
    else:
        out.write(f"check-schema: unreadable (exit 2)\n\n{detail} ({code})\ndatabase: {db_path}\n\n"
                  f"Next step: {UNREADABLE_STEP}\n")
    return EXIT_FOR["unreadable"]


def snapshot_for_export(verdict: SchemaVerdict, db_path: Path) -> dict[str, Any]:
    """The live snapshot with an id and a description fit to commit (no absolute path)."""
    exported = dict(verdict.live)
    exported["id"] = "captured-" + verdict.live_digest.removeprefix("sha256:")[:12]
    exported["captured_from"] = f"check-schema --snapshot-out of a database file named {db_path.name}"
    return exported


def check_schema_command(*, db_path: Path, fmt: str, snapshot_out: str | None, out: TextIO,
                         key: DigestKey | None = None, now_ms: float | None = None,
                         deadline_ms: int = CHECK_DEADLINE_MS) -> int:
    """The operator view. Exit 0 exact/compatible, 1 degraded, 2 incompatible or unreadable/missing.

    ``key``: the install's digest key, for the JSON form's ``db_digest`` (null without it)."""
    now = time.time() * 1000.0 if now_ms is None else now_ms
    try:
        load_snapshots(SNAPSHOT_DIR)  # a malformed pinned snapshot is reported as such, not as the DB's fault
    except SnapshotError as exc:
        return _failure(out, fmt, db_path=db_path, code="snapshot_invalid", detail=str(exc), key=key)

    def work(snap: ReadSnapshot) -> tuple[SchemaVerdict, dict[str, Any]]:
        verdict = schema_verdict(snap)
        return verdict, read_markers(snap, verdict.schema, now)

    try:
        (verdict, markers), open_mode = read_index(db_path, work, deadline=Deadline(deadline_ms))
    except ProviderError as exc:
        return _failure(out, fmt, db_path=db_path, code=exc.code, detail=exc.detail, key=key)
    written = None
    if snapshot_out:
        try:
            Path(snapshot_out).write_text(render(snapshot_for_export(verdict, db_path)), encoding="utf-8")
            written = snapshot_out
        except OSError as exc:
            return _failure(out, fmt, db_path=db_path, code="snapshot_out_unwritable",
                            detail=f"cannot write the snapshot file ({type(exc).__name__})", key=key)
    if fmt == "json":
        document = {"command": "check-schema", "exit_code": verdict.exit_code,
                    "db_digest": db_digest(db_path, key),
                    "open_mode": open_mode, **verdict.to_dict(), "freshness_markers": markers,
                    "snapshot_out": written, "error": None}
        out.write(json.dumps(document, sort_keys=True, indent=2, ensure_ascii=False) + "\n")
    else:
        out.write(render_text(verdict, markers, db_path=db_path, open_mode=open_mode, snapshot_out=written))
    return verdict.exit_code


__all__ = [
    "EXIT_FOR",
    "SchemaVerdict",
    "TemplateVerdict",
    "Verdict",
    "check_schema_command",
    "clear_cache",
    "db_digest",
    "read_markers",
    "render_text",
    "schema_verdict",
    "snapshot_for_export",
]
