"""Issue 32, piece by piece on hand-made input: what each retrieval module promises, through its public functions.

* term variants (``terms.prepare_terms`` + ``terms.admits``): inflections, nouns and joined or hyphenated forms
  are found; a variant never matches inside another word (``test`` is not ``testament``);
* command variants (``retrieval.commands``): ``python -m X`` is ``X``, runner arguments in any order, ``npx`` and
  ``pnpm exec``, ``npm test`` is the repository's ``test`` script, read read-only and bounded;
* decisive blocks (``retrieval.decisive`` via ``snippets.tool_story``): the cause in the middle of a long output;
* time-aware composition (``retrieval.timeline``, ``fold``, ``bound``): a superseded decision is marked and
  follows the current one; a failure after a fix is a regression; a flood of one signature leaves room for a
  distinct one; every asked evidence type gets an item first.
(Whole answers over the built corpus: tests/integration/test_time_aware_answers.py.)
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from obelisk_session_evidence.bounding.bound import bound
from obelisk_session_evidence.contract.wire import Limits
from obelisk_session_evidence.retrieval.commands import package_scripts, runs, term_commands
from obelisk_session_evidence.retrieval.evidence import RESOLUTION_CALL, Candidate, signature_of
from obelisk_session_evidence.retrieval.fold import fold
from obelisk_session_evidence.retrieval.markers import Tokenizers
from obelisk_session_evidence.retrieval.outcome import Outcome
from obelisk_session_evidence.retrieval.snippets import tool_story
from obelisk_session_evidence.retrieval.terms import PreparedTerms, admits
from obelisk_session_evidence.retrieval.timeline import mark_regressions, mark_superseded

TOKENIZERS = Tokenizers()


def _terms(*raw: str, scripts: dict[str, str] | None = None) -> PreparedTerms:
    return TOKENIZERS.prepare_terms(raw, tokenizer="unicode61", spec=None, scripts=scripts)


def _admits(term: str, text: str, command: str | None = None) -> bool:
    return admits(_terms(term), [text], cut=False, command=command)


# --- term variants ------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("term", "text"), [
    ("deploy", "The deployment to staging failed"), ("deploy", "we deployed it twice"),
    ("deploy", "deploying now"), ("retry", "it retried three times"), ("retry", "retries exhausted"),
    ("migrate", "the migration stalled"), ("rate limit", "the client got rate-limited again"),
    ("rate limit", "RateLimit: ratelimit exceeded"), ("rate limit", "hit the rate_limit"),
    ("test", "npm test"), ("test", "tests/test_cart.py failed"),
])
def test_a_term_finds_its_inflections_and_spacing_variants(term: str, text: str) -> None:
    assert _admits(term, text), (term, text)


@pytest.mark.parametrize(("term", "text"), [
    ("test", "the testament of the release"), ("test", "the latest build"), ("test", "contests"),
    ("state", "the SQL statement"), ("deploy", "redeployability"), ("rate limit", "rate of limitless growth"),
    ("cart", "cartography"),
])
def test_a_variant_never_matches_inside_another_word(term: str, text: str) -> None:
    assert not _admits(term, text), (term, text)


@pytest.mark.parametrize(("term", "text"), [
    ("webhook", '{"file_path": "/home/dev/acme/src/billing/webhooks.py"}'), ("webhook", "Read src/billing/webhooks.py"),
    ("webhook", "webhooks/stripe.py"), ("webhook", "src\\billing\\webhooks\\stripe.py"),
    ("webhook", "from billing.webhooks import deliver"), ("retry", "retries_left = 3"), ("retry", "maxRetries = 3"),
    ("retry", "retriesLeft"), ("deploy", "deployments/prod.yaml"), ("deploy", "ci-deployment-job"),
    ("migrate", "db/migrations:0004"),
])
def test_a_variant_never_widens_a_match_inside_a_path_or_identifier(term: str, text: str) -> None:
    assert not _admits(term, text), (term, text)


def test_a_term_only_in_the_bound_roots_own_path_is_not_held() -> None:
    """A repository at ``/tmp/test_app`` puts ``test`` in every absolute path under it: that names where the
    session worked, not what it did. The rest of the path still counts."""
    roots = ["/tmp/test_app", "/private/tmp/test_app"]
    output = "ERROR building /tmp/test_app/docs/contests.md: attesting plugin missing"
    assert not admits(_terms("test"), [output], cut=False, roots=roots)
    assert admits(_terms("test"), [output], cut=False)  # without the root known, its path counts
    assert admits(_terms("test"), ["FAILED /TMP/TEST_APP/tests/test_cart.py"], cut=False, roots=roots)


@pytest.mark.parametrize(("term", "text"), [
    ("webhook", "Read src/billing/webhook.py"), ("webhook", '{"file_path": "/srv/acme/webhook/handler.go"}'),
    ("retry", "retry_count = 3"), ("retry", "retryCount"), ("billing", "src/billing/charge.py"),
    ("webhook", "the webhooks fired twice."), ("retry", "it retried: three times"), ("deploy", "(deployed)"),
    ("webhook", "three webhooks, all late"), ("rate limit", "RateLimit: ratelimit exceeded"),
])
def test_the_term_still_matches_in_names_and_a_variant_in_prose(term: str, text: str) -> None:
    assert _admits(term, text), (term, text)


def test_a_variant_names_the_history_of_the_file_it_names() -> None:
    # File history asked for "webhook": the edits of webhooks.py are its history; a read of it is no reason.
    edit = '{"file_path": "/srv/acme/tools/webhooks.py", "old_string": "key = env", "new_string": "key = vault"}'
    assert admits(_terms("webhook"), [edit], cut=False, edited_file=True)
    assert not admits(_terms("webhook"), [edit], cut=False)
    assert not admits(_terms("webhook"), ["/srv/acme/tools/webhookserver.py"], cut=False, edited_file=True)
    assert not admits(_terms("test"), ["/srv/acme/testament/notes.md"], cut=False, edited_file=True)


def test_forms_reach_fts5_as_exact_phrases_never_prefixes() -> None:
    terms = _terms("deploy")
    assert terms.fts_terms[0] == '"deploy"'
    assert '"deployment"' in terms.fts_terms and '"deployed"' in terms.fts_terms
    assert not any(t.endswith("*") for t in terms.fts_terms)


# --- command variants ---------------------------------------------------------------------------------------

@pytest.mark.parametrize(("term", "recorded", "same"), [
    ("pytest tests/unit/test_cart.py", "python -m pytest tests/unit/test_cart.py -x -q", True),
    ("pytest tests/unit/test_cart.py", "pytest -q tests/unit/test_cart.py", True),
    ("pytest tests/unit/test_cart.py", "cd /r && uv run pytest -x tests/unit/test_cart.py", True),
    ("pytest tests/unit/test_cart.py", "cat tests/unit/test_cart.py", False),
    ("pytest tests/unit/test_cart.py", "pytest tests/unit/test_order.py", False),
    ("vitest run src/cart.test.ts", "npx vitest run src/cart.test.ts", True),
    ("vitest run src/cart.test.ts", "pnpm exec vitest src/cart.test.ts run", True),
    ("go test ./pkg/cart", "go test -race -count=1 ./pkg/cart", True),
    ("go test ./pkg/cart", "go build ./pkg/cart", False),
])
def test_a_command_finds_its_equivalent_forms(term: str, recorded: str, same: bool) -> None:
    assert runs(recorded, term_commands(term, {})) is same
    assert _admits(term, "", command=recorded) is same


def test_npm_test_is_the_test_script_of_the_repository(tmp_path: Path) -> None:
    (tmp_path / "package.json").write_text(json.dumps({"scripts": {"test": "vitest run --reporter dot"}}))
    before = sorted(os.listdir(tmp_path)), (tmp_path / "package.json").stat().st_mtime_ns
    scripts = package_scripts([str(tmp_path)])
    assert scripts == {"test": "vitest run --reporter dot"}
    assert (sorted(os.listdir(tmp_path)), (tmp_path / "package.json").stat().st_mtime_ns) == before  # read only
    terms = _terms("npm test", scripts=scripts)
    assert admits(terms, [""], cut=False, command="npx vitest run --reporter dot")
    assert admits(terms, [""], cut=False, command="yarn test")
    assert not admits(_terms("npm test"), [""], cut=False, command="npx vitest run --reporter dot")  # no script


def test_package_json_is_read_only_when_safe(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (real / "package.json").write_text(json.dumps({"scripts": {"test": "jest"}}))
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "package.json").symlink_to(real / "package.json")
    assert package_scripts([str(linked)]) == {}  # never through a symbolic link
    huge = tmp_path / "huge"
    huge.mkdir()
    (huge / "package.json").write_text(json.dumps({"scripts": {"test": "jest"}, "x": "y" * 70_000}))
    assert package_scripts([str(huge)]) == {}  # over the cap: nothing
    (tmp_path / "odd").mkdir()
    (tmp_path / "odd" / "package.json").write_text("[1, 2")
    assert package_scripts([str(tmp_path / "odd"), str(tmp_path / "missing")]) == {}


# --- decisive blocks ----------------------------------------------------------------------------------------

def _story(output: str, budget: int = 420) -> str:
    return tool_story("go test ./...", Outcome(output, 1, (), True), "", head_cut=False, terms=(),
                      budget=budget).text


def _padding(n: int, word: str = "ok  ") -> str:
    return "\n".join(f"{word} example.com/pkg/mod{i}\t0.{i % 9}s" for i in range(n))


@pytest.mark.parametrize(("block", "kept"), [
    ("WARNING: DATA RACE\nWrite at 0x00c000123 by goroutine 7:\n  cart.(*Cart).Add()\n"
     "      /src/cart/cart.go:42 +0x44\nPrevious read at 0x00c000123 by goroutine 6:\n  cart.Total()\n"
     "==================",
     ("WARNING: DATA RACE", "cart.go:42")),
    ("panic: runtime error: index out of range [3] with length 3\n\ngoroutine 12 [running]:\n"
     "cart.(*Cart).Item(...)\n\t/src/cart/cart.go:88", ("panic: runtime error", "cart.go:88")),
    ("Exception in thread \"main\" java.lang.RuntimeException: boot failed\n\tat app.Main.main(Main.java:9)\n"
     "Caused by: java.sql.SQLException: pool closed\n\tat db.Pool.get(Pool.java:12)\n"
     "Caused by: java.net.ConnectException: Connection refused to db:5432\n\tat net.Sock.open(Sock.java:3)",
     ("Caused by: java.net.ConnectException: Connection refused",)),
])
def test_the_decisive_block_is_kept_wherever_it_sits(block: str, kept: tuple[str, ...]) -> None:
    output = "\n".join([_padding(40), block, _padding(60), "FAIL\texample.com/pkg\t1.2s"])
    story = _story(output)
    for phrase in kept:
        assert phrase in story, story
    assert len(story) <= 420


# --- time-aware composition ---------------------------------------------------------------------------------

def _cand(ref: str, session: str, when: str, text: str, etype: str = "decision", score: float = 1.0,
          **kw: object) -> Candidate:
    return Candidate(evidence_type=etype, session_ref=session, message_ref=ref,  # type: ignore[arg-type]
                     observed_at=when, revision_ref=None, text=text, score=score, sidechain=False,
                     fold_key=f"{etype}|{text}", **kw)  # type: ignore[arg-type]


def test_a_reversed_decision_is_marked_and_the_current_one_leads() -> None:
    old = _cand("m-old", "s1", "2026-09-01T10:00:00Z", "We'll keep the feature flags in LaunchDarkly.")
    new = _cand("m-new", "s2", "2026-09-20T10:00:00Z",
                "Move the feature flags into our own table in Postgres instead of LaunchDarkly.")
    other = _cand("m-other", "s3", "2026-09-25T10:00:00Z", "Use pnpm for the web workspace.")
    marked = mark_superseded([old, new, other], _terms("feature flags"), ())
    by_ref = {c.message_ref: c for c in marked}
    assert by_ref["m-old"].superseded_by == "m-new on 2026-09-20"
    assert by_ref["m-new"].superseded_by is None and by_ref["m-other"].superseded_by is None
    # Even when the older decision ranks first, the answer leads with the current one.
    shown = [f.item for f in fold([by_ref["m-old"]._replace(score=9.0), by_ref["m-new"]])]
    assert [c.message_ref for c in shown] == ["m-new", "m-old"]
    assert shown[1].text.startswith("[superseded_by m-new on 2026-09-20] ")


def test_a_restatement_in_the_same_session_reverses_nothing() -> None:
    user = _cand("m1", "s1", "2026-09-01T10:00:00Z", "Use Zod for the checkout form validation.")
    agent = _cand("m2", "s1", "2026-09-01T10:01:00Z", "OK, I'll use Zod instead of Yup for the checkout form.")
    assert all(c.superseded_by is None for c in mark_superseded([user, agent], _terms("checkout form"), ()))


def test_a_later_decision_on_another_subject_supersedes_nothing() -> None:
    # Both hold a form of the query term "retry" and the later one says "drop", but one is about the Stripe SDK
    # and the other about a Celery schedule: no shared library, tool, file or setting, no shared content words.
    stripe = _cand("m-stripe", "s1", "2026-09-17T10:00:00Z",
                   "I decided to drop the hand-rolled requests client for Stripe in favour of the official stripe SDK "
                   "because it gives us idempotency keys and automatic retries on 5xx responses.")
    celery = _cand("m-celery", "s2", "2026-10-04T10:00:00Z",
                   "I decided to drop the cron-based retry job in favour of a Celery beat schedule because cron on "
                   "the worker hosts kept starting overlapping runs that retried the same charges.")
    for terms in (_terms("retry"), _terms("Celery", "cron", "retry")):
        assert all(c.superseded_by is None for c in mark_superseded([stripe, celery], terms, ())), terms
    # The same later decision does supersede an earlier one about its subject, named or in shared words.
    cron = _cand("m-cron", "s0", "2026-09-01T10:00:00Z",
                 "We'll keep the cron retry job on the worker hosts for the failed charges.")
    assert {c.message_ref: c.superseded_by for c in mark_superseded([cron, celery], _terms("retry"), ())} == \
        {"m-cron": "m-celery on 2026-10-04", "m-celery": None}
    named = _cand("m-named", "s0", "2026-09-01T10:00:00Z", "Retries stay in src/billing/retry.py for now.")
    switch = _cand("m-switch", "s3", "2026-10-05T10:00:00Z",
                   "Switching src/billing/retry.py to tenacity instead of the hand-written retry loop.")
    assert {c.message_ref: c.superseded_by for c in mark_superseded([named, switch], _terms("retry"), ())} == \
        {"m-named": "m-switch on 2026-10-05", "m-switch": None}


def test_a_failure_after_a_fix_that_held_is_a_regression() -> None:
    cmd = "pytest tests/test_money.py"
    first = _cand("f1", "s1", "2026-09-01T10:00:00Z", "[failed exit 1] pytest", "prior_failure", command=cmd)
    passed = _cand("r1", "s1", "2026-09-01T10:05:00Z", "[what happened next] [ok] pytest", "prior_failure",
                   command=cmd, kind=RESOLUTION_CALL, follows="f1")
    again = _cand("f2", "s2", "2026-09-10T10:00:00Z", "[failed exit 1] pytest", "prior_failure",
                  command="python -m pytest -q tests/test_money.py")
    marked = {c.message_ref: c for c in mark_regressions([first, passed, again])}
    assert marked["f2"].regression == "2026-09-01" and marked["f1"].regression is None
    # Without the passing run, the second failure is a repeat, not a regression.
    assert all(c.regression is None for c in mark_regressions([first, again]))


def test_a_flood_of_one_failure_leaves_room_for_a_distinct_one() -> None:
    flood = [_cand(f"f{i}", f"s{i}", f"2026-09-{i + 1:02d}T10:00:00Z",
                   f"[failed exit 1] pytest tests/test_sync.py\nE TimeoutError: sync took {i + 30}.{i}s at /tmp/run{i}",
                   "prior_failure", score=5.0,
                   signature=signature_of(f"pytest tests/test_sync.py TimeoutError: took {i + 30}.{i}s /tmp/run{i}"))
             for i in range(20)]
    distinct = _cand("d", "s-old", "2026-08-01T10:00:00Z",
                     "[failed exit 1] pytest tests/test_sync.py\nE KeyError: 'cursor'", "prior_failure",
                     signature=signature_of("pytest tests/test_sync.py KeyError: 'cursor'"))
    report = bound(fold([*flood, distinct]), Limits(max_sessions=10, max_items=3, max_snippet_chars=400,
                                                    max_total_chars=4000), fetch_ceiling_reached=False)
    texts = [i.snippet for i in report.items]
    assert any("KeyError" in t for t in texts), texts
    assert texts[0].startswith("[repeated in 20 sessions, 2026-09-01 to 2026-09-20] "), texts
    assert report.truncated


def test_every_asked_type_gets_an_item_before_any_gets_a_second() -> None:
    failures = [_cand(f"f{i}", f"s{i}", f"2026-09-{i + 1:02d}T10:00:00Z", f"[failed exit 1] distinct failure {i}x",
                      "prior_failure", score=9.0) for i in range(6)]
    decision = _cand("d", "s9", "2026-08-01T10:00:00Z", "Use pnpm for the workspace.", score=0.1)
    report = bound(fold([*failures, decision]), Limits(max_sessions=10, max_items=3, max_snippet_chars=400,
                                                       max_total_chars=4000), fetch_ceiling_reached=False)
    assert {i.evidence_type for i in report.items} == {"prior_failure", "decision"}
