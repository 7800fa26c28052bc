"""The one request path every caller uses: request bytes in, one response envelope (and exit code) out.

``query``, ``serve --stdio`` and library callers all go through :func:`answer`. A process that answers many
requests keeps one :class:`WarmState` and passes it to every answer; each part of it belongs to the layer
whose reads it remembers. Time, environment and paths come in as parameters.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import apsw

from .admission.admit import AdmittedRequest, admit
from .admission.config import ProviderConfig, load_config
from .admission.window import since_for
from .bounding.bound import bound, envelope_ceiling
from .bounding.receipt import build_envelope, build_receipt, build_result, envelope_bytes
from .contract.meta import Degradation, OpenMode, ProviderMeta, SchemaVerdictName, unknown_reason_flag
from .contract.parse import load_json_object, parse_request
from .contract.wire import EvidenceItem, EvidenceType, Freshness, request_id_or_none
from .digest import DigestKey, load_key, scope_basis
from .errors import EXIT_CODES, DeadlineExceeded, InternalError, OutputOversize, ProviderError, SchemaIncompatible
from .index.connection import Deadline, ReadSnapshot
from .index.freshness import TranscriptMemo, assess_scoped_freshness
from .index.memo import IndexMemo, RequestMemo, read_remembering
from .index.schema_verdict import VerdictCache, schema_verdict
from .index.scope_state import ScopeRows, ScopeSet, ScopeState, since_bucket
from .retrieval.engine import RunReport, run_templates, substring_scan_planned
from .retrieval.evidence import check_declared
from .retrieval.fold import fold
from .retrieval.markers import Tokenizers, decides_markers
from .retrieval.resolution import candidates_of
from .retrieval.terms import PreparedTerms
from .templates.catalog import TEMPLATE_DIR
from .templates.params import NO_UPPER_BOUND
from .templates.selection import TemplateSet


@dataclass(slots=True)
class WarmState:
    """What a warm process may remember between requests, each part owned by the layer whose reads it keeps:
    the template sets by directory (with the digests verified in memory), schema verdicts, the scope reads by
    index state, the tokenizers and matchers, and the transcripts' line counts and heads by their stat. Each
    holds only what a fresh read gives again, so a hit changes no answer; all but the template sets (one per
    directory) are bounded."""

    template_sets: dict[Path, TemplateSet] = field(default_factory=dict)
    verdicts: VerdictCache = field(default_factory=VerdictCache)
    index: IndexMemo = field(default_factory=IndexMemo)
    tokenizers: Tokenizers = field(default_factory=Tokenizers)
    transcripts: TranscriptMemo = field(default_factory=TranscriptMemo)

    def templates(self, directory: Path) -> TemplateSet:
        found = self.template_sets.get(directory)
        if found is None:
            found = self.template_sets[directory] = TemplateSet.load(directory)
        return found

    def stats(self) -> dict[str, int]:
        """Hits and stores of the scope-read memo (counts only)."""
        return {"hits": self.index.hits, "stored": self.index.stored}


@dataclass(slots=True)
class Response:
    """One envelope and the exit code that goes with it."""

    envelope: dict[str, Any]
    exit_code: int


@dataclass(slots=True)
class _Context:
    """What a failure's envelope needs of what the request got so far."""

    key: DigestKey
    meta: ProviderMeta = field(default_factory=ProviderMeta)
    freshness: Freshness = "unknown"
    index_revision: str = "unknown"


@dataclass(slots=True)
class _Request:
    """An admitted request and what answering it reads."""

    admitted: AdmittedRequest
    config: ProviderConfig
    db_path: Path
    warm: WarmState | None
    template_dir: Path
    vfs: str | None
    until: str
    started: float
    now_s: float


@dataclass(slots=True)
class _Read:
    """Everything taken from the index inside one snapshot (freshness is judged inside it too)."""

    tokenizer: str
    revision: str
    run: RunReport
    terms: PreparedTerms
    skipped_types: tuple[str, ...]
    freshness: Freshness
    freshness_detail: dict[str, object]
    schema: tuple[SchemaVerdictName, str]  # verdict, nearest pinned snapshot id
    scope_empty: bool  # the enabled scope's sources and roots match no session of the index
    open_mode: OpenMode = "ro"


