#!/usr/bin/env python3
"""The evaluation corpus's answers, normalised, as one JSON document: the golden file of the cost work.

  tools/corpus_answers.py [--seed N ...] [--formats DIR] --out FILE

Builds the evaluation corpus once per seed (default 11, 12 and 13, the recall gate's), optionally the
real-obelisk-formats set at DIR, answers every situation in-process with ``service.answer`` exactly as the
evaluation runner asks it (same config, limits and request), and writes each answer after :func:`normalise`.

It uses only what the provider had before issue 13 (``build_corpus``, the evaluation runner's request and
config, ``digest.ensure_key``, ``service.answer``), so the same script run by the "before" install's python
(a worktree of evidence2 fbee4e2, main cf1f75b plus the evidence work and no issue-13 commit:
``git worktree add ../wt-before fbee4e2``, its own ``.venv``, then ``../wt-before/.venv/bin/python
tools/corpus_answers.py --formats ../shared/real-obelisk-formats --label "evidence2 fbee4e2 ..." --out ...``)
produced ``tests/golden/corpus_answers.json``, and ``tests/integration/test_corpus_answers.py`` recomputes it with this
tree and compares exactly.

Normalised away, and only these, because they vary legitimately between two runs of the same code:

* ``result.index_revision`` and ``receipt.index_revision_digest``: derived from the database file's identity
  (inode, size, mtime of the private copy) and, since issue 13, computed another way (marker rows and
  ``max(rowid)`` seeks instead of aggregates over every ``index_state`` row);
* ``receipt.scope_digest``, ``query_digest``, ``result_digest``: HMACs under the per-install key, which
  ``ensure_key`` draws at random for every temporary config (``result_count`` and the counts are kept);
* ``provider_meta.elapsed_ms`` (a timing), ``provider_meta.since`` (today minus the recency window) and
  ``provider_meta.freshness_detail.last_build_age_ms`` (now minus the build time);
* ``provider_meta.templates_run``: ``X.fts_first.vN`` is written ``X.vN``. Which of a template's two plans
  answered is chosen by time (the FTS-first plan gets a 25 ms budget, then the full plan runs), so it varies
  with the machine's load; the items must not, and they are compared. Likewise ``X.scope_rows.vN`` (the
  small-scope plan, used when the scope is small and its answer was not cut) and ``X.term_probe.vN`` (the term
  probe, which answers ``X`` with no row when no message of the scope matches the terms, within a budget of a
  few milliseconds) are written as the template they answer for, ``X`` at its version in ``sql_templates/``
  (:func:`template_of`: a probe's own version may differ from its template's);
* ``provider_meta.freshness_detail``: only ``stale``, ``unindexed``, ``missing_on_disk`` and the
  ``unknown_reason_*`` flags are kept (the verdict, ``freshness``, is always kept). The other counters count
  different things since issue 13, by design: ``units_in_scope`` leaves out indexed, unchanged files that no
  session in scope owns (a Codex child thread whose head names the root: one such file in the corpus's codex
  harbor-api scope and in real-obelisk-formats' codex lumen-web scope, see ``index/freshness/scoped.py``),
  ``up_to_date`` and ``lines_counted`` follow it, ``unattributed_files`` and the rest are counted over the
  walked directories.

Everything else (outcome, error, every item's session, message, type, time, revision and snippet, truncation,
omitted count, freshness verdict, templates run and skipped, degradations, redactions, char totals) must
be identical.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # tools.devkit, when run as a script
    sys.path.insert(0, str(REPO))

#: The freshness counters both revisions define the same way (see the module docstring).
KEPT_FRESHNESS_COUNTERS = ("stale", "unindexed", "missing_on_disk")
DEFAULT_SEEDS = (11, 12, 13)


#: The plan steps that may answer for a template, chosen by time (module docstring).
_PLAN_STEPS = (".fts_first.", ".scope_rows.", ".term_probe.")


def template_of(name: str) -> str:
    """The template a plan step answered for: ``X.term_probe.v1`` is ``X.v2`` when ``sql_templates`` holds
    ``X.v2.sql`` (its latest version), else ``X.v1``; a template's own name is itself."""
    for step in _PLAN_STEPS:
        if step in name:
            base = name.split(step, 1)[0]
            own = [p.stem.rsplit(".v", 1) for p in (REPO / "sql_templates").glob(f"{base}.v*.sql")]
            versions = sorted(int(v) for b, v in own if b == base and v.isdigit())
            return f"{base}.v{versions[-1]}" if versions else name.replace(step, ".")
    return name


