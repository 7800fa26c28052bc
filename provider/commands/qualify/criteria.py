"""The RFC §10 Stage 0 criteria and their thresholds (the report prints each with its measured value).

Criteria that need live agent runs (task success, time to a grounded successor) are reported as
``not_measured`` and belong to the Stage 3 decision.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

#: At least this many cases of a kind: a single anecdote is not evidence (RFC §10).
MIN_DEAD_END_CASES: Final = 3
MIN_DEAD_END_FACTS: Final = 2
MIN_NEGATIVE_CASES: Final = 3
# Thresholds of the Stage 0 criteria (the report prints each with its measured value).
RECOGNITION_MIN: Final = 0.90
PRECISION_MIN: Final = 0.60
CONTEXT_REDUCTION_MIN: Final = 10.0
DETECTION_MIN: Final = 1.0
REJECTION_MIN: Final = 1.0


def _criterion(cid: str, rfc: str, metric: str, threshold: str, verdict: tuple[Any, bool | None], *,
               stage: int = 0) -> dict[str, Any]:
    """One criterion; ``verdict`` is (what was measured, passed?), None for not measured."""
    measured, ok = verdict
    status = "not_measured" if ok is None else ("pass" if ok else "fail")
    return {"id": cid, "rfc": rfc, "metric": metric, "threshold": threshold, "measured": measured,
            "status": status, "stage": stage}


def _ge(value: Any, bound: float) -> bool:
    return isinstance(value, (int, float)) and value >= bound


def stage0_criteria(m: Mapping[str, Any], sub: Mapping[str, Any]) -> list[dict[str, Any]]:
    dead, recall, prec = m["dead_end"], m["recall"], m["precision"]
    ctx, trunc, lat, fresh = m["context_chars"], m["truncation"], m["latency_ms"], m["freshness"]
    fm = m["false_matches"]["provider"]
    rec = dead["recognition_rate"]
    cross, unknown, foreign = m["cross_scope"], m["unknown_option"], m["foreign_scope_items"]["provider"]

    def precision(block: Mapping[str, Any]) -> tuple[dict[str, Any], bool]:
        mine, ceiling = block["provider"]["precision"], block["native_ceiling"]["precision"]
        ok = _ge(mine, PRECISION_MIN) and (ceiling is None or mine >= ceiling)
        return {"provider": mine, "native_ceiling": ceiling}, ok

    corpus_ok = (dead["cases"] >= MIN_DEAD_END_CASES and dead["facts"] >= MIN_DEAD_END_FACTS
                 and fm["negatives"] >= MIN_NEGATIVE_CASES)
    recognition_ok = _ge(rec["provider"], RECOGNITION_MIN) and rec["provider"] > (rec["current_context"] or 0.0)
    latency_ok = _ge(2000.0 - (lat["provider_in_process"]["p95"] or 0.0), 0.0) and lat["timeouts"] == 0
    return [
        _criterion("corpus_size", "§10: a single positive anecdote is not enough",
                   "dead-end cases, distinct dead-end facts, matched negatives",
                   f">= {MIN_DEAD_END_CASES} dead-end cases over >= {MIN_DEAD_END_FACTS} facts, "
                   f">= {MIN_NEGATIVE_CASES} matched negatives",
                   ({"dead_end_cases": dead["cases"], "dead_end_facts": dead["facts"],
                     "negatives": fm["negatives"]}, corpus_ok)),
        _criterion("dead_end_reduction", "§10 repeated dead-end action rate; §9 measurable reduction",
                   "repeated dead-end recognition rate, provider vs current context",
                   f"provider >= {RECOGNITION_MIN:.2f} and above the current-context baseline",
                   ({"provider": rec["provider"], "current_context": rec["current_context"]}, recognition_ok)),
        _criterion("precision_prior_failure", "§10 retrieval precision, prior-failure questions",
                   "share of returned items inside the case's truth",
                   f">= {PRECISION_MIN:.2f} and >= the native ceiling's", precision(prec["prior_failure"])),
        _criterion("precision_same_route", "§10 retrieval precision, same-route questions",
                   "share of returned items inside the case's truth",
                   f">= {PRECISION_MIN:.2f} and >= the native ceiling's", precision(prec["same_route"])),
        _criterion("no_false_match_on_negatives", "§10 false matches; §4 cross-agent/project denied by default",
                   "matched negatives answered with any item", "0 of the matched negatives",
                   ({"negatives_with_items": fm["negatives_with_items"], "negatives": fm["negatives"]},
                    fm["negatives_with_items"] == 0 and fm["negatives"] > 0)),
        _criterion("recall_not_worse", "§10 evidence quality must not regress (issue: equal or better recall)",
                   "recall of the case's truth facts", "provider >= native ceiling",
                   ({"provider": recall["provider"], "native_ceiling": recall["native_ceiling"]},
                    _ge(recall["provider"], recall["native_ceiling"] or 0.0))),
        _criterion("bounded_context", "§5.2 bounded private result, explicit truncation; §10 context size",
                   "evidence characters per answer; truncation disclosure",
                   "every answer within max_total_chars; every omission flagged as truncated",
                   ({"answers_over_budget": ctx["answers_over_budget"],
                     "omitted_without_flag": trunc["omitted_without_flag"], "truncation_rate": trunc["rate"]},
                    ctx["answers_over_budget"] == 0 and trunc["omitted_without_flag"] == 0)),
        _criterion("context_reduction", "§9 context-rebuild cost reduction (issue: answers >= 10x smaller)",
                   "native ceiling / provider, median evidence characters on questions with history",
                   f">= {CONTEXT_REDUCTION_MIN:.0f}x",
                   ({"ceiling_over_provider_median": ctx["ceiling_over_provider_median"],
                     "ceiling_over_provider_result_json_median": ctx["ceiling_over_provider_result_json_median"]},
                    _ge(ctx["ceiling_over_provider_median"], CONTEXT_REDUCTION_MIN))),
        _criterion("bounded_latency", "§10 query latency; §6 a timeout is a typed failure",
                   "provider in-process p95 and timeouts", "p95 <= the 2000 ms request deadline, 0 timeouts",
                   ({"p95_ms": lat["provider_in_process"]["p95"], "timeouts": lat["timeouts"]}, latency_ok)),
        _criterion("stale_incomplete_detection", "§10 stale/incomplete detection; §7 never 'no history'",
                   "stale and incomplete variants reported as such; fresh control not flagged",
                   f"detection rate >= {DETECTION_MIN:.2f}, fresh control all fresh",
                   ({"detection_rate": fresh["detection_rate"], "fresh_control": fresh["fresh_control"]["rate"]},
                    _ge(fresh["detection_rate"], DETECTION_MIN) and fresh["fresh_control"]["rate"] == 1.0)),
        _criterion("no_scope_broadening", "§9 no silent scope broadening; §6 scope fail-closed",
                   "cross-scope requests rejected; provider items outside the scope",
                   f"rejection rate >= {REJECTION_MIN:.2f} and 0 foreign items",
                   ({"rejection_rate": cross["rejection_rate"], "foreign_items": foreign},
                    _ge(cross["rejection_rate"], REJECTION_MIN) and foreign == 0)),
        _criterion("unknown_option_rejected", "§6 unknown request field or provider option: reject",
                   "requests with unknown fields that were rejected", f"failure rate >= {REJECTION_MIN:.2f}",
                   (unknown["failure_rate"], _ge(unknown["failure_rate"], REJECTION_MIN))),
        _criterion("cli_agrees", "§6 one envelope per request, whichever entry point",
                   "subprocess answers identical to in-process ones", "all agree",
                   ({"agree": sub["agree"], "runs": sub["runs"]}, sub["agree"] == sub["runs"])),
        _criterion("task_success", "§10 task success, evidence quality; §9 stage 3",
                   "task success, time to a grounded successor, provider calls and tokens",
                   "needs live agent runs (the Stage 3 decision)", (None, None), stage=3),
    ]
