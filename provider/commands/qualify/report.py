"""Qualification reports: the digest, the files (``qualification-<agent>-<repo>.{json,md}`` per scope and
``qualification.{json,md}``) and their Markdown rendering. Reports hold counts, rates, sizes and latencies only:
no snippet, term or path of the corpus."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from ..._version import PROVIDER_VERSION
from ...digest import content_digest
from ...outputs import write_file_in
from .corpus import now_iso

REPORT_FORMAT: Final = "obelisk-session-evidence-qualification/1"
SUMMARY_FORMAT: Final = "obelisk-session-evidence-qualification-summary/1"


def report_digest(document: Mapping[str, Any]) -> str:
    """The report's own content digest (every field but ``digest``)."""
    return content_digest({k: v for k, v in document.items() if k != "digest"})


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)[:120]


def write_reports(out_dir: Path, reports: Sequence[Mapping[str, Any]], build_s: float) -> dict[str, Any]:
    """Write one JSON + Markdown report per scope and the summary (``qualification.{json,md}``), each atomically
    and never through a link (``provider/outputs.py``); the summary."""
    def write(name: str, text: str) -> None:
        write_file_in(out_dir, name, text.encode("utf-8"), role="a report file in --out")

    out_dir.mkdir(parents=True, exist_ok=True)
    files = []
    for report in reports:
        scope = report["scope"]
        stem = f"qualification-{_safe(scope['agent_id'])}-{_safe(scope['repository_id'])}"
        write(f"{stem}.json", json.dumps(report, indent=2, ensure_ascii=False) + "\n")
        write(f"{stem}.md", render_markdown(report))
        files.append(f"{stem}.json")
    summary: dict[str, Any] = {
        "format": SUMMARY_FORMAT,
        "passed": all(r["passed"] for r in reports),
        "generated_at": now_iso(),
        "provider_version": PROVIDER_VERSION,
        "corpus_build_seconds": round(build_s, 2),
        "scopes": [{**r["scope"], "passed": r["passed"], "report": f, "digest": r["digest"],
                    "failed_criteria": [c["id"] for c in r["criteria"] if c["status"] == "fail"]}
                   for r, f in zip(reports, files, strict=True)],
    }
    summary["digest"] = report_digest(summary)
    write("qualification.json", json.dumps(summary, indent=2, ensure_ascii=False) + "\n")
    write("qualification.md", render_summary_markdown(summary, reports))
    return summary


def _fmt(value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}"
    if isinstance(value, dict):
        return ", ".join(f"{k}={_fmt(v)}" for k, v in value.items())
    return str(value)