def normalise(envelope: Mapping[str, Any]) -> dict[str, Any]:
    """``envelope`` without the fields that vary between two runs of the same code (module docstring)."""
    out: dict[str, Any] = json.loads(json.dumps(envelope))
    result = out.get("result")
    if isinstance(result, dict):
        result.pop("index_revision", None)
    receipt = out.get("receipt")
    if isinstance(receipt, dict):
        for key in ("index_revision_digest", "scope_digest", "query_digest", "result_digest"):
            receipt.pop(key, None)
    meta = out.get("provider_meta")
    if isinstance(meta, dict):
        meta.pop("elapsed_ms", None)
        meta.pop("since", None)
        if isinstance(meta.get("templates_run"), list):
            meta["templates_run"] = [template_of(str(t)) for t in meta["templates_run"]]
        detail = meta.get("freshness_detail")
        if isinstance(detail, dict):
            meta["freshness_detail"] = {k: v for k, v in detail.items()
                                        if k in KEPT_FRESHNESS_COUNTERS or k.startswith("unknown_reason_")}
    return out


def answers_of(evalset: Any) -> dict[str, dict[str, Any]]:
    """Every situation of ``evalset`` answered as the evaluation runner asks it, normalised, by situation id."""
    from obelisk_session_evidence.digest import ensure_key
    from obelisk_session_evidence.service import answer

    from tools.devkit.evaluation import runner

    work = Path(tempfile.mkdtemp(prefix="obelisk-golden-"))
    try:
        db = work / "index.sqlite"
        shutil.copyfile(evalset.db_path, db)
        config = work / "config.json"
        config.write_text(json.dumps(runner._config(evalset.scopes)), encoding="utf-8")
        ensure_key(config)
        out: dict[str, dict[str, Any]] = {}
        for sit in evalset.situations:
            raw = runner._request(sit, evalset.scope(sit.source, sit.repository), runner.Limits())
            out[sit.id] = normalise(answer(raw, db_path=db, config_path=config).envelope)
        return out
    finally:
        shutil.rmtree(work, ignore_errors=True)


def corpus_answers(seed: int) -> dict[str, dict[str, Any]]:
    from tools.devkit.corpus import build_corpus

    with tempfile.TemporaryDirectory(prefix="obelisk-golden-corpus-") as tmp:
        return answers_of(build_corpus(Path(tmp) / f"corpus-{seed}", seed=seed).evalset)


def formats_answers(data: Path) -> dict[str, dict[str, Any]]:
    from tools.devkit.evaluation.formats import formats_evalset

    return answers_of(formats_evalset(data))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    parser.add_argument("--seed", type=int, action="append", dest="seeds", metavar="N")
    parser.add_argument("--formats", type=Path, default=None, metavar="DIR",
                        help="also the real-obelisk-formats set (shared/real-obelisk-formats)")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--label", default=None, help="what produced the answers (default: the install's folder)")
    args = parser.parse_args(argv)
    import obelisk_session_evidence

    where = Path(obelisk_session_evidence.__file__).parent.parent.name
    document: dict[str, Any] = {"produced_by": args.label or where,
                                "normalised": "see tools/corpus_answers.py", "sets": {}}
    for seed in args.seeds or DEFAULT_SEEDS:
        document["sets"][f"corpus-seed-{seed}"] = corpus_answers(seed)
    if args.formats is not None:
        document["sets"]["real-obelisk-formats"] = formats_answers(args.formats)
    args.out.write_text(json.dumps(document, indent=1, sort_keys=True, ensure_ascii=False) + "\n",
                        encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
