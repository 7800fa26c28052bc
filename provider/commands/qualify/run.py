"""The qualification run: build the corpus, qualify each scope (cases under the three arms, metrics,
criteria), write the reports; and the ``qualify`` command."""

from __future__ import annotations

import contextlib
import json
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from ..._version import PROVIDER_VERSION
from ...service import WarmState
from .arms import (
    NATIVE_NEIGHBOURS,
    NATIVE_TOP,
    CaseOutcome,
    native_search,
    open_native,
    run_freshness,
    run_provider,
    subprocess_runs,
)
from .cases import (
    LIMITS,
    cross_scope_cases,
    freshness_cases,
    negative_cases,
    positive_cases,
    unknown_option_cases,
)
from .corpus import Corpus, build_corpus, cell_sessions, now_iso, repo_roots
from .criteria import stage0_criteria
from .metrics import case_row, cell_summary, score_outcomes
from .report import REPORT_FORMAT, render_summary_markdown, report_digest, write_reports
from .scopes import QualifyScope, default_scopes


def qualify_scope(corpus: Corpus, scope: QualifyScope, *, subprocess_cases: int) -> dict[str, Any]:
    manifest = corpus.base.manifest
    positives = positive_cases(corpus, scope)
    negatives = negative_cases(corpus, scope)
    mine = {i: cell_sessions(corpus, scope, cell) for i, cell in enumerate(scope.cells)}

    outcomes: list[CaseOutcome] = []
    warm = WarmState()  # kept across the scope's questions, as a serve process keeps it
    native_conn = open_native(corpus.base.db_path)
    try:
        for case in [*positives, *negatives]:
            outcome = run_provider(case, corpus.base, scope, warm)
            outcome.native = native_search(native_conn, case.terms, repo_roots(manifest, scope.cells[case.cell].repo))
            outcomes.append(outcome)
    finally:
        native_conn.close()
    outcomes += [run_provider(c, corpus.base, scope, warm) for c in [*cross_scope_cases(scope),
                                                                *unknown_option_cases(scope)]]
    outcomes += run_freshness(corpus, scope, freshness_cases(positives, scope), warm)

    metrics = score_outcomes(outcomes, mine)
    subprocess_report = subprocess_runs(outcomes, corpus, scope, subprocess_cases)
    criteria = stage0_criteria(metrics, subprocess_report)
    passed = all(c["status"] == "pass" for c in criteria if c["stage"] == 0)
    by_cell = {f"{'+'.join(cell.agents)}@{cell.repo}": cell_summary(
        score_outcomes([o for o in outcomes if o.case.cell == i], mine)) for i, cell in enumerate(scope.cells)}
    document: dict[str, Any] = {
        "format": REPORT_FORMAT,
        "kind": "self_test",  # generated corpus: enable --stage 2 needs --accept-synthetic-qualification
        "passed": passed,
        "generated_at": now_iso(),
        "scope": scope.public(),
        "sources": list(scope.sources),
        "provider_version": PROVIDER_VERSION,
        "corpus": {
            "generator": "obelisk_session_evidence.fixtures.builder.build_fixture",
            "seed": manifest["seed"], "generation": manifest["generation"],
            "cells": [{"fixture_agents": list(c.agents), "fixture_repository": c.repo,
                       "scope_sessions": len(mine[i])} for i, c in enumerate(scope.cells)],
            "sessions": manifest["counts"]["sessions"], "messages": manifest["counts"]["messages"],
            "cases": {kind: sum(1 for o in outcomes if o.case.kind == kind)
                      for kind in ("dead_end", "same_route", "negative", "cross_scope", "unknown_option",
                                   "freshness")},
            "dead_end_facts": len({o.case.target.id for o in outcomes
                                   if o.case.kind == "dead_end" and o.case.target}),
            "variants": ["base", "stale: a transcript line appended after the build",
                         "incomplete: an index_state row deleted"],
            "limits": dict(LIMITS),
        },
        "arms": {
            "current_context": "only the current LoopX context: no history is read, nothing is added",
            "provider": "the typed request through provider.service.answer in-process (a few through "
                        "`python -m obelisk_session_evidence query` subprocesses, which must agree)",
            "native_ceiling": f"Obelisk-style search: top {NATIVE_TOP} whole messages by bm25 for the raw terms "
                              f"(OR of quoted phrases) with {NATIVE_NEIGHBOURS} session neighbours each, filtered "
                              "by the repository's project paths only",
        },
        "metrics": metrics,
        "by_cell": by_cell,
        "subprocess": subprocess_report,
        "criteria": criteria,
        "cases": [case_row(o, mine[o.case.cell]) for o in outcomes],
    }
    document["digest"] = report_digest(document)
    return document


def run_qualification(out_dir: Path, *, scopes: Sequence[QualifyScope] | None = None, seed: int = 7,
                      extra_sessions: int = 24, subprocess_cases: int = 3,
                      work_dir: Path | None = None) -> dict[str, Any]:
    """Build the corpus, qualify every scope, write one JSON + Markdown report per scope and a summary."""
    chosen = list(scopes) if scopes else default_scopes()
    owned = work_dir is None
    work = Path(tempfile.mkdtemp(prefix="ose-qualify-")) if work_dir is None else work_dir
    try:
        started = time.perf_counter()
        corpus = build_corpus(work, chosen, seed=seed, extra_sessions=extra_sessions)
        build_s = time.perf_counter() - started
        reports = [qualify_scope(corpus, scope, subprocess_cases=subprocess_cases) for scope in chosen]
    finally:
        if owned:
            shutil.rmtree(work, ignore_errors=True)
    summary = write_reports(out_dir, reports, build_s)
    return {"summary": summary, "reports": reports}


def qualify_command(*, out_dir: Path, fmt: str, out: TextIO, scope: QualifyScope | None = None,
                    seed: int = 7, extra_sessions: int = 24, subprocess_cases: int = 3,
                    work_dir: Path | None = None) -> int:
    """``qualify``: 0 when every scope passed, 1 when one did not."""
    result = run_qualification(out_dir, scopes=[scope] if scope else None, seed=seed,
                               extra_sessions=extra_sessions, subprocess_cases=subprocess_cases,
                               work_dir=work_dir)
    summary = result["summary"]
    if fmt == "md":
        out.write(render_summary_markdown(summary, result["reports"]))
        out.write(f"\nreports written to {out_dir}\n")
    else:
        out.write(json.dumps({**summary, "out_dir": str(out_dir)}, ensure_ascii=False) + "\n")
    with contextlib.suppress(OSError, ValueError):
        out.flush()
    return 0 if summary["passed"] else 1
