// A LoopX-side adapter written from the shipped files alone: its only knowledge of the provider is the shipped
// declarations (schemas/obelisk-session-evidence.d.ts) and examples (schemas/examples/). It spawns
// `serve --stdio` once per example setup, pings it, sends every example's request, and checks every envelope:
// its type at run time (a guard built on the declared unions), and the outcome, error code and request id the
// example shows. An example whose setup cannot be made through `serve` (an expired deadline) is checked as a
// document. tests/integration/test_surface.py compiles this file with `tsc --strict` and runs it with node.
//
// Setup: the environment variable OSE_ADAPTER_SETUP names a JSON file
//   {"command": ["python", "-m", "obelisk_session_evidence"], "examples": "<dir>",
//    "setups": {"demo": {"db": "...", "config": "..."}, "missing_index": {...}, "invalid_config": {...}}}

import { spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

import type {
  Degradation,
  ErrorCode,
  FreshnessDetailKey,
  HistoricalEvidenceRequestV0,
  HistoricalEvidenceResponseV0,
  ProviderMetaKey,
  ProviderPingV0,
  ProviderPongV0,
} from "../../schemas/obelisk-session-evidence";

type Example = {
  example: string;
  setup: string;
  request?: HistoricalEvidenceRequestV0 | Record<string, unknown>; // a rejected example's request breaks the contract
  request_line?: string;
  exit_code: number;
  envelope: HistoricalEvidenceResponseV0;
};
type Setup = { command: string[]; examples: string; setups: Record<string, { db: string; config: string }> };

// Exhaustive by construction: tsc refuses a key these records lack or one the declarations do not name.
const META_KEYS: Record<ProviderMetaKey, true> = {
  open_mode: true, tokenizer: true, schema_verdict: true, schema_snapshot: true, skipped_evidence_types: true,
  freshness_detail: true, templates_run: true, templates_skipped: true, candidates_found: true,
  folded_repeats: true, snippets_cut: true, fields_withheld: true, fetch_ceiling_reached: true, redactions: true,
  degradations: true, total_chars: true, elapsed_ms: true, since: true,
};
const DEGRADATIONS: Record<Degradation, true> = {
  scope_matches_no_session: true, revision_unresolved: true, cjk_substring_match: true, cjk_prefix_match: true,
  trigram_short_term_post_filter: true,
};
const ERROR_CODES: Record<ErrorCode, true> = {
  malformed_json: true, request_too_large: true, unknown_field: true, invalid_request: true,
  cross_scope_requested: true, trigger_not_admitted: true, not_enabled: true, scope_mismatch: true,
  limit_over_ceiling: true, invalid_query_terms: true, config_invalid: true, index_missing: true,
  index_unreadable: true, index_busy: true, timeout: true, schema_incompatible: true, scope_violation: true,
  template_rejected: true, malformed_data: true, oversize: true, internal_error: true,
};
const FRESHNESS_KEYS: Record<FreshnessDetailKey, true> = {
  units_in_scope: true, up_to_date: true, stale: true, unindexed: true, missing_on_disk: true, unknown_cursor: true,
  unreadable_units: true, unattributed_files: true, last_build_age_ms: true, heartbeat_fresh: true,
  app_build_partial: true, lines_counted: true, freshness_deadline_exceeded: true,
  unknown_reason_no_transcript_home: true, unknown_reason_unreadable_home: true,
  unknown_reason_unreadable_root: true, unknown_reason_unsupported_source: true,
  unknown_reason_unknown_cursor: true, unknown_reason_unreadable_file: true,
  unknown_reason_every_in_scope_file_missing: true, unknown_reason_no_transcript_in_scope: true,
};

const isObject = (x: unknown): x is Record<string, unknown> => typeof x === "object" && x !== null && !Array.isArray(x);
const known = <K extends string>(table: Record<K, true>, key: unknown): key is K =>
  typeof key === "string" && Object.prototype.hasOwnProperty.call(table, key);

/** The envelope's problems against the declarations (empty when `x` is a HistoricalEvidenceResponseV0). */
function envelopeProblems(x: unknown): string[] {
  if (!isObject(x)) return ["not an object"];
  const out: string[] = [];
  if (x.schema_version !== "historical_evidence_response_v0") out.push("schema_version");
  if (x.outcome !== "ok" && x.outcome !== "failed" && x.outcome !== "rejected") out.push("outcome");
  if (x.request_id !== null && typeof x.request_id !== "string") out.push("request_id");
  if (x.error !== null && !(isObject(x.error) && known(ERROR_CODES, x.error.code))) out.push("error.code");
  const meta = x.provider_meta;
  if (!isObject(meta)) return [...out, "provider_meta"];
  for (const key of Object.keys(meta)) if (!known(META_KEYS, key)) out.push(`provider_meta.${key}`);
  for (const name of (meta.degradations as unknown[] | undefined) ?? []) {
    if (!known(DEGRADATIONS, name)) out.push(`degradation ${String(name)}`);
  }
  for (const key of Object.keys(isObject(meta.freshness_detail) ? meta.freshness_detail : {})) {
    if (!known(FRESHNESS_KEYS, key)) out.push(`freshness_detail.${key}`);
  }
  const result = x.result, receipt = x.receipt;
  if (x.outcome === "rejected" && (result !== null || receipt !== null)) out.push("a rejection carries a result");
  if (x.outcome !== "rejected" && !(isObject(result) && isObject(receipt))) out.push("result and receipt");
  if (isObject(result) && isObject(receipt)) {
    const items = result.items as unknown[];
    if (!Array.isArray(items) || receipt.result_count !== items.length) out.push("receipt.result_count");
    if (x.outcome === "failed" && items.length !== 0) out.push("a failure carries items");
    for (const flag of ["grants_new_action_authority", "external_writes_performed", "raw_content_captured"]) {
      if (receipt[flag] !== false) out.push(`receipt.${flag}`);
    }
  }
  return out;
}

function isEnvelope(x: unknown): x is HistoricalEvidenceResponseV0 {
  return envelopeProblems(x).length === 0;
}

function isPong(x: unknown): x is ProviderPongV0 {
  return isObject(x) && x.schema_version === "provider_pong_v0" && x.provider_id === "obelisk-session-evidence"
    && Array.isArray(x.request_schema_versions) && x.request_schema_versions.includes("historical_evidence_request_v0")
    && (x.ceilings === null || isObject(x.ceilings));
}

/** Send `lines` to one `serve --stdio` process; its stdout lines, in order. */
function serve(setup: Setup, db: string, config: string, lines: string[]): Promise<string[]> {
  const [program, ...args] = setup.command;
  if (program === undefined) return Promise.reject(new Error("no command"));
  return new Promise((resolve, reject) => {
    const child = spawn(program, [...args, "serve", "--stdio", "--db", db, "--config", config],
      { stdio: ["pipe", "pipe", "inherit"] });
    let out = "";
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (chunk: string) => { out += chunk; });
    child.on("error", reject);
    child.on("close", (code: number | null) => code === 0 ? resolve(out.split("\n").filter((l) => l.length > 0))
      : reject(new Error(`serve exited ${code}`)));
    child.stdin.end(lines.map((l) => l + "\n").join(""));
  });
}

