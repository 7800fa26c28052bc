"""Sessions and situations of the time-aware classes (issue 32): evidence that knows what came after it.

* ``superseded_decision``: a decision reversed by a later one (the later leads; the earlier says
  ``superseded_by``), and a restatement that reverses nothing;
* ``regression``: a test fixed once and failing again for another cause (said as a regression), with the
  explanation or the edit of each fix as what happened next, before the bare later success;
* ``flood``: one failure repeated in twenty sessions beside an older session where the same command failed for
  another reason;
* ``needle``: the decisive block of a long output wherever it sits (Node stack trace, TypeScript errors, a
  Terraform ``Error:`` block, a Docker build step, a Python exception chain, npm and make exit lines);
* ``variant.term`` and ``variant.command``: another inflection or spelling of a term, another form of a command
  (``python -m``, reordered arguments, ``npm test`` as the repository's test script);
* ``cjk.ko``: a Korean bug report with particles and Korean failure and resolution cues;
* ``resolution.user_grant``: the user supplying a token scope or a role after a failure for want of it;
* ``budget.types``: every asked evidence type gets an item under a tight total.

Written the way Claude Code and Codex write today, in ``quay-ops``, ``tally-web`` and ``atrium-docs``.
"""

# ruff: noqa: RUF001  (CJK punctuation and tool glyphs are written as the tools write them)

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from obelisk_session_evidence.fixtures.patches import update

from ..evaluation.situation import Fact
from .model import DE, FH, PF, TO, CorpusBuilder, fact

QUEUE_DECISION: Final = (
    ("We'll run the export jobs on Celery with the Redis broker; the beat schedule covers the nightly ones.",
     "run the export jobs on Celery with the Redis broker"),
    ("Export jobs go on Celery from here on, with Redis as the broker and beat for the nightly ones.",
     "Export jobs go on Celery from here on"),
    ("The export jobs will use Celery on a Redis broker, with beat for the nightly runs.",
     "export jobs will use Celery on a Redis broker"),
)
QUEUE_REVERSAL: Final = (
    ("Switching back to RQ for the export jobs after all: Celery's visibility timeout re-runs every export that "
     "takes longer than an hour.", "Switching back to RQ for the export jobs after all"),
    ("Celery is out for the export jobs, back to RQ: the visibility timeout re-ran every export longer than an "
     "hour.", "Celery is out for the export jobs, back to RQ"),
    ("Dropping Celery for the export jobs and going back to RQ; its visibility timeout keeps re-running the long "
     "exports.", "Dropping Celery for the export jobs and going back to RQ"),
)
REGRESSION_CAUSE: Final = (
    ("The root cause this time is different: the JPY fixture has no minor units, and format_amount still divides "
     "by 100.", "the JPY fixture has no minor units"),
    ("Different failure from last week: format_amount divides by 100 even for JPY, which has no minor units.",
     "format_amount divides by 100 even for JPY"),
    ("This one happens because JPY has no minor units while format_amount always divides by 100.",
     "JPY has no minor units while format_amount always divides by 100"),
)


def superseded_decision(b: CorpusBuilder) -> None:
    first = b.codex("ta-x-exports-1", "quay-ops", 40, cli_version="0.58.0")
    first.user("Pick a job queue for the CSV exports, they block the API workers.")
    decided, decided_phrase = b.variant(QUEUE_DECISION)
    first.say(decided)
    first.patch([update("requirements.txt", [], ["celery[redis]==5.4.0"])], via="freeform")
    first.token_count()
    b.finish_codex(first, "quay-ops", "Export jobs on a queue")
    second = b.codex("ta-x-exports-2", "quay-ops", 58, cli_version="0.63.0")
    second.user("The big exports run twice again. Fix it for good.")
    reversal, reversal_phrase = b.variant(QUEUE_REVERSAL)
    second.say(reversal)
    second.patch([update("requirements.txt", ["celery[redis]==5.4.0"], ["rq==1.16.2"])], via="freeform")
    second.token_count()
    b.finish_codex(second, "quay-ops", None)
    b.situation("time-superseded-decision-reversed", second, [DE], ["Celery"],
                [Fact(second.session_id, (DE,), reversal_phrase, "decision.current",
                      without_phrases=("superseded_by",), leads=True),
                 Fact(first.session_id, (DE,), decided_phrase, "decision.superseded",
                      with_phrases=("superseded_by",))],
                classes=["superseded_decision"])
    t = b.claude("ta-c-flags-1", "tally-web", 41)
    t.user("Keep the feature flags in LaunchDarkly for now, we have the contract until March.")
    t.say("Understood, the flags stay in LaunchDarkly; I'll add the new checkout flag there.")
    t.turn_duration()
    b.finish_claude(t, "tally-web")
    later = b.claude("ta-c-flags-2", "tally-web", 62)
    later.user("We are not renewing LaunchDarkly. Move the flags into our own flags table in Postgres instead, the "
               "admin page can edit them.")
    later.say("I'll move the 14 flags from LaunchDarkly into the feature_flags table and drop the SDK.")
    later.turn_duration()
    b.finish_claude(later, "tally-web")
    b.situation("time-superseded-decision-claude", later, [DE], ["LaunchDarkly"],
                [Fact(later.session_id, (DE,), "Move the flags into our own flags table in Postgres instead",
                      "decision.current", without_phrases=("superseded_by",)),
                 Fact(t.session_id, (DE,), "Keep the feature flags in LaunchDarkly for now", "decision.superseded",
                      with_phrases=("superseded_by",))],
                classes=["superseded_decision"])
    same = b.claude("ta-c-restate", "tally-web", 44)
    same.user("Let's use Zod for the checkout form validation instead of hand-written checks.")
    same.say("OK, I'll use Zod for the checkout form validation instead of the hand-written checks.")
    same.turn_duration()
    b.finish_claude(same, "tally-web")
    b.situation("time-restated-decision-not-superseded", same, [DE], ["Zod"],
                [Fact(same.session_id, (DE,), "Let's use Zod for the checkout form validation", "decision.restated",
                      without_phrases=("superseded_by",))],
                classes=["superseded_decision"])


