#!/usr/bin/env python3
"""Cold start of ``query``: one new process per request, timed beside ``python -c pass`` of the same venv.

Builds a benchmark index once (``tools/make-fixture --large``, ``--messages`` messages, in a temporary
directory), enables its smallest project (the small scope of ``tools/bench``), and writes one request for it:
the common planted term, all five evidence types, ``tools/bench``'s limits. Then, round by round, each
interpreter given (``--python``, repeatable, e.g. the venv of another install; default: this one) runs
``PY -c pass`` and ``PY -m obelisk_session_evidence query --request FILE``, in alternating order. Each child
is started with ``posix_spawn`` and reaped with ``wait4``; every answer must be ``ok`` with items. Printed per
interpreter: wall and CPU medians and the median of the per-round ratios query / pass (pairing keeps the ratio
honest when a neighbour slows the machine during the run).

Budget (issue 31): the cold small-scope ``query`` <= 12x ``python -c pass`` of the same venv. An editable
install's ``python -c pass`` also runs its import hook (a ``.pth``): measure an installed wheel's venv.

  tools/bench_cold.py [--messages 100000] [--rounds 21] [--python PY]... [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from obelisk_session_evidence.admission.config import EnabledScope, ProviderConfig, save_config

REPO = Path(__file__).resolve().parents[1]
BUDGET = 12.0
TYPES = ("prior_failure", "decision", "file_history", "tool_outcome", "summary")
LIMITS = {"max_sessions": 10, "max_items": 20, "max_snippet_chars": 400, "max_total_chars": 8000}


def build_scope(work: Path, messages: int, seed: int) -> tuple[Path, Path, Path]:
    """The index, a config enabling its smallest project, and a request file for it."""
    subprocess.run([sys.executable, str(REPO / "tools" / "make-fixture"), str(work), "--large", str(messages),
                    "--seed", str(seed)], check=True, stdout=subprocess.DEVNULL)
    db = work / "obelisk.sqlite"
    manifest = json.loads((work / "obelisk.manifest.json").read_text(encoding="utf-8"))
    small = manifest["projects"]["small"]
    Path(small["root"]).mkdir(parents=True, exist_ok=True)  # the root exists, as a user's checkout would
    config = work / "config" / "config.json"
    save_config(config, ProviderConfig(recency_days=36500, transcript_homes=(str(manifest["home"]),),
                                       scopes=(EnabledScope(agent_id="bench-agent", project_id="small",
                                                            repository_id=small["name"],
                                                            sources=("claude", "codex"), roots=(small["root"],)),)))
    request = {"schema_version": "historical_evidence_request_v0", "request_id": "bench-cold",
               "situation_id": "bench", "trigger": "operator_requested_history",
               "scope": {"agent_id": "bench-agent", "project_id": "small", "repository_id": small["name"],
                         "allow_cross_agent": False, "allow_cross_project": False},
               "evidence_types": list(TYPES), "query_terms": [manifest["terms"]["common"]["term"]],
               "limits": LIMITS}
    request_file = work / "request.json"
    request_file.write_text(json.dumps(request), encoding="utf-8")
    return db, config, request_file


def spawn(argv: Sequence[str], *, env: Mapping[str, str], cwd: Path, stdout: Path) -> tuple[float, float, int]:
    """Run ``argv`` to its end: (wall ms, CPU ms, exit code). Its stdin is empty; its stdout goes to ``stdout``."""
    actions = [(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
               (os.POSIX_SPAWN_OPEN, 1, str(stdout), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600),
               (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0)]
    here = os.getcwd()
    os.chdir(cwd)  # posix_spawn has no cwd argument
    try:
        started = time.perf_counter()
        pid = os.posix_spawn(argv[0], list(argv), dict(env), file_actions=actions)
        _, status, usage = os.wait4(pid, 0)
        wall = (time.perf_counter() - started) * 1000.0
    finally:
        os.chdir(here)
    return wall, (usage.ru_utime + usage.ru_stime) * 1000.0, os.waitstatus_to_exitcode(status)


def answered(path: Path) -> bool:
    """Whether ``path`` holds one ``ok`` envelope with at least one item."""
    try:
        envelope = json.loads(path.read_bytes())
    except ValueError:
        return False
    return envelope.get("outcome") == "ok" and bool((envelope.get("result") or {}).get("items"))


def measure(pythons: Sequence[str], rounds: int, *, db: Path, config: Path, request: Path,
            work: Path) -> dict[str, dict[str, list[float]]]:
    """Per interpreter, the samples of ``pass`` and ``query`` (wall and CPU ms), interleaved round by round."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "OBELISK"))}
    out = work / "stdout.json"
    samples: dict[str, dict[str, list[float]]] = {py: {"pass": [], "query": [], "pass_cpu": [], "query_cpu": []}
                                                  for py in pythons}
    for rnd in range(rounds + 1):  # round 0 warms the page and bytecode caches and is not recorded
        for py in pythons:
            runs = {"pass": [py, "-c", "pass"],
                    "query": [py, "-m", "obelisk_session_evidence", "query", "--db", str(db), "--config",
                              str(config), "--request", str(request)]}
            for name in (("pass", "query") if rnd % 2 else ("query", "pass")):
                wall, cpu, code = spawn(runs[name], env=env, cwd=work, stdout=out)
                if code != 0 or (name == "query" and not answered(out)):
                    raise SystemExit(f"tools/bench_cold.py: {py} {name} did not answer (exit {code})")
                if rnd:
                    samples[py][name].append(wall)
                    samples[py][f"{name}_cpu"].append(cpu)
    return samples


