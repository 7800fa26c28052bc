"""The one code path every caller uses: request bytes in, one response envelope (and exit code) out.

``query``, ``serve --stdio`` and library callers all go through :func:`answer`. Each step depends only on
the steps before it: contract -> admission -> index (one snapshot: schema verdict, scope set, retrieval,
freshness, revision) -> bounding -> receipt. Time, environment and paths come in as parameters.
"""

from __future__ import annotations

import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar, cast

from .admission.admit import AdmittedRequest, admit
from .admission.config import ProviderConfig, load_config
from .admission.window import since_for
from .contract.parse import load_json_object, parse_request
from .contract.wire import RESPONSE_SCHEMA, EvidenceItem, EvidenceType, Freshness
from .digest import DigestKey, load_key, scope_basis
from .errors import EXIT_CODES, DeadlineExceeded, InternalError, OutputOversize, ProviderError, SchemaIncompatible
from .index.connection import Deadline, ReadSnapshot, read_index
from .index.freshness import TranscriptMemo
from .index.revision import IndexRow
from .index.scope_state import ScopeRows, ScopeSet
from .retrieval.engine import FETCH_CEILING, RunReport, run_templates, substring_scan_planned
from .retrieval.markers import decides_markers, fts5_tokens
from .retrieval.terms import PreparedTerms, match_variants, prepare_terms
from .templates.catalog import Template, load_templates, scope_template, shipped_digests
from .templates.params import NO_UPPER_BOUND

DB_ENV = "OBELISK_DB"
#: Characters one evidence text is composed to at most (the request's max_snippet_chars may be lower).
SNIPPET_CEILING = 2000


def default_db_path(env: Mapping[str, str]) -> Path:
    override = env.get(DB_ENV)
    return Path(override) if override else Path(env.get("HOME", str(Path.home()))) / ".obelisk" / "obelisk.sqlite"


# The classes below are plain (``__slots__`` and an ``__init__``), not dataclasses: a cold ``query`` imports no
# ``dataclasses`` (it costs more than the rest of a small request's imports together).


class Response:
    """One envelope and the exit code that goes with it."""

    __slots__ = ("envelope", "exit_code")

    def __init__(self, envelope: dict[str, Any], exit_code: int) -> None:
        self.envelope = envelope
        self.exit_code = exit_code


class _Read:
    """Everything taken from the index inside one snapshot (freshness is judged inside it too)."""

    __slots__ = ("freshness", "freshness_detail", "open_mode", "revision", "run", "schema", "scope_empty",
                 "skipped_types", "terms", "tokenizer")

    def __init__(self, tokenizer: str, revision: str, run: RunReport | None, terms: PreparedTerms | None,
                 skipped_types: tuple[str, ...], *, freshness: Freshness = "unknown",
                 freshness_detail: dict[str, object] | None = None, open_mode: str = "",
                 schema: tuple[str, str] = ("", ""), scope_empty: bool = False) -> None:
        self.tokenizer = tokenizer
        self.revision = revision
        self.run = run
        self.terms = terms
        self.skipped_types = skipped_types
        self.freshness: Freshness = freshness
        self.freshness_detail: dict[str, object] = {} if freshness_detail is None else freshness_detail
        self.open_mode = open_mode
        self.schema = schema  # verdict, nearest pinned snapshot id
        self.scope_empty = scope_empty  # the enabled scope's sources and roots match no session of the index


class _Context:
    __slots__ = ("freshness", "index_revision", "key", "meta")

    def __init__(self, key: DigestKey, meta: dict[str, Any] | None = None, freshness: Freshness = "unknown",
                 index_revision: str = "unknown") -> None:
        self.key = key
        self.meta: dict[str, Any] = {} if meta is None else meta
        self.freshness: Freshness = freshness
        self.index_revision = index_revision


