"""The held-out set's time-aware situations (issue 32), written before any retrieval change for them and never
tuned to: a decision reversed by a later one, a test that fails again for another cause after its fix, one
failure repeated in twenty sessions beside one that failed differently, decisive blocks in the middle of long
outputs, another inflection or spelling of a term, another form of a command, a Korean bug report, the user
granting what a failure lacked, and a tight budget over several evidence types.

The subjects and wordings are not the corpus's (``corpus.time_aware``): a rewording of each class, in the
repositories ``quay-ops``, ``tally-web`` and ``atrium-docs``.
"""

# ruff: noqa: RUF001  (CJK punctuation and tool glyphs are written as the tools write them)

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from obelisk_session_evidence.fixtures.patches import update

from ..evaluation.situation import Fact
from .model import DE, FH, PF, TO, CorpusBuilder, fact


def _go_runs(package: str, names: list[str]) -> str:
    """``go test -v`` lines of passing tests (what surrounds the decisive block of a long output)."""
    out = []
    for i, name in enumerate(names):
        out.append(f"=== RUN   {name}")
        out.append(f"=== PAUSE {name}")
        out.append(f"=== CONT  {name}")
        out.append(f"--- PASS: {name} (0.{(i * 7) % 90 + 10:02d}s)")
    return "\n".join(out) + "\n"


_QUEUE_TESTS: Final = [f"TestPool{part}" for part in (
    "Acquire", "AcquireTimeout", "Release", "ReleaseTwice", "Resize", "ResizeDown", "Close", "CloseIdle", "Stats",
    "StatsAfterClose", "Borrow", "BorrowCancel", "Warmup", "WarmupPartial", "Evict", "EvictIdle", "Metrics",
    "MetricsLabels", "Backoff", "BackoffJitter", "Lease", "LeaseRenew", "LeaseExpire", "Priority", "PriorityStarve",
    "Fairness", "FairnessTwoQueues", "Shutdown", "ShutdownGrace", "HealthCheck", "HealthCheckFail", "Snapshot",
    "SnapshotRestore", "Reserve", "ReserveMany", "Unreserve", "Waiters", "WaitersCancel", "Limits", "LimitsZero",
    "Config", "ConfigDefaults", "Panic", "PanicRecover", "Trace", "TraceSampled")]


def go_data_race(b: CorpusBuilder) -> None:
    t = b.claude("ht-c-race", "quay-ops", 72)
    t.user("CI says the queue package has a data race. Find it.")
    race = ("==================\nWARNING: DATA RACE\nWrite at 0x00c0001b4010 by goroutine 23:\n"
            "  quay/internal/queue.(*Pool).release()\n"
            "      /home/runner/work/quay-ops/internal/queue/pool.go:88 +0x64\n"
            "  quay/internal/queue.(*Pool).Drain.func1()\n      /home/runner/work/quay-ops/internal/queue/pool.go:131 "
            "+0x4c\n\nPrevious read at 0x00c0001b4010 by goroutine 19:\n  quay/internal/queue.(*Pool).Len()\n"
            "      /home/runner/work/quay-ops/internal/queue/pool.go:41 +0x3a\n"
            "  quay/internal/queue.TestPoolDrain()\n      /home/runner/work/quay-ops/internal/queue/pool_test.go:212 "
            "+0x1f0\n\nGoroutine 23 (running) created at:\n  quay/internal/queue.(*Pool).Drain()\n"
            "      /home/runner/work/quay-ops/internal/queue/pool.go:129 +0x118\n==================\n")
    out = (_go_runs("queue", _QUEUE_TESTS[:24]) + "=== RUN   TestPoolDrain\n" + race
           + "    testing.go:1465: race detected during execution of test\n--- FAIL: TestPoolDrain (0.31s)\n"
           + _go_runs("queue", _QUEUE_TESTS[24:]) + "FAIL\nFAIL\tquay/internal/queue\t2.114s\nFAIL")
    t.bash("go test -race -v ./internal/queue/...", "Run queue tests with the race detector", out, exit_code=1)
    t.say("release() writes p.n without the mutex while Len() reads it under the lock. Taking the lock in release.")
    t.edit(t.cwd / "internal/queue/pool.go", "\tp.n--", "\tp.mu.Lock()\n\tp.n--\n\tp.mu.Unlock()")
    t.bash("go test -race ./internal/queue/...", "Run queue tests with the race detector",
           "ok  \tquay/internal/queue\t2.481s")
    t.turn_duration()
    b.finish_claude(t, "quay-ops")
    b.situation("held-time-needle-go-race", t, [PF], ["TestPoolDrain"],
                [fact(t, [PF], "quay/internal/queue.(*Pool).release()", "needle.go_race"),
                 fact(t, [PF], "WARNING: DATA RACE", "needle.go_race")],
                classes=["held.needle", "held.needle.go_race"])


