"""Per-arm metrics: recognition, recall, precision, false matches, context size, latency, freshness and
rejections, pooled over a scope's cases, plus one content-free row per case."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Scored:
    """A scope's outcomes as the metrics read them: grouped by case kind, with each case's own sessions."""

    outcomes: Sequence[CaseOutcome]
    mine: Mapping[int, set[str]]
    by_kind: Mapping[str, Sequence[CaseOutcome]]

    @classmethod
    def of(cls, outcomes: Sequence[CaseOutcome], mine: Mapping[int, set[str]]) -> Scored:
        by_kind: dict[str, list[CaseOutcome]] = {}
        for o in outcomes:
            by_kind.setdefault(o.case.kind, []).append(o)
        return cls(outcomes, mine, by_kind)

    def kind(self, name: str) -> Sequence[CaseOutcome]:
        return self.by_kind.get(name, [])

    @property
    def dead(self) -> Sequence[CaseOutcome]:
        return self.kind("dead_end")

    @property
    def positives(self) -> list[CaseOutcome]:
        """The questions that have history: dead ends and same routes."""
        return [*self.dead, *self.kind("same_route")]

    @property
    def asked(self) -> list[CaseOutcome]:
        """Every question the three arms answer: the positives and the matched negatives."""
        return [*self.positives, *self.kind("negative")]

    @property
    def answered(self) -> list[CaseOutcome]:
        return [o for o in self.asked if o.outcome == "ok"]

    def own(self, o: CaseOutcome) -> set[str]:
        """The sessions of the case's own cell (its scope)."""
        return self.mine[o.case.cell]


def recognition_rate(s: Scored, arm: str) -> float | None:
    """Dead ends whose target fact the arm shows (the current context never does)."""
    dead = s.dead
    if not dead:
        return None
    if arm == "current_context":
        return 0.0
    if arm == "provider":
        return rate_of(sum(1 for o in dead if o.case.target
                           and _recognised_by_items(o.case.target, o.items, s.own(o))), len(dead))
    return rate_of(sum(1 for o in dead if o.case.target and o.native
                       and _recognised_by_native(o.case.target, o.native, s.own(o))), len(dead))


def dead_end_metrics(s: Scored) -> dict[str, Any]:
    rec = {arm: recognition_rate(s, arm) for arm in ("current_context", "provider", "native_ceiling")}
    return {
        "cases": len(s.dead),
        "facts": len({o.case.target.id for o in s.dead if o.case.target}),
        "recognition_rate": rec,
        "repeated_dead_end_rate": {arm: None if v is None else round(1.0 - v, 4) for arm, v in rec.items()},
    }


def recall(s: Scored, arm: str) -> float | None:
    """Truth facts of the positives that the arm shows."""
    found = total = 0
    for o in s.positives:
        for fact in o.case.truth:
            total += 1
            if arm == "provider":
                found += int(_recognised_by_items(fact, o.items, s.own(o)))
            elif o.native is not None:
                found += int(_recognised_by_native(fact, o.native, s.own(o)))
    return rate_of(found, total)


def recall_metrics(s: Scored) -> dict[str, Any]:
    return {"current_context": 0.0 if s.positives else None, "provider": recall(s, "provider"),
            "native_ceiling": recall(s, "native_ceiling")}


def precision(s: Scored, arm: str, question: str) -> dict[str, Any]:
    """Items (or ceiling hits) inside the case's truth, over the positives asking ``question``."""
    true = returned = 0
    for o in s.positives:
        if o.case.question != question:
            continue
        if arm == "provider":
            true += sum(1 for i in o.items if _item_is_true(i, o.case.relevant, s.own(o)))
            returned += len(o.items)
        elif o.native is not None:
            true += sum(1 for m in o.native.hits if _native_is_true(m, o.case.relevant))
            returned += len(o.native.hits)
    return {"precision": rate_of(true, returned), "true_items": true, "returned_items": returned}


def precision_metrics(s: Scored) -> dict[str, Any]:
    return {question: {"provider": precision(s, "provider", question),
                       "native_ceiling": precision(s, "native_ceiling", question)}
            for question in ("prior_failure", "same_route")}


def false_matches(s: Scored, arm: str) -> dict[str, Any]:
    """Items outside the truth (every item of a matched negative), and the negatives that got any."""
    false = returned = with_items = 0
    for o in s.asked:
        negative = o.case.kind == "negative"
        if arm == "provider":
            count = len(o.items)
            wrong = count if negative else sum(1 for i in o.items if not _item_is_true(i, o.case.relevant, s.own(o)))
        else:
            hits = o.native.hits if o.native else ()
            count = len(hits)
            wrong = count if negative else sum(1 for m in hits if not _native_is_true(m, o.case.relevant))
        false += wrong
        returned += count
        with_items += int(negative and count > 0)
    return {"false_items": false, "returned_items": returned, "false_match_rate": rate_of(false, returned),
            "negatives_with_items": with_items, "negatives": len(s.kind("negative"))}


def foreign_scope_items(s: Scored, arm: str) -> int:
    """Items (or ceiling messages) from a session outside the case's own scope."""
    if arm == "provider":
        return sum(1 for o in s.outcomes for i in o.items if i.get("session_ref") not in s.own(o))
    return sum(1 for o in s.asked if o.native for m in o.native.messages if m.session_id not in s.own(o))


