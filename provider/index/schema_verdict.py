"""The schema verdict a request needs, computed inside its read snapshot (the query path's only schema module).

Verdicts, most severe first (the first that applies wins):

``incompatible``
    a core table or column is missing (``live_schema.CORE_COLUMNS``), ``messages_fts`` is missing or not
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

:func:`schema_verdict` is cached in-process by the database file's identity (device, inode) and SQLite's
schema cookie, so a long-lived ``serve`` process pays for the introspection once per schema. The operators'
``check-schema`` command (``check_schema``) renders the same verdict; this module imports neither it nor
sqlglot, so a cold ``query`` does not load them.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from ..retrieval.templates import SCOPE_KIND, TEMPLATE_DIR, load_templates
from .connection import ReadSnapshot
from .live_schema import LiveSchema, core_problems, read_live_schema, unmet_needs
from .snapshots import SNAPSHOT_DIR, Difference, capture, load_snapshots, nearest

Verdict = Literal["exact", "compatible", "degraded", "incompatible"]
EXIT_FOR: Final[dict[str, int]] = {"exact": 0, "compatible": 0, "degraded": 1, "incompatible": 2,
                                   "unreadable": 2}
_CACHE_SIZE: Final = 32


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
            "templates": [t.to_dict() for t in self.templates],
            "skipped_templates": list(self.skipped_templates),
            "skipped_evidence_types": list(self.skipped_evidence_types),
        }


_CacheKey = tuple[int, int, int, str, str]
_cache: OrderedDict[_CacheKey, SchemaVerdict] = OrderedDict()
_cache_lock = threading.Lock()


def clear_cache() -> None:
    with _cache_lock:
        _cache.clear()


def _judge(live: LiveSchema, captured: dict[str, Any], snapshots: Sequence[dict[str, Any]],
           template_dir: Path) -> SchemaVerdict:
    pinned, differences = nearest(captured, snapshots)
    problems = tuple(core_problems(live))
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