def go_panic(b: CorpusBuilder) -> None:
    x = b.codex("ht-x-panic", "quay-ops", 74, cli_version="0.64.0")
    x.user("Run the ledger reconcile for yesterday and tell me what it does.")
    log = "".join(f"time=2026-10-1{i % 10}T02:{i % 60:02d}:11Z level=INFO msg=\"batch loaded\" batch={4100 + i} "
                  f"entries={120 + i * 3} source=ledger_entries\n" for i in range(38))
    dump = "".join(f"\ngoroutine {n} [chan receive]:\nquay/internal/ledger.(*Writer).loop(0xc000{n:03d}a000)\n"
                   f"\t/src/internal/ledger/writer.go:{60 + n} +0x{n:02x}c\ncreated by quay/internal/ledger.NewWriter "
                   f"in goroutine 1\n\t/src/internal/ledger/writer.go:44 +0x1b8\n" for n in range(7, 40))
    out = (log + "panic: runtime error: index out of range [3] with length 3\n\ngoroutine 1 [running]:\n"
           "quay/internal/ledger.(*Batch).Split(0xc0001a2000, 0x4)\n\t/src/internal/ledger/batch.go:57 +0x1d4\n"
           "quay/internal/ledger.Reconcile({0x7ffd2c1b, 0xa})\n\t/src/internal/ledger/reconcile.go:102 +0x2e5\n"
           "main.main()\n\t/src/cmd/reconcile/main.go:33 +0x9c\n" + dump + "exit status 2")
    x.shell("go run ./cmd/reconcile --day 2026-10-14", out, exit_code=1, form="text")
    x.say("It crashes in Batch.Split when a batch has fewer entries than the split factor.")
    x.token_count()
    b.finish_codex(x, "quay-ops", "Ledger reconcile crash")
    b.situation("held-time-needle-go-panic", x, [PF], ["cmd/reconcile"],
                [fact(x, [PF], "panic: runtime error: index out of range [3] with length 3", "needle.go_panic"),
                 fact(x, [PF], "batch.go:57", "needle.go_panic")],
                classes=["held.needle", "held.needle.go_panic"])


def java_caused_by(b: CorpusBuilder) -> None:
    t = b.claude("ht-c-gradle", "quay-ops", 76)
    t.user("The registry client tests fail on my machine. Can you see why?")
    frames = "".join(f"        at org.springframework.test.context.support.{cls}.{m}({cls}.java:{ln})\n"
                     for cls, m, ln in (("DefaultCacheAwareContextLoaderDelegate", "loadContext", 180),
                                        ("DefaultTestContext", "getApplicationContext", 130),
                                        ("DependencyInjectionTestExecutionListener", "injectDependencies", 141),
                                        ("AbstractTestContextBootstrapper", "buildTestContext", 96)))
    passed = "".join(f"\nRegistryClientTest > {name}() PASSED" for name in (
        "parsesDigest", "parsesTagList", "rejectsEmptyTag", "followsRedirect", "retriesOn502", "stopsAfterThreeRetries",
        "sendsBearerToken", "refreshesExpiredToken", "readsManifestV2", "readsManifestList", "rejectsSchemaV1"))
    out = ("> Task :client:compileJava UP-TO-DATE\n> Task :client:processResources UP-TO-DATE\n"
           "> Task :client:classes UP-TO-DATE\n> Task :client:compileTestJava\n> Task :client:test\n" + passed * 3
           + "\n\nRegistryClientTest > fetchesManifest() FAILED\n"
           "    java.lang.IllegalStateException: Failed to load ApplicationContext for [WebMergedContextConfiguration"
           "@5e4fa1da testClass = quay.client.RegistryClientTest]\n" + frames * 3
           + "    Caused by: org.springframework.beans.factory.BeanCreationException: Error creating bean with name "
           "'registryClient' defined in class path resource [quay/client/ClientConfig.class]: Failed to "
           "instantiate [quay.client.RegistryClient]\n" + frames
           + "    Caused by: org.springframework.beans.BeanInstantiationException: Failed to instantiate "
           "[quay.client.RegistryClient]: Factory method 'registryClient' threw exception\n" + frames
           + "    Caused by: java.net.UnknownHostException: registry.quay.internal: Name or service not known\n"
           "        at java.base/java.net.Inet6AddressImpl.lookupAllHostAddr(Native Method)\n"
           "        at java.base/java.net.InetAddress.getAllByName0(InetAddress.java:1534)\n" + passed
           + "\n\n40 tests completed, 1 failed\n\n> Task :client:test FAILED\n\nFAILURE: Build failed with an "
           "exception.\n\n* What went wrong:\nExecution failed for task ':client:test'.\n> There were failing tests. "
           "See the report at: file:///home/mara/quay-ops/client/build/reports/tests/test/index.html\n\n"
           "BUILD FAILED in 41s\n7 actionable tasks: 2 executed, 5 up-to-date")
    t.bash("./gradlew :client:test", "Run the client tests", out, exit_code=1)
    t.say("The client resolves registry.quay.internal when the Spring context starts, and that host only exists "
          "inside the VPN.")
    t.turn_duration()
    b.finish_claude(t, "quay-ops")
    b.situation("held-time-needle-java-caused-by", t, [PF], [":client:test"],
                [fact(t, [PF], "Caused by: java.net.UnknownHostException: registry.quay.internal", "needle.java")],
                classes=["held.needle", "held.needle.java_caused_by"])


