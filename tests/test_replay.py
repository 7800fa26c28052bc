"""Replay qualification (issue 14): mining, the time cut, the metrics and the verdict, on a fixture with more
than 200 repeat pairs and on the real-Obelisk index."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from obelisk_session_evidence.qualify.replay import MIN_PAIRS, ScopeRef, mine, read_history, run_replay
from obelisk_session_evidence.qualify.replay.fixture import ReplayFixture, build_replay_fixture
from obelisk_session_evidence.qualify.replay.metrics import criteria, metrics, verdict
from obelisk_session_evidence.qualify.replay.report import render_markdown, stage2_config
from obelisk_session_evidence.qualify.replay.run import replay_all, request
from obelisk_session_evidence.service import answer

from tests.conftest import scope_entry, write_config
from tests.realobelisk import materialized, real_dir


@pytest.fixture(scope="session")
def replay_fixture(tmp_path_factory: pytest.TempPathFactory) -> tuple[ReplayFixture, Path, ScopeRef]:
    """Built once per test session."""
    out = tmp_path_factory.mktemp("replay-fixture")
    fx = build_replay_fixture(out / "fx")
    config = write_config(out / "config.json",
                          [scope_entry("claude-main", "harbor", "harbor-api", ["claude"], list(fx.roots))],
                          transcript_homes=[str(fx.home)])
    return fx, config, ScopeRef("claude-main", "harbor", "harbor-api", ("claude",), fx.roots)


@pytest.fixture(scope="session")
def replay_doc(replay_fixture: tuple[ReplayFixture, Path, ScopeRef]) -> dict[str, Any]:
    fx, config, scope = replay_fixture
    return run_replay(fx.db_path, config, scope)


def test_fixture_recognition_and_no_false_match(replay_doc: dict[str, Any]) -> None:
    m = replay_doc["metrics"]
    assert replay_doc["replayed"]["pairs"] >= 200
    assert m["recognition"]["rate"] >= 0.9
    assert all(row["pairs"] == 70 for row in m["recognition"]["by_kind"].values())
    assert m["false_matches"]["negatives"] >= 30 and m["false_matches"]["false_matches"] == 0
    assert m["scope"]["items_checked"] > 0 and m["scope"]["items_outside_scope_or_cut"] == 0
    assert m["latency"]["timeouts"] == 0 and len(m["latency"]["slowest"]) == 5
    assert replay_doc["verdict"] == "passed" and replay_doc["passed"] is True
    assert {c["status"] for c in replay_doc["criteria"]} == {"pass"}


def test_report_is_content_free(replay_doc: dict[str, Any]) -> None:
    text = json.dumps(replay_doc) + render_markdown(replay_doc)
    for secret in ("pytest", "berth", "harbor.", "/src/", "Error", "test_"):
        assert secret not in text, secret


def test_time_cut_excludes_the_later_session_and_after(replay_fixture: tuple[ReplayFixture, Path, ScopeRef]) -> None:
    """Without the bound the later session's own failure is returned; with it, only earlier sessions are."""
    fx, config, scope = replay_fixture
    history = read_history(fx.db_path, sources=scope.sources, roots=scope.roots)
    pairs, _ = mine(history)
    pair = next(p for p in pairs if p.kind == "failure")
    with stage2_config(config, scope) as staged:
        raw = request(scope, pair.kind, pair.terms, "cut")
        uncut = answer(raw, db_path=fx.db_path, config_path=staged).envelope["result"]["items"]
        cut = answer(raw, db_path=fx.db_path, config_path=staged, until=pair.later_start).envelope["result"]["items"]
    assert pair.later in {i["session_ref"] for i in uncut}
    refs = {i["session_ref"] for i in cut}
    assert refs and refs <= pair.earlier
    assert all(i["observed_at"] < pair.later_start for i in cut)


