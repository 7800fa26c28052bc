"""Folding, limits and receipts, on synthetic candidates: exact counts, deterministic order."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from obelisk_session_evidence.bounding.bound import ELLIPSIS, bound, cut_snippet
from obelisk_session_evidence.contract.wire import Limits
from obelisk_session_evidence.digest import canonical_json, content_digest
from obelisk_session_evidence.retrieval.evidence import Candidate, command_text
from obelisk_session_evidence.retrieval.fold import fold


def _cand(session: str, ref: str, text: str, *, score: float = 1, when: str = "2026-10-01T00:00:00Z",
          etype: str = "prior_failure", key: str | None = None) -> Candidate:
    return Candidate(evidence_type=etype, session_ref=session, message_ref=ref,  # type: ignore[arg-type]
                     observed_at=when, revision_ref="main", text=text, score=score, sidechain=False,
                     fold_key=key or f"{etype}|{text}")


def _limits(sessions: int = 50, items: int = 50, snippet: int = 2000, total: int = 32000) -> Limits:
    return Limits(max_sessions=sessions, max_items=items, max_snippet_chars=snippet, max_total_chars=total)


def test_identical_evidence_across_sessions_keeps_one_item_per_session_with_the_count() -> None:
    cands = [_cand(f"s{i}", f"m{i}", "[failed exit 1] pytest => boom", when=f"2026-10-0{i}T00:00:00Z")
             for i in range(1, 4)]
    folded = fold(cands)
    assert [f.item.session_ref for f in folded] == ["s3", "s2", "s1"]  # newest first, none hidden
    assert all(f.occurrences == 1 and f.sessions == 3 for f in folded)
    assert all(f.item.text.startswith("[repeated in 3 sessions] ") for f in folded)


def test_identical_evidence_folds_only_within_one_session() -> None:
    cands = [_cand("s1", "m1", "boom", when="2026-10-01"), _cand("s1", "m2", "boom", when="2026-10-02"),
             _cand("s2", "m3", "boom", when="2026-10-03"), _cand("s2", "m4", "other", when="2026-10-04")]
    folded = {(f.item.session_ref, f.item.message_ref): f for f in fold(cands)}
    assert set(folded) == {("s1", "m2"), ("s2", "m3"), ("s2", "m4")}
    assert folded[("s1", "m2")].item.text == "[repeated 2x in this session, in 2 sessions] boom"
    assert folded[("s2", "m3")].item.text == "[repeated in 2 sessions] boom"
    assert folded[("s2", "m4")].item.text == "other"


def test_many_items_of_one_session_never_hide_another_session() -> None:
    cands = [_cand("busy", str(i), f"text {i}", score=5) for i in range(10)] + [_cand("quiet", "q", "x", score=1)]
    report = bound(fold(cands), _limits(items=3), fetch_ceiling_reached=False)
    assert [i.session_ref for i in report.items] == ["busy", "busy", "quiet"]  # still in rank order
    assert report.omitted_count == 8


def test_order_is_deterministic_and_independent_of_input_order() -> None:
    cands = [_cand("a", "1", "x", score=1), _cand("b", "2", "y", score=2), _cand("c", "3", "z", score=2,
                                                                                  when="2026-11-01")]
    forward = [f.item.message_ref for f in fold(cands)]
    backward = [f.item.message_ref for f in fold(list(reversed(cands)))]
    assert forward == backward == ["3", "2", "1"]


def test_max_items_and_omitted_count_are_exact() -> None:
    folded = fold([_cand(f"s{i}", str(i), f"text {i}") for i in range(10)])
    report = bound(folded, _limits(items=4), fetch_ceiling_reached=False)
    assert len(report.items) == 4 and report.omitted_count == 6 and report.truncated


def test_max_sessions_counts_distinct_sessions() -> None:
    cands = [_cand("s1", "1", "a"), _cand("s1", "2", "b"), _cand("s2", "3", "c"), _cand("s3", "4", "d")]
    report = bound(fold(cands), _limits(sessions=2), fetch_ceiling_reached=False)
    assert {i.session_ref for i in report.items} <= {"s1", "s2"}
    assert len({i.session_ref for i in report.items}) == 2
    assert report.omitted_count == 1


def test_total_chars_drops_whole_items_and_snippets_are_cut_visibly() -> None:
    folded = fold([_cand("s1", "1", "a" * 500, score=3), _cand("s2", "2", "b" * 50, score=2),
                   _cand("s3", "3", "c" * 90, score=1)])
    report = bound(folded, _limits(snippet=100, total=160), fetch_ceiling_reached=False)
    snippets = [i.snippet for i in report.items]
    assert snippets[0] == "a" * 99 + ELLIPSIS
    assert snippets[1] == "b" * 50
    assert report.omitted_count == 1 and report.snippets_cut == 1 and report.truncated
    assert sum(map(len, snippets)) <= 160


def test_nothing_cut_nothing_omitted_is_not_truncated_unless_fetch_ceiling() -> None:
    folded = fold([_cand("s1", "1", "short")])
    assert not bound(folded, _limits(), fetch_ceiling_reached=False).truncated
    assert bound(folded, _limits(), fetch_ceiling_reached=True).truncated


def test_redaction_happens_before_bounding() -> None:
    token = "ghp_" + "A1b2C3d4E5" * 3 + "F6g7H8"
    report = bound(fold([_cand("s1", "1", f"git push with {token} failed")]), _limits(),
                   fetch_ceiling_reached=False)
    assert token not in report.items[0].snippet
    assert report.redactions["github_token"] == 1


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["s1", "s2", "s3", "s4"]), st.text(min_size=1, max_size=300),
                          st.integers(0, 5)), max_size=30),
       st.integers(1, 6), st.integers(1, 8), st.integers(40, 400), st.integers(100, 2000))
def test_bounds_always_hold(rows: list[tuple[str, str, int]], sessions: int, items: int, snippet: int,
                            total: int) -> None:
    cands = [_cand(s, str(i), text, score=score) for i, (s, text, score) in enumerate(rows)]
    folded = fold(cands)
    report = bound(folded, _limits(sessions, items, snippet, total), fetch_ceiling_reached=False)
    assert len(report.items) <= items
    assert len({i.session_ref for i in report.items}) <= sessions
    assert all(len(i.snippet) <= snippet for i in report.items)
    assert sum(len(i.snippet) for i in report.items) <= total
    assert len(report.items) + report.omitted_count == len(folded)
    assert report.truncated == (report.omitted_count > 0 or report.snippets_cut > 0)
    json.dumps([i.as_dict() for i in report.items])


def test_cut_snippet_cuts_at_a_token_boundary() -> None:
    assert cut_snippet("abc", 3) == ("abc", False)
    assert cut_snippet("abcd", 3) == ("ab" + ELLIPSIS, True)
    assert cut_snippet("alpha beta gamma", 14) == ("alpha beta " + ELLIPSIS, True)


def test_canonical_json_and_digest_are_stable() -> None:
    assert canonical_json({"b": 1, "a": [1, "é"]}) == '{"a":[1,"é"],"b":1}'.encode()
    assert content_digest({"a": 1, "b": 2}) == content_digest({"b": 2, "a": 1})
    assert content_digest({"a": 1}).startswith("sha256:") and len(content_digest({"a": 1})) == 71


@pytest.mark.parametrize(("name", "raw", "expected"), [
    ("Bash", '{"command":"pytest -k auth","description":"Run"}', "pytest -k auth"),
    ("shell", '{"command":["bash","-lc","npm run build"],"workdir":"/x"}', "npm run build"),
    ("shell", '{"command":["git","status"]}', "git status"),
    ("Edit", '{"file_path":"/r/a.py","old_string":"x"}', "Edit /r/a.py"),
    ("apply_patch", '"*** Begin Patch\\n*** Update File: a.py"', "apply_patch *** Begin Patch *** Update File: a.py"),
    ("Bash", '{"command":"pytest -k au', "Bash {\"command\":\"pytest -k au"),
])
def test_command_text(name: str, raw: str, expected: str) -> None:
    assert command_text(name, raw) == expected


def test_every_item_keeps_its_refs_and_leaves_an_absent_one_absent() -> None:
    """What a candidate carries reaches its item unchanged (message, time, branch); what it lacks stays out
    (RFC ``?:`` fields are absent, never null), whichever of the three is missing."""
    full = _cand("s1", "m1", "one", score=4)
    bare = Candidate(evidence_type="summary", session_ref="s2", message_ref=None, observed_at=None,
                     revision_ref=None, text="two", score=3, sidechain=False, fold_key="summary|two")
    parts = [Candidate(evidence_type="decision", session_ref=f"s{3 + i}", text=f"part {i}", score=2 - i / 10,
                       sidechain=False, fold_key=f"decision|{i}",
                       message_ref="m" if i == 0 else None, observed_at="2026-10-02T00:00:00Z" if i == 1 else None,
                       revision_ref="dev" if i == 2 else None) for i in range(3)]
    report = bound(fold([full, bare, *parts]), _limits(), fetch_ceiling_reached=False)
    dumped = {i.session_ref: i.as_dict() for i in report.items}
    assert dumped["s1"] == {"session_ref": "s1", "message_ref": "m1", "evidence_type": "prior_failure",
                            "observed_at": "2026-10-01T00:00:00Z", "revision_ref": "main", "snippet": "one"}
    assert dumped["s2"] == {"session_ref": "s2", "evidence_type": "summary", "snippet": "two"}
    assert dumped["s3"] == {"session_ref": "s3", "message_ref": "m", "evidence_type": "decision", "snippet": "part 0"}
    assert dumped["s4"] == {"session_ref": "s4", "observed_at": "2026-10-02T00:00:00Z", "evidence_type": "decision",
                            "snippet": "part 1"}
    assert dumped["s5"] == {"session_ref": "s5", "revision_ref": "dev", "evidence_type": "decision",
                            "snippet": "part 2"}


def test_the_report_counts_folded_occurrences_and_composition_redactions() -> None:
    empty = bound([], _limits(), fetch_ceiling_reached=False)
    assert (empty.items, empty.omitted_count, empty.truncated, empty.snippets_cut, dict(empty.redactions),
            empty.folded_occurrences, empty.total_chars) == ([], 0, False, 0, {}, 0, 0)
    cands = [_cand("s1", f"m{i}", "boom", when=f"2026-10-0{i}") for i in range(1, 4)]
    composed = Candidate(evidence_type="decision", session_ref="s2", message_ref="d", observed_at=None,
                         revision_ref=None, text="chose [REDACTED:jwt]", score=1, sidechain=False,
                         fold_key="decision|d", redactions=(("jwt", 2),))
    report = bound(fold([*cands, composed]), _limits(), fetch_ceiling_reached=False)
    assert report.folded_occurrences == 2  # three occurrences in s1 folded into one item
    assert dict(report.redactions) == {"jwt": 2}  # made while composing the text, counted with the rest
    assert report.total_chars == sum(len(i.snippet) for i in report.items)


def test_cut_snippet_keeps_the_limit_and_cuts_at_a_boundary_only_past_half_the_room() -> None:
    # A one-character budget holds the marker alone: never a character of text plus the marker.
    assert cut_snippet("abc", 1) == (ELLIPSIS, True)
    assert cut_snippet("ab", 2) == ("ab", False) and cut_snippet("abc", 2) == ("a" + ELLIPSIS, True)
    # Limit 21: 20 characters of room, half of it 10. A boundary past half the room is where the cut goes;
    # one at half the room or before it would waste the budget, so the cut is hard there.
    for space_at, expected in ((15, "a" * 15 + " "), (11, "a" * 11 + " "), (10, "a" * 10 + " " + "b" * 9),
                               (8, "a" * 8 + " " + "b" * 11)):
        text = "a" * space_at + " " + "b" * 30
        assert cut_snippet(text, 21) == (expected + ELLIPSIS, True), space_at


def test_the_best_item_of_each_session_is_placed_first_and_a_budget_filled_exactly_keeps_all() -> None:
    cands = [_cand("busy", str(i), f"text {i}", score=5) for i in range(10)] + [_cand("quiet", "q", "x", score=1)]
    report = bound(fold(cands), _limits(items=3), fetch_ceiling_reached=False)
    assert [i.message_ref for i in report.items] == ["0", "1", "q"]  # busy's best two, then quiet's
    exact = [_cand("s1", "1", "a" * 40, score=2), _cand("s2", "2", "b" * 60, score=1)]
    report = bound(fold(exact), _limits(total=100), fetch_ceiling_reached=False)
    assert [i.snippet for i in report.items] == ["a" * 40, "b" * 60] and report.omitted_count == 0
    assert not report.truncated


SPECIFIC_FIRST = ["prior_failure", "file_history", "decision", "summary", "tool_outcome"]


@pytest.mark.parametrize(("better", "worse"), [(a, b) for i, a in enumerate(SPECIFIC_FIRST)
                                               for b in SPECIFIC_FIRST[i + 1:]])
def test_a_row_reached_by_two_templates_is_shown_once_under_its_most_specific_type(better: str,
                                                                                  worse: str) -> None:
    for order in ((better, worse), (worse, better)):
        # The less specific reading even ranks higher: the type decides, not the score.
        cands = [_cand("s1", "m1", f"as {etype}", etype=etype, score=9 if etype == worse else 1) for etype in order]
        [only] = fold(cands)
        assert (only.item.evidence_type, only.item.text, only.occurrences) == (better, f"as {better}", 1), order


def test_evidence_without_a_message_is_never_taken_for_the_same_row() -> None:
    def summary(text: str) -> Candidate:
        return Candidate(evidence_type="summary", session_ref="s1", message_ref=None, observed_at=None,
                         revision_ref=None, text=text, score=1, sidechain=False, fold_key=f"summary|{text}")

    assert sorted(f.item.text for f in fold([summary("title"), summary("away summary")])) == ["away summary",
                                                                                             "title"]


def test_ties_within_one_session_are_ordered_by_message_then_kept_in_that_order() -> None:
    cands = [_cand("s1", ref, f"text {ref}") for ref in ("m3", "m1", "m2")]
    for ordering in (cands, list(reversed(cands))):
        assert [f.item.message_ref for f in fold(ordering)] == ["m1", "m2", "m3"]


# --- issue 30, item 2: every string of an item is redacted and bounded ---------------------------------------

TOKEN = "ghp_" + "Zq8Lm3" * 6


def test_a_ref_is_redacted_or_withheld_whole_never_cut() -> None:
    from obelisk_session_evidence.bounding.bound import REF_CEILING, bounded_ref

    assert bounded_ref("f8a2383b-592f-42a9-bbf3-f1c62afcb195") == ("f8a2383b-592f-42a9-bbf3-f1c62afcb195", {})
    assert bounded_ref("r" * REF_CEILING)[0] == "r" * REF_CEILING
    assert bounded_ref("r" * (REF_CEILING + 1)) == (None, {})  # withheld, not cut to a prefix naming another id
    assert bounded_ref(f"deploy-{TOKEN}-" + "x" * 2_000_000) == (None, {})
    shown, counts = bounded_ref(f"fix/{TOKEN}")
    assert shown == "fix/[REDACTED:github_token]" and counts == {"github_token": 1}
    for unfit in ("main\x00", "ma\nin", "main\x1b[31m", "ma\u202ein", "ma\u200bin", "main\u2028", "\ud800main"):
        assert bounded_ref(unfit) == (None, {}), repr(unfit)
    # Within the ceiling before redaction, over it after (a short password becomes a longer placeholder).
    assert bounded_ref("p" * (REF_CEILING - 20) + "?password=hunter2x")[0] is None
    assert bounded_ref(None) == (None, {})


@pytest.mark.parametrize(("value", "kept"), [
    ("2026-09-16T09:33:21.231Z", True), ("2026-09-16 09:33:21", True), ("2026-09-16T09:33:21+05:30", True),
    ("2026-09-16T09:33:21.123456789-0800", True), ("2026-09-16", True), ("2026-09-16T09:33Z", True),
    ("now", False), ("", False), ("2026-13-01T00:00:00Z", False), ("2026-09-16T24:00:00Z", False),
    ("2026-09-16T09:33:21.231Z trailing", False), ("2026-09-16T09:33:21.231Z" * 2, False),
    ("2026-09-16T09:33:21.231Z" + "x" * 2_000_000, False), ("1790000000000", False), ("2026-09-16\n", False),
])
def test_observed_at_is_a_plausible_iso_time_or_absent(value: str, kept: bool) -> None:
    from obelisk_session_evidence.bounding.bound import TIME_CEILING, bounded_time

    assert bounded_time(value) == (value if kept else None)
    assert len(bounded_time(value) or "") <= TIME_CEILING


def test_an_item_whose_session_ref_is_withheld_is_omitted_and_other_fields_are_left_out() -> None:
    huge = f"s-{TOKEN}-" + "x" * 2_000_000
    cands = [
        Candidate(evidence_type="prior_failure", session_ref=huge, message_ref="m1", observed_at=None,
                  revision_ref="main", text="boom one", score=9, sidechain=False, fold_key="a"),
        Candidate(evidence_type="prior_failure", session_ref="s2", message_ref="m" * 2_000_000,
                  observed_at="2026-10-01T00:00:00Z" + "y" * 100, revision_ref=f"feat/{TOKEN}", text="boom two",
                  score=5, sidechain=False, fold_key="b"),
        Candidate(evidence_type="decision", session_ref="s3", message_ref="m3", observed_at="2026-10-02T00:00:00Z",
                  revision_ref="dev\x00", text="chose x", score=1, sidechain=False, fold_key="c"),
    ]
    report = bound(fold(cands), _limits(sessions=2), fetch_ceiling_reached=False)
    dumped = [item.as_dict() for item in report.items]
    assert [d["session_ref"] for d in dumped] == ["s2", "s3"]  # the withheld session took no session slot
    assert report.omitted_count == 1 and report.truncated
    assert dumped[0] == {"session_ref": "s2", "evidence_type": "prior_failure",
                         "revision_ref": "feat/[REDACTED:github_token]", "snippet": "boom two"}
    assert dumped[1] == {"session_ref": "s3", "message_ref": "m3", "evidence_type": "decision",
                         "observed_at": "2026-10-02T00:00:00Z", "snippet": "chose x"}
    assert report.fields_withheld == 3  # s2's message_ref and observed_at, s3's revision_ref
    assert report.redactions == {"github_token": 1}
    assert TOKEN[4:12] not in json.dumps(dumped)


def test_the_last_redaction_runs_once_per_text_that_may_be_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """Items a max_items or max_sessions limit leaves out are never redacted again; each kept text once."""
    from obelisk_session_evidence.bounding import bound as bound_module

    texts = [f"text {i} password=Zq8Lm3x{i}" for i in range(10)]
    seen: list[str] = []
    real = bound_module.redact

    def counting(text: str) -> Any:
        seen.append(text)
        return real(text)

    monkeypatch.setattr(bound_module, "redact", counting)
    cands = [_cand("busy", str(i), text, score=10 - i) for i, text in enumerate(texts)]
    cands.append(_cand("other", "o", "a quiet session", score=0))
    report = bound(fold(cands), _limits(sessions=1, items=3), fetch_ceiling_reached=False)
    assert [i.message_ref for i in report.items] == ["0", "1", "2"]
    assert sorted(t for t in seen if t in {*texts, "a quiet session"}) == texts[:3]
    assert report.redactions == {"password_assignment": 3}


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.text(min_size=1, max_size=300), st.text(max_size=300), st.text(max_size=300),
                          st.text(max_size=40), st.integers(0, 5)), max_size=25),
       st.integers(1, 6), st.integers(1, 8), st.integers(40, 400), st.integers(100, 2000))
def test_the_envelope_stays_under_its_ceiling(rows: list[tuple[str, str, str, str, int]], sessions: int, items: int,
                                              snippet: int, total: int) -> None:
    """Any text, refs and times (control characters, quotes, emoji, line separators, long values): the answer's
    envelope, serialised as the CLI writes it, stays under the ceiling its limits give."""
    from obelisk_session_evidence.bounding.bound import envelope_ceiling
    from obelisk_session_evidence.bounding.receipt import build_envelope, build_receipt, build_result, envelope_bytes
    from obelisk_session_evidence.digest import DigestKey

    cands = [Candidate(evidence_type="decision", session_ref=ref * 3, message_ref=msg * 2, observed_at=when,
                       revision_ref=msg, text=text, score=score, sidechain=False, fold_key=f"decision|{i}")
             for i, (text, ref, msg, when, score) in enumerate(rows)]
    limits = _limits(sessions, items, snippet, total)
    report = bound(fold(cands), limits, fetch_ceiling_reached=False)
    request_id = "\u2028\x01\"" * 20_000  # a request's strings are echoed: the most a 64 KiB request holds
    result = build_result(request_id=request_id, index_revision="obx1-0", agent_id="a", project_id="p",
                          repository_id="r", freshness="fresh", items=report.items, truncated=report.truncated,
                          omitted_count=report.omitted_count)
    receipt = build_receipt(result, scope_basis={}, query_basis={}, key=DigestKey(b"k" * 32))
    envelope = build_envelope(request_id, "ok", result=result, receipt=receipt,
                         meta={"redactions": dict(report.redactions), "templates_run": ["x" * 40] * 20})
    assert envelope_bytes(envelope) <= envelope_ceiling(limits)