def rust_first_error(b: CorpusBuilder) -> None:
    x = b.codex("ht-x-cargo", "quay-ops", 77, cli_version="0.61.0")
    x.user("Build the sync binary in release mode.")
    compiling = "".join(f"   Compiling {crate} v{ver}\n" for crate, ver in (
        ("proc-macro2", "1.0.86"), ("unicode-ident", "1.0.12"), ("libc", "0.2.158"), ("cfg-if", "1.0.0"),
        ("serde", "1.0.210"), ("quote", "1.0.37"), ("syn", "2.0.77"), ("tokio-macros", "2.4.0"), ("tokio", "1.40.0"),
        ("bytes", "1.7.1"), ("http", "1.1.0"), ("hyper", "1.4.1"), ("serde_json", "1.0.128"), ("reqwest", "0.12.7"),
        ("tracing", "0.1.40"), ("quay-proto", "0.3.0"), ("quay-sync", "0.7.2")) * 4)
    warnings = "".join(f"warning: unused import: `{name}`\n --> src/{f}.rs:{ln}:5\n  |\n{ln} | use {name};\n  |     "
                       f"{'^' * len(name)}\n  |\n  = note: `#[warn(unused_imports)]` on by default\n\n"
                       for name, f, ln in (("std::fmt::Write", "report", 3), ("tracing::debug", "client", 7),
                                           ("bytes::BufMut", "codec", 2)))
    first = ("error[E0382]: borrow of moved value: `manifest`\n  --> src/sync.rs:88:24\n   |\n"
             "84 |     let manifest = fetch_manifest(&client, &tag).await?;\n"
             "   |         -------- move occurs because `manifest` has type `Manifest`, which does not implement "
             "the `Copy` trait\n85 |     let layers = plan_layers(manifest);\n"
             "   |                              -------- value moved here\n...\n"
             "88 |     tracing::info!(digest = %manifest.digest, \"synced\");\n"
             "   |                        ^^^^^^^^^^^^^^^ value borrowed here after move\n\n")
    later = "".join(f"error[E0599]: no method named `{m}` found for struct `Layer` in the current scope\n"
                    f"   --> src/plan.rs:{ln}:18\n    |\n{ln:>3} |         layer.{m}()\n    |               "
                    f"{'^' * len(m)} method not found in `Layer`\n\n"
                    for m, ln in (("size_hint", 41), ("digest_ref", 57)))
    out = (compiling + warnings + first + later + "Some errors have detailed explanations: E0382, E0599.\n"
           "For more information about an error, try `rustc --explain E0382`.\n"
           "warning: `quay-sync` (bin \"quay-sync\") generated 3 warnings\n"
           "error: could not compile `quay-sync` (bin \"quay-sync\") due to 3 previous errors; 3 warnings emitted")
    x.shell("cargo build --release -p quay-sync", out, exit_code=101, form="text")
    x.say("Three compile errors; the first is a use after move of the manifest in sync.rs.")
    x.token_count()
    b.finish_codex(x, "quay-ops", None)
    b.situation("held-time-needle-rust-first-error", x, [PF], ["cargo build --release"],
                [fact(x, [PF], "error[E0382]: borrow of moved value: `manifest`", "needle.rust"),
                 fact(x, [PF], "src/sync.rs:88:24", "needle.rust")],
                classes=["held.needle", "held.needle.rust_first_error"])


