"""The operators' ``check-schema``: the live schema verdict (``schema_verdict``) rendered, with the markers.

The verdicts and their precedence are those of :mod:`.schema_verdict` (the module a request uses; it is
cached there by file identity and schema cookie). Exit codes of :func:`check_schema_command`: 0 exact or
compatible, 1 degraded, 2 incompatible, unreadable or missing. The operator view shows the template table consistent
with the verdict (nothing runs when incompatible), calls out likely renames, and ends every non-exact verdict
with a next step; its JSON form names the database by a digest only (the text form, for the local operator,
by path).

That ``db_digest`` is keyed (HMAC-SHA256 under the install's key, ``provider/digest.py``) when the key exists
beside the provider config; ``check-schema`` needs no config, and without a key ``db_digest`` is null: an
unkeyed digest of the path would confirm a guessed path (a user name, a project directory). ``live_digest``
stays a plain content digest: it must equal the pinned snapshots' digests on every install to say ``exact``,
and it digests Obelisk's schema (table and column declarations), not anything a user wrote.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final, TextIO

from ..digest import DigestKey
from ..errors import ProviderError
from ..index.connection import Deadline, ReadSnapshot, read_index
from ..index.live_schema import LiveSchema
from ..index.schema_verdict import (
    EXIT_FOR,
    SchemaVerdict,
    TemplateVerdict,
    Verdict,
    explain_problem,
    likely_renames,
    next_step,
    schema_verdict,
    template_state,
)
from ..index.snapshots import SNAPSHOT_DIR, SnapshotError, load_snapshots, render

CHECK_DEADLINE_MS: Final = 10_000
HEARTBEAT_FRESH_MS: Final = 60_000.0  # Obelisk's APP_HEARTBEAT_FRESH_MS


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
    "db_digest",
    "read_markers",
    "render_text",
    "schema_verdict",
    "snapshot_for_export",
]