def _envelope(request_id: str | None, outcome: str, *, error: ProviderError | None = None,
              result: dict[str, Any] | None = None, receipt: dict[str, Any] | None = None,
              meta: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "schema_version": RESPONSE_SCHEMA,
        "request_id": request_id,
        "outcome": outcome,
        "error": None if error is None else {"code": error.code, "retryable": error.retryable,
                                             "detail": error.detail},
        "result": result,
        "receipt": receipt,
        "provider_meta": meta or {},
    }


def error_response(error: ProviderError, request_id: str | None = None) -> Response:
    """The envelope (no result, no receipt) and exit code of a request that got no further than ``error``:
    the CLI's answer when the request could not even be read (too late, not a regular file, unreadable)."""
    outcome = error.outcome if error.outcome != "internal" else "failed"
    return Response(_envelope(request_id, outcome, error=error), EXIT_CODES[error.outcome])


def _runnable(live_needs_check: Callable[[Template], list[str]], types: Sequence[EvidenceType],
              templates: Sequence[Template]) -> tuple[list[Template], list[str]]:
    runnable: list[Template] = []
    skipped: list[str] = []
    for etype in types:
        own = [t for t in templates if t.evidence_type == etype]
        ok = [t for t in own if not live_needs_check(t)]
        runnable.extend(ok)
        if not ok:
            skipped.append(etype)
    return runnable, skipped


# --- warm-path caches (``serve --stdio`` and library callers answer many requests in one process) --------
#
# Each cache holds only what a fresh read would give again, so a hit changes no answer:
# * template verification: digests of templates verified in this process that the shipped manifest does not
#   list (a template is its bytes).
# * FTS5 query tokenizers, by tokenizer spec (a pure function of the spec).
# * the schema verdict (``index.schema_verdict``, by file identity and schema cookie).
# * transcript line counts and heads, by the file's stat (``index.freshness.memo``: re-statted every request,
#   re-read only when the stat changed).
# * what a request reads about its scope (``_Memo``): the scope set, the marker rows, the transcript homes,
#   the revision aggregates, the scope's ``index_state`` rows, the archive probe and the rowids of a small
#   scope's messages that hold a marker word (``retrieval.engine``: ``.cue_text`` matched in Python, or
#   ``.cue_rows``), keyed by the index's
#   state: the database file's identity (device, inode, size, mtime and ctime in ns) and the ``-wal`` file's
#   size and mtime, taken before the snapshot opens. The same state is checked again after the read: only
#   when nothing changed in between are new values kept, and a read that used a kept value while the state
#   changed is read again with nothing remembered. A state with a ``-journal`` (a rollback write in
#   progress) is never remembered.
# Every request still gets its own connection, snapshot, admission and deadline.

_VERIFIED_TEMPLATES: set[str] = set()
_MEMO_SIZE = 256
#: Row lookups with more paths than this are not remembered (bounds the memory of a warm process).
_MEMO_MAX_PATHS = 5_000
_MEMO: OrderedDict[tuple[object, ...], object] = OrderedDict()
_MEMO_STATS = {"hits": 0, "stored": 0}
#: Transcript line counts and heads, by each file's stat (``index.freshness.memo``).
_TRANSCRIPTS = TranscriptMemo()
T = TypeVar("T")


def _index_state_key(db_path: Path) -> tuple[object, ...] | None:
    """The index's state as the file system shows it (see above); None when it must not be remembered."""
    import os

    try:
        main = os.stat(db_path)
        if os.path.exists(f"{db_path}-journal"):
            return None
        try:
            wal = os.stat(f"{db_path}-wal")
            wal_state: tuple[int, int] | None = (wal.st_size, wal.st_mtime_ns)
        except FileNotFoundError:
            wal_state = None
    except OSError:
        return None
    return (str(db_path), main.st_dev, main.st_ino, main.st_size, main.st_mtime_ns, main.st_ctime_ns, wal_state)