def render_markdown(report: Mapping[str, Any]) -> str:
    scope, m, corpus = report["scope"], report["metrics"], report["corpus"]
    cells = "; ".join(f"{'+'.join(c['fixture_agents'])} in {c['fixture_repository']} ({c['scope_sessions']} "
                      "sessions)" for c in corpus["cells"])
    lines = [
        f"# Qualification: {scope['agent_id']} / {scope['project_id']} / {scope['repository_id']}",
        "",
        f"* passed: **{report['passed']}** (every Stage 0 criterion; generated {report['generated_at']}, "
        f"provider {report['provider_version']})",
        f"* sources: {', '.join(scope['sources'])}; corpus: seed {corpus['seed']}, {corpus['sessions']} sessions, "
        f"{corpus['messages']} messages; histories: {cells}",
        f"* cases: {_fmt(corpus['cases'])}; distinct dead-end facts: {corpus['dead_end_facts']}",
        f"* digest: `{report['digest']}`",
        "",
        "## RFC §10 criteria",
        "",
        "| criterion | threshold | measured | status |",
        "|---|---|---|---|",
    ]
    lines += [f"| {c['id']} | {c['threshold']} | {_fmt(c['measured'])} | {c['status']} |" for c in report["criteria"]]
    dead, ctx, lat, fm = m["dead_end"], m["context_chars"], m["latency_ms"], m["false_matches"]

    def arms(block: Mapping[str, Any], key: str | None = None) -> str:
        values = [block.get(a) for a in ("current_context", "provider", "native_ceiling")]
        if key is not None:
            values = [v.get(key) if isinstance(v, Mapping) else v for v in values]
        return " | ".join(_fmt(v) for v in values)

    lines += [
        "",
        "## Arms",
        "",
        "| metric | current context | provider | native ceiling |",
        "|---|---|---|---|",
        f"| dead-end recognition ({dead['cases']} cases) | {arms(dead['recognition_rate'])} |",
        f"| repeated dead-end rate | {arms(dead['repeated_dead_end_rate'])} |",
        f"| recall of truth facts | {arms(m['recall'])} |",
        f"| precision, prior-failure questions | n/a | {arms(m['precision']['prior_failure'], 'precision')[6:]} |",
        f"| precision, same-route questions | n/a | {arms(m['precision']['same_route'], 'precision')[6:]} |",
        f"| false-match rate | n/a | {arms(fm, 'false_match_rate')[6:]} |",
        f"| matched negatives answered with items | n/a | {fm['provider']['negatives_with_items']} / "
        f"{fm['provider']['negatives']} | {fm['native_ceiling']['negatives_with_items']} / "
        f"{fm['native_ceiling']['negatives']} |",
        f"| items outside the scope | 0 | {m['foreign_scope_items']['provider']} | "
        f"{m['foreign_scope_items']['native_ceiling']} |",
        f"| evidence chars median / p95 (all questions) | 0 / 0 | {_fmt(ctx['provider']['median'])} / "
        f"{_fmt(ctx['provider']['p95'])} | {_fmt(ctx['native_ceiling']['median'])} / "
        f"{_fmt(ctx['native_ceiling']['p95'])} |",
        f"| result JSON chars median / p95 (all questions) | 0 / 0 | {_fmt(ctx['provider_result_json']['median'])} / "
        f"{_fmt(ctx['provider_result_json']['p95'])} | n/a |",
        f"| ceiling / provider, questions with history | n/a | "
        f"{_fmt(ctx['ceiling_over_provider_median'])}x evidence chars, "
        f"{_fmt(ctx['ceiling_over_provider_result_json_median'])}x result JSON | - |",
        f"| latency ms median / p95 | 0 / 0 | {_fmt(lat['provider_in_process']['median'])} / "
        f"{_fmt(lat['provider_in_process']['p95'])} | {_fmt(lat['native_ceiling']['median'])} / "
        f"{_fmt(lat['native_ceiling']['p95'])} |",
        "",
        "## Provider checks",
        "",
        f"* truncation rate: {_fmt(m['truncation']['rate'])} ({m['truncation']['truncated']} of "
        f"{m['truncation']['answers']} answers; omitted without the flag: {m['truncation']['omitted_without_flag']})",
        f"* freshness: stale {_fmt(m['freshness']['stale'])}; incomplete {_fmt(m['freshness']['incomplete'])}; "
        f"fresh control {_fmt(m['freshness']['fresh_control'])}; latency from the change to the stale answer "
        f"{_fmt(m['freshness']['freshness_latency_ms'])} ms",
        f"* cross-scope requests: {m['cross_scope']['rejected']} / {m['cross_scope']['requests']} rejected "
        f"({', '.join(m['cross_scope']['codes'])})",
        f"* unknown options: {m['unknown_option']['rejected']} / {m['unknown_option']['requests']} rejected "
        f"({', '.join(m['unknown_option']['codes'])})",
        f"* subprocess agreement: {report['subprocess']['agree']} / {report['subprocess']['runs']} "
        f"(cold process ms {_fmt(report['subprocess']['latency_ms'])})",
        "",
        "## By fixture history",
        "",
        "| history | dead-end cases (facts) | recognition provider / ceiling | recall provider / ceiling "
        "| negatives with items provider / ceiling | evidence chars provider / ceiling |",
        "|---|---|---|---|---|---|",
    ]
    for name, cell in report["by_cell"].items():
        rec, rcl = cell["recognition_rate"], cell["recall"]
        neg, chars = cell["negatives_with_items"], cell["context_chars_median"]
        lines.append(f"| {name} | {cell['dead_end_cases']} ({cell['dead_end_facts']}) | {_fmt(rec['provider'])} / "
                     f"{_fmt(rec['native_ceiling'])} | {_fmt(rcl['provider'])} / {_fmt(rcl['native_ceiling'])} | "
                     f"{neg['provider']} / {neg['native_ceiling']} | {_fmt(chars['provider'])} / "
                     f"{_fmt(chars['native_ceiling'])} |")
    lines.append("")
    return "\n".join(lines)


def render_summary_markdown(summary: Mapping[str, Any], reports: Sequence[Mapping[str, Any]]) -> str:
    lines = [
        "# Stage 0 qualification",
        "",
        f"passed: **{summary['passed']}** (generated {summary['generated_at']}, provider "
        f"{summary['provider_version']}; digest `{summary['digest']}`)",
        "",
        "| scope | passed | dead-end recognition (provider / current / ceiling) | recall provider / ceiling "
        "| evidence chars ceiling / provider | failed criteria | report |",
        "|---|---|---|---|---|---|---|",
    ]
    for entry, report in zip(summary["scopes"], reports, strict=True):
        m = report["metrics"]
        rec, recall = m["dead_end"]["recognition_rate"], m["recall"]
        lines.append(
            f"| {entry['agent_id']} / {entry['project_id']} / {entry['repository_id']} | {entry['passed']} | "
            f"{_fmt(rec['provider'])} / {_fmt(rec['current_context'])} / {_fmt(rec['native_ceiling'])} | "
            f"{_fmt(recall['provider'])} / {_fmt(recall['native_ceiling'])} | "
            f"{_fmt(m['context_chars']['ceiling_over_provider_median'])}x | "
            f"{', '.join(entry['failed_criteria']) or '-'} | {entry['report']} |")
    lines.append("")
    return "\n".join(lines)
