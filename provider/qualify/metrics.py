"""Per-arm metrics: recognition, recall, precision, false matches, context size, latency, freshness and
rejections, pooled over a scope's cases, plus one content-free row per case."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .arms import CaseOutcome, NativeMessage, NativeResult
from .cases import LIMITS
from .corpus import Fact
from .stats import dist, rate_of, ratio


def _recognised_by_items(fact: Fact, items: Sequence[Mapping[str, Any]], mine: set[str]) -> bool:
    """A returned item carries one of the fact's refs, or is an in-scope item that shows the fact's text.

    The text test matters for folded items: ``[repeated 3x in 3 sessions] …`` carries the ref of the newest
    occurrence only, which may belong to another session that walked the same route.
    """
    for item in items:
        if item.get("message_ref") in fact.refs:
            return True
        if item.get("session_ref") in mine and fact.marker and fact.marker in str(item.get("snippet")):
            return True
    return False


def _recognised_by_native(fact: Fact, native: NativeResult, mine: set[str]) -> bool:
    for message in native.messages:
        if message.uuid in fact.messages:
            return True
        if message.session_id in mine and fact.marker and fact.marker in message.text:
            return True
    return False


def _item_is_true(item: Mapping[str, Any], relevant: Sequence[Fact], mine: set[str]) -> bool:
    """Inside the case's truth: from a session, or carrying a ref, of a fact about the same route."""
    return any(item.get("message_ref") in f.refs or item.get("session_ref") in f.sessions
               or (item.get("session_ref") in mine and f.marker and f.marker in str(item.get("snippet")))
               for f in relevant)


def _native_is_true(message: NativeMessage, relevant: Sequence[Fact]) -> bool:
    return any(message.uuid in f.messages or message.session_id in f.sessions for f in relevant)


def case_row(o: CaseOutcome, mine: set[str]) -> dict[str, Any]:
    """One content-free row per case: ids, counts, sizes, times (no term, snippet or path)."""
    row: dict[str, Any] = {"id": o.case.id, "kind": o.case.kind, "outcome": o.outcome, "code": o.error_code,
                           "items": len(o.items), "snippet_chars": o.snippet_chars, "ms": round(o.elapsed_ms, 2)}
    if o.case.kind in ("dead_end", "same_route", "negative"):
        relevant = o.case.relevant
        row["false_items"] = len(o.items) if o.case.kind == "negative" else \
            sum(1 for i in o.items if not _item_is_true(i, relevant, mine))
        row["truth_found"] = sum(1 for f in o.case.truth if _recognised_by_items(f, o.items, mine))
        row["truth"] = len(o.case.truth)
    if o.native is not None:
        row["native_chars"] = o.native.chars
        row["native_truth_found"] = sum(1 for f in o.case.truth if _recognised_by_native(f, o.native, mine))
    if o.case.kind == "freshness":
        row.update({"variant": o.case.variant, "expected": o.case.expect, "freshness": o.freshness})
    return row