class _Memo:
    """One request's view of the warm cache: hits are counted, new values kept only by :meth:`keep`."""

    def __init__(self, state: tuple[object, ...] | None) -> None:
        self.state = state
        self.hits = 0
        self._new: dict[tuple[object, ...], object] = {}

    def get(self, part: tuple[object, ...], compute: Callable[[], T]) -> T:
        if self.state is None:
            return compute()
        key = (self.state, *part)
        if key in _MEMO:
            _MEMO.move_to_end(key)
            self.hits += 1
            _MEMO_STATS["hits"] += 1
            return cast("T", _MEMO[key])
        value = compute()
        self._new[key] = value
        return value

    def keep(self) -> None:
        for key, value in self._new.items():
            _MEMO[key] = value
            _MEMO_STATS["stored"] += 1
        while len(_MEMO) > _MEMO_SIZE:
            _MEMO.popitem(last=False)


def clear_warm_caches() -> None:
    """Forget every remembered scope read and transcript read (tests compare cold and warm answers with it)."""
    _MEMO.clear()
    _TRANSCRIPTS.clear()


def warm_cache_stats() -> dict[str, int]:
    """Hits and stores of the scope-read cache in this process (counts only)."""
    return dict(_MEMO_STATS)


def _verify_templates(templates: Sequence[Template], template_dir: Path | None) -> None:
    """Templates whose digests the shipped manifest lists need no sqlglot; any other is verified in memory
    (once per process), or the request fails ``template_rejected``. Nothing is written."""
    shipped = shipped_digests(template_dir) if template_dir else shipped_digests()
    pending = [t for t in templates if t.digest not in shipped and t.digest not in _VERIFIED_TEMPLATES]
    if not pending:
        return
    from .templates.verify import ensure_verified

    ensure_verified(pending, shipped=())
    _VERIFIED_TEMPLATES.update(t.digest for t in pending)


def _tokenize_with(spec: str) -> Callable[[str], Sequence[str]]:
    """The live tokenizer's query tokens (``retrieval.markers.fts5_tokens``: one in-memory connection per spec,
    kept for the process)."""
    return fts5_tokens(spec, query=True)


def _has_column(live: Mapping[str, Any], table: str, column: str) -> bool:
    return any(t["name"] == table and any(c["name"] == column for c in t["columns"]) for t in live["tables"])