def test_replay_checks_items_row_by_row(replay_fixture: tuple[ReplayFixture, Path, ScopeRef]) -> None:
    """An item of a session the scope does not hold counts as outside the scope."""
    fx, config, scope = replay_fixture
    history = read_history(fx.db_path, sources=scope.sources, roots=scope.roots)
    pairs, _ = mine(history)
    chosen = [p for p in pairs if p.kind == "failure"][:3]
    narrowed = frozenset(history.sessions) - frozenset().union(*(p.earlier for p in chosen))
    with stage2_config(config, scope) as staged:
        replays = replay_all(fx.db_path, staged, scope, narrowed, pairs=chosen, negatives=[])
    assert all(r.outside_scope > 0 for r in replays)


def test_fewer_than_min_pairs_is_insufficient_history(replay_fixture: tuple[ReplayFixture, Path, ScopeRef]) -> None:
    fx, config, scope = replay_fixture
    history = read_history(fx.db_path, sources=scope.sources, roots=scope.roots)
    pairs, negatives = mine(history)
    few = pairs[:MIN_PAIRS - 1]
    with stage2_config(config, scope) as staged:
        replays = replay_all(fx.db_path, staged, scope, frozenset(history.sessions), pairs=few,
                             negatives=negatives[:3])
    m = metrics(replays)
    crits = criteria(m, 2000.0)
    assert m["recognition"]["rate"] == 1.0  # every rate passes, the size does not
    assert verdict(crits, len(few)) == "insufficient_history"
    assert verdict(criteria(metrics([]), 2000.0), 0) == "insufficient_history"
    assert all(c["status"] == "fail" for c in criteria(metrics([]), 2000.0))


def _expected_claude_pairs() -> set[tuple[str, str, str]]:
    """Repeat pairs ground_truth.json implies for claude @ acme-api: a command or an edited file of a later
    session that an earlier acme-api session also ran or edited (commands from bash_commands; files from
    file_paths, which for these sessions are the files edited or read: the read-only ones occur once)."""
    truth = json.loads((real_dir() / "ground_truth.json").read_text(encoding="utf-8"))
    sessions = sorted((s for s in truth["sessions"] if s["source"] == "claude" and s["project"] == "acme-api"),
                      key=lambda s: s["started_at"])
    root = truth["projects"]["acme-api"]["path"] + "/"
    out: set[tuple[str, str, str]] = set()
    seen: dict[tuple[str, str], bool] = {}
    for s in sessions:
        keys = {("command", c) for c in s.get("bash_commands") or []} | \
            {("edit", p.removeprefix(root)) for p in s.get("file_paths") or []}
        for key in keys:
            if seen.get(key):
                out.add((key[0], key[1], s["db_session_id"]))
        for key in keys:
            seen[key] = True
    return out


@pytest.mark.real_obelisk
def test_real_obelisk_replay(tmp_path: Path) -> None:
    roots = ["/tmp/obelisk-home/src/acme-api"]
    db = real_dir() / "reindexed.sqlite"
    config = write_config(tmp_path / "config.json", [
        scope_entry("claude-main", "acme", "acme-api", ["claude"], roots),
        scope_entry("codex-main", "acme", "acme-api", ["codex"], roots)])
    before = db.read_bytes()
    with materialized("stale"):
        claude = ScopeRef("claude-main", "acme", "acme-api", ("claude",), tuple(roots))
        pairs, _ = mine(read_history(db, sources=claude.sources, roots=claude.roots))
        mined = {(p.kind, p.key, p.later) for p in pairs if p.kind in ("command", "edit")}
        # The edited file that repeats (reports.py) is what file_paths implies; read-only files never repeat.
        assert mined == {m for m in _expected_claude_pairs()}
        docs = [run_replay(db, config, claude),
                run_replay(db, config, ScopeRef("codex-main", "acme", "acme-api", ("codex",), tuple(roots)))]
    assert db.read_bytes() == before
    for doc in docs:
        assert doc["replayed"]["pairs"] < MIN_PAIRS
        assert doc["verdict"] == "insufficient_history" and doc["passed"] is False
        assert doc["metrics"]["scope"]["items_outside_scope_or_cut"] == 0


# --- enable --stage 2 accepts a replay report for exactly this scope ---------------------------------------


def _enable(config: Path, fx: ReplayFixture, report: Path, **extra: Any) -> tuple[int, str]:
    import io

    from obelisk_session_evidence.admission.lifecycle import enable_scope

    out = io.StringIO()
    code = enable_scope(config_path=config, agent_id="claude-main", project_id="harbor", repository_id="harbor-api",
                        sources=["claude"], roots=list(fx.roots), stage=2, include_worktrees=False,
                        qualification_report=str(report), out=out, **extra)
    return code, out.getvalue()


