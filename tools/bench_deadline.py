#!/usr/bin/env python3
"""Benchmark the request deadline against huge tool cells (issue 30): overrun past the deadline and peak RSS.

Builds four hostile scopes, the first two the way Obelisk stores them (each string leaf of ``input_json`` cut to 10,000
characters plus ``...[truncated]``, so a Claude ``MultiEdit`` with many edits is one huge cell):

* ``3x20MB``  one Claude Code session with three ``MultiEdit`` calls of about 20 MB of ``input_json`` each;
* ``1x130MB``  one session with a single ``MultiEdit`` call of about 130 MB;
* ``1x130MB-output``  a failed ``Bash`` call whose output is 130 MB (another writer's database: Obelisk keeps
  10,000 characters of an output), its failure stated in its last line;
* ``3x130MB-output``  three such calls in one session (rows of one statement: the deadline must be checked
  between them).

Each is asked at the ceilings (all five evidence types, 16 terms of 200 characters that no cell holds, so
every cell is searched to its end; limits at the ceilings) under ``deadline_ms`` 2000 and 200. Every run is a
fresh child process of the interpreter under test (``--python``, default this one; the installed package it
imports is printed), which answers in process with ``service.answer`` started at a clock it reads itself, and
reports the answer time, the outcome and its own peak RSS (``VmHWM``: a fresh process's own, not inherited).
Printed per case: the outcome, answer time, overrun (answer time minus the deadline, when the answer is
``timeout``) and peak RSS; median and max over ``--runs``.

Usage: ``tools/bench_deadline.py [--python PY ...] [--case NAME ...] [--deadline MS ...] [--runs N] [--work DIR]
[--json FILE]`` (``--case`` and ``--deadline`` pick some of the cases and deadlines; default all).
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

#: Characters of one edit string (Obelisk keeps 10,000 of a leaf and appends ``...[truncated]``).
LEAF = 10_000
#: The request's ceilings (``admission.config`` defaults): 16 terms of at most 200 characters.
TERMS, TERM_CHARS = 16, 200
DEADLINES_MS = (2000, 200)
#: case -> (which cell is huge, calls, characters of each huge cell)
CASES = {"3x20MB": ("input", 3, 20_000_000), "1x130MB": ("input", 1, 130_000_000),
         "1x130MB-output": ("output", 1, 130_000_000), "3x130MB-output": ("output", 3, 130_000_000)}

_CHILD = r"""
import json, sys, time
from pathlib import Path
import obelisk_session_evidence
from obelisk_session_evidence.service import answer
db, config, request = sys.argv[1], sys.argv[2], Path(sys.argv[3]).read_bytes()
started = time.monotonic()
response = answer(request, db_path=Path(db), config_path=Path(config), config_must_exist=True,
                  started_at=started)
elapsed_ms = (time.monotonic() - started) * 1000.0
peak_kb = 0
for line in Path("/proc/self/status").read_text().splitlines():
    if line.startswith("VmHWM:"):
        peak_kb = int(line.split()[1])
envelope = response.envelope
code = (envelope.get("error") or {}).get("code")
sys.stdout.write(json.dumps({"elapsed_ms": elapsed_ms, "peak_kb": peak_kb, "outcome": envelope["outcome"],
                             "code": code, "items": len((envelope.get("result") or {}).get("items") or []),
                             "package": obelisk_session_evidence.__file__}) + "\n")
