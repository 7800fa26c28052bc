// obelisk-session-evidence: TypeScript declarations of its documents (schemas 1.0.0).
// Generated from the JSON Schemas by `obelisk-session-evidence schema --format typescript`; do not edit.

export type HistoricalEvidenceRequestV0 = {
  schema_version: "historical_evidence_request_v0";
  request_id: string;
  situation_id: string;
  trigger: "replan_repetition" | "hypothesis_history_gap" | "resume_or_handoff_gap" | "operator_requested_history";
  scope: RequestScope;
  revision?: Revision;
  evidence_types: Array<"prior_failure" | "decision" | "file_history" | "tool_outcome" | "summary">;
  query_terms: Array<string>;
  limits: Limits;
};

export type HistoricalEvidenceResultV0 = {
  schema_version: "historical_evidence_result_v0";
  request_id: string;
  provider_id: "obelisk-session-evidence";
  provider_version: string;
  index_revision: string;
  scope_applied: ScopeApplied;
  freshness: "fresh" | "stale" | "incomplete" | "unknown";
  items: Array<EvidenceItem>;
  truncated: boolean;
  omitted_count: number;
};

export type HistoricalEvidenceReceiptV0 = {
  schema_version: "historical_evidence_receipt_v0";
  request_id: string;
  provider_id: "obelisk-session-evidence";
  provider_version: string;
  index_revision_digest: string;
  scope_digest: string;
  query_digest: string;
  result_digest: string;
  result_count: number;
  evidence_type_counts: { [key: string]: number };
  freshness: "fresh" | "stale" | "incomplete" | "unknown";
  truncated: boolean;
  omitted_count: number;
  grants_new_action_authority: false;
  external_writes_performed: false;
  raw_content_captured: false;
};

/** The one JSON document written to stdout per invocation (nullable fields are explicit nulls). */
export type HistoricalEvidenceResponseV0 = {
  schema_version: "historical_evidence_response_v0";
  request_id: string | null;
  outcome: "ok" | "failed" | "rejected";
  error: ErrorInfo | null;
  result: HistoricalEvidenceResultV0 | null;
  receipt: HistoricalEvidenceReceiptV0 | null;
  provider_meta: ProviderMeta;
};

/** One `serve --stdio` line asking who answers: exactly this object (anything else is a request). */
export type ProviderPingV0 = {
  schema_version: "provider_ping_v0";
};

/**
 * The answer to a ping: the provider, its versions, the request versions it accepts and the ceilings in
 * effect (null when the config cannot be read: every request is then refused `config_invalid`). Nothing
 * private: no path, scope or id of the config.
 */
export type ProviderPongV0 = {
  schema_version: "provider_pong_v0";
  provider_id: "obelisk-session-evidence";
  provider_version: string;
  contract_version: string;
  schemas_version: string;
  request_schema_versions: Array<"historical_evidence_request_v0">;
  response_schema_version: "historical_evidence_response_v0";
  max_request_bytes: number;
  config_valid: boolean;
  deadline_ms: number | null;
  ceilings: Ceilings | null;
};

/**
 * `status --format json`: versions, config, digest key, database, schema verdict, freshness, writer activity,
 * deadline, ceilings and the enabled scopes. Content-free: roots are keyed digests, never paths.
 */
export type StatusV0 = {
  provider_id: "obelisk-session-evidence";
  provider_version: string;
  contract_version: string;
  config_present: boolean;
  config_valid: boolean;
  digest_key: "present" | "unusable" | "absent";
  digest_key_error: string | null;
  database_present: boolean;
  database_error: string | null;
  open_mode: ("ro" | "immutable_verified") | null;
  schema_verdict: ("exact" | "compatible" | "degraded" | "incompatible") | "unknown";
  schema_problems: Array<string>;
  tokenizer: string | null;
  index_revision: string | null;
  indexed_units: number | null;
  transcript_homes: number;
  writer_activity: WriterActivity;
  freshness: ("fresh" | "stale" | "incomplete" | "unknown") | null;
  deadline_ms: number;
  recency_days: number;
  revision_slack_days: number;
  ceilings: Ceilings;
  enabled_scopes: number;
  scopes: Array<StatusScope>;
};