def regression(b: CorpusBuilder) -> None:
    first = b.claude("ta-c-money-1", "quay-ops", 36)
    first.user("tests/test_money.py fails after the rounding change, please fix.")
    first.bash("python -m pytest tests/test_money.py -q", "Run the money tests",
               "F..\n=================================== FAILURES ===================================\n"
               "___________________________ test_format_amount_eur ____________________________\n"
               "E   AssertionError: assert '10.0 EUR' == '10.00 EUR'\n"
               "=========================== short test summary info ============================\n"
               "FAILED tests/test_money.py::test_format_amount_eur - AssertionError: assert '10.0 EUR' == "
               "'10.00 EUR'\n1 failed, 2 passed in 0.09s", exit_code=1)
    first.say("format_amount formats with str() on a float, so the trailing zero disappears.")
    first.edit(first.cwd / "tools/money.py", "    return f\"{amount / 100} {currency}\"",
               "    return f\"{amount / 100:.2f} {currency}\"")
    first.bash("python -m pytest tests/test_money.py -q", "Run the money tests", "...\n3 passed in 0.07s")
    first.turn_duration()
    b.finish_claude(first, "quay-ops")
    second = b.claude("ta-c-money-2", "quay-ops", 57)
    second.user("test_money is failing again on CI.")
    second.bash("python -m pytest tests/test_money.py -q", "Run the money tests",
                "..F\n=================================== FAILURES ===================================\n"
                "___________________________ test_format_amount_jpy ____________________________\n"
                "E   AssertionError: assert '12.00 JPY' == '1200 JPY'\n"
                "=========================== short test summary info ============================\n"
                "FAILED tests/test_money.py::test_format_amount_jpy - AssertionError: assert '12.00 JPY' == "
                "'1200 JPY'\n1 failed, 2 passed in 0.08s", exit_code=1)
    cause, cause_phrase = b.variant(REGRESSION_CAUSE)
    second.say(cause)
    second.edit(second.cwd / "tools/money.py", "    return f\"{amount / 100:.2f} {currency}\"",
                "    digits = MINOR_UNITS.get(currency, 2)\n"
                "    return f\"{amount / 10**digits:.{digits}f} {currency}\"")
    second.bash("python -m pytest tests/test_money.py -q", "Run the money tests", "...\n3 passed in 0.07s")
    second.say("All three money tests pass.")
    second.turn_duration()
    b.finish_claude(second, "quay-ops")
    b.situation("time-regression-says-so", second, [PF], ["tests/test_money.py"],
                [Fact(second.session_id, (PF,), "assert '12.00 JPY' == '1200 JPY'", "failure.regression",
                      with_phrases=("regression",)),
                 fact(second, [PF], cause_phrase, "resolution.root_cause"),
                 fact(first, [PF], "assert '10.0 EUR' == '10.00 EUR'", "failure"),
                 fact(first, [PF], "amount / 100:.2f", "resolution.edit")],
                classes=["regression"])
    b.situation("time-regression-explanation-before-success", second, [PF, TO], ["tests/test_money.py"],
                [fact(second, [PF], cause_phrase, "resolution.root_cause"),
                 fact(second, [PF], "MINOR_UNITS.get(currency, 2)", "resolution.edit")],
                classes=["regression"], max_items=5, max_total_chars=2600)


_SMOKE_PATHS: Final = ("/", "/login", "/checkout", "/orders", "/settings", "/help")