"""


def _code_lines(rng: random.Random, chars: int) -> str:
    """Source-like text of ``chars`` characters (no query term can occur in it: the terms hold ``qz``)."""
    words = ("value", "result", "handler", "config", "self", "return", "items", "parse", "index", "cache")
    out: list[str] = []
    size = 0
    while size < chars:
        line = f"    {rng.choice(words)}_{rng.randrange(1000)} = {rng.choice(words)}({rng.choice(words)})\n"
        out.append(line)
        size += len(line)
    return "".join(out)[:chars]


def build(work: Path, name: str, kind: str, calls: int, cell_chars: int) -> tuple[Path, Path, Path]:
    """A home, its index and a config for one case; returns (db, config, repository root)."""
    from obelisk_session_evidence.digest import ensure_key
    from obelisk_session_evidence.fixtures.encoding import uuid4
    from obelisk_session_evidence.fixtures.transcripts import ClaudeTranscript

    from tools.devkit.home_db import write_home_db

    top = work / name
    home, repo = top / "home", top / "home" / "src" / "web"
    repo.mkdir(parents=True)
    rng = random.Random(name)  # noqa: S311 - seeded fixture text, not a secret
    edits_per_call = max(1, cell_chars // (2 * (LEAF + 20)))
    # Each edit string is longer than a leaf, so Obelisk cuts it: the stored cell is edits * ~20 KB.
    old, new = _code_lines(rng, LEAF + 500), _code_lines(rng, LEAF + 500)
    t = ClaudeTranscript(rng=rng, home=home, session_id=uuid4(rng), cwd=repo, branch="main",
                         start_ms=1_790_000_000_000)
    t.user("Rename the settings loader everywhere in src/app/settings.py, keep behaviour the same.")
    for n in range(calls if kind == "output" else 0):
        t.bash(f"pytest -q tests/test_settings_{n}.py", "Run pytest", "collecting ...", exit_code=1)
    for n in range(calls if kind == "input" else 0):
        t.say(f"I'll rewrite the loader in one MultiEdit (part {n + 1}).")
        call = t.call("MultiEdit", {"file_path": f"{repo}/src/app/settings_{n}.py",
                                    "edits": [{"old_string": old, "new_string": new}] * edits_per_call})
        t.result(call, f"The file {repo}/src/app/settings_{n}.py has been updated with {edits_per_call} edits.")
    t.say("The loader is renamed in every file.")
    t.rows.insert(0, ("sessions", t.session_row()))
    db = top / "obelisk.sqlite"
    write_home_db(db, home, [t.to_unit()], now_ms=t.clock + 60_000)
    if kind == "output":  # Obelisk cuts an output to 10,000 characters: this is another writer's database
        line = "tests/test_settings.py::test_case PASSED\n"
        content = "collecting ...\n" + line * (cell_chars // len(line)) + "Process exited with code 1"
        con = sqlite3.connect(db)
        with con:
            con.execute("UPDATE tool_results SET content = ?, is_error = 0", (content,))
        con.close()
    config = top / "config.json"
    scope = {"agent_id": "claude-main", "project_id": "demo", "repository_id": "web", "sources": ["claude"],
             "roots": [str(repo)], "stage": 1}
    config.write_text(json.dumps({"config_version": 1, "recency_days": 36500, "scopes": [scope],
                                  "transcript_homes": [str(home)]}), encoding="utf-8")
    config.chmod(0o600)
    ensure_key(config)
    return db, config, repo


def request_bytes() -> bytes:
    """All five types, 16 terms of 200 characters (phrases with hyphens, underscores and a quote: the most match
    variants per term), limits at the ceilings."""
    rng = random.Random(30)  # noqa: S311 - seeded terms, not a secret
    terms = []
    for n in range(TERMS):
        words = [f"qz{n}{''.join(rng.choice('abcdefghijklmnop') for _ in range(6))}" for _ in range(40)]
        text = f'"{n}" ' + " ".join(f"{w}-x_{w}" if i % 3 == 0 else w for i, w in enumerate(words))
        terms.append(text[:TERM_CHARS])
    request = {
        "schema_version": "historical_evidence_request_v0", "request_id": "bench-deadline",
        "situation_id": "bench", "trigger": "operator_requested_history",
        "scope": {"agent_id": "claude-main", "project_id": "demo", "repository_id": "web",
                  "allow_cross_agent": False, "allow_cross_project": False},
        "evidence_types": ["prior_failure", "decision", "file_history", "tool_outcome", "summary"],
        "query_terms": terms,
        "limits": {"max_sessions": 50, "max_items": 50, "max_snippet_chars": 2000, "max_total_chars": 32000},
    }
    return json.dumps(request).encode()


def with_deadline(config: Path, deadline_ms: int) -> Path:
    """A copy of ``config`` (and its key) in a folder of its own with ``deadline_ms`` set."""
    folder = config.parent / f"deadline-{deadline_ms}"
    folder.mkdir(mode=0o700, exist_ok=True)
    document = json.loads(config.read_text(encoding="utf-8"))
    document["deadline_ms"] = deadline_ms
    target = folder / "config.json"
    target.write_text(json.dumps(document), encoding="utf-8")
    target.chmod(0o600)
    key = folder / "digest.key"
    if not key.exists():
        key.write_bytes((config.parent / "digest.key").read_bytes())
        key.chmod(0o600)
    return target


def run_once(python: str, db: Path, config: Path, request: Path) -> dict[str, Any]:
    proc = subprocess.run([python, "-c", _CHILD, str(db), str(config), str(request)], capture_output=True,
                          timeout=600, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"child failed ({proc.returncode}): {proc.stderr.decode(errors='replace')[-2000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.decode().strip().splitlines()[-1])
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tools/bench_deadline.py", description=__doc__.splitlines()[0])
    parser.add_argument("--python", action="append", help="interpreter(s) to measure (default: this one)")
    parser.add_argument("--runs", type=int, default=3, help="runs per case, deadline and interpreter")
    parser.add_argument("--work", type=Path, help="where to build the indexes (default: a temporary folder)")
    parser.add_argument("--json", type=Path, help="also write the figures as JSON")
    parser.add_argument("--case", action="append", choices=list(CASES), help="only this case (repeatable)")
    parser.add_argument("--deadline", action="append", type=int, metavar="MS",
                        help=f"only this deadline_ms (repeatable; default {' and '.join(map(str, DEADLINES_MS))})")
    args = parser.parse_args(argv)
    pythons = args.python or [sys.executable]
    work = args.work or Path(tempfile.mkdtemp(prefix="ose-bench-deadline-"))
    work.mkdir(parents=True, exist_ok=True)
    request = work / "request.json"
    request.write_bytes(request_bytes())
    figures: list[dict[str, Any]] = []
    for name, (kind, calls, chars) in CASES.items():
        if args.case and name not in args.case:
            continue
        sys.stderr.write(f"building {name} in {work} ...\n")
        db, config, _ = build(work, name, kind, calls, chars)
        for deadline_ms in args.deadline or DEADLINES_MS:
            config_at = with_deadline(config, deadline_ms)
            for python in pythons:
                runs = [run_once(python, db, config_at, request) for _ in range(args.runs)]
                times = [r["elapsed_ms"] for r in runs]
                over = [r["elapsed_ms"] - deadline_ms for r in runs if r["code"] == "timeout"]
                rss = [r["peak_kb"] / 1024.0 for r in runs]
                row = {"case": name, "deadline_ms": deadline_ms, "python": python, "package": runs[0]["package"],
                       "outcomes": sorted({f"{r['outcome']}:{r['code'] or 'ok'}" for r in runs}),
                       "answer_ms_median": statistics.median(times), "answer_ms_max": max(times),
                       "overrun_ms_median": statistics.median(over) if over else None,
                       "overrun_ms_max": max(over) if over else None,
                       "peak_rss_mb_median": statistics.median(rss), "peak_rss_mb_max": max(rss)}
                figures.append(row)
                overrun = (f"overrun median {row['overrun_ms_median']:.0f} / max {row['overrun_ms_max']:.0f} ms"
                           if over else "no timeout")
                sys.stdout.write(f"{name:8} deadline {deadline_ms:5} ms  {python}: {','.join(row['outcomes'])}  "
                                 f"answer median {row['answer_ms_median']:.0f} / max {row['answer_ms_max']:.0f} ms"
                                 f"  {overrun}  peak RSS median {row['peak_rss_mb_median']:.1f} / max "
                                 f"{row['peak_rss_mb_max']:.1f} MB  ({row['package']})\n")
                sys.stdout.flush()
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