def psql_deadlock(b: CorpusBuilder) -> None:
    x = b.codex("ht-x-deadlock", "quay-ops", 78, cli_version="0.64.0")
    x.user("Apply the partitioning migration on staging.")
    before = "".join(f"ALTER TABLE\nCREATE INDEX\npsql:migrations/0042_partition_ledger.sql:{40 + 3 * i}: NOTICE:  "
                     f"relation \"ledger_entries_2026_{i % 12 + 1:02d}\" already exists, skipping\n" for i in range(46))
    after = "".join(f"psql:migrations/0042_partition_ledger.sql:{230 + i}: ERROR:  current transaction is aborted, "
                    "commands ignored until end of transaction block\n" for i in range(14))
    out = (before + "psql:migrations/0042_partition_ledger.sql:212: ERROR:  deadlock detected\n"
           "DETAIL:  Process 4121 waits for AccessExclusiveLock on relation 16522 of database 16384; blocked by "
           "process 4090.\nProcess 4090 waits for RowExclusiveLock on relation 16511 of database 16384; blocked by "
           "process 4121.\nHINT:  See server log for query details.\n" + after + "ROLLBACK")
    x.exec_command("psql \"$STAGING_URL\" -f migrations/0042_partition_ledger.sql", out, exit_code=3)
    x.say("The migration deadlocked against the ledger writer; it needs the writer paused.")
    x.token_count()
    b.finish_codex(x, "quay-ops", None)
    b.situation("held-time-needle-sql-deadlock", x, [PF], ["0042_partition_ledger.sql"],
                [fact(x, [PF], "ERROR:  deadlock detected", "needle.sql")],
                classes=["held.needle", "held.needle.sql_state"])


def http_retry_after(b: CorpusBuilder) -> None:
    t = b.claude("ht-c-429", "quay-ops", 79)
    t.user("The mirror sync script stopped half way. What happened?")
    lines = "".join(f"[sync] GET /v2/quay/{repo}/tags/list -> 200 ({n} tags)\n[sync] copied {repo}:{n}.{n % 7}.0 "
                    f"sha256:{(n * 2654435761) % 16**12:012x}\n"
                    for n, repo in enumerate(["api", "worker", "billing", "ledger", "gateway", "auth", "search",
                                              "notify", "export", "import", "reports", "admin"] * 5, start=3))
    block = ("[sync] GET /v2/quay/ledger-archive/tags/list\n< HTTP/2 429 \n< content-type: application/json\n"
             "< retry-after: 117\n< x-ratelimit-limit: 600\n< x-ratelimit-remaining: 0\n"
             "{\"errors\":[{\"code\":\"TOOMANYREQUESTS\",\"message\":\"pull rate limit exceeded\"}]}\n")
    tail = "".join(f"[sync] skipped {repo}: upstream unavailable\n" for repo in
                   ["ledger-archive", "pricing", "geo", "kyc", "tax", "fx", "docs", "cdn"] * 3)
    t.bash("./scripts/mirror_sync.sh --all", "Sync the registry mirror", lines + block + tail
           + "sync finished with 24 skipped repositories", exit_code=1)
    t.say("The upstream registry throttled us half way through.")
    t.turn_duration()
    b.finish_claude(t, "quay-ops")
    b.situation("held-time-needle-http-429", t, [PF], ["mirror_sync.sh"],
                [fact(t, [PF], "< retry-after: 117", "needle.http")],
                classes=["held.needle", "held.needle.http_retry_after"])


def superseded_decision(b: CorpusBuilder) -> None:
    first = b.claude("ht-c-pdf-1", "tally-web", 70)
    first.user("For the receipts export, use Puppeteer inside the API process to render the PDFs. It is the quickest "
               "path and we already have Chromium in the image.")
    first.say("OK, receipts will be rendered by Puppeteer inside the API process; I'll wire it into the export "
              "handler.")
    first.write(first.cwd / "src/server/receipts/render.ts",
                "import puppeteer from 'puppeteer';\nexport async function renderReceipt(html: string) {}\n")
    first.turn_duration()
    b.finish_claude(first, "tally-web")
    second = b.claude("ht-c-pdf-2", "tally-web", 86)
    second.user("Puppeteer in the API takes 600 MB per render and the pods get OOM-killed. Take Puppeteer out of the "
                "API: receipts are rendered with pdf-lib from now on, no headless browser.")
    second.edit(second.cwd / "src/server/receipts/render.ts", "import puppeteer from 'puppeteer';",
                "import { PDFDocument } from 'pdf-lib';")
    second.say("Receipts render with pdf-lib now; the API image no longer ships Chromium.")
    second.turn_duration()
    b.finish_claude(second, "tally-web")
    b.situation("held-time-superseded-decision", second, [DE], ["Puppeteer"],
                [Fact(second.session_id, (DE,), "receipts are rendered with pdf-lib from now on", "decision.current",
                      without_phrases=("superseded_by",), leads=True),
                 Fact(first.session_id, (DE,), "use Puppeteer inside the API process",
                      "decision.superseded", with_phrases=("superseded_by",))],
                classes=["held.superseded_decision"])


