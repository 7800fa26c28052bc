"""RFC §10 metrics of a replay, one function per metric, and the criteria that decide ``passed``.

Fewer than :data:`MIN_PAIRS` repeat pairs: the verdict is ``insufficient_history`` and the report does not
pass, whatever the rates; no criterion passes on a default (an empty measurement fails).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any, Final

from ..stats import dist, ratio
from .run import Replay

MIN_PAIRS: Final = 20
RECOGNITION_MIN: Final = 0.90
#: Days between the attempts, as the buckets of the recognition chart.
DAY_BUCKETS: Final = ((0.0, 1.0, "<1 day"), (1.0, 7.0, "1-7 days"), (7.0, 30.0, "7-30 days"),
                      (30.0, float("inf"), ">=30 days"))


def _rate(hits: int, total: int) -> float | None:
    return round(hits / total, 4) if total else None


def recognition(pairs: Sequence[Replay]) -> dict[str, Any]:
    by_kind = {kind: {"pairs": n, "recognised": sum(1 for r in pairs if r.kind == kind and r.recognised),
                      "rate": _rate(sum(1 for r in pairs if r.kind == kind and r.recognised), n)}
               for kind, n in sorted(Counter(r.kind for r in pairs).items())}
    hits = sum(1 for r in pairs if r.recognised)
    return {"pairs": len(pairs), "recognised": hits, "rate": _rate(hits, len(pairs)), "by_kind": by_kind}


def recognition_by_days(pairs: Sequence[Replay]) -> list[dict[str, Any]]:
    out = []
    for low, high, label in DAY_BUCKETS:
        chosen = [r for r in pairs if r.days_between is not None and low <= r.days_between < high]
        hits = sum(1 for r in chosen if r.recognised)
        out.append({"days": label, "pairs": len(chosen), "recognised": hits, "rate": _rate(hits, len(chosen))})
    return out


def false_matches(negatives: Sequence[Replay]) -> dict[str, Any]:
    hits = sum(1 for r in negatives if r.false_match)
    return {"negatives": len(negatives), "false_matches": hits, "rate": _rate(hits, len(negatives))}


def context_chars(replays: Sequence[Replay]) -> dict[str, Any]:
    answered = [r for r in replays if r.items]
    return {"provider_evidence_chars": dist([float(r.chars) for r in replays]),
            "provider_result_json_chars": dist([float(r.result_chars) for r in replays]),
            "native_ceiling_chars": dist([float(r.ceiling_chars) for r in replays]),
            "ceiling_over_provider_median": ratio([float(r.ceiling_chars) for r in answered],
                                                   [float(r.chars) for r in answered]),
            "answers_over_budget": sum(1 for r in replays if r.over_budget)}


def latency(replays: Sequence[Replay]) -> dict[str, Any]:
    slowest = sorted(replays, key=lambda r: -r.latency_ms)[:5]
    return {"in_process_ms": dist([r.latency_ms for r in replays]),
            "timeouts": sum(1 for r in replays if r.outcome != "ok"),
            "slowest": [{"digest": r.digest, "ms": round(r.latency_ms, 1)} for r in slowest]}


def freshness_seen(replays: Sequence[Replay]) -> dict[str, int]:
    return dict(sorted(Counter(str(r.freshness) for r in replays).items()))


def scope_items(replays: Sequence[Replay]) -> dict[str, int]:
    return {"items_checked": sum(r.items for r in replays),
            "items_outside_scope_or_cut": sum(r.outside_scope for r in replays)}


def metrics(replays: Sequence[Replay]) -> dict[str, Any]:
    pairs = [r for r in replays if not r.negative]
    negatives = [r for r in replays if r.negative]
    return {"recognition": recognition(pairs), "recognition_by_days": recognition_by_days(pairs),
            "false_matches": false_matches(negatives), "context": context_chars(replays),
            "latency": latency(replays), "freshness": freshness_seen(replays), "scope": scope_items(replays)}


def criteria(m: dict[str, Any], deadline_ms: float) -> list[dict[str, Any]]:
    """Each criterion with its threshold and ``pass``/``fail``; empty measurements fail."""
    rec, fm, ctx, lat, sc = m["recognition"], m["false_matches"], m["context"], m["latency"], m["scope"]
    p95 = lat["in_process_ms"]["p95"]

    def crit(cid: str, threshold: str, measured: Any, ok: bool) -> dict[str, Any]:
        return {"id": cid, "threshold": threshold, "measured": measured, "status": "pass" if ok else "fail"}

    return [
        crit("history_size", f">= {MIN_PAIRS} repeat pairs", rec["pairs"], rec["pairs"] >= MIN_PAIRS),
        crit("recognition", f">= {RECOGNITION_MIN:.2f} of the pairs", rec["rate"],
             rec["rate"] is not None and rec["rate"] >= RECOGNITION_MIN),
        crit("no_false_match_on_negatives", "0 of >= 1 matched negatives (every answer ok)",
             {"false_matches": fm["false_matches"], "negatives": fm["negatives"]},
             fm["negatives"] > 0 and fm["false_matches"] == 0 and lat["timeouts"] == 0),
        crit("bounded_context", "every answer within max_total_chars", ctx["answers_over_budget"],
             ctx["answers_over_budget"] == 0 and rec["pairs"] > 0),
        crit("bounded_latency", f"p95 <= {deadline_ms:.0f} ms, every answer ok",
             {"p95_ms": p95, "not_ok": lat["timeouts"]},
             p95 is not None and p95 <= deadline_ms and lat["timeouts"] == 0),
        crit("scope", "0 items outside the scope or after the cut, checked row by row", sc,
             sc["items_outside_scope_or_cut"] == 0 and rec["pairs"] > 0),
    ]


def verdict(crits: Sequence[dict[str, Any]], pairs: int) -> str:
    if pairs < MIN_PAIRS:
        return "insufficient_history"
    return "passed" if all(c["status"] == "pass" for c in crits) else "failed"
