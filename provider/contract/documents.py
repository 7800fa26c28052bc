"""The JSON documents the operator commands print, and the ``serve`` ping and its reply, as strict pydantic models:
the source of their shipped JSON Schemas (``contract.models.DOCUMENTS``).

The commands build these documents as plain dicts (they do not import pydantic); the tests run every command and
validate what it printed against the schema made here, so a model and its command cannot drift apart. Nullable
fields are explicit nulls (required, ``X | None``); a field only some outputs carry is optional (absent, never
null). Names that the lower layers own (the ceilings, the scope summary) are spelled here once more and checked
that way.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from .._version import ProviderId
from ..errors import LIFECYCLE_CODES, UnsafeWriteTarget
from .meta import Degradation, OpenMode, SchemaVerdictName, UnknownReason
from .wire import EvidenceType, Freshness


class _Doc(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, defer_build=True)


# --- shared parts --------------------------------------------------------------------------------------


class Ceilings(_Doc):
    """Upper bounds no request may exceed: a request above one is rejected (``limit_over_ceiling``)."""

    max_sessions: int
    max_items: int
    max_snippet_chars: int
    max_total_chars: int
    max_query_terms: int
    max_term_chars: int


#: The refusal codes of the operator commands (``errors.LIFECYCLE_CODES`` and ``unsafe_write_target``).
OPERATOR_CODES: tuple[str, ...] = (*LIFECYCLE_CODES, UnsafeWriteTarget.code)
OperatorCode = Annotated[str, Field(json_schema_extra={"enum": list(OPERATOR_CODES)})]


class OperatorError(_Doc):
    code: OperatorCode
    detail: str


class OperatorRefusalV0(_Doc):
    """What ``enable``, ``disable``, ``rotate-key``, ``qualify`` and ``demo`` print when they refuse (exit 1 or 2)."""

    ok: Literal[False]
    error: OperatorError


class ScopeIds(_Doc):
    agent_id: str
    project_id: str
    repository_id: str


class ScopeSummary(ScopeIds):
    """The public view of one enabled scope: ids, sources, stage, keyed digests of its roots and remotes (none
    without the install's key); never a path."""

    sources: list[str]
    stage: Literal[1, 2]
    enabled_at: str
    roots: int
    root_digests: list[str]
    repository_kind: Literal["git", "directory"] | None
    root_commit: str | None
    remote_digests: list[str]
    worktrees_found: int
    qualified: bool
    qualification_kind: Literal["replay", "synthetic"] | None
    synthetic_qualification_accepted: bool
    allowances: list[Literal["broad_root", "shared_root"]]


# --- status --------------------------------------------------------------------------------------------


class ScopeFreshness(_Doc):
    """The freshness of one enabled scope's transcripts: counts, flags, ages and reason codes (no path)."""

    verdict: Freshness
    units_in_scope: int
    up_to_date: int
    stale: int
    unindexed: int
    missing_on_disk: int
    unknown_cursor: int
    unreadable_units: int
    unattributed_files: int
    last_build_age_ms: float | None
    heartbeat_fresh: bool | None
    app_build_partial: bool
    missing_provider_markers: list[str]
    lines_counted: int
    unknown_reasons: list[UnknownReason]


class StatusScope(ScopeSummary):
    freshness: ScopeFreshness | None
    sessions_in_index: int | None
    degradations: list[Degradation]


class WriterActivity(_Doc):
    heartbeat_fresh: bool | None
    last_build_age_ms: float | None
    app_build_partial: bool | None
    wal_present: bool


class StatusV0(_Doc):
    """``status --format json``: versions, config, digest key, database, schema verdict, freshness, writer activity,
    deadline, ceilings and the enabled scopes. Content-free: roots are keyed digests, never paths."""

    provider_id: ProviderId
    provider_version: str
    contract_version: str
    config_present: bool
    config_valid: bool
    digest_key: Literal["present", "unusable", "absent"]
    digest_key_error: str | None
    database_present: bool
    database_error: str | None
    open_mode: OpenMode | None
    schema_verdict: SchemaVerdictName | Literal["unknown"]
    schema_problems: list[str]
    tokenizer: str | None
    index_revision: str | None
    indexed_units: int | None
    transcript_homes: int
    writer_activity: WriterActivity
    freshness: Freshness | None
    deadline_ms: int
    recency_days: int
    revision_slack_days: int
    ceilings: Ceilings
    enabled_scopes: int
    scopes: list[StatusScope]


# --- enable, disable, rotate-key -----------------------------------------------------------------------


class RefusedWorktree(_Doc):
    digest: str
    reason: str


class EnabledScopeSummary(ScopeSummary):
    worktrees_bound: int
    worktrees_refused: list[RefusedWorktree]


class Allowance(_Doc):
    """A waiver ``enable`` used: a broad root (its position and why) or a root shared with another scope (its
    position and that scope's ids)."""

    allowance: Literal["broad_root", "shared_root"]
    root: int
    reason: str | None = None
    agent_id: str | None = None
    project_id: str | None = None
    repository_id: str | None = None


class EnableDoneV0(_Doc):
    """``enable`` succeeded: the scope as recorded, whether its sources were checked against the index, the waivers
    used and the repositories now enabled for the agent and project."""

    ok: Literal[True]
    action: Literal["enabled", "replaced"]
    scope: EnabledScopeSummary
    sources_checked: bool
    sources_not_checked_because: str | None = None
    unknown_sources_allowed: list[str] | None = None
    allowed: list[Allowance]
    repositories_of_agent_and_project: list[str]


class DisableDoneV0(_Doc):
    ok: Literal[True]
    action: Literal["disabled"]
    removed: list[ScopeIds]
    remaining_scopes: int


class RotateKeyDoneV0(_Doc):
    ok: Literal[True]
    action: Literal["rotated"]
    scopes: int
    remote_digests_before: int
    remote_digests_after: int


# --- check-schema --------------------------------------------------------------------------------------


class SchemaDifference(_Doc):
    kind: str
    object: str
    detail: str
    additive: bool


class TokenizerInfo(_Doc):
    name: str | None
    spec: str | None
    wraps: str | None
    known: bool


class TemplateState(_Doc):
    template: str
    evidence_type: str
    runnable: bool
    missing: list[str]
    state: str


class LikelyRename(_Doc):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, defer_build=True, populate_by_name=True)

    table: str
    from_: str = Field(alias="from")
    to: str
    type: str