export type EnableOutputV0 = EnableDoneV0 | OperatorRefusalV0;

export type DisableOutputV0 = DisableDoneV0 | OperatorRefusalV0;

export type RotateKeyOutputV0 = RotateKeyDoneV0 | OperatorRefusalV0;

export type CheckSchemaOutputV0 = CheckSchemaReportV0 | CheckSchemaUnreadableV0;

export type QualifyOutputV0 = QualifySummaryV0 | ReplaySummaryV0 | OperatorRefusalV0;

export type Limits = {
  max_sessions: number;
  max_items: number;
  max_snippet_chars: number;
  max_total_chars: number;
};

export type RequestScope = {
  agent_id: string;
  project_id: string;
  repository_id: string;
  allow_cross_agent: false;
  allow_cross_project: false;
};

export type Revision = {
  current: string;
  merge_base?: string;
};

export type EvidenceItem = {
  session_ref: string;
  message_ref?: string;
  evidence_type: "prior_failure" | "decision" | "file_history" | "tool_outcome" | "summary";
  observed_at?: string;
  revision_ref?: string;
  snippet: string;
};

export type ScopeApplied = {
  agent_id: string;
  project_id: string;
  repository_id: string;
  cross_agent_used: false;
};

export type ErrorInfo = {
  code: "malformed_json" | "request_too_large" | "unknown_field" | "invalid_request" | "cross_scope_requested" | "trigger_not_admitted" | "not_enabled" | "scope_mismatch" | "limit_over_ceiling" | "invalid_query_terms" | "config_invalid" | "index_missing" | "index_unreadable" | "index_busy" | "timeout" | "schema_incompatible" | "scope_violation" | "template_rejected" | "malformed_data" | "oversize" | "internal_error";
  retryable: boolean;
  detail: string;
};

/** Content-free counts and flags of the freshness judgement. */
export type FreshnessDetail = {
  units_in_scope?: number;
  up_to_date?: number;
  stale?: number;
  unindexed?: number;
  missing_on_disk?: number;
  unknown_cursor?: number;
  unreadable_units?: number;
  unattributed_files?: number;
  last_build_age_ms?: number;
  heartbeat_fresh?: number;
  app_build_partial?: number;
  lines_counted?: number;
  freshness_deadline_exceeded?: number;
  unknown_reason_no_transcript_home?: number;
  unknown_reason_unreadable_home?: number;
  unknown_reason_unreadable_root?: number;
  unknown_reason_unsupported_source?: number;
  unknown_reason_unknown_cursor?: number;
  unknown_reason_unreadable_file?: number;
  unknown_reason_every_in_scope_file_missing?: number;
  unknown_reason_no_transcript_in_scope?: number;
};

/**
 * `provider_meta`: content-free counts, flags and names; every key is optional (a rejection carries none, a
 * failure what the request got so far).
 */
export type ProviderMeta = {
  open_mode?: "ro" | "immutable_verified";
  tokenizer?: string;
  schema_verdict?: "exact" | "compatible" | "degraded" | "incompatible";
  schema_snapshot?: string;
  skipped_evidence_types?: Array<"prior_failure" | "decision" | "file_history" | "tool_outcome" | "summary">;
  freshness_detail?: FreshnessDetail;
  templates_run?: Array<string>;
  templates_skipped?: Array<string>;
  candidates_found?: number;
  folded_repeats?: number;
  snippets_cut?: number;
  fields_withheld?: number;
  fetch_ceiling_reached?: boolean;
  redactions?: { [key in "private_key" | "jwt" | "aws_access_key" | "aws_secret" | "github_token" | "gitlab_token" | "slack_token" | "stripe_key" | "anthropic_key" | "openai_key" | "google_api_key" | "npm_token" | "huggingface_token" | "pypi_token" | "azure_storage_key" | "slack_webhook" | "sendgrid_key" | "digitalocean_token" | "vault_token" | "gcp_private_key_id" | "shopify_token" | "discord_token" | "twilio_credentials" | "age_secret_key" | "url_credentials" | "bearer_token" | "basic_auth" | "cookie" | "password_assignment" | "generic_secret_assignment" | "kubernetes_secret" | "base64_blob" | "key_material" | "high_entropy_token"]?: number };
  degradations?: Array<"scope_matches_no_session" | "revision_unresolved" | "cjk_substring_match" | "cjk_prefix_match" | "trigram_short_term_post_filter">;
  total_chars?: number;
  elapsed_ms?: number;
  since?: string;
};

