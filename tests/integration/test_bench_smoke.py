"""``tools/bench --quick`` runs end to end on a tiny database and prints every column (no timing asserted)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

COLUMNS = ("cold", "warm", "raw", "sqlite3 cli", "naive", "warm/naive", "warm/raw", "cold/pass", "answer",
           "evidence", "ceiling", "ceil/ans", "outcome")
TARGETS = ("provider vs naive (common)", "provider vs naive (rare)", "cold start", "peak RSS", "latency growth",
           "warm vs raw", "answer size",
           # issue 13 (one size here: the growth target is not evaluated)
           "scope growth", "cold vs naive card", "cold vs python -c pass", "warm vs sqlite3 CLI floor",
           "cold vs naive card (large scope, reported)", "cold vs python -c pass (large scope, reported)",
           # issue 13's freshness target (tools/bench_freshness.py, here at 1,000 transcript files)
           "freshness")


def test_quick_bench_prints_every_column(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OBELISK")}
    figures = tmp_path / "bench.json"
    proc = subprocess.run(
        [sys.executable, str(REPO / "tools" / "bench"), "--quick", "--reps", "2", "--cold-reps", "1",
         "--no-qualify", "--freshness-files", "1000", "--cache-dir", str(tmp_path / "cache"),
         "--json", str(figures)],
        capture_output=True, env=env, cwd=tmp_path, timeout=600, check=False)
    out = proc.stdout.decode()
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    for column in COLUMNS:
        assert column in out, column
    for target in TARGETS:
        assert f" {target}: " in out, target
    for line in ("interpreter start", "python3 -c pass", "peak RSS MB", "provider in-process phases",
                 "raw on a new connection", "== scope growth", "cold/card", "warm/cli", "scope set"):
        assert line in out, line
    cli_installed = shutil.which("sqlite3") is not None
    assert ("not installed" in out) is not cli_installed

    document = json.loads(figures.read_text())
    assert {t["target"] for t in document["targets"]} == set(TARGETS)
    assert all(t["status"] in ("PASS", "FAIL", "not evaluated", "info") for t in document["targets"])
    assert document["freshness"]["files"] == 1000
    [size] = document["sizes"]
    assert size["size"] == 3000
    assert {c["case"] for c in size["cases"]} == {f"{p}/{t}" for p in ("small", "big")
                                                   for t in ("rare", "medium", "common")}
    for case in size["cases"]:
        expected = {"cold", "warm", "raw", "naive", "naive_card"} | ({"cli", "cli_fts"} if cli_installed else set())
        assert expected <= set(case["ms"]), case["case"]
        assert case["outcomes"]["warm"] == ["ok"]
        assert case["outcomes"]["cold"] == ["ok"]
        assert case["outcomes"]["naive_card"] == ["ok"]
        assert case["provider_phases_ms"]["scope set"] > 0
        assert {"provider_answer", "provider_evidence", "ceiling"} <= set(case["chars"])
        assert case["peak_rss_mb"]["cold"] > 0
    assert {"warm (serve)", "cold (max)", "raw worker", "naive worker"} <= set(size["peak_rss_mb"])

    # The database is cached under a key of size, seed and builder digest; a second run reuses it.
    cached = [p for p in (tmp_path / "cache").iterdir() if p.name.startswith("m3000-s7-b")]
    assert len(cached) == 1 and (cached[0] / "COMPLETE").exists()