def flood(b: CorpusBuilder) -> None:
    repeated = []
    odd = None
    for n in range(21):
        t = b.claude(f"ta-c-smoke-{n}", "tally-web", 30 + n)
        t.user("Run the smoke test before the release cut.")
        if n == 2:
            out = ("\n> tally-web@0.9.0 smoke\n> playwright test smoke\n\nRunning 6 tests using 2 workers\n"
                   "  ✘  3 [chromium] › smoke.spec.ts:21:3 › checkout page renders (30.0s)\n\n"
                   "    Error: page.goto: Test timeout of 30000ms exceeded.\n    Call log:\n"
                   "      - navigating to \"http://localhost:4173/checkout\", waiting until \"load\"\n\n"
                   "  1 failed\n  5 passed (41.2s)")
        else:
            pid = 4000 + 37 * n
            out = ("\n> tally-web@0.9.0 smoke\n> playwright test smoke\n\n"
                   f"[WebServer] [vite] preview server pid {pid} starting\n"
                   "[WebServer] Error: listen EADDRINUSE: address already in use 127.0.0.1:4173\n"
                   "Error: Process from config.webServer was not able to start. Exit code: 1\n\n"
                   f"  0 passed ({n % 4 + 1}.{10 + n}s)")
        t.bash("npm run smoke", "Run the smoke tests", out, exit_code=1)
        t.say("The smoke run failed.")
        t.turn_duration()
        b.finish_claude(t, "tally-web")
        if n == 2:
            odd = t
        else:
            repeated.append(t)
    assert odd is not None
    newest = repeated[-1]
    b.situation("time-flood-distinct-signature", newest, [PF], ["npm run smoke"],
                [fact(odd, [PF], "page.goto: Test timeout of 30000ms exceeded", "failure.distinct"),
                 Fact(newest.session_id, (PF,), "listen EADDRINUSE: address already in use 127.0.0.1:4173",
                      "failure.flood", with_phrases=("20 sessions",),
                      or_sessions=tuple(t.session_id for t in repeated[:-1]))],
                classes=["flood"])


def _webpack_noise(n: int) -> str:
    return "".join(f"asset {name}.{(i * 7919) % 99991:05x}.js {10 + i * 3}.{i % 10} KiB [emitted] [minimized]\n"
                   for i, name in enumerate(["main", "vendor", "checkout", "orders", "settings", "admin"] * n))