/** Upper bounds no request may exceed: a request above one is rejected (`limit_over_ceiling`). */
export type Ceilings = {
  max_sessions: number;
  max_items: number;
  max_snippet_chars: number;
  max_total_chars: number;
  max_query_terms: number;
  max_term_chars: number;
};

/** The freshness of one enabled scope's transcripts: counts, flags, ages and reason codes (no path). */
export type ScopeFreshness = {
  verdict: "fresh" | "stale" | "incomplete" | "unknown";
  units_in_scope: number;
  up_to_date: number;
  stale: number;
  unindexed: number;
  missing_on_disk: number;
  unknown_cursor: number;
  unreadable_units: number;
  unattributed_files: number;
  last_build_age_ms: number | null;
  heartbeat_fresh: boolean | null;
  app_build_partial: boolean;
  missing_provider_markers: Array<string>;
  lines_counted: number;
  unknown_reasons: Array<"no_transcript_home" | "unreadable_home" | "unreadable_root" | "unsupported_source" | "unknown_cursor" | "unreadable_file" | "every_in_scope_file_missing" | "no_transcript_in_scope">;
};

export type StatusScope = {
  agent_id: string;
  project_id: string;
  repository_id: string;
  sources: Array<string>;
  stage: 1 | 2;
  enabled_at: string;
  roots: number;
  root_digests: Array<string>;
  repository_kind: ("git" | "directory") | null;
  root_commit: string | null;
  remote_digests: Array<string>;
  worktrees_found: number;
  qualified: boolean;
  qualification_kind: ("replay" | "synthetic") | null;
  synthetic_qualification_accepted: boolean;
  allowances: Array<"broad_root" | "shared_root">;
  freshness: ScopeFreshness | null;
  sessions_in_index: number | null;
  degradations: Array<"scope_matches_no_session" | "revision_unresolved" | "cjk_substring_match" | "cjk_prefix_match" | "trigram_short_term_post_filter">;
};

export type WriterActivity = {
  heartbeat_fresh: boolean | null;
  last_build_age_ms: number | null;
  app_build_partial: boolean | null;
  wal_present: boolean;
};

/**
 * A waiver `enable` used: a broad root (its position and why) or a root shared with another scope (its
 * position and that scope's ids).
 */
export type Allowance = {
  allowance: "broad_root" | "shared_root";
  root: number;
  reason?: string;
  agent_id?: string;
  project_id?: string;
  repository_id?: string;
};

/**
 * `enable` succeeded: the scope as recorded, whether its sources were checked against the index, the waivers
 * used and the repositories now enabled for the agent and project.
 */
export type EnableDoneV0 = {
  ok: true;
  action: "enabled" | "replaced";
  scope: EnabledScopeSummary;
  sources_checked: boolean;
  sources_not_checked_because?: string;
  unknown_sources_allowed?: Array<string>;
  allowed: Array<Allowance>;
  repositories_of_agent_and_project: Array<string>;
};