def _read(snap: ReadSnapshot, admitted: AdmittedRequest, since: str, template_dir: Path | None, *,
          config: ProviderConfig, now_ms: float, memo: _Memo, meta: dict[str, Any],
          until: str = NO_UPPER_BOUND, one_shot: bool = False) -> _Read:
    from .index.revision import index_revision
    from .index.schema_verdict import schema_verdict
    from .index.scope_state import read_marker_rows, read_scope_rows, since_bucket
    from .templates.catalog import TEMPLATE_DIR

    verdict = schema_verdict(snap, template_dir=template_dir or TEMPLATE_DIR)
    if verdict.verdict == "incompatible":
        # Problem texts name tables and columns of the schema only (never content).
        raise SchemaIncompatible("the live index schema is incompatible: " + "; ".join(verdict.problems[:3]))
    tokenizer = verdict.tokenizer or "unicode61"
    has_cursor = _has_column(verdict.live, "index_state", "cursor")
    unmet = {t.template: list(t.missing) for t in verdict.templates}
    all_templates = load_templates(template_dir) if template_dir else load_templates()
    templates, skipped = _runnable(lambda t: unmet.get(t.key, ["unknown template"]), admitted.evidence_types,
                                   all_templates)
    scope_sql = scope_template(template_dir) if template_dir else scope_template()
    scope_runnable = not unmet.get(scope_sql.key, ["unknown template"])
    if not scope_runnable:
        # Without the scope template nothing can be read within the scope: every type is skipped.
        templates, skipped = [], list(admitted.evidence_types)
    _verify_templates([scope_sql, *templates], template_dir)
    terms = prepare_terms(admitted.query_terms, tokenizer=tokenizer,
                          tokenize=_tokenize_with(verdict.tokenizer_spec or "unicode61"))
    scope = admitted.scope
    limits = admitted.limits
    bucket = since_bucket(since)
    roots = scope.bound_roots()  # real paths resolved once per request
    if substring_scan_planned(templates, terms, roots):
        # Said before the scan runs, so a request the deadline ends during the scan still discloses it.
        meta["degradations"] = [*terms.degradations, "cjk_substring_match"]

    def scope_rows(lower: str) -> ScopeRows:
        """The scope template's rows from ``lower`` on, remembered per index state (``serve``)."""
        return memo.get(("scope", scope_sql.digest, tuple(scope.sources), roots.spellings, roots.real_paths,
                         lower, until),
                        lambda: read_scope_rows(snap, scope_sql, sources=scope.sources, roots=roots, since=lower,
                                                until=until))

    scope_set = scope_rows(bucket).active_since(since) if scope_runnable else None
    run = run_templates(snap, templates, scope=scope_sql, sources=scope.sources, roots=roots, since=since,
                        terms=terms, tokenizer=tokenizer,
                        fetch_limit=min(FETCH_CEILING, max(4 * limits.max_items, 20)),
                        window_chars=min(limits.max_snippet_chars, SNIPPET_CEILING),
                        scope_set=(scope_set.ids, scope_set.ceiling_reached) if scope_set else None,
                        until=until, remember=None if one_shot else memo.get,
                        markers_in_python=decides_markers(verdict.tokenizer, verdict.tokenizer_spec))
    scope_empty = False
    if not run.hits and scope_runnable and not (scope_set and scope_set.ids):
        # Nothing found and no session active in the window: say whether the scope matches any session at all
        # (any time, before ``until``), so a wrong --source or --root is not mistaken for "no history". A
        # session active in the window already answers that, with no second read of ``sessions``.
        scope_empty = not scope_rows("").active_since("").ids
    markers = memo.get(("markers",), lambda: read_marker_rows(snap))
    revision = memo.get(("revision", verdict.schema_cookie, snap.mode),
                        lambda: index_revision(snap, schema_cookie=verdict.schema_cookie, identity=snap.identity,
                                               markers=markers))
    freshness, detail = _freshness(snap, scope_set, markers, has_cursor=has_cursor, admitted=admitted,
                                   config=config, now_ms=now_ms, memo=memo)
    return _Read(tokenizer, revision, run, terms, tuple(skipped), freshness=freshness, freshness_detail=detail,
                 open_mode=snap.mode, schema=(verdict.verdict, verdict.nearest or ""), scope_empty=scope_empty)


def _freshness(snap: ReadSnapshot, scope_set: ScopeSet | None, markers: Mapping[str, object], *,
               has_cursor: bool, admitted: AdmittedRequest, config: ProviderConfig,
               now_ms: float, memo: _Memo) -> tuple[Freshness, dict[str, object]]:
    """Judge freshness inside the snapshot, within what is left of the request's deadline.

    ``index_state`` is read for the scope's files and the files of the walked directories only (primary-key
    lookups); the stat function checks the deadline, so a huge or slow transcript tree ends the judgement
    (freshness ``unknown``, disclosed) instead of the request.
    """
    import apsw

    from .index.freshness import assess_scoped_freshness
    from .index.scope_state import Seek, has_rows_under, read_unit_rows, transcript_homes

    def lookup(paths: Sequence[str]) -> Mapping[str, IndexRow]:
        if len(paths) > _MEMO_MAX_PATHS:
            return read_unit_rows(snap, paths, has_cursor=has_cursor)
        return memo.get(("rows", has_cursor, tuple(paths)),
                        lambda: read_unit_rows(snap, paths, has_cursor=has_cursor))

    seeks: list[Seek] = []  # what the homes skip-scan learned of index_state's key: answers prefix probes
    try:
        homes = config.transcript_homes or memo.get(("homes",), lambda: transcript_homes(snap, seeks))
        report = assess_scoped_freshness(
            scope_set.files if scope_set else (), markers,
            lookup=lookup,
            has_rows_under=lambda prefix: memo.get(("prefix", prefix), lambda: has_rows_under(snap, prefix, seeks)),
            roots=admitted.scope.roots, real_roots=admitted.scope.bound_roots().real_paths,
            sources=admitted.scope.sources,
            transcript_homes=homes, now_ms=now_ms, stat=snap.deadline.bounded_stat(), memo=_TRANSCRIPTS,
            deadline_check=snap.deadline.check)
    except (DeadlineExceeded, apsw.InterruptError):
        return "unknown", {"freshness_deadline_exceeded": True}
    detail = report.to_public()
    # Why the verdict could not be judged, as flags (the detail holds counts only): e.g. no_transcript_home.
    detail.update({f"unknown_reason_{reason}": 1 for reason in report.unknown_reasons})
    return report.verdict, detail


