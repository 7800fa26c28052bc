"""``tools/evaluate``: recall, false items, answer size, latency and scope violations, with a verdict.

  tools/evaluate [--corpus] [--formats] [--json FILE] [--min-recall 0.95] [--max-false-items 0]
                 [--seed N ...] [--shared DIR] [--work-dir DIR] [--missed]

``--corpus`` builds the evaluation corpus with the fixture builder (into ``--work-dir`` or a temporary
directory) and evaluates it, once per ``--seed`` (default 11, the reference wording; any other seed rewords
the cue sentences of resolutions and decisions, a check that retrieval was not tuned to one wording);
``--formats`` evaluates ``real-obelisk-formats`` (from ``--shared``, default ``$OBELISK_SHARED_DIR`` or
``../shared`` next to the checkout), extracted under /tmp/obelisk-formats-home.
With neither flag both run. Prints one Markdown table per set; ``--json FILE`` writes the figures. Exit 0
when every set reaches the recall threshold with at most the allowed false items and no scope violation,
1 otherwise, 2 on a usage error. ``--missed`` lists the situations with a missed fact or a false item. Output
holds figures and situation ids only, never snippets or terms.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .report import Thresholds, figures, passed, table
from .runner import run_evalset
from .situation import EvalSet


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="evaluate", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--corpus", action="store_true", help="evaluate the built evaluation corpus")
    parser.add_argument("--formats", action="store_true", help="evaluate shared/real-obelisk-formats")
    parser.add_argument("--heldout", action="store_true",
                        help="evaluate the held-out set (sessions written after tuning, never tuned to)")
    parser.add_argument("--transcripts", action="store_true",
                        help="evaluate the real transcripts of tests/data/real_transcripts (wrap-ups, tool names)")
    parser.add_argument("--json", type=Path, metavar="FILE", help="write the figures as JSON")
    parser.add_argument("--min-recall", type=float, default=0.95)
    parser.add_argument("--max-false-items", type=int, default=0)
    parser.add_argument("--seed", type=int, action="append", dest="seeds", metavar="N",
                        help="corpus seed; repeat for several corpora (default 11, the reference wording; other "
                             "seeds reword the cue sentences)")
    parser.add_argument("--shared", type=Path, help="the shared/ directory holding real-obelisk-formats")
    parser.add_argument("--work-dir", type=Path, help="build the corpus here (kept) instead of a temp dir")
    parser.add_argument("--missed", action="store_true", help="also list the ids of missed and false situations")
    return parser


def default_shared(repo_root: Path) -> Path:
    override = os.environ.get("OBELISK_SHARED_DIR")
    return Path(override) if override else repo_root.parent / "shared"


def _sets(args: argparse.Namespace, shared: Path, work: Path) -> list[EvalSet]:
    both = not (args.corpus or args.formats or args.heldout or args.transcripts)
    sets: list[EvalSet] = []
    if args.corpus or both:
        from ..corpus import build_corpus
        from ..corpus.model import REFERENCE_SEED

        for seed in args.seeds or [REFERENCE_SEED]:
            evalset = build_corpus(work / f"corpus-{seed}", seed=seed).evalset
            if seed != REFERENCE_SEED:
                evalset.name = f"{evalset.name} (seed {seed})"
            sets.append(evalset)
    if args.heldout:
        from ..corpus import build_heldout

        sets.append(build_heldout(work / "heldout").evalset)
    if args.transcripts:
        from .transcripts import transcripts_evalset

        sets.append(transcripts_evalset(work / "real-transcripts"))
    if args.formats or both:
        from .formats import formats_evalset

        sets.append(formats_evalset(shared / "real-obelisk-formats"))
    return sets


def main(argv: Sequence[str] | None = None, *, repo_root: Path | None = None) -> int:
    args = _parser().parse_args(argv)
    shared = args.shared or default_shared(repo_root or Path.cwd())
    wants_formats = args.formats or not (args.corpus or args.heldout or args.transcripts)
    if wants_formats and not (shared / "real-obelisk-formats" / "facts.json").is_file():
        print(f"evaluate: real-obelisk-formats not found under {shared}", file=sys.stderr)
        return 2
    thresholds = Thresholds(args.min_recall, args.max_false_items)
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="obelisk-evaluate-"))
    try:
        all_figures: list[dict[str, Any]] = []
        ok = True
        for evalset in _sets(args, shared, work):
            fig = figures(evalset.name, run_evalset(evalset))
            fig["passed"] = passed(fig, thresholds)
            ok = ok and fig["passed"]
            all_figures.append(fig)
            print(table(fig))
            if args.missed:
                print("\nmissed: " + ", ".join(sorted({m["situation"] for m in fig["missed"]})))
                print("false items in: " + ", ".join(fig["false_item_situations"]))
            print(f"\n{'PASS' if fig['passed'] else 'FAIL'} (recall >= {thresholds.min_recall}, false items <= "
                  f"{thresholds.max_false_items}, scope violations = 0)\n")
        if args.json:
            doc = {"thresholds": {"min_recall": thresholds.min_recall,
                                  "max_false_items": thresholds.max_false_items},
                   "passed": ok, "sets": all_figures}
            args.json.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        return 0 if ok else 1
    finally:
        if args.work_dir is None:
            shutil.rmtree(work, ignore_errors=True)