export type EnabledScopeSummary = {
  agent_id: string;
  project_id: string;
  repository_id: string;
  sources: Array<string>;
  stage: 1 | 2;
  enabled_at: string;
  roots: number;
  root_digests: Array<string>;
  repository_kind: ("git" | "directory") | null;
  root_commit: string | null;
  remote_digests: Array<string>;
  worktrees_found: number;
  qualified: boolean;
  qualification_kind: ("replay" | "synthetic") | null;
  synthetic_qualification_accepted: boolean;
  allowances: Array<"broad_root" | "shared_root">;
  worktrees_bound: number;
  worktrees_refused: Array<RefusedWorktree>;
};

export type OperatorError = {
  code: "invalid_argument" | "root_not_directory" | "root_too_broad" | "root_too_large" | "root_overlaps_scope" | "unknown_source" | "already_enabled" | "qualification_required" | "not_enabled" | "config_invalid" | "config_write_failed" | "unsafe_write_target";
  detail: string;
};

/** What `enable`, `disable`, `rotate-key`, `qualify` and `demo` print when they refuse (exit 1 or 2). */
export type OperatorRefusalV0 = {
  ok: false;
  error: OperatorError;
};

export type RefusedWorktree = {
  digest: string;
  reason: string;
};

export type DisableDoneV0 = {
  ok: true;
  action: "disabled";
  removed: Array<ScopeIds>;
  remaining_scopes: number;
};

export type ScopeIds = {
  agent_id: string;
  project_id: string;
  repository_id: string;
};

export type RotateKeyDoneV0 = {
  ok: true;
  action: "rotated";
  scopes: number;
  remote_digests_before: number;
  remote_digests_after: number;
};

export type CheckSchemaError = {
  code: string;
  detail: string;
};

/**
 * `check-schema --format json` when the database could be read: the verdict against the pinned snapshots,
 * the differences, the templates it lets run, the markers and the next step. The database is named by its
 * keyed digest (null without the install's key).
 */
export type CheckSchemaReportV0 = {
  command: "check-schema";
  exit_code: 0 | 1 | 2;
  db_digest: string | null;
  open_mode: "ro" | "immutable_verified";
  verdict: "exact" | "compatible" | "degraded" | "incompatible";
  nearest_snapshot: string | null;
  exact: boolean;
  live_digest: string;
  schema_cookie: number;
  differences: Array<SchemaDifference>;
  problems: Array<string>;
  tokenizer: TokenizerInfo;
  templates: Array<TemplateState>;
  problems_explained: Array<string>;
  likely_renames: Array<LikelyRename>;
  next_step: string | null;
  skipped_templates: Array<string>;
  skipped_evidence_types: Array<"prior_failure" | "decision" | "file_history" | "tool_outcome" | "summary">;
  freshness_markers: FreshnessMarkers;
  snapshot_out: string | null;
  error: null;
};

/** `check-schema --format json` when the database (or a pinned snapshot) could not be read (exit 2). */
export type CheckSchemaUnreadableV0 = {
  command: "check-schema";
  verdict: "unreadable";
  exit_code: 2;
  db_digest: string | null;
  error: CheckSchemaError;
  next_step: string;
};

/** The index's freshness markers; only `available: false` when `index_state` cannot hold them. */
export type FreshnessMarkers = {
  available: boolean;
  last_build?: MarkerAge;
  app_heartbeat?: HeartbeatMarker;
  app_last_successful_build?: MarkerAge;
  fts_markers?: { [key: string]: boolean };
  provider_markers?: Array<string>;
  other_markers?: Array<string>;
};

export type HeartbeatMarker = {
  present: boolean;
  age_ms: number | null;
  fresh: boolean | null;
};

export type LikelyRename = {
  table: string;
  from: string;
  to: string;
  type: string;
};

export type MarkerAge = {
  present: boolean;
  age_ms: number | null;
};

export type SchemaDifference = {
  kind: string;
  object: string;
  detail: string;
  additive: boolean;
};

export type TemplateState = {
  template: string;
  evidence_type: string;
  runnable: boolean;
  missing: Array<string>;
  state: string;
};

export type TokenizerInfo = {
  name: string | null;
  spec: string | null;
  wraps: string | null;
  known: boolean;
};