def answer(raw: bytes, *, db_path: Path, config_path: Path, warm: WarmState | None = None,
           now: Callable[[], float] = time.time, vfs: str | None = None, template_dir: Path | None = None,
           config_must_exist: bool = False, started_at: float | None = None, until: str = NO_UPPER_BOUND,
           preloaded: tuple[ProviderConfig, DigestKey] | None = None) -> Response:
    """Answer one request: parse, admit, then in one snapshot of the index the schema verdict, the scope, the
    evidence and its freshness; then bound it, and sign the receipt. Never raises: every outcome is an envelope.

    ``warm``: what this process remembers between requests (None: a one-shot request remembers nothing and skips
    the reads that pay only when remembered; the answer is the same). ``started_at``: the ``time.monotonic()``
    the deadline began at (default: now). ``until`` and ``preloaded`` serve the replay qualification only, ``vfs``
    and ``template_dir`` tests.
    """
    parsed = _admitted(raw, config_path, config_must_exist=config_must_exist, preloaded=preloaded)
    if isinstance(parsed, Response):
        return parsed  # not parsed, or not admitted
    admitted, config, ctx = parsed
    started = time.monotonic() if started_at is None else started_at
    try:
        deadline = Deadline(config.deadline_ms)
        deadline.expires_at = started + config.deadline_ms / 1000.0  # the deadline began with reading the request
        request = _Request(admitted, config, db_path, warm, template_dir or TEMPLATE_DIR, vfs, until, started, now())
        since, degradations = _window(request)
        read = _read_index(request, since, deadline, ctx)  # one snapshot: verdict, scope, evidence, freshness
        deadline.check()  # the deadline covers the work after the read too: composing, folding, bounding, receipt
        return _answer_read(request, read, deadline, ctx, since=since, degradations=degradations)
    except ProviderError as err:
        return _failed(admitted, err, ctx)
    except Exception:  # noqa: BLE001 - a bug: still one envelope, never a traceback
        return _failed(admitted, InternalError(), ctx)


def error_response(error: ProviderError, request_id: str | None = None) -> Response:
    """The envelope (no result, no receipt) and exit code of a request that got no further than ``error``:
    the CLI's answer when the request could not even be read (too late, not a regular file, unreadable)."""
    outcome = error.outcome if error.outcome != "internal" else "failed"
    return Response(build_envelope(request_id, outcome, error=error), EXIT_CODES[error.outcome])


def _admitted(raw: bytes, config_path: Path, *, config_must_exist: bool,
              preloaded: tuple[ProviderConfig, DigestKey] | None
              ) -> tuple[AdmittedRequest, ProviderConfig, _Context] | Response:
    """The parsed and admitted request, its config and the key its receipt is signed with; or the rejection."""
    request_id: str | None = None
    try:
        request = parse_request(raw)
        request_id = request.request_id
        config = preloaded[0] if preloaded else load_config(config_path, must_exist=config_must_exist)
        admitted = admit(request, config)
        # The receipt's digests are keyed; a query never makes a key.
        return admitted, config, _Context(key=preloaded[1] if preloaded else load_key(config_path))
    except ProviderError as err:
        return error_response(err, request_id if request_id is not None else _request_id_of(raw))
    except Exception:  # noqa: BLE001 - one envelope, never a traceback
        return error_response(InternalError(), request_id)


def _request_id_of(raw: bytes) -> str | None:
    """The request's own ``request_id`` when the bytes parse as a JSON object carrying one the contract accepts
    (kept on every rejection; read again only when the request was rejected). An invalid one (too long, or
    holding a control character) is never copied into the envelope: null."""
    try:
        value = load_json_object(raw).get("request_id")
    except ProviderError:
        return None
    return request_id_or_none(value)


def _window(request: _Request) -> tuple[str, list[Degradation]]:
    """The request's lower time bound, and the degradation when its revision could not be resolved."""
    admitted, config = request.admitted, request.config
    since = since_for(admitted, config, request.now_s)
    if admitted.request.revision is not None:
        unrevised = admitted._replace(request=admitted.request._replace(revision=None))
        if since == since_for(unrevised, config, request.now_s):
            return since, ["revision_unresolved"]  # the recency window was used instead
    return since, []


