"""The schema verdict a request needs, computed inside its read snapshot (the query path's only schema module).

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

:func:`schema_verdict` may keep its verdicts in a :class:`VerdictCache`, by the database file's identity (device,
inode) and SQLite's schema cookie, so a warm ``serve`` pays for the introspection once per schema. The operators'
``check-schema`` command renders the same verdict.
"""

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, NamedTuple

from ..contract.meta import SchemaVerdictName
from ..templates.catalog import SCOPE_KIND, TEMPLATE_DIR, Template, load_templates
from .connection import ReadSnapshot
from .live_schema import LiveSchema, core_problems, read_live_schema, unmet_needs
from .snapshots import SNAPSHOT_DIR, Difference, capture, load_snapshots, nearest

Verdict = SchemaVerdictName
EXIT_FOR: Final[dict[str, int]] = {"exact": 0, "compatible": 0, "degraded": 1, "incompatible": 2,
                                   "unreadable": 2}
#: Verdicts a :class:`VerdictCache` keeps at most.
VERDICTS_KEPT: Final = 32


class TemplateVerdict(NamedTuple):
    template: str  # "<id>.v<version>"
    evidence_type: str
    missing: tuple[str, ...]  # "table.column" the live schema lacks; empty when runnable

    @property
    def runnable(self) -> bool:
        return not self.missing

    def to_dict(self) -> dict[str, Any]:
        return {"template": self.template, "evidence_type": self.evidence_type, "runnable": self.runnable,
                "missing": list(self.missing)}


class SchemaVerdict(NamedTuple):
    """The verdict and what it was judged from (``live``, ``schema``: left out of the repr)."""

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
    live: dict[str, Any]  # the captured snapshot (id "live")
    schema: LiveSchema  # the introspection it was judged from

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields[:-2])
        return f"SchemaVerdict({shown})"

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

    @property
    def missing(self) -> dict[str, tuple[str, ...]]:
        """The columns each template (by key) needs and the live schema lacks."""
        return {t.template: t.missing for t in self.templates}

    def has_column(self, table: str, column: str) -> bool:
        """Whether the live schema's ``table`` has ``column``."""
        return any(t["name"] == table and any(c["name"] == column for c in t["columns"]) for t in self.live["tables"])

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


VerdictKey = tuple[int, int, int, str, str]


@dataclass(slots=True)
class VerdictCache:
    """Schema verdicts a warm process keeps, by file identity, schema cookie and the snapshot and template
    directories judged against (least recently used out)."""

    size: int = VERDICTS_KEPT
    verdicts: OrderedDict[VerdictKey, SchemaVerdict] = field(default_factory=OrderedDict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def get(self, key: VerdictKey) -> SchemaVerdict | None:
        with self.lock:
            found = self.verdicts.get(key)
            if found is not None:
                self.verdicts.move_to_end(key)
            return found

    def put(self, key: VerdictKey, verdict: SchemaVerdict) -> None:
        with self.lock:
            self.verdicts[key] = verdict
            while len(self.verdicts) > self.size:
                self.verdicts.popitem(last=False)


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
           judged: Sequence[Template]) -> SchemaVerdict:
    pinned, differences = nearest(captured, snapshots)
    problems = tuple(core_problems(live)) + tuple(scope_collation_problems(captured))
    templates = tuple(
        TemplateVerdict(t.key, t.evidence_type, tuple(unmet_needs(live, t.needs)))
        for t in judged
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


def schema_verdict(snap: ReadSnapshot, *, snapshot_dir: Path = SNAPSHOT_DIR, template_dir: Path = TEMPLATE_DIR,
                   templates: Sequence[Template] | None = None, cache: VerdictCache | None = None) -> SchemaVerdict:
    """The schema verdict of the database behind ``snap`` against the templates of ``template_dir`` (``templates``:
    those already loaded from it), kept in ``cache`` when one is given.

    Raises :class:`~provider.index.snapshots.SnapshotError` when a pinned snapshot is malformed.
    """
    cookie_row = snap.one("PRAGMA schema_version")
    cookie = int(cookie_row[0]) if cookie_row else -1
    key: VerdictKey = (snap.identity.dev, snap.identity.ino, cookie, str(snapshot_dir), str(template_dir))
    cached = cache.get(key) if cache is not None else None
    if cached is not None:
        return cached
    live = read_live_schema(snap)
    captured = capture(snap)
    judged = templates if templates is not None else load_templates(template_dir)
    computed = _judge(live, captured, load_snapshots(snapshot_dir), judged)
    if cache is not None:
        cache.put(key, computed)
    return computed