def _request_id_of(raw: bytes) -> str | None:
    """The request's own ``request_id`` when the bytes parse as a JSON object carrying a string one (kept on
    every rejection; read again only when the request was rejected)."""
    try:
        value = load_json_object(raw).get("request_id")
    except ProviderError:
        return None
    return value if isinstance(value, str) else None


def answer(raw: bytes, *, db_path: Path, config_path: Path, now: Callable[[], float] = time.time,
           vfs: str | None = None, template_dir: Path | None = None, config_must_exist: bool = False,
           started_at: float | None = None, until: str = NO_UPPER_BOUND,
           preloaded: tuple[ProviderConfig, DigestKey] | None = None, one_shot: bool = False) -> Response:
    """Answer one request. Never raises: every outcome is an envelope with its exit code.

    ``until`` and ``preloaded`` exist for the replay qualification (provider/commands/qualify/replay/) only;
    neither is a request field. ``until`` is the templates' upper time bound: the index as it stood before a moment.
    ``preloaded`` is the config and key to answer with instead of reading ``config_path`` (the replay asks as
    the scope at stage 2, in memory: nothing is written).

    ``one_shot``: the process answers this request only and exits (``query``): reads made only to be
    remembered for later requests (a small scope's FTS marker rows, ``retrieval.engine``'s ``.cue_rows``)
    are not made (its texts, ``.cue_text``, still are: they cost what the scope holds); the answer is the
    same either way.

    ``config_must_exist``: the operator named the config (a missing file is ``config_invalid``, not default-off).
    ``started_at``: the ``time.monotonic()`` at which the request's deadline began (the CLI starts it before
    reading stdin); default: now. ``vfs`` and ``template_dir`` exist for tests (a recording VFS; a tampered
    template set).
    """
    request_id: str | None = None
    try:
        request = parse_request(raw)
        request_id = request.request_id
        config = preloaded[0] if preloaded else load_config(config_path, must_exist=config_must_exist)
        admitted = admit(request, config)
        # The receipt's digests are keyed; a query never makes a key.
        ctx = _Context(key=preloaded[1] if preloaded else load_key(config_path))
    except ProviderError as err:
        if request_id is None:
            request_id = _request_id_of(raw)
        return error_response(err, request_id)
    except Exception:  # noqa: BLE001 - one envelope, never a traceback
        return error_response(InternalError(), request_id)
    try:
        return _answer_admitted(admitted, config, db_path, now=now, vfs=vfs, template_dir=template_dir, ctx=ctx,
                                started_at=started_at, until=until, one_shot=one_shot)
    except ProviderError as err:
        outcome = "failed" if err.outcome != "rejected" else "rejected"
        code = EXIT_CODES[err.outcome]
        if outcome == "rejected":
            return Response(_envelope(request_id, "rejected", error=err, meta=ctx.meta), code)
        return Response(_failed(admitted, err, ctx), code)
    except Exception:  # noqa: BLE001 - a bug: still one envelope, never a traceback
        return Response(_failed(admitted, InternalError(), ctx), EXIT_CODES["internal"])