def needles(b: CorpusBuilder) -> None:
    t = b.claude("ta-c-node", "tally-web", 45)
    t.user("The seed script crashes half way, look at it.")
    seeded = "".join(f"seeded merchant m_{i:04d} ({i * 3} orders, {i % 5} refunds)\n" for i in range(115))
    trace = ("/home/dev/tally-web/scripts/seed.ts:88\n    const region = merchant.address.region.toUpperCase();\n"
             "                                       ^\n\nTypeError: Cannot read properties of undefined (reading "
             "'region')\n    at seedMerchant (/home/dev/tally-web/scripts/seed.ts:88:40)\n"
             "    at async Promise.all (index 3)\n    at async main (/home/dev/tally-web/scripts/seed.ts:131:5)\n\n")
    after = "".join(f"[pool] released connection {i}\n" for i in range(60))
    t.bash("npx tsx scripts/seed.ts --merchants 200", "Run the seed script",
           seeded + trace + after + "Node.js v20.17.0", exit_code=1)
    t.say("One merchant fixture has no address.")
    t.turn_duration()
    b.finish_claude(t, "tally-web")
    b.situation("time-needle-node-stack", t, [PF], ["scripts/seed.ts"],
                [fact(t, [PF], "TypeError: Cannot read properties of undefined (reading 'region')", "needle.node"),
                 fact(t, [PF], "seed.ts:88:40", "needle.node")],
                classes=["needle", "needle.node_stack"])

    x = b.codex("ta-x-tsc", "tally-web", 47, cli_version="0.63.0")
    x.user("Typecheck the workspace.")
    others = "".join(f"@tally/{pkg}:typecheck: cache hit, replaying logs {(i * 2654435761) % 16**16:016x}\n"
                     f"@tally/{pkg}:typecheck: > tsc --noEmit -p tsconfig.json\n"
                     for i, pkg in enumerate(["ui", "icons", "config", "api-client", "i18n", "charts"] * 6))
    errors = ("@tally/web:typecheck: src/orders/OrderTable.tsx(42,17): error TS2322: Type 'string | null' is not "
              "assignable to type 'string'.\n@tally/web:typecheck:   Type 'null' is not assignable to type "
              "'string'.\n")
    cascade = "".join(f"@tally/web:typecheck: src/orders/columns/c{i:02d}.tsx({10 + i},5): error TS7006: Parameter "
                      "'row' implicitly has an 'any' type.\n" for i in range(30))
    x.shell("npx turbo run typecheck",
            "• Packages in scope: @tally/web, @tally/ui, @tally/icons, @tally/config, @tally/api-client, "
            "@tally/i18n, @tally/charts\n• Running typecheck in 7 packages\n" + others + errors + cascade
            + "@tally/web:typecheck: ERROR: command finished with error: command (/home/dev/tally-web/apps/web) "
            "npm run typecheck exited (2)\n\n Tasks:    6 successful, 7 total\nCached:    6 cached, 7 total\n"
            "  Time:    4.812s \nFailed:    @tally/web#typecheck\n\n ERROR  run failed: command  exited (2)",
            exit_code=2, form="text")
    x.say("49 type errors after the strict flag; the first one is in OrderTable.")
    x.token_count()
    b.finish_codex(x, "tally-web", None)
    b.situation("time-needle-typescript-first-error", x, [PF], ["turbo run typecheck"],
                [fact(x, [PF], "error TS2322: Type 'string | null' is not assignable to type", "needle.ts")],
                classes=["needle", "needle.typescript"])

    t = b.claude("ta-c-tf", "quay-ops", 46)
    t.user("Apply the bucket changes for the exports.")
    plan = "".join(f"aws_s3_object.fixture[\"f{i:03d}\"]: Refreshing state... [id=fixtures/f{i:03d}.csv]\n"
                   for i in range(80))
    err = ("╷\n│ Error: creating S3 Bucket (quay-exports-eu): BucketAlreadyExists: The requested bucket name is not "
           "available. The bucket namespace is shared by all users of the system.\n│ \tstatus code: 409, request id: "
           "7QZ1H0M2XK3N, host id: 9a8b7c\n│\n│   with aws_s3_bucket.exports,\n│   on s3.tf line 12, in resource "
           "\"aws_s3_bucket\" \"exports\":\n│   12: resource \"aws_s3_bucket\" \"exports\" {\n│\n╵\n")
    post = "".join(f"aws_s3_object.fixture[\"f{i:03d}\"]: Still creating... [{i}0s elapsed]\n" for i in range(1, 30))
    t.bash("terraform apply -auto-approve", "Apply terraform", plan + err + post
           + "Releasing state lock. This may take a few moments...", exit_code=1)
    t.say("The bucket name is taken globally.")
    t.turn_duration()
    b.finish_claude(t, "quay-ops")
    b.situation("time-needle-terraform-error", t, [PF], ["terraform apply"],
                [fact(t, [PF], "Error: creating S3 Bucket (quay-exports-eu): BucketAlreadyExists", "needle.terraform"),
                 fact(t, [PF], "on s3.tf line 12", "needle.terraform")],
                classes=["needle", "needle.terraform"])

    x = b.codex("ta-x-docker", "quay-ops", 48, cli_version="0.64.0")
    x.user("Build the worker image.")
    steps = "".join(f"#{n} [internal] load metadata for docker.io/library/golang:1.22\n#{n} DONE 0.{n}s\n"
                    for n in range(1, 6))
    layers = "".join(f"#9 {2 + i * 0.4:.3f} go: downloading github.com/quay/dep{i} v1.{i}.0\n" for i in range(95))
    fail = ("#9 [build 4/6] RUN go build -o /out/worker ./cmd/worker\n#9 41.22 # quay/internal/worker\n"
            "#9 41.22 internal/worker/loop.go:61:9: undefined: backoff.Exponential\n"
            "#9 ERROR: process \"/bin/sh -c go build -o /out/worker ./cmd/worker\" did not complete successfully: "
            "exit code: 1\n")
    tail = ("------\n > [build 4/6] RUN go build -o /out/worker ./cmd/worker:\n------\n"
            "Dockerfile.worker:14\n--------------------\n  13 |     COPY . .\n  14 | >>> RUN go build -o /out/worker "
            "./cmd/worker\n--------------------\nERROR: failed to solve: process \"/bin/sh -c go build -o /out/worker "
            "./cmd/worker\" did not complete successfully: exit code: 1")
    x.shell("docker build -f Dockerfile.worker -t quay-worker:dev .", steps + layers + fail + tail, exit_code=1,
            form="text")
    x.say("The go build step fails inside the image.")
    x.token_count()
    b.finish_codex(x, "quay-ops", None)
    b.situation("time-needle-docker-step", x, [PF], ["Dockerfile.worker"],
                [fact(x, [PF], "internal/worker/loop.go:61:9: undefined: backoff.Exponential", "needle.docker")],
                classes=["needle", "needle.docker_step"])

    t = b.claude("ta-c-pychain", "quay-ops", 49)
    t.user("The nightly settlement job died, check the log run.")
    info = "".join(f"2026-09-{10 + i % 20:02d} 02:00:{i % 60:02d} INFO settle merchant={1000 + i} amount={i * 13}.00\n"
                   for i in range(80))
    chain = ("Traceback (most recent call last):\n  File \"/srv/quay/tools/settle.py\", line 77, in post_batch\n"
             "    conn.execute(INSERT_SETTLEMENT, rows)\npsycopg.errors.SerializationFailure: could not serialize "
             "access due to concurrent update\n\nDuring handling of the above exception, another exception occurred:"
             "\n\nTraceback (most recent call last):\n  File \"/srv/quay/tools/settle.py\", line 81, in post_batch\n"
             "    conn.rollback()\npsycopg.OperationalError: the connection is closed\n")
    more = "".join(f"2026-09-30 02:14:{i:02d} WARNING retrying merchant={2000 + i} in 5s\n" for i in range(40))
    t.bash("python tools/settle.py --date 2026-09-29", "Run the settlement job", info + chain + more
           + "settlement aborted: 40 merchants left unsettled", exit_code=1)
    t.say("The settlement aborted after a serialization failure.")
    t.turn_duration()
    b.finish_claude(t, "quay-ops")
    b.situation("time-needle-python-chain", t, [PF], ["tools/settle.py"],
                [fact(t, [PF], "psycopg.errors.SerializationFailure: could not serialize access", "needle.python"),
                 fact(t, [PF], "psycopg.OperationalError: the connection is closed", "needle.python")],
                classes=["needle", "needle.python_chain"])

    x = b.codex("ta-x-npm", "tally-web", 50, cli_version="0.63.0")
    x.user("Run the full build.")
    out = ("\n> tally-web@0.9.0 build\n> tsc -b && vite build\n\nvite v5.4.10 building for production...\n"
           + _webpack_noise(12) + "✓ 611 modules transformed.\nx Build failed in 6.12s\nerror during build:\n"
           "[vite:esbuild] Transform failed with 1 error:\n/home/dev/tally-web/src/orders/export.ts:23:14: ERROR: "
           "Expected \";\" but found \"csv\"\n" + _webpack_noise(3)
           + "npm error Lifecycle script `build` failed with error:\nnpm error code 1\n"
           "npm error path /home/dev/tally-web\nnpm error command failed\nnpm error command sh -c tsc -b && vite build")
    x.shell("npm run build", out, exit_code=1, form="text")
    x.say("vite fails on a syntax error in export.ts.")
    x.token_count()
    b.finish_codex(x, "tally-web", None)
    b.situation("time-needle-vite-npm-exit", x, [PF], ["npm run build"],
                [fact(x, [PF], "export.ts:23:14: ERROR: Expected \";\" but found \"csv\"", "needle.build"),
                 fact(x, [PF], "npm error Lifecycle script `build` failed", "needle.npm_exit")],
                classes=["needle", "needle.build_first_error"])

    t = b.claude("ta-c-gorace", "quay-ops", 51)
    t.user("go test -race on the cache package fails intermittently.")
    runs = "".join(f"=== RUN   TestCache{n}\n--- PASS: TestCache{n} (0.0{i % 9}s)\n"
                   for i, n in enumerate(["Get", "Set", "Evict", "TTL", "Stats", "Resize", "Clear", "Keys", "Peek",
                                          "Touch", "Len", "Close"] * 5))
    race = ("==================\nWARNING: DATA RACE\nRead at 0x00c00012e0a8 by goroutine 41:\n"
            "  quay/internal/cache.(*LRU).Get()\n      /src/internal/cache/lru.go:52 +0x84\n\n"
            "Previous write at 0x00c00012e0a8 by goroutine 40:\n  quay/internal/cache.(*LRU).moveToFront()\n"
            "      /src/internal/cache/lru.go:97 +0x1c4\n==================\n")
    t.bash("go test -race ./internal/cache/...", "Race test the cache", runs[: len(runs) // 2] + race
           + runs[len(runs) // 2:] + "--- FAIL: TestCacheConcurrentGet (0.12s)\n    testing.go:1465: race detected "
           "during execution of test\nFAIL\nFAIL\tquay/internal/cache\t1.402s\nFAIL", exit_code=1)
    t.turn_duration()
    b.finish_claude(t, "quay-ops")
    b.situation("time-needle-go-race", t, [PF], ["TestCacheConcurrentGet"],
                [fact(t, [PF], "quay/internal/cache.(*LRU).moveToFront()", "needle.go_race")],
                classes=["needle", "needle.go_race"])


def term_variants(b: CorpusBuilder) -> None:
    x = b.codex("ta-x-retry", "quay-ops", 52, cli_version="0.63.0")
    x.user("Why do webhook deliveries pile up?")
    x.say("The webhook deliveries are retried every 2 seconds without backoff, so the queue fills up and the "
          "consumer crashes with an out-of-memory error.")
    x.say("Each merchant endpoint is ratelimited at 5 requests per second, and the retries exceed it, which is why "
          "half of them fail with 429.")
    x.token_count()
    b.finish_codex(x, "quay-ops", None)
    b.situation("time-variant-term-ied", x, [PF], ["retry"],
                [fact(x, [PF], "webhook deliveries are retried every 2 seconds", "variant.past")],
                classes=["variant.term"])
    b.situation("time-variant-term-joined", x, [PF], ["rate limit"],
                [fact(x, [PF], "ratelimited at 5 requests per second", "variant.joined")],
                classes=["variant.term"])
    t = b.claude("ta-c-install", "tally-web", 53)
    t.user("Set up the project on the new laptop.")
    t.bash("npm ci", "Install dependencies",
           "npm error code ERESOLVE\nnpm error ERESOLVE could not resolve\nnpm error\nnpm error While resolving: "
           "tally-web@0.9.0\nnpm error Found: react@19.0.0", exit_code=1)
    t.say("The installation failed: react 19 conflicts with the peer range of react-table.")
    t.say("Caching the Playwright browsers between CI runs failed too, because the key does not include the "
          "Playwright version.")
    t.turn_duration()
    b.finish_claude(t, "tally-web")
    b.situation("time-variant-term-verb-for-noun", t, [PF], ["install"],
                [fact(t, [PF], "The installation failed", "variant.noun")],
                classes=["variant.term"])
    b.situation("time-variant-term-gerund", t, [PF], ["cache"],
                [fact(t, [PF], "Caching the Playwright browsers between CI runs failed", "variant.gerund")],
                classes=["variant.term"])
    d = b.codex("ta-x-atrium", "atrium-docs", 54, cli_version="0.63.0")
    d.user("Publish the contest results page and the attestation checklist.")
    d.shell("mkdocs build", "INFO    -  Building documentation...\nWARNING -  A reference to 'contests.md' is "
            "included in the 'nav' configuration, which is not found in the documentation files.\nERROR   -  "
            "Config value 'plugins': The \"attesting\" plugin is not installed", exit_code=1, form="text")
    d.say("The build fails: the attesting plugin is not installed, and the contests page is missing. The retrying "
          "loop in the publish script masks that.")
    d.token_count()
    b.finish_codex(d, "atrium-docs", None)
    b.situation("time-neg-variant-inside-word", ("codex", "atrium-docs"), [PF, TO, DE, FH], ["tests"],
                classes=["negative", "variant.term"])
    b.situation("time-neg-variant-verb-inside-word", ("codex", "atrium-docs"), [PF, TO, DE], ["test"],
                classes=["negative", "variant.term"])


def command_variants(b: CorpusBuilder) -> None:
    t = b.claude("ta-c-pym", "quay-ops", 55)
    t.user("test_cart fails locally for me.")
    t.bash("python -m pytest tests/unit/test_cart.py -x -q", "Run the cart tests",
           ".F\n=================================== FAILURES ===================================\n"
           "__________________________ test_cart_total_with_coupon __________________________\n"
           "E   decimal.InvalidOperation: [<class 'decimal.ConversionSyntax'>]\n"
           "=========================== short test summary info ============================\n"
           "FAILED tests/unit/test_cart.py::test_cart_total_with_coupon - decimal.InvalidOperation\n"
           "!!!!!!!!!!!!!!!!!!!!!!!!!! stopping after 1 failures !!!!!!!!!!!!!!!!!!!!!!!!!!!\n1 failed, 1 passed in "
           "0.12s", exit_code=1)
    t.bash("cat tests/unit/test_cart.py", "Read the cart tests", "from decimal import Decimal\n\n"
           "def test_cart_total_with_coupon():\n    assert cart_total(['9.99', 'COUPON10']) == Decimal('8.99')\n")
    t.bash("sed -n 1,40p tests/unit/test_tax.py", "Read the tax tests",
           "sed: can't read tests/unit/test_tax.py: No such file or directory", exit_code=2)
    t.turn_duration()
    b.finish_claude(t, "quay-ops")
    b.situation("time-command-python-m", t, [PF], ["pytest tests/unit/test_cart.py"],
                [fact(t, [PF], "decimal.InvalidOperation: [<class 'decimal.ConversionSyntax'>]", "variant.python_m")],
                classes=["variant.command"])
    x = b.codex("ta-x-reorder", "quay-ops", 56, cli_version="0.63.0")
    x.user("Run the shipping tests verbose.")
    x.shell(["pytest", "-vv", "--maxfail=1", "tests/unit/test_shipping.py"],
            "tests/unit/test_shipping.py::test_zone_rates FAILED\n\n"
            "E       KeyError: 'NO-2'\n\nFAILED tests/unit/test_shipping.py::test_zone_rates - KeyError: 'NO-2'\n"
            "1 failed in 0.05s", exit_code=1, form="text")
    x.token_count()
    b.finish_codex(x, "quay-ops", None)
    b.situation("time-command-reordered-args", x, [PF], ["pytest tests/unit/test_shipping.py -vv"],
                [fact(x, [PF], "test_zone_rates - KeyError: 'NO-2'", "variant.reordered")],
                classes=["variant.command"])
    t = b.claude("ta-c-vitest", "tally-web", 57)
    t.user("The cart total test is red, have a look.")
    t.bash("pnpm exec vitest run src/cart/total.test.ts", "Run the cart total test",
           " ❯ src/cart/total.test.ts (3 tests | 1 failed) 9ms\n   × cartTotal > applies the bundle discount 3ms\n"
           "     → expected 4590 to be 4490 // Object.is equality\n\n Test Files  1 failed (1)\n"
           "      Tests  1 failed | 2 passed (3)", exit_code=1)
    t.turn_duration()
    b.finish_claude(t, "tally-web")
    b.situation("time-command-npm-test-script", t, [PF], ["npm test"],
                [fact(t, [PF], "expected 4590 to be 4490", "variant.script")],
                classes=["variant.command"])
    x = b.codex("ta-x-yarn", "tally-web", 59, cli_version="0.64.0")
    x.user("lint please")
    x.shell("yarn eslint src --max-warnings 0",
            "/home/dev/tally-web/src/orders/export.ts\n  12:7  error  'rows' is assigned a value but never used  "
            "@typescript-eslint/no-unused-vars\n\n✖ 1 problem (1 error, 0 warnings)", exit_code=1, form="text")
    x.token_count()
    b.finish_codex(x, "tally-web", None)
    b.situation("time-command-npx-for-yarn", x, [PF], ["npx eslint src"],
                [fact(x, [PF], "'rows' is assigned a value but never used", "variant.runner")],
                classes=["variant.command"])
    b.situation("time-neg-command-reads-file", ("claude", "quay-ops"), [PF], ["pytest tests/unit/test_tax.py"],
                classes=["negative", "variant.command"])


def korean(b: CorpusBuilder) -> None:
    t = b.claude("ta-c-ko-pay", "tally-web", 60)
    t.user("결제화면에서 카드 등록 버튼이 안 돼요. 눌러도 아무 반응이 없어요.")
    t.say("결제화면에서 카드 등록이 실패하는 이유를 확인하겠습니다. 먼저 CardForm 테스트를 실행해 보겠습니다.")
    t.bash("npx vitest run src/checkout/CardForm.test.tsx", "Run the card form test",
           " ❯ src/checkout/CardForm.test.tsx (4 tests | 1 failed) 22ms\n   × CardForm > submits the card 9ms\n"
           "     → Error: [vitest] No \"tokenize\" export is defined on the \"@/lib/pg\" mock\n\n"
           " Test Files  1 failed (1)\n      Tests  1 failed | 3 passed (4)", exit_code=1)
    t.say("원인은 PG 모듈의 tokenize 함수 이름이 createToken으로 바뀌었는데 CardForm이 아직 예전 이름을 호출하고 있기 "
          "때문입니다. CardForm에서 createToken을 호출하도록 수정했습니다.")
    t.edit(t.cwd / "src/checkout/CardForm.tsx", "await pg.tokenize(card)", "await pg.createToken(card)")
    t.bash("npx vitest run src/checkout/CardForm.test.tsx", "Run the card form test",
           " ✓ src/checkout/CardForm.test.tsx (4 tests) 18ms\n\n Test Files  1 passed (1)\n      Tests  4 passed (4)")
    t.turn_duration()
    b.finish_claude(t, "tally-web")
    b.situation("time-ko-term-with-particle", t, [PF, DE], ["결제화면"],
                [fact(t, [PF, DE], "카드 등록이 실패하는 이유를", "cjk.ko")], classes=["cjk.ko"])
    b.situation("time-ko-resolution", t, [PF, TO, DE], ["CardForm.test.tsx"],
                [fact(t, [PF], "No \"tokenize\" export is defined", "failure"),
                 fact(t, [PF, DE], "CardForm에서 createToken을 호출하도록 수정했습니다", "resolution.ko")],
                classes=["cjk.ko"])
    x = b.codex("ta-x-ko-login", "tally-web", 61, cli_version="0.64.0")
    x.user("로그인페이지에서 소셜 로그인이 계속 오류가 나요.")
    x.say("로그인페이지의 소셜 로그인 오류는 콜백 URL이 스테이징 도메인으로 등록되지 않아서 발생합니다.")
    x.token_count()
    b.finish_codex(x, "tally-web", None)
    b.situation("time-ko-error-cue", x, [PF, DE], ["로그인페이지"],
                [fact(x, [PF, DE], "소셜 로그인 오류는 콜백 URL이", "cjk.ko")], classes=["cjk.ko"])
    b.situation("time-neg-ko-other-agent", ("claude", "tally-web"), [PF, DE], ["로그인페이지"],
                classes=["negative", "cjk.ko"])


def user_grant(b: CorpusBuilder) -> None:
    x = b.codex("ta-x-gh", "tally-web", 63, cli_version="0.64.0")
    x.user("Publish the package to the GitHub registry.")
    x.exec_command("npm publish --registry https://npm.pkg.github.com",
                   "npm notice Publishing to https://npm.pkg.github.com with tag latest and default access\n"
                   "npm error code E403\nnpm error 403 403 Forbidden - PUT https://npm.pkg.github.com/@tally%2fweb - "
                   "Permission permission_denied: The token provided does not match expected scopes.\n"
                   "npm error A complete log of this run can be found in: /home/dev/.npm/_logs/debug-0.log",
                   exit_code=1)
    x.say("The registry refuses the token because it lacks a scope. I cannot change token scopes myself.")
    x.say("The failing request is the PUT of the package tarball; the read works, so it is only the write scope.")
    x.say("Once the token can write packages the publish should go through with the same command.")
    x.user("The token now has write:packages, go.")
    x.exec_command("npm publish --registry https://npm.pkg.github.com",
                   "npm notice Publishing to https://npm.pkg.github.com with tag latest and default access\n"
                   "+ @tally/web@0.9.0")
    x.token_count()
    b.finish_codex(x, "tally-web", None)
    b.situation("time-user-grant-token-scope", x, [PF, TO], ["npm publish"],
                [fact(x, [PF], "does not match expected scopes", "failure.permission"),
                 fact(x, [PF], "The token now has write:packages", "user_supplies_missing")],
                classes=["resolution.user_grant"])
    t = b.claude("ta-c-role", "quay-ops", 64)
    t.user("Run the ledger backfill against staging.")
    t.bash("psql \"$STAGING_URL\" -f sql/backfill_ledger.sql", "Run the backfill",
           "psql:sql/backfill_ledger.sql:3: ERROR:  permission denied for table ledger_entries", exit_code=3)
    t.user("hold on")
    t.user("the backfill role has INSERT on ledger_entries now, run it once more.")
    t.bash("psql \"$STAGING_URL\" -f sql/backfill_ledger.sql", "Run the backfill", "INSERT 0 18233")
    t.turn_duration()
    b.finish_claude(t, "quay-ops")
    b.situation("time-user-grant-role", t, [PF, TO], ["backfill_ledger.sql"],
                [fact(t, [PF], "permission denied for table ledger_entries", "failure.permission"),
                 fact(t, [PF], "the backfill role has INSERT on ledger_entries now", "user_supplies_missing")],
                classes=["resolution.user_grant"])


def tight_budget(b: CorpusBuilder) -> None:
    t = b.claude("ta-c-budget", "quay-ops", 65)
    t.user("Webhook signature checks fail for Adyen since the key rotation. Fix it; from now on read the HMAC key "
           "from the secrets manager instead of the env file.")
    t.bash("python -m pytest tests/test_webhooks.py -q", "Run webhook tests",
           "FF.\nE   webhooks.InvalidSignature: HMAC mismatch for merchant quay-eu\n"
           "E   webhooks.InvalidSignature: HMAC mismatch for merchant quay-us\n2 failed, 1 passed in 0.11s",
           exit_code=1)
    t.say("The webhook verifier still reads the old HMAC key from .env, so every signature after the rotation "
          "mismatches.")
    t.edit(t.cwd / "tools/webhooks.py", "key = os.environ[\"ADYEN_HMAC_KEY\"]",
           "key = secrets.get(\"adyen/hmac-key\")")
    t.bash("python -m pytest tests/test_webhooks.py -q", "Run webhook tests", "...\n3 passed in 0.09s")
    t.bash("python -m pytest tests -q -k webhook", "Run every webhook test", "......\n6 passed in 0.31s")
    t.turn_duration()
    b.finish_claude(t, "quay-ops")
    b.situation("time-budget-every-type", t, [PF, TO, FH, DE], ["webhook"],
                [fact(t, [PF], "HMAC mismatch for merchant", "failure"),
                 fact(t, [FH], "secrets.get(\"adyen/hmac-key\")", "file_edit.substance"),
                 fact(t, [DE], "read the HMAC key from the secrets manager", "decision.user")],
                classes=["budget.types"], max_items=4, max_total_chars=1500)


PLANTERS: Final[tuple[Callable[[CorpusBuilder], None], ...]] = (
    superseded_decision, regression, flood, needles, term_variants, command_variants, korean, user_grant,
    tight_budget,
)