class MarkerAge(_Doc):
    present: bool
    age_ms: float | None


class HeartbeatMarker(MarkerAge):
    fresh: bool | None


class FreshnessMarkers(_Doc):
    """The index's freshness markers; only ``available: false`` when ``index_state`` cannot hold them."""

    available: bool
    last_build: MarkerAge | None = None
    app_heartbeat: HeartbeatMarker | None = None
    app_last_successful_build: MarkerAge | None = None
    fts_markers: dict[str, bool] | None = None
    provider_markers: list[str] | None = None
    other_markers: list[str] | None = None


class CheckSchemaReportV0(_Doc):
    """``check-schema --format json`` when the database could be read: the verdict against the pinned snapshots,
    the differences, the templates it lets run, the markers and the next step. The database is named by its
    keyed digest (null without the install's key)."""

    command: Literal["check-schema"]
    exit_code: Literal[0, 1, 2]
    db_digest: str | None
    open_mode: OpenMode
    verdict: SchemaVerdictName
    nearest_snapshot: str | None
    exact: bool
    live_digest: str
    schema_cookie: int
    differences: list[SchemaDifference]
    problems: list[str]
    tokenizer: TokenizerInfo
    templates: list[TemplateState]
    problems_explained: list[str]
    likely_renames: list[LikelyRename]
    next_step: str | None
    skipped_templates: list[str]
    skipped_evidence_types: list[EvidenceType]
    freshness_markers: FreshnessMarkers
    snapshot_out: str | None
    error: None


class CheckSchemaError(_Doc):
    code: str
    detail: str


class CheckSchemaUnreadableV0(_Doc):
    """``check-schema --format json`` when the database (or a pinned snapshot) could not be read (exit 2)."""

    command: Literal["check-schema"]
    verdict: Literal["unreadable"]
    exit_code: Literal[2]
    db_digest: str | None
    error: CheckSchemaError
    next_step: str


# --- qualify -------------------------------------------------------------------------------------------


class QualifiedScope(ScopeIds):
    sources: list[str]
    passed: bool
    report: str
    digest: str
    failed_criteria: list[str]


class QualifySummaryV0(_Doc):
    """``qualify --self-test --format json``: the summary of the generated-corpus qualification (the reports are
    files in ``out_dir``)."""

    format: str
    passed: bool
    generated_at: str
    provider_version: str
    corpus_build_seconds: float
    scopes: list[QualifiedScope]
    digest: str
    out_dir: str


class ReplaySummaryV0(_Doc):
    """``qualify --replay``: the verdict on the scope's own history and where its reports were written."""

    verdict: Literal["passed", "failed", "insufficient_history"]
    passed: bool
    pairs: int
    negatives: int
    recognition: float | None
    false_matches: int
    report: str
    markdown: str


# --- serve --stdio ping --------------------------------------------------------------------------------


class ProviderPingV0(_Doc):
    """One ``serve --stdio`` line asking who answers: exactly this object (anything else is a request)."""

    schema_version: Literal["provider_ping_v0"]


class ProviderPongV0(_Doc):
    """The answer to a ping: the provider, its versions, the request versions it accepts and the ceilings in
    effect (null when the config cannot be read: every request is then refused ``config_invalid``). Nothing
    private: no path, scope or id of the config."""

    schema_version: Literal["provider_pong_v0"]
    provider_id: ProviderId
    provider_version: str
    contract_version: str
    schemas_version: str
    request_schema_versions: list[Literal["historical_evidence_request_v0"]]
    response_schema_version: Literal["historical_evidence_response_v0"]
    max_request_bytes: int
    config_valid: bool
    deadline_ms: int | None
    ceilings: Ceilings | None