def _failed(admitted: AdmittedRequest, err: ProviderError, ctx: _Context) -> dict[str, Any]:
    """Fail-open for the work lane: a typed empty result and a receipt with result_count 0."""
    from .bounding.receipt import build_receipt

    result = _result(admitted, ctx.index_revision, ctx.freshness, [], truncated=False, omitted=0)
    receipt = build_receipt(result, scope_basis=_scope_basis(admitted), query_basis=_query_basis(admitted),
                            key=ctx.key)
    return _envelope(admitted.request.request_id, "failed", error=err, result=result, receipt=receipt,
                     meta=ctx.meta)


def _scope_basis(admitted: AdmittedRequest) -> dict[str, Any]:
    scope = admitted.scope
    return scope_basis(scope.agent_id, scope.project_id, scope.repository_id, scope.sources, scope.roots)


def _query_basis(admitted: AdmittedRequest) -> dict[str, Any]:
    request = admitted.request
    return {"trigger": request.trigger, "evidence_types": list(request.evidence_types),
            "query_terms": list(request.query_terms), "limits": request.limits.as_dict(),
            "revision": request.revision.as_dict() if request.revision else None}


def _result(admitted: AdmittedRequest, index_revision: str, freshness: Freshness, items: list[EvidenceItem], *,
            truncated: bool, omitted: int) -> dict[str, Any]:
    from .bounding.receipt import build_result

    scope = admitted.request.scope
    return build_result(request_id=admitted.request.request_id, index_revision=index_revision,
                        agent_id=scope.agent_id, project_id=scope.project_id, repository_id=scope.repository_id,
                        freshness=freshness, items=items, truncated=truncated, omitted_count=omitted)


def _read_remembering(db_path: Path, work: Callable[[ReadSnapshot, _Memo], _Read], *, deadline: Deadline,
                      vfs: str | None) -> tuple[_Read, str]:
    """One read of the index with the warm cache: a read that used remembered values while the index's state
    changed is done again with nothing remembered; values are kept only from a read the state did not move
    under (see the cache notes above)."""
    before = _index_state_key(db_path)
    memo = _Memo(before)
    read, open_mode = read_index(db_path, lambda snap: work(snap, memo), deadline=deadline, vfs=vfs)
    after = _index_state_key(db_path)
    if before is not None and after == before:
        memo.keep()
    elif memo.hits:
        memo = _Memo(None)
        read, open_mode = read_index(db_path, lambda snap: work(snap, memo), deadline=deadline, vfs=vfs)
    return read, open_mode


