"""Figures from scored situations, the printed table and the pass/fail verdict.

Recall of required facts (overall, per evidence type, per agent, per fact kind, per situation class), false
items on negative situations (in all and per class), characters per answer (snippet characters; median, p95,
max; the same over the answers of 5 to 8 items, the size the issue's 1-3 k goal is for; per item; and the
whole result JSON), latency (median, p95) and scope violations.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .runner import Outcome


@dataclass(frozen=True)
class Thresholds:
    min_recall: float = 0.95
    max_false_items: int = 0


def _pct(values: Sequence[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return float(ordered[min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1)])


def _spread(values: Sequence[float]) -> dict[str, float]:
    return {"median": float(statistics.median(values)) if values else 0.0, "p95": _pct(values, 0.95),
            "max": float(max(values)) if values else 0.0}


def _recall(pairs: list[tuple[str, bool]]) -> dict[str, dict[str, Any]]:
    grouped: dict[str, list[bool]] = defaultdict(list)
    for key, ok in pairs:
        grouped[key].append(ok)
    return {k: {"found": sum(v), "required": len(v), "recall": round(sum(v) / len(v), 4)}
            for k, v in sorted(grouped.items())}


def _false_by_class(outcomes: Sequence[Outcome]) -> dict[str, dict[str, int]]:
    """Per class of the negative situations: how many there are and the false items they got."""
    out: dict[str, dict[str, int]] = {}
    for o in outcomes:
        if o.situation.negative:
            for c in o.situation.classes:
                row = out.setdefault(c, {"negatives": 0, "false_items": 0})
                row["negatives"] += 1
                row["false_items"] += o.false_items
    return dict(sorted(out.items()))


def figures(name: str, outcomes: Sequence[Outcome]) -> dict[str, Any]:
    facts = [(o, f, ok) for o in outcomes for f, ok in zip(o.situation.facts, o.found, strict=True)]
    found = sum(ok for _, _, ok in facts)
    answered = [o for o in outcomes if not o.situation.negative]
    return {
        "evalset": name,
        "situations": len(outcomes),
        "positive_situations": len(answered),
        "negative_situations": len(outcomes) - len(answered),
        "required_facts": len(facts),
        "found_facts": found,
        "recall": round(found / len(facts), 4) if facts else 1.0,
        "recall_by_evidence_type": _recall([(f.evidence_type, ok) for _, f, ok in facts]),
        "recall_by_agent": _recall([(o.situation.source, ok) for o, _, ok in facts]),
        "recall_by_kind": _recall([(f.kind, ok) for _, f, ok in facts]),
        "recall_by_class": _recall([(c, ok) for o, _, ok in facts for c in o.situation.classes]),
        "false_items": sum(o.false_items for o in outcomes),
        "false_items_by_class": _false_by_class(outcomes),
        "negatives_with_false_items": sum(1 for o in outcomes if o.false_items),
        "scope_violations": sum(o.scope_violations for o in outcomes),
        "not_ok_outcomes": sum(1 for o in outcomes if o.outcome != "ok"),
        "snippet_chars_per_answer": _spread([o.snippet_chars for o in answered]),
        "snippet_chars_per_item": _spread([c for o in answered for c in o.item_chars]),
        # The size the issue aims at (1-3 k) is for the usual 5-8 item answer: those answers alone.
        "snippet_chars_per_answer_5_to_8_items": {
            **_spread([o.snippet_chars for o in answered if 5 <= o.items <= 8]),
            "answers": sum(1 for o in answered if 5 <= o.items <= 8)},
        "result_json_chars_per_answer": _spread([o.result_chars for o in answered]),
        "items_per_answer": _spread([o.items for o in answered]),
        "latency_ms": {k: round(v, 1) for k, v in _spread([o.latency_ms for o in outcomes]).items()},
        "missed": [{"situation": o.situation.id, "session": f.session_id, "evidence_type": f.evidence_type,
                    "kind": f.kind} for o in outcomes for f in o.missing],
        "false_item_situations": [o.situation.id for o in outcomes if o.false_items],
    }


def passed(fig: dict[str, Any], thresholds: Thresholds) -> bool:
    return bool(fig["recall"] >= thresholds.min_recall and fig["false_items"] <= thresholds.max_false_items
            and fig["scope_violations"] == 0)


def table(fig: dict[str, Any]) -> str:
    """A Markdown rendering of :func:`figures` (no snippet text, no terms: figures only)."""
    lines = [f"### {fig['evalset']}: {fig['situations']} situations "
             f"({fig['positive_situations']} positive, {fig['negative_situations']} negative)", "",
             "| measure | value |", "|---|---|",
             f"| recall of required facts | {fig['found_facts']}/{fig['required_facts']} = {fig['recall']:.3f} |"]
    for title, key in (("evidence type", "recall_by_evidence_type"), ("agent", "recall_by_agent"),
                       ("kind", "recall_by_kind")):
        for group, row in fig[key].items():
            lines.append(f"| recall, {title} `{group}` | {row['found']}/{row['required']} = {row['recall']:.3f} |")
    chars, json_chars, lat = (fig["snippet_chars_per_answer"], fig["result_json_chars_per_answer"],
                              fig["latency_ms"])
    big, item = fig["snippet_chars_per_answer_5_to_8_items"], fig["snippet_chars_per_item"]
    lines += [
        f"| false items on negative situations | {fig['false_items']} "
        f"(in {fig['negatives_with_false_items']} situations) |",
        f"| snippet chars per answer (median / p95 / max) | {chars['median']:.0f} / {chars['p95']:.0f} / "
        f"{chars['max']:.0f} |",
        "| snippet chars per answer of 5-8 items (median / p95 / max; answers) | "
        + (f"{big['median']:.0f} / {big['p95']:.0f} / {big['max']:.0f}" if big["answers"] else "none")
        + f"; {big['answers']} |",
        f"| snippet chars per item (median / p95 / max) | {item['median']:.0f} / {item['p95']:.0f} / "
        f"{item['max']:.0f} |",
        f"| result JSON chars per answer (median / p95 / max) | {json_chars['median']:.0f} / "
        f"{json_chars['p95']:.0f} / {json_chars['max']:.0f} |",
        f"| items per answer (median / max) | {fig['items_per_answer']['median']:.0f} / "
        f"{fig['items_per_answer']['max']:.0f} |",
        f"| latency ms (median / p95) | {lat['median']:.1f} / {lat['p95']:.1f} |",
        f"| scope violations | {fig['scope_violations']} |",
        f"| outcomes other than ok | {fig['not_ok_outcomes']} |",
    ]
    return "\n".join(lines) + "\n\n" + class_table(fig)


def class_table(fig: dict[str, Any]) -> str:
    """Recall and false items per situation class (a class of negatives only shows its false items)."""
    lines = ["| class | recall | false items (negatives) |", "|---|---|---|"]
    recall, false = fig["recall_by_class"], fig.get("false_items_by_class", {})
    for name in sorted(set(recall) | set(false)):
        r = recall.get(name)
        shown = f"{r['found']}/{r['required']} = {r['recall']:.3f}" if r else "-"
        f = false.get(name)
        lines.append(f"| `{name}` | {shown} | " + (f"{f['false_items']} ({f['negatives']})" if f else "-") + " |")
    return "\n".join(lines)