def regression(b: CorpusBuilder) -> None:
    first = b.codex("ht-x-invoice-1", "quay-ops", 71, cli_version="0.63.0")
    first.user("go test fails in billing, fix it.")
    first.shell(["go", "test", "./internal/billing/..."],
                "--- FAIL: TestInvoiceTotal (0.00s)\n    invoice_test.go:42: Total() = 1099, want 1100\nFAIL\n"
                "FAIL\tquay/internal/billing\t0.014s\nFAIL", exit_code=1, form="text")
    first.say("Each line item is rounded to cents before summing, so the half cents are lost. Rounding once on the "
              "sum.")
    first.patch([update("internal/billing/invoice.go", ["\t\ttotal += roundCents(line.Amount())"],
                        ["\t\ttotal += line.Amount()", "\t}", "\treturn roundCents(total)"],
                        context="func (i *Invoice) Total() int64 {")], via="freeform")
    first.shell(["go", "test", "./internal/billing/..."], "ok  \tquay/internal/billing\t0.012s", form="text")
    first.say("billing tests pass.")
    first.token_count()
    b.finish_codex(first, "quay-ops", "Invoice total rounding")
    second = b.codex("ht-x-invoice-2", "quay-ops", 88, cli_version="0.64.0")
    second.user("billing tests are red again")
    second.shell(["go", "test", "./internal/billing/..."],
                 "--- FAIL: TestInvoiceTotal (0.00s)\n    invoice_test.go:57: Currency() = \"\", want \"EUR\"\nFAIL\n"
                 "FAIL\tquay/internal/billing\t0.016s\nFAIL", exit_code=1, form="text")
    second.say("Another cause this time: NewInvoice no longer copies Currency from the customer since the "
               "constructor refactor.")
    second.patch([update("internal/billing/invoice.go", ["\treturn &Invoice{Lines: lines}"],
                         ["\treturn &Invoice{Lines: lines, Currency: c.Currency}"],
                         context="func NewInvoice(c Customer, lines []Line) *Invoice {")], via="freeform")
    second.shell(["go", "test", "./internal/billing/..."], "ok  \tquay/internal/billing\t0.013s", form="text")
    second.token_count()
    b.finish_codex(second, "quay-ops", None)
    b.situation("held-time-regression", second, [PF], ["TestInvoiceTotal"],
                [Fact(second.session_id, (PF,), 'Currency() = "", want "EUR"', "failure.regression",
                      with_phrases=("regression",)),
                 fact(second, [PF], "Lines: lines, Currency: c.Currency", "resolution.edit"),
                 fact(first, [PF], "Total() = 1099, want 1100", "failure"),
                 fact(first, [PF], "return roundCents(total)", "resolution.edit")],
                classes=["held.regression"])


_E2E_SUITES: Final = ("checkout", "refunds", "payouts", "invoices", "disputes", "webhooks")


def flood(b: CorpusBuilder) -> None:
    repeated = []
    odd = None
    for n in range(21):
        day = 70 + n
        x = b.codex(f"ht-x-e2e-{n}", "quay-ops", day, cli_version="0.64.0")
        x.user("Nightly: run the e2e suite and report.")
        runs = "".join(f"=== RUN   TestE2E/{s}\n" for s in _E2E_SUITES)
        if n == 3:
            out = (runs + f"    e2e_test.go:88: login: Post \"http://auth.quay.test/token\": dial tcp: lookup "
                   "auth.quay.test on 10.96.0.10:53: no such host\n--- FAIL: TestE2E (0.41s)\nFAIL\n"
                   f"FAIL\tquay/e2e\t0.{52 + n}s\nFAIL\nmake: *** [Makefile:2: e2e] Error 1")
        else:
            out = (runs + f"    e2e_test.go:41: setup: failed to connect to `host=127.0.0.1 user=quay "
                   f"database=quay_e2e`: dial error (dial tcp 127.0.0.1:5433: connect: connection refused)\n"
                   f"--- FAIL: TestE2E ({n % 5}.{17 + n:02d}s)\nFAIL\nFAIL\tquay/e2e\t{n % 5 + 1}.{30 + n}s\nFAIL\n"
                   "make: *** [Makefile:2: e2e] Error 1")
        x.shell("make e2e", out, exit_code=2, form="text")
        x.say("The e2e run failed, see the output above.")
        x.token_count()
        b.finish_codex(x, "quay-ops", None)
        if n == 3:
            odd = x
        else:
            repeated.append(x)
    assert odd is not None
    newest = repeated[-1]
    b.situation("held-time-flood", newest, [PF], ["make e2e"],
                [fact(odd, [PF], "lookup auth.quay.test on 10.96.0.10:53: no such host", "failure.distinct"),
                 Fact(newest.session_id, (PF,), "dial tcp 127.0.0.1:5433: connect: connection refused",
                      "failure.flood", with_phrases=("20 sessions",),
                      or_sessions=tuple(x.session_id for x in repeated[:-1]))],
                classes=["held.flood"])