def score_outcomes(outcomes: Sequence[CaseOutcome], mine: Mapping[int, set[str]]) -> dict[str, Any]:
    by_kind: dict[str, list[CaseOutcome]] = {}
    for o in outcomes:
        by_kind.setdefault(o.case.kind, []).append(o)
    dead = by_kind.get("dead_end", [])
    positives = [*dead, *by_kind.get("same_route", [])]
    negatives = by_kind.get("negative", [])
    asked = [*positives, *negatives]
    answered = [o for o in asked if o.outcome == "ok"]

    def own(o: CaseOutcome) -> set[str]:
        return mine[o.case.cell]

    def recognition(arm: str) -> float | None:
        if not dead:
            return None
        if arm == "current_context":
            return 0.0
        if arm == "provider":
            return rate_of(sum(1 for o in dead if o.case.target
                             and _recognised_by_items(o.case.target, o.items, own(o))), len(dead))
        return rate_of(sum(1 for o in dead if o.case.target and o.native
                         and _recognised_by_native(o.case.target, o.native, own(o))), len(dead))

    def recall(arm: str) -> float | None:
        found = total = 0
        for o in positives:
            for fact in o.case.truth:
                total += 1
                if arm == "provider":
                    found += int(_recognised_by_items(fact, o.items, own(o)))
                elif o.native is not None:
                    found += int(_recognised_by_native(fact, o.native, own(o)))
        return rate_of(found, total)

    def precision(arm: str, question: str) -> dict[str, Any]:
        true = returned = 0
        for o in positives:
            if o.case.question != question:
                continue
            if arm == "provider":
                true += sum(1 for i in o.items if _item_is_true(i, o.case.relevant, own(o)))
                returned += len(o.items)
            elif o.native is not None:
                true += sum(1 for m in o.native.hits if _native_is_true(m, o.case.relevant))
                returned += len(o.native.hits)
        return {"precision": rate_of(true, returned), "true_items": true, "returned_items": returned}

    def false_matches(arm: str) -> dict[str, Any]:
        false = returned = with_items = 0
        for o in asked:
            negative = o.case.kind == "negative"
            if arm == "provider":
                count = len(o.items)
                wrong = count if negative else sum(1 for i in o.items
                                                   if not _item_is_true(i, o.case.relevant, own(o)))
            else:
                hits = o.native.hits if o.native else ()
                count = len(hits)
                wrong = count if negative else sum(1 for m in hits if not _native_is_true(m, o.case.relevant))
            false += wrong
            returned += count
            with_items += int(negative and count > 0)
        return {"false_items": false, "returned_items": returned, "false_match_rate": rate_of(false, returned),
                "negatives_with_items": with_items, "negatives": len(negatives)}

    def foreign(arm: str) -> int:
        if arm == "provider":
            return sum(1 for o in outcomes for i in o.items if i.get("session_ref") not in own(o))
        return sum(1 for o in asked if o.native for m in o.native.messages if m.session_id not in own(o))

    snippet_chars = [float(o.snippet_chars) for o in answered]
    result_chars = [float(o.result_chars) for o in answered]
    native_chars = [float(o.native.chars) for o in asked if o.native is not None]
    # The reduction is computed on the questions that have history (positives), where both arms return
    # evidence; matched negatives (provider: nothing) would flatter the provider.
    pos_snippets = [float(o.snippet_chars) for o in positives if o.outcome == "ok"]
    pos_results = [float(o.result_chars) for o in positives if o.outcome == "ok"]
    pos_native = [float(o.native.chars) for o in positives if o.native is not None]
    fresh_cases = by_kind.get("freshness", [])

    def detection(expect: str) -> dict[str, Any]:
        subset = [o for o in fresh_cases if o.case.expect == expect]
        hit = sum(1 for o in subset if o.freshness == expect)
        return {"cases": len(subset), "detected": hit, "rate": rate_of(hit, len(subset)),
                "reported_fresh": sum(1 for o in subset if o.freshness == "fresh")}

    changed = [o for o in fresh_cases if o.case.expect != "fresh"]
    lagged = [o for o in fresh_cases if o.freshness_lag_ms is not None]
    cross = by_kind.get("cross_scope", [])
    unknown = by_kind.get("unknown_option", [])
    rec = {arm: recognition(arm) for arm in ("current_context", "provider", "native_ceiling")}
    return {
        "dead_end": {
            "cases": len(dead),
            "facts": len({o.case.target.id for o in dead if o.case.target}),
            "recognition_rate": rec,
            "repeated_dead_end_rate": {arm: None if v is None else round(1.0 - v, 4) for arm, v in rec.items()},
        },
        "recall": {"current_context": 0.0 if positives else None, "provider": recall("provider"),
                   "native_ceiling": recall("native_ceiling")},
        "precision": {
            question: {"provider": precision("provider", question),
                       "native_ceiling": precision("native_ceiling", question)}
            for question in ("prior_failure", "same_route")
        },
        "false_matches": {"provider": false_matches("provider"), "native_ceiling": false_matches("native_ceiling")},
        "foreign_scope_items": {"provider": foreign("provider"), "native_ceiling": foreign("native_ceiling")},
        "context_chars": {
            "measure": "characters of evidence text: provider snippets vs the ceiling's whole messages; the "
                       "provider's whole result JSON (refs, metadata) is reported alongside; the ratios use "
                       "the questions that have history (positives) unless named otherwise",
            "current_context": dist([0.0] * len(answered)),
            "provider": dist(snippet_chars),
            "provider_result_json": dist(result_chars),
            "native_ceiling": dist(native_chars),
            "ceiling_over_provider_median": ratio(pos_native, pos_snippets),
            "ceiling_over_provider_result_json_median": ratio(pos_native, pos_results),
            "ceiling_over_provider_median_all_questions": ratio(native_chars, snippet_chars),
            "max_total_chars_requested": LIMITS["max_total_chars"],
            "answers_over_budget": sum(1 for o in answered if o.snippet_chars > LIMITS["max_total_chars"]),
        },
        "truncation": {"answers": len(answered), "truncated": sum(1 for o in answered if o.truncated),
                       "rate": rate_of(sum(1 for o in answered if o.truncated), len(answered)),
                       "omitted_without_flag": sum(1 for o in answered if o.omitted and not o.truncated)},
        "latency_ms": {
            "provider_in_process": dist([o.elapsed_ms for o in outcomes
                                          if o.case.kind in ("dead_end", "same_route", "negative", "freshness")]),
            "native_ceiling": dist([o.native.elapsed_ms for o in asked if o.native is not None]),
            "current_context": dist([0.0] * len(answered)),
            "timeouts": sum(1 for o in outcomes if o.error_code == "timeout"),
            "provider_failures": sum(1 for o in outcomes if o.outcome == "failed"),
        },
        "freshness": {
            "fresh_control": detection("fresh"), "stale": detection("stale"), "incomplete": detection("incomplete"),
            "detection_rate": rate_of(sum(1 for o in changed if o.freshness == o.case.expect), len(changed)),
            "freshness_latency_ms": dist([o.freshness_lag_ms for o in lagged if o.freshness_lag_ms is not None]),
            "detected_on_first_request_after_change": bool(lagged) and all(o.freshness == "stale" for o in lagged),
        },
        "cross_scope": {"requests": len(cross), "rejected": sum(1 for o in cross if o.outcome == "rejected"),
                        "rejection_rate": rate_of(sum(1 for o in cross if o.outcome == "rejected"), len(cross)),
                        "codes": sorted({o.error_code or "none" for o in cross})},
        "unknown_option": {"requests": len(unknown), "rejected": sum(1 for o in unknown if o.outcome == "rejected"),
                           "failure_rate": rate_of(sum(1 for o in unknown if o.outcome == "rejected"), len(unknown)),
                           "codes": sorted({o.error_code or "none" for o in unknown})},
    }


def cell_summary(metrics: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "dead_end_cases": metrics["dead_end"]["cases"],
        "dead_end_facts": metrics["dead_end"]["facts"],
        "recognition_rate": metrics["dead_end"]["recognition_rate"],
        "recall": metrics["recall"],
        "precision": {q: {arm: v["precision"] for arm, v in block.items()}
                      for q, block in metrics["precision"].items()},
        "negatives_with_items": {arm: v["negatives_with_items"] for arm, v in metrics["false_matches"].items()},
        "context_chars_median": {arm: metrics["context_chars"][arm]["median"]
                                 for arm in ("provider", "native_ceiling")},
    }