function expectSame(example: Example, got: HistoricalEvidenceResponseV0, failures: string[]): void {
  const want = example.envelope;
  const same = got.outcome === want.outcome && got.request_id === want.request_id
    && (got.error?.code ?? null) === (want.error?.code ?? null)
    && (got.result?.items.length ?? -1) === (want.result?.items.length ?? -1);
  if (!same) failures.push(`${example.example}: got ${got.outcome}/${got.error?.code ?? "-"}`);
}

async function main(): Promise<number> {
  const setupFile = process.env.OSE_ADAPTER_SETUP;
  if (!setupFile) throw new Error("OSE_ADAPTER_SETUP is not set");
  const setup = JSON.parse(readFileSync(setupFile, "utf8")) as Setup;
  const examples = readdirSync(setup.examples).filter((n) => n.endsWith(".json") && n !== "ping.json")
    .map((n) => JSON.parse(readFileSync(join(setup.examples, n), "utf8")) as Example);
  const failures: string[] = [];
  let checked = 0, pinged = 0;
  const ping: ProviderPingV0 = { schema_version: "provider_ping_v0" };
  for (const example of examples) {  // every shipped example is a valid envelope as it stands
    for (const problem of envelopeProblems(example.envelope)) failures.push(`${example.example} (file): ${problem}`);
  }
  const bySetup = new Map<string, Example[]>();
  for (const example of examples) bySetup.set(example.setup, [...(bySetup.get(example.setup) ?? []), example]);
  for (const [name, group] of bySetup) {
    const paths = setup.setups[name];
    if (paths === undefined) continue;  // not reproducible through serve (the expired deadline): checked above
    const sent = group.map((e) => e.request_line ?? JSON.stringify(e.request));
    const lines = await serve(setup, paths.db, paths.config, [JSON.stringify(ping), ...sent]);
    pinged += 1;
    if (lines.length !== sent.length + 1) failures.push(`${name}: ${lines.length} lines for ${sent.length + 1}`);
    const pong: unknown = JSON.parse(lines[0] ?? "null");
    if (!isPong(pong)) failures.push(`${name}: the ping was not answered with a pong`);
    else if (name === "demo" && (pong.ceilings === null || pong.deadline_ms === null)) failures.push("pong ceilings");
    group.forEach((example, i) => {
      const envelope: unknown = JSON.parse(lines[i + 1] ?? "null");
      checked += 1;
      if (!isEnvelope(envelope)) {
        failures.push(`${example.example}: ${envelopeProblems(envelope).join(", ")}`);
        return;
      }
      expectSame(example, envelope, failures);
    });
  }
  for (const failure of failures) console.error(`adapter: ${failure}`);
  console.log(`adapter: ${examples.length} examples, ${checked} envelopes from serve --stdio checked, `
    + `${pinged} setups pinged, ${failures.length} failures`);
  return failures.length === 0 ? 0 : 1;
}

main().then((code) => { process.exitCode = code; }, (err: unknown) => {
  console.error(`adapter: ${String(err)}`);
  process.exitCode = 2;
});