def term_variants(b: CorpusBuilder) -> None:
    t = b.claude("ht-c-deploy", "tally-web", 73)
    t.user("Ship the checkout redesign to staging.")
    t.bash("./scripts/ship.sh staging", "Ship to staging",
           "building image tally-web:4f1c2e9 ... done\npushing ... done\nwaiting for rollout ...\n"
           "readiness probe failed: Get \"http://10.4.2.17:8080/readyz\": context deadline exceeded\n"
           "rollout aborted after 300s", exit_code=1)
    t.say("The staging deployment failed: the new pods never became ready because /readyz waits on the payments "
          "sandbox, which times out from staging.")
    t.say("The payments sandbox is rate-limited to 10 requests per second per key, and our readiness check polls it "
          "on every probe; that throttling is what broke the readiness check.")
    t.turn_duration()
    b.finish_claude(t, "tally-web")
    b.situation("held-time-variant-noun-for-verb", t, [PF], ["deploy"],
                [fact(t, [PF], "The staging deployment failed", "variant.noun")],
                classes=["held.variant.term"])
    b.situation("held-time-variant-hyphenated", t, [PF], ["rate limit"],
                [fact(t, [PF], "rate-limited to 10 requests per second", "variant.hyphen")],
                classes=["held.variant.term"])
    x = b.codex("ht-x-migrated", "quay-ops", 75, cli_version="0.64.0")
    x.user("Why are there duplicate ledger rows on staging?")
    x.say("The ledger tables were migrated twice by two deploy jobs running at once, which broke the unique index "
          "on (entry_id, period).")
    x.token_count()
    b.finish_codex(x, "quay-ops", None)
    b.situation("held-time-variant-participle", x, [PF], ["migrate"],
                [fact(x, [PF], "ledger tables were migrated twice", "variant.participle")],
                classes=["held.variant.term"])


def command_variants(b: CorpusBuilder) -> None:
    x = b.codex("ht-x-vitest", "tally-web", 76, cli_version="0.64.0")
    x.user("The summary test fails, look at it.")
    x.shell("npx vitest run src/checkout/summary.test.ts",
            "\n RUN  v2.1.4 /home/dev/tally-web\n\n ❯ src/checkout/summary.test.ts (5 tests | 1 failed) 19ms\n"
            "   × OrderSummary > shows the VAT line for EU cards 8ms\n"
            "     → Unable to find an element with the text: /VAT 19%/\n\n"
            " Test Files  1 failed (1)\n      Tests  1 failed | 4 passed (5)", exit_code=1)
    x.say("The VAT line is only rendered once the card country is known.")
    x.token_count()
    b.finish_codex(x, "tally-web", None)
    b.situation("held-time-command-package-script", x, [PF], ["pnpm test"],
                [fact(x, [PF], "Unable to find an element with the text: /VAT 19%/", "variant.command.script")],
                classes=["held.variant.command"])
    t = b.claude("ht-c-pytest", "quay-ops", 80)
    t.user("The token refresh test in the tools package fails.")
    t.bash("cd tools && python3 -m pytest -q -k refresh tests/test_tokens.py",
           "Run the token tests",
           "F.\n=================================== FAILURES ===================================\n"
           "____________________________ test_refresh_rotates _____________________________\n"
           "E   AssertionError: refresh token was reused: rt_5 == rt_5\n"
           "=========================== short test summary info ============================\n"
           "FAILED tests/test_tokens.py::test_refresh_rotates - AssertionError: refresh token was reused\n"
           "1 failed, 1 passed, 6 deselected in 0.21s", exit_code=1)
    t.turn_duration()
    b.finish_claude(t, "quay-ops")
    b.situation("held-time-command-python-m-reordered", t, [PF], ["pytest tests/test_tokens.py"],
                [fact(t, [PF], "refresh token was reused: rt_5 == rt_5", "variant.command.reordered")],
                classes=["held.variant.command"])