def _answer_admitted(admitted: AdmittedRequest, config: ProviderConfig, db_path: Path, *,
                     now: Callable[[], float], vfs: str | None, template_dir: Path | None,
                     ctx: _Context, started_at: float | None = None,
                     until: str = NO_UPPER_BOUND, one_shot: bool = False) -> Response:
    from .bounding.bound import bound, envelope_ceiling
    from .bounding.receipt import build_receipt
    from .retrieval.evidence import RESOLUTION_TEMPLATES, candidate, pending_resolution
    from .retrieval.fold import fold
    from .retrieval.resolution import link_resolutions

    started = time.monotonic() if started_at is None else started_at
    deadline = Deadline(config.deadline_ms)
    deadline.expires_at = started + config.deadline_ms / 1000.0  # the deadline began with the read of the request
    now_s = now()
    since = since_for(admitted, config, now_s)
    degradations: list[str] = []
    if admitted.request.revision is not None:
        unrevised = admitted._replace(request=admitted.request._replace(revision=None))
        if since == since_for(unrevised, config, now_s):
            degradations.append("revision_unresolved")  # the recency window was used instead
    read, open_mode = _read_remembering(db_path, lambda snap, memo: _read(snap, admitted, since, template_dir,
                                                                          config=config, now_ms=now_s * 1000.0,
                                                                          memo=memo, meta=ctx.meta, until=until,
                                                                          one_shot=one_shot),
                                        deadline=deadline, vfs=vfs)
    ctx.index_revision = read.revision
    ctx.meta.update({"open_mode": open_mode, "tokenizer": read.tokenizer, "schema_verdict": read.schema[0],
                     "schema_snapshot": read.schema[1],
                     "skipped_evidence_types": list(read.skipped_types)})
    ctx.freshness = read.freshness
    ctx.meta["freshness_detail"] = _flatten_counts(read.freshness_detail)
    deadline.check()  # the deadline covers the work after the read too: folding, bounding, redaction, receipt
    run, prepared = read.run, read.terms
    if run is None or prepared is None:  # pragma: no cover - _read always sets both
        raise InternalError
    spellings = admitted.scope.bound_roots().spellings  # the operator's spelling and the real path of each root
    terms = match_variants(prepared.instr_terms, spellings)
    # What happened after a failure is composed only for the few resolution rows that linking keeps.
    made = (candidate(hit, terms=terms, roots=spellings, window=run.window_chars) for hit in run.hits
            if hit.template_id not in RESOLUTION_TEMPLATES)
    pending = (pending_resolution(hit, terms=terms, roots=spellings, window=run.window_chars) for hit in run.hits
               if hit.template_id in RESOLUTION_TEMPLATES)
    candidates = link_resolutions([c for c in made if c is not None], [p for p in pending if p is not None])
    if prepared.post_filter_terms:
        candidates = [c for c in candidates if c.score > 0]
    deadline.check()
    folded = fold(candidates)
    report = bound(folded, admitted.limits, fetch_ceiling_reached=run.fetch_ceiling_reached)
    deadline.check()
    result = _result(admitted, read.revision, ctx.freshness, report.items,
                     truncated=report.truncated, omitted=report.omitted_count)
    receipt = build_receipt(result, scope_basis=_scope_basis(admitted), query_basis=_query_basis(admitted),
                            key=ctx.key)
    deadline.check()
    ctx.meta.update({
        "templates_run": list(run.templates_run),
        "templates_skipped": list(run.templates_skipped),
        "candidates_found": len(candidates),
        "folded_repeats": report.folded_occurrences,
        "snippets_cut": report.snippets_cut,
        # refs and times left out of kept items (over a ceiling, unfit: bounding.bound); said only when any were
        **({"fields_withheld": report.fields_withheld} if report.fields_withheld else {}),
        "fetch_ceiling_reached": run.fetch_ceiling_reached,
        "redactions": dict(sorted(Counter(report.redactions).items())),
        "degradations": [*prepared.degradations, *degradations,
                         *(["cjk_substring_match"] if run.substring_scan else []),
                         *(["scope_matches_no_session"] if read.scope_empty else [])],
        "total_chars": report.total_chars,
        "elapsed_ms": round((time.monotonic() - started) * 1000.0, 1),
        "since": since[:10] if since else "",
    })
    envelope = _envelope(admitted.request.request_id, "ok", result=result, receipt=receipt, meta=ctx.meta)
    if _envelope_bytes(envelope) > envelope_ceiling(admitted.limits):
        # Every field is bounded on its way in; this is the backstop (RFC §6: oversize output ends the answer
        # with a typed failure, no partial raw output).
        raise OutputOversize
    return Response(envelope, EXIT_CODES["ok"])


#: Characters the CLI writes escaped so that one envelope is one line (``cli._LINE_BREAKS``): at most four
#: bytes more each than their UTF-8.
_LINE_BREAKS = ("\u2028", "\u2029", "\u0085")


def _envelope_bytes(envelope: dict[str, Any]) -> int:
    """At least the bytes of the line the CLI writes for ``envelope`` (compact JSON, UTF-8)."""
    import json

    text = json.dumps(envelope, ensure_ascii=False, separators=(",", ":"))
    return len(text.encode("utf-8", "surrogatepass")) + 4 * sum(text.count(ch) for ch in _LINE_BREAKS)


def _flatten_counts(detail: Mapping[str, object]) -> dict[str, int]:
    """Keep only integer counts and ages from the freshness report (content-free by construction)."""
    out: dict[str, int] = {}
    for key, value in detail.items():
        if isinstance(value, (bool, int, float)):
            out[key] = int(value)
    return out