def _read_index(request: _Request, since: str, deadline: Deadline, ctx: _Context) -> _Read:
    """The index read in one snapshot (remembered across requests by a warm process), recorded in ``ctx``."""
    warm = request.warm
    read, open_mode = read_remembering(request.db_path, lambda snap, memo: _read(snap, memo, request, since, ctx),
                                       memo=warm.index if warm else None, deadline=deadline, vfs=request.vfs)
    read.open_mode = open_mode
    ctx.index_revision = read.revision
    ctx.meta.update({"open_mode": open_mode, "tokenizer": read.tokenizer, "schema_verdict": read.schema[0],
                     "schema_snapshot": read.schema[1],
                     # the request's own evidence types, those the live schema lets no template of run
                     "skipped_evidence_types": cast(list[EvidenceType], list(read.skipped_types))})
    ctx.freshness = read.freshness
    ctx.meta["freshness_detail"] = _flatten_counts(read.freshness_detail)
    return read


def _read(snap: ReadSnapshot, memo: RequestMemo, request: _Request, since: str, ctx: _Context) -> _Read:
    """Inside one snapshot: the schema verdict, the templates it lets run, the terms, the scope, the evidence,
    the index revision and the freshness of the scope's transcripts."""
    warm = request.warm or WarmState()  # a one-shot request's parts outlive it in nothing
    templates = warm.templates(request.template_dir)
    verdict = schema_verdict(snap, template_dir=request.template_dir, templates=templates.templates,
                             cache=warm.verdicts if request.warm else None)
    if verdict.verdict == "incompatible":
        # Problem texts name tables and columns of the schema only (never content).
        raise SchemaIncompatible("the live index schema is incompatible: " + "; ".join(verdict.problems[:3]))
    admitted = request.admitted
    chosen = templates.choose(admitted.evidence_types, verdict.missing)
    check_declared(chosen.templates)
    tokenizer = verdict.tokenizer or "unicode61"
    terms = warm.tokenizers.prepare_terms(admitted.query_terms, tokenizer=tokenizer, spec=verdict.tokenizer_spec)
    scope, roots = admitted.scope, admitted.scope.bound_roots()  # real paths resolved once per request
    if substring_scan_planned(chosen.templates, terms, roots):
        # Said before the scan runs, so a request the deadline ends during the scan still discloses it.
        ctx.meta["degradations"] = [*terms.degradations, "cjk_substring_match"]
    state = ScopeState(snap, memo, has_cursor=verdict.has_column("index_state", "cursor"))

    def scope_rows(lower: str) -> ScopeRows:
        """The scope template's rows from ``lower`` on (a warm process keeps them for an hour of lower bounds)."""
        return state.scope_rows(chosen.scope, sources=scope.sources, roots=roots, since=lower, until=request.until)

    scope_set = scope_rows(since_bucket(since)).active_since(since) if chosen.scope_runs else None
    run = run_templates(snap, chosen.templates, scope=chosen.scope, sources=scope.sources, roots=roots, since=since,
                        terms=terms, tokenizer=tokenizer, tokenizers=warm.tokenizers,
                        max_items=admitted.limits.max_items, max_snippet_chars=admitted.limits.max_snippet_chars,
                        scope_set=(scope_set.ids, scope_set.ceiling_reached) if scope_set else None,
                        until=request.until, memo=memo if request.warm else None,
                        markers_in_python=decides_markers(verdict.tokenizer, verdict.tokenizer_spec))
    scope_empty = False
    if not run.hits and chosen.scope_runs and not (scope_set and scope_set.ids):
        # Nothing found and no session active in the window: whether the scope matches any session at all (any
        # time, before ``until``), so a wrong --source or --root is not taken for "no history".
        scope_empty = not scope_rows("").active_since("").ids
    markers = state.marker_rows()
    revision = state.revision(verdict.schema_cookie, markers)
    freshness, detail = _freshness(state, scope_set, markers, request)
    return _Read(tokenizer, revision, run, terms, chosen.skipped, freshness, detail,
                 (verdict.verdict, verdict.nearest or ""), scope_empty)