def korean(b: CorpusBuilder) -> None:
    t = b.claude("ht-c-ko", "tally-web", 81)
    t.user("정산페이지에서 내보내기 버튼을 누르면 오류가 나요. 확인 부탁드립니다.")
    t.bash("npx vitest run src/settlement/ExportButton.test.tsx", "Run the export button test",
           " ❯ src/settlement/ExportButton.test.tsx (3 tests | 1 failed) 31ms\n"
           "   × ExportButton > downloads a CSV 12ms\n     → TypeError: Cannot read properties of undefined "
           "(reading 'toISOString')\n\n Test Files  1 failed (1)\n      Tests  1 failed | 2 passed (3)", exit_code=1)
    t.say("정산페이지의 내보내기가 실패하는 원인은 기간 필터가 비어 있을 때 endDate가 undefined라서 "
          "toISOString 호출에서 예외가 나기 때문입니다. 기본값으로 오늘 날짜를 쓰도록 고쳤습니다.")
    t.edit(t.cwd / "src/settlement/ExportButton.tsx", "const end = range.endDate;",
           "const end = range.endDate ?? new Date();")
    t.bash("npx vitest run src/settlement/ExportButton.test.tsx", "Run the export button test",
           " ✓ src/settlement/ExportButton.test.tsx (3 tests) 27ms\n\n Test Files  1 passed (1)\n"
           "      Tests  3 passed (3)")
    t.turn_duration()
    b.finish_claude(t, "tally-web")
    b.situation("held-time-ko-term-with-particle", t, [PF, DE], ["정산페이지"],
                [fact(t, [PF, DE], "내보내기가 실패하는 원인은", "cjk.ko")], classes=["held.cjk.ko"])
    b.situation("held-time-ko-resolution", t, [PF, TO, DE], ["ExportButton.test.tsx"],
                [fact(t, [PF], "Cannot read properties of undefined (reading 'toISOString')", "failure"),
                 fact(t, [PF, DE], "기본값으로 오늘 날짜를 쓰도록 고쳤습니다", "resolution.ko")],
                classes=["held.cjk.ko"])


def user_grant(b: CorpusBuilder) -> None:
    x = b.codex("ht-x-ecr", "quay-ops", 82, cli_version="0.64.0")
    x.user("Create the ECR repository for the sync image with terraform.")
    x.exec_command("terraform apply -auto-approve -target=aws_ecr_repository.sync",
                   "aws_ecr_repository.sync: Creating...\n╷\n│ Error: creating ECR Repository (quay-sync): "
                   "operation error ECR: CreateRepository, https response error StatusCode: 400, RequestID: "
                   "5c1d0f3e-2b7a-4c1e-9d0a-7f3b2a1c9e44, api error AccessDeniedException: User: "
                   "arn:aws:iam::210987654321:user/ci-deployer is not authorized to perform: ecr:CreateRepository "
                   "on resource: arn:aws:ecr:eu-central-1:210987654321:repository/quay-sync\n│\n│   with "
                   "aws_ecr_repository.sync,\n│   on ecr.tf line 1, in resource \"aws_ecr_repository\" \"sync\":\n"
                   "│    1: resource \"aws_ecr_repository\" \"sync\" {\n│\n╵", exit_code=1)
    x.say("The ci-deployer user cannot create ECR repositories. That is an IAM change on your side, since the "
          "deployer must not grant itself permissions.")
    x.say("Until then I can prepare the repository policy document so it is ready once the permission exists.")
    x.user("which account is that, prod or staging?")
    x.say("Staging: 210987654321 is the staging account in providers.tf.")
    x.user("ci-deployer has ecr:CreateRepository on staging now through the quay-ecr-admin role, apply again.")
    x.exec_command("terraform apply -auto-approve -target=aws_ecr_repository.sync",
                   "aws_ecr_repository.sync: Creating...\naws_ecr_repository.sync: Creation complete after 1s "
                   "[id=quay-sync]\n\nApply complete! Resources: 1 added, 0 changed, 0 destroyed.")
    x.token_count()
    b.finish_codex(x, "quay-ops", None)
    b.situation("held-time-user-grant", x, [PF, TO], ["aws_ecr_repository.sync"],
                [fact(x, [PF], "is not authorized to perform: ecr:CreateRepository", "failure.permission"),
                 fact(x, [PF], "ci-deployer has ecr:CreateRepository on staging now", "user_supplies_missing")],
                classes=["held.resolution.user_grant"])