def _write(path: Path, doc: dict[str, Any]) -> Path:
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def test_enable_stage2_accepts_the_scopes_replay_report(
        tmp_path: Path, replay_fixture: tuple[ReplayFixture, Path, ScopeRef], replay_doc: dict[str, Any]) -> None:
    from obelisk_session_evidence.admission.config import load_config

    fx, _, _ = replay_fixture
    config = tmp_path / "cfg" / "config.json"
    code, text = _enable(config, fx, _write(tmp_path / "r.json", replay_doc))
    assert code == 0, text
    record = load_config(config).scopes[0].qualification
    assert record is not None and record.kind == "replay" and not record.synthetic_accepted


def test_enable_stage2_refuses_another_scope_stale_and_synthetic(
        tmp_path: Path, replay_fixture: tuple[ReplayFixture, Path, ScopeRef], replay_doc: dict[str, Any]) -> None:
    from obelisk_session_evidence.admission.config import load_config

    fx, _, _ = replay_fixture
    config = tmp_path / "cfg" / "config.json"
    other = dict(replay_doc, scope_digest="sha256:" + "0" * 64)
    code, text = _enable(config, fx, _write(tmp_path / "other.json", other))
    assert code != 0 and "another scope" in text
    stale = dict(replay_doc, generated_at="2020-01-01T00:00:00Z")
    code, text = _enable(config, fx, _write(tmp_path / "stale.json", stale))
    assert code != 0 and "days old" in text
    code, _ = _enable(config, fx, _write(tmp_path / "stale.json", stale), max_report_age_days=100_000)
    assert code == 0
    synthetic = {k: v for k, v in replay_doc.items() if k not in ("kind", "scope_digest", "format")}
    synthetic.update(kind="self_test", sources=["claude"])
    path = _write(tmp_path / "synthetic.json", synthetic)
    code, text = _enable(config, fx, path)
    assert code != 0 and "--accept-synthetic-qualification" in text
    code, text = _enable(config, fx, path, accept_synthetic=True)
    assert code == 0, text
    record = load_config(config).scopes[0].qualification
    assert record is not None and record.kind == "synthetic" and record.synthetic_accepted


def test_cli_qualify_replay_writes_reports(tmp_path: Path,
                                         replay_fixture: tuple[ReplayFixture, Path, ScopeRef]) -> None:
    import subprocess
    import sys

    fx, config, _ = replay_fixture
    config.chmod(0o600)
    out = tmp_path / "reports"
    proc = subprocess.run([sys.executable, "-m", "obelisk_session_evidence", "qualify", "--replay",
                           "--agent-id", "claude-main", "--project-id", "harbor", "--repository-id", "harbor-api",
                           "--db", str(fx.db_path), "--config", str(config), "--out", str(out)],
                          capture_output=True, check=False, timeout=600)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["verdict"] == "passed" and summary["pairs"] >= 200
    doc = json.loads((out / "replay-claude-main-harbor-api.json").read_text(encoding="utf-8"))
    assert doc["kind"] == "replay" and doc["scope_digest"].startswith("sha256:")
    md = (out / "replay-claude-main-harbor-api.md").read_text(encoding="utf-8")
    assert "Slowest replays" in md and "| recognition |" in md
    import importlib.util

    if importlib.util.find_spec("matplotlib") is not None:  # the optional [report] extra
        assert (out / "replay-claude-main-harbor-api-recognition.png").stat().st_size > 0
        assert "![recognition by days](replay-claude-main-harbor-api-recognition.png)" in md
    unknown = subprocess.run([sys.executable, "-m", "obelisk_session_evidence", "qualify", "--replay",
                              "--agent-id", "nobody", "--project-id", "harbor", "--repository-id", "harbor-api",
                              "--db", str(fx.db_path), "--config", str(config), "--out", str(out)],
                             capture_output=True, check=False, timeout=600)
    assert unknown.returncode == 2 and b"not enabled" in unknown.stderr