def _freshness(state: ScopeState, scope_set: ScopeSet | None, markers: Mapping[str, object],
               request: _Request) -> tuple[Freshness, dict[str, object]]:
    """Judge freshness inside the snapshot, within what is left of the request's deadline: ``index_state`` is
    read for the scope's files and the walked directories' only, and the stat checks the deadline, so a huge or
    slow transcript tree ends the judgement (freshness ``unknown``, disclosed) instead of the request."""
    scope, snap = request.admitted.scope, state.snap
    try:
        report = assess_scoped_freshness(
            scope_set.files if scope_set else (), markers, lookup=state.unit_rows,
            has_rows_under=state.has_rows_under, roots=scope.roots, real_roots=scope.bound_roots().real_paths,
            sources=scope.sources, transcript_homes=request.config.transcript_homes or state.transcript_homes(),
            now_ms=request.now_s * 1000.0, stat=snap.deadline.bounded_stat(),
            memo=request.warm.transcripts if request.warm else None,
            deadline_check=snap.deadline.check)
    except (DeadlineExceeded, apsw.InterruptError):
        return "unknown", {"freshness_deadline_exceeded": True}
    detail = report.to_public()
    # Why the verdict could not be judged, as flags (the detail holds counts only): e.g. no_transcript_home.
    detail.update({unknown_reason_flag(reason): 1 for reason in report.unknown_reasons})
    return report.verdict, detail


def _answer_read(request: _Request, read: _Read, deadline: Deadline, ctx: _Context, *, since: str,
                 degradations: list[Degradation]) -> Response:
    """Compose, fold and bound the evidence, then the result, its receipt and the envelope."""
    admitted, run = request.admitted, read.run
    spellings = admitted.scope.bound_roots().spellings  # the operator's spelling and the real path of each root
    candidates = candidates_of(run.hits, terms=read.terms, roots=spellings, window=run.window_chars)
    deadline.check()
    report = bound(fold(candidates), admitted.limits, fetch_ceiling_reached=run.fetch_ceiling_reached)
    deadline.check()
    result = _result(admitted, read.revision, ctx.freshness, report.items, truncated=report.truncated,
                     omitted=report.omitted_count)
    receipt = build_receipt(result, scope_basis=_scope_basis(admitted), query_basis=_query_basis(admitted),
                            key=ctx.key)
    deadline.check()
    found: list[Degradation] = [*read.terms.degradations, *degradations]
    if run.substring_scan:
        found.append("cjk_substring_match")
    if read.scope_empty:
        found.append("scope_matches_no_session")
    ctx.meta.update({
        "templates_run": list(run.templates_run),
        "templates_skipped": list(run.templates_skipped),
        "candidates_found": len(candidates),
        "folded_repeats": report.folded_occurrences,
        "snippets_cut": report.snippets_cut,
        "fetch_ceiling_reached": run.fetch_ceiling_reached,
        "redactions": dict(sorted(Counter(report.redactions).items())),
        "degradations": found,
        "total_chars": report.total_chars,
        "elapsed_ms": round((time.monotonic() - request.started) * 1000.0, 1),
        "since": since[:10] if since else "",
    })
    if report.fields_withheld:  # refs and times left out of kept items (over a ceiling, unfit: bounding.bound)
        ctx.meta["fields_withheld"] = report.fields_withheld
    envelope = build_envelope(admitted.request.request_id, "ok", result=result, receipt=receipt, meta=ctx.meta)
    if envelope_bytes(envelope) > envelope_ceiling(admitted.limits):
        # Every field is bounded on its way in; this is the backstop (RFC §6: oversize output ends the answer
        # with a typed failure, no partial raw output).
        raise OutputOversize
    return Response(envelope, EXIT_CODES["ok"])


def _failed(admitted: AdmittedRequest, err: ProviderError, ctx: _Context) -> Response:
    """A rejection after admission, with what the request got so far; or fail-open for the work lane: a typed
    empty result and a receipt with result_count 0."""
    code = EXIT_CODES[err.outcome]
    if err.outcome == "rejected":
        return Response(build_envelope(admitted.request.request_id, "rejected", error=err, meta=ctx.meta), code)
    result = _result(admitted, ctx.index_revision, ctx.freshness, [], truncated=False, omitted=0)
    receipt = build_receipt(result, scope_basis=_scope_basis(admitted), query_basis=_query_basis(admitted),
                            key=ctx.key)
    return Response(build_envelope(admitted.request.request_id, "failed", error=err, result=result, receipt=receipt,
                              meta=ctx.meta), code)


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
    scope = admitted.request.scope
    return build_result(request_id=admitted.request.request_id, index_revision=index_revision,
                        agent_id=scope.agent_id, project_id=scope.project_id, repository_id=scope.repository_id,
                        freshness=freshness, items=items, truncated=truncated, omitted_count=omitted)


def _flatten_counts(detail: Mapping[str, object]) -> dict[str, int]:
    """Keep only integer counts and ages from the freshness report (content-free by construction)."""
    return {key: int(value) for key, value in detail.items() if isinstance(value, (bool, int, float))}