def summary(samples: Mapping[str, list[float]]) -> dict[str, float]:
    ratios = [q / p for q, p in zip(samples["query"], samples["pass"], strict=True)]
    return {"pass_ms": statistics.median(samples["pass"]), "query_ms": statistics.median(samples["query"]),
            "pass_cpu_ms": statistics.median(samples["pass_cpu"]),
            "query_cpu_ms": statistics.median(samples["query_cpu"]),
            "ratio": statistics.median(ratios), "ratio_min": min(ratios), "ratio_max": max(ratios)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tools/bench_cold.py", description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=100_000, help="messages in the index (default 100000)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--rounds", type=int, default=21, help="recorded rounds (default 21)")
    parser.add_argument("--python", action="append", metavar="PY",
                        help="an interpreter with the provider installed; repeatable (default: this one)")
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write the figures as JSON")
    args = parser.parse_args(argv)
    pythons = [str(Path(p).absolute()) for p in (args.python or [sys.executable])]
    with tempfile.TemporaryDirectory(prefix="ose-bench-cold-") as tmp:
        work = Path(tmp)
        db, config, request = build_scope(work, args.messages, args.seed)
        figures = {py: summary(s) for py, s in measure(pythons, args.rounds, db=db, config=config, request=request,
                                                                work=work).items()}
    print(f"cold small-scope query vs python -c pass: {args.messages:,} messages, {args.rounds} rounds, "
          f"loadavg {os.getloadavg()[0]:.2f}")
    print(f"{'python':<48} {'pass ms':>8} {'query ms':>9} {'query/pass':>11} {'(min-max)':>12} {'cpu q/p':>8}")
    for py, f in figures.items():
        verdict = "PASS" if f["ratio"] <= BUDGET else "OVER"
        print(f"{py:<48} {f['pass_ms']:>8.1f} {f['query_ms']:>9.1f} {f['ratio']:>10.2f}x "
              f"{f['ratio_min']:>5.2f}-{f['ratio_max']:<5.2f} {f['query_cpu_ms'] / f['pass_cpu_ms']:>7.2f}x  "
              f"{verdict} (budget {BUDGET:.0f}x)")
    if args.json:
        document: dict[str, Any] = {"messages": args.messages, "rounds": args.rounds, "budget": BUDGET,
                                    "python_version": platform.python_version(), "figures": figures,
                                    "command": " ".join(["tools/bench_cold.py", *sys.argv[1:]])}
        args.json.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