def tight_budget(b: CorpusBuilder) -> None:
    t = b.claude("ht-c-budget", "tally-web", 83)
    t.user("Coupon codes with lowercase letters are rejected at checkout. Fix it, and keep the codes case-insensitive "
           "from now on instead of upper-casing them in the form.")
    t.bash("npx vitest run src/checkout/coupon.test.ts", "Run coupon tests",
           " ❯ src/checkout/coupon.test.ts (4 tests | 2 failed) 14ms\n   × applyCoupon > accepts lowercase codes 4ms\n"
           "     → expected 'INVALID_CODE' to be 'APPLIED'\n   × applyCoupon > trims whitespace 3ms\n"
           "     → expected 'INVALID_CODE' to be 'APPLIED'\n\n Test Files  1 failed (1)\n"
           "      Tests  2 failed | 2 passed (4)", exit_code=1)
    t.say("applyCoupon compares the raw input against upper-case codes, so lowercase and padded input is rejected. "
          "Normalising the code in applyCoupon.")
    t.edit(t.cwd / "src/checkout/coupon.ts", "const code = input;", "const code = input.trim().toUpperCase();")
    t.bash("npx vitest run src/checkout/coupon.test.ts", "Run coupon tests",
           " ✓ src/checkout/coupon.test.ts (4 tests) 11ms\n\n Test Files  1 passed (1)\n      Tests  4 passed (4)")
    t.bash("npx vitest run src/checkout", "Run checkout tests",
           " ✓ src/checkout/coupon.test.ts (4 tests) 12ms\n ✓ src/checkout/summary.test.ts (5 tests) 21ms\n\n"
           " Test Files  2 passed (2)\n      Tests  9 passed (9)")
    t.turn_duration()
    b.finish_claude(t, "tally-web")
    b.situation("held-time-budget-every-type", t, [PF, TO, FH, DE], ["coupon"],
                [fact(t, [PF], "expected 'INVALID_CODE' to be 'APPLIED'", "failure"),
                 fact(t, [FH], "input.trim().toUpperCase()", "file_edit.substance"),
                 fact(t, [DE], "keep the codes case-insensitive", "decision.user")],
                classes=["held.budget.types"], max_items=4, max_total_chars=1400)


def negatives(b: CorpusBuilder) -> None:
    x = b.codex("ht-x-docs", "atrium-docs", 74, cli_version="0.64.0")
    x.user("Add the latest release notes and the testament page from the founders to the docs nav.")
    x.shell("cat mkdocs.yml", "site_name: Atrium\nnav:\n  - Home: index.md\n  - Release notes: latest.md\n",
            form="text")
    x.patch([update("mkdocs.yml", ["  - Release notes: latest.md"],
                    ["  - Release notes: latest.md", "  - Founders' testament: testament.md"])], via="freeform")
    x.shell("mkdocs build --strict", "INFO    -  Cleaning site directory\nERROR   -  Doc file 'index.md' contains a "
            "link to 'attestation.md' which is not found in the documentation files.\nAborted with 1 errors in "
            "strict mode!", exit_code=1, form="text")
    x.say("The build fails in strict mode: index.md links to attestation.md, which does not exist. The site "
          "redeploys on every push, so I fixed the link before pushing.")
    x.patch([update("docs/index.md", ["[attestation](attestation.md)"], ["[attestation](security.md)"])],
            via="freeform")
    x.token_count()
    b.finish_codex(x, "atrium-docs", None)
    b.situation("held-time-neg-variant-not-another-word", ("codex", "atrium-docs"), [PF, TO, FH, DE], ["tests"],
                classes=["negative", "held.variant.term"])
    b.situation("held-time-neg-variant-prefix-of-word", ("codex", "atrium-docs"), [PF, TO, DE], ["deployment"],
                classes=["negative", "held.variant.term"])
    b.situation("held-time-neg-command-other-runner", ("codex", "atrium-docs"), [PF, TO], ["npm test"],
                classes=["negative", "held.variant.command"])


PLANTERS: Final[tuple[Callable[[CorpusBuilder], None], ...]] = (
    go_data_race, go_panic, java_caused_by, rust_first_error, psql_deadlock, http_retry_after, superseded_decision,
    regression, flood, term_variants, command_variants, korean, user_grant, tight_budget, negatives,
)