export type QualifiedScope = {
  agent_id: string;
  project_id: string;
  repository_id: string;
  sources: Array<string>;
  passed: boolean;
  report: string;
  digest: string;
  failed_criteria: Array<string>;
};

/**
 * `qualify --self-test --format json`: the summary of the generated-corpus qualification (the reports are
 * files in `out_dir`).
 */
export type QualifySummaryV0 = {
  format: string;
  passed: boolean;
  generated_at: string;
  provider_version: string;
  corpus_build_seconds: number;
  scopes: Array<QualifiedScope>;
  digest: string;
  out_dir: string;
};

/** `qualify --replay`: the verdict on the scope's own history and where its reports were written. */
export type ReplaySummaryV0 = {
  verdict: "passed" | "failed" | "insufficient_history";
  passed: boolean;
  pairs: number;
  negatives: number;
  recognition: number | null;
  false_matches: number;
  report: string;
  markdown: string;
};

export type ProviderMetaKey = "open_mode" | "tokenizer" | "schema_verdict" | "schema_snapshot" | "skipped_evidence_types" | "freshness_detail" | "templates_run" | "templates_skipped" | "candidates_found" | "folded_repeats" | "snippets_cut" | "fields_withheld" | "fetch_ceiling_reached" | "redactions" | "degradations" | "total_chars" | "elapsed_ms" | "since";

export type Degradation = "scope_matches_no_session" | "revision_unresolved" | "cjk_substring_match" | "cjk_prefix_match" | "trigram_short_term_post_filter";

export type UnknownReason = "no_transcript_home" | "unreadable_home" | "unreadable_root" | "unsupported_source" | "unknown_cursor" | "unreadable_file" | "every_in_scope_file_missing" | "no_transcript_in_scope";

export type FreshnessDetailKey = "units_in_scope" | "up_to_date" | "stale" | "unindexed" | "missing_on_disk" | "unknown_cursor" | "unreadable_units" | "unattributed_files" | "last_build_age_ms" | "heartbeat_fresh" | "app_build_partial" | "lines_counted" | "freshness_deadline_exceeded" | "unknown_reason_no_transcript_home" | "unknown_reason_unreadable_home" | "unknown_reason_unreadable_root" | "unknown_reason_unsupported_source" | "unknown_reason_unknown_cursor" | "unknown_reason_unreadable_file" | "unknown_reason_every_in_scope_file_missing" | "unknown_reason_no_transcript_in_scope";

export type ErrorCode = "malformed_json" | "request_too_large" | "unknown_field" | "invalid_request" | "cross_scope_requested" | "trigger_not_admitted" | "not_enabled" | "scope_mismatch" | "limit_over_ceiling" | "invalid_query_terms" | "config_invalid" | "index_missing" | "index_unreadable" | "index_busy" | "timeout" | "schema_incompatible" | "scope_violation" | "template_rejected" | "malformed_data" | "oversize" | "internal_error";

export type OperatorCode = "invalid_argument" | "root_not_directory" | "root_too_broad" | "root_too_large" | "root_overlaps_scope" | "unknown_source" | "already_enabled" | "qualification_required" | "not_enabled" | "config_invalid" | "config_write_failed" | "unsafe_write_target";

export type RedactionKind = "private_key" | "jwt" | "aws_access_key" | "aws_secret" | "github_token" | "gitlab_token" | "slack_token" | "stripe_key" | "anthropic_key" | "openai_key" | "google_api_key" | "npm_token" | "huggingface_token" | "pypi_token" | "azure_storage_key" | "slack_webhook" | "sendgrid_key" | "digitalocean_token" | "vault_token" | "gcp_private_key_id" | "shopify_token" | "discord_token" | "twilio_credentials" | "age_secret_key" | "url_credentials" | "bearer_token" | "basic_auth" | "cookie" | "password_assignment" | "generic_secret_assignment" | "kubernetes_secret" | "base64_blob" | "key_material" | "high_entropy_token";