def context_chars(s: Scored) -> dict[str, Any]:
    """Characters of evidence per answer, per arm; the ratios on the positives unless named otherwise."""
    answered = s.answered
    snippet_chars = [float(o.snippet_chars) for o in answered]
    native_chars = [float(o.native.chars) for o in s.asked if o.native is not None]
    # The reduction is computed on the questions that have history (positives), where both arms return
    # evidence; matched negatives (provider: nothing) would flatter the provider.
    positives = s.positives
    pos_snippets = [float(o.snippet_chars) for o in positives if o.outcome == "ok"]
    pos_results = [float(o.result_chars) for o in positives if o.outcome == "ok"]
    pos_native = [float(o.native.chars) for o in positives if o.native is not None]
    return {
        "measure": "characters of evidence text: provider snippets vs the ceiling's whole messages; the "
                   "provider's whole result JSON (refs, metadata) is reported alongside; the ratios use "
                   "the questions that have history (positives) unless named otherwise",
        "current_context": dist([0.0] * len(answered)),
        "provider": dist(snippet_chars),
        "provider_result_json": dist([float(o.result_chars) for o in answered]),
        "native_ceiling": dist(native_chars),
        "ceiling_over_provider_median": ratio(pos_native, pos_snippets),
        "ceiling_over_provider_result_json_median": ratio(pos_native, pos_results),
        "ceiling_over_provider_median_all_questions": ratio(native_chars, snippet_chars),
        "max_total_chars_requested": LIMITS["max_total_chars"],
        "answers_over_budget": sum(1 for o in answered if o.snippet_chars > LIMITS["max_total_chars"]),
    }


def truncation(s: Scored) -> dict[str, Any]:
    answered = s.answered
    truncated = sum(1 for o in answered if o.truncated)
    return {"answers": len(answered), "truncated": truncated, "rate": rate_of(truncated, len(answered)),
            "omitted_without_flag": sum(1 for o in answered if o.omitted and not o.truncated)}


def latency(s: Scored) -> dict[str, Any]:
    return {
        "provider_in_process": dist([o.elapsed_ms for o in s.outcomes
                                     if o.case.kind in ("dead_end", "same_route", "negative", "freshness")]),
        "native_ceiling": dist([o.native.elapsed_ms for o in s.asked if o.native is not None]),
        "current_context": dist([0.0] * len(s.answered)),
        "timeouts": sum(1 for o in s.outcomes if o.error_code == "timeout"),
        "provider_failures": sum(1 for o in s.outcomes if o.outcome == "failed"),
    }


def freshness_detection(s: Scored, expect: str) -> dict[str, Any]:
    subset = [o for o in s.kind("freshness") if o.case.expect == expect]
    hit = sum(1 for o in subset if o.freshness == expect)
    return {"cases": len(subset), "detected": hit, "rate": rate_of(hit, len(subset)),
            "reported_fresh": sum(1 for o in subset if o.freshness == "fresh")}


def freshness_metrics(s: Scored) -> dict[str, Any]:
    cases = s.kind("freshness")
    changed = [o for o in cases if o.case.expect != "fresh"]
    lagged = [o for o in cases if o.freshness_lag_ms is not None]
    return {
        "fresh_control": freshness_detection(s, "fresh"), "stale": freshness_detection(s, "stale"),
        "incomplete": freshness_detection(s, "incomplete"),
        "detection_rate": rate_of(sum(1 for o in changed if o.freshness == o.case.expect), len(changed)),
        "freshness_latency_ms": dist([o.freshness_lag_ms for o in lagged if o.freshness_lag_ms is not None]),
        "detected_on_first_request_after_change": bool(lagged) and all(o.freshness == "stale" for o in lagged),
    }


def rejections(s: Scored, kind: str, rate_name: str) -> dict[str, Any]:
    """Requests of ``kind`` (cross_scope, unknown_option) that must be rejected, and the codes seen."""
    cases = s.kind(kind)
    rejected = sum(1 for o in cases if o.outcome == "rejected")
    return {"requests": len(cases), "rejected": rejected, rate_name: rate_of(rejected, len(cases)),
            "codes": sorted({o.error_code or "none" for o in cases})}


def score_outcomes(outcomes: Sequence[CaseOutcome], mine: Mapping[int, set[str]]) -> dict[str, Any]:
    """Every metric of a scope's outcomes (``mine``: each cell's own sessions), one function per metric."""
    s = Scored.of(outcomes, mine)
    return {
        "dead_end": dead_end_metrics(s),
        "recall": recall_metrics(s),
        "precision": precision_metrics(s),
        "false_matches": {arm: false_matches(s, arm) for arm in ("provider", "native_ceiling")},
        "foreign_scope_items": {arm: foreign_scope_items(s, arm) for arm in ("provider", "native_ceiling")},
        "context_chars": context_chars(s),
        "truncation": truncation(s),
        "latency_ms": latency(s),
        "freshness": freshness_metrics(s),
        "cross_scope": rejections(s, "cross_scope", "rejection_rate"),
        "unknown_option": rejections(s, "unknown_option", "failure_rate"),
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
