"""Replay qualification (issue 14): mining, the time cut, the metrics and the verdict, on a fixture with more
than 200 repeat pairs and on the real-Obelisk index."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from obelisk_session_evidence.admission.config import ProviderConfig, load_config
from obelisk_session_evidence.commands.qualify.replay import MIN_PAIRS, ScopeRef, mine, read_history, run_replay
from obelisk_session_evidence.commands.qualify.replay.metrics import criteria, metrics, verdict
from obelisk_session_evidence.commands.qualify.replay.report import (
    render_markdown,
    scope_digest,
    staged_config,
    write_replay_reports,
)
from obelisk_session_evidence.commands.qualify.replay.run import case_digest, replay_all, request
from obelisk_session_evidence.digest import DigestKey, load_key
from obelisk_session_evidence.service import answer

from tests.conftest import scope_entry, write_config
from tests.realobelisk import materialized, real_dir
from tools.devkit.replay_fixture import ReplayFixture, build_replay_fixture


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


def _loaded(config: Path, scope: ScopeRef) -> tuple[ProviderConfig, DigestKey]:
    return staged_config(load_config(config), scope), load_key(config)


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


def test_report_is_content_free(replay_fixture: tuple[ReplayFixture, Path, ScopeRef],
                                replay_doc: dict[str, Any]) -> None:
    text = json.dumps(replay_doc) + render_markdown(replay_doc)
    for secret in ("pytest", "berth", "harbor.", "/src/", "Error", "test_"):
        assert secret not in text, secret
    # The slowest replays are named by keyed digests of their cases (a signature and a session are guessable).
    fx, config, scope = replay_fixture
    pairs, negatives = mine(read_history(fx.db_path, sources=scope.sources, roots=scope.bound_roots()))
    key = load_key(config)
    cases = [(p.kind, p.key, p.later) for p in pairs] + [(n.kind, n.key, n.session) for n in negatives]
    keyed = {case_digest(key, *case) for case in cases}
    plain = {hashlib.sha256("\x1f".join(case).encode()).hexdigest()[:16] for case in cases}
    slowest = {row["digest"] for row in replay_doc["metrics"]["latency"]["slowest"]}
    assert len(slowest) == 5 and slowest <= keyed and not slowest & plain


def test_markdown_has_a_table_per_criterion_and_falls_back_without_the_chart(
        tmp_path: Path, replay_doc: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    md = render_markdown(replay_doc)
    for crit in replay_doc["criteria"]:
        section = md.split(f"Criterion `{crit['id']}`: {crit['threshold']}: **{crit['status']}**", 1)[1]
        assert section.lstrip("\n").startswith("| "), crit["id"]  # its table follows its heading
    assert "![recognition by days]" not in md and "| days between | pairs | recognised | rate |" in md
    # Without the optional [report] extra (matplotlib not importable) the report keeps the table only.
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    _, md_path = write_replay_reports(replay_doc, tmp_path)
    text = md_path.read_text(encoding="utf-8")
    assert "![recognition by days]" not in text and "| >=30 days |" in text
    assert not list(tmp_path.glob("*.png"))


def test_time_cut_excludes_the_later_session_and_after(replay_fixture: tuple[ReplayFixture, Path, ScopeRef]) -> None:
    """Without the bound the later session's own failure is returned; with it, only earlier sessions are."""
    fx, config, scope = replay_fixture
    history = read_history(fx.db_path, sources=scope.sources, roots=scope.bound_roots())
    pairs, _ = mine(history)
    pair = next(p for p in pairs if p.kind == "failure")
    loaded = _loaded(config, scope)
    raw = request(scope, pair.kind, pair.terms, "cut")
    uncut = answer(raw, db_path=fx.db_path, config_path=config, preloaded=loaded).envelope["result"]["items"]
    cut = answer(raw, db_path=fx.db_path, config_path=config, preloaded=loaded,
                 until=pair.later_start).envelope["result"]["items"]
    assert pair.later in {i["session_ref"] for i in uncut}
    refs = {i["session_ref"] for i in cut}
    assert refs and refs <= pair.earlier
    assert all(i["observed_at"] < pair.later_start for i in cut)


def test_replay_checks_items_row_by_row(replay_fixture: tuple[ReplayFixture, Path, ScopeRef]) -> None:
    """An item of a session the scope does not hold counts as outside the scope."""
    fx, config, scope = replay_fixture
    history = read_history(fx.db_path, sources=scope.sources, roots=scope.bound_roots())
    pairs, _ = mine(history)
    chosen = [p for p in pairs if p.kind == "failure"][:3]
    narrowed = frozenset(history.sessions) - frozenset().union(*(p.earlier for p in chosen))
    replays = replay_all(fx.db_path, _loaded(config, scope), scope, narrowed, pairs=chosen, negatives=[])
    assert all(r.outside_scope > 0 for r in replays)


def test_recency_window_is_measured_from_the_replayed_moment(
        replay_fixture: tuple[ReplayFixture, Path, ScopeRef]) -> None:
    """With a 12-day recency window, a repeat 5 or 9 days after the earlier attempt is recognised whenever the
    replay runs (the window ends at the moment replayed, not today); one 16 or 24 days after is not."""
    fx, config, scope = replay_fixture
    history = read_history(fx.db_path, sources=scope.sources, roots=scope.bound_roots())
    pairs, _ = mine(history)
    staged, key = _loaded(config, scope)
    short = staged._replace(recency_days=12)
    near = [p for p in pairs if p.kind == "failure" and 4 < p.days_between < 10][:4]
    far = [p for p in pairs if p.kind == "failure" and 15 < p.days_between < 25][:4]
    assert len(near) == len(far) == 4
    replays = replay_all(fx.db_path, (short, key), scope, frozenset(history.sessions), pairs=near + far,
                         negatives=[])
    assert [r.recognised for r in replays] == [True] * 4 + [False] * 4


def test_fewer_than_min_pairs_is_insufficient_history(replay_fixture: tuple[ReplayFixture, Path, ScopeRef]) -> None:
    fx, config, scope = replay_fixture
    history = read_history(fx.db_path, sources=scope.sources, roots=scope.bound_roots())
    pairs, negatives = mine(history)
    few = pairs[:MIN_PAIRS - 1]
    replays = replay_all(fx.db_path, _loaded(config, scope), scope, frozenset(history.sessions), pairs=few,
                         negatives=negatives[:3])
    m = metrics(replays)
    crits = criteria(m, 2000.0)
    assert m["recognition"]["rate"] == 1.0  # every rate passes, the size does not
    assert verdict(crits, len(few)) == "insufficient_history"
    assert verdict(criteria(metrics([]), 2000.0), 0) == "insufficient_history"
    assert all(c["status"] == "fail" for c in criteria(metrics([]), 2000.0))


def _codex_calls(jsonl: Path) -> set[tuple[str, str]]:
    """The commands a codex rollout ran (``shell`` argv, ``bash -lc`` unwrapped) and the files its
    ``apply_patch`` calls edited, read from the transcript itself (not the index)."""
    keys: set[tuple[str, str]] = set()
    for line in jsonl.read_text(encoding="utf-8").splitlines():
        payload = json.loads(line).get("payload") or {}
        if payload.get("type") == "function_call" and payload.get("name") == "shell":
            argv = json.loads(payload["arguments"])["command"]
            keys.add(("command", argv[-1] if argv[:2] == ["bash", "-lc"] else " ".join(argv)))
        elif payload.get("type") == "custom_tool_call" and payload.get("name") == "apply_patch":
            for patch_line in str(payload.get("input")).splitlines():
                for marker in ("*** Update File: ", "*** Add File: "):
                    if patch_line.startswith(marker):
                        keys.add(("edit", patch_line.removeprefix(marker)))
    return keys


def _expected_pairs(source: str) -> set[tuple[str, str, str]]:
    """Repeat pairs ground_truth.json implies for ``source`` @ acme-api: a command or an edited file of a later
    session that an earlier acme-api session also ran or edited. Claude: bash_commands and file_paths (for these
    sessions the files edited or read: the read-only ones occur once). Codex (ground truth lists no commands):
    the sessions' own rollout files, which ground truth names."""
    truth = json.loads((real_dir() / "ground_truth.json").read_text(encoding="utf-8"))
    sessions = sorted((s for s in truth["sessions"] if s["source"] == source and s["project"] == "acme-api"),
                      key=lambda s: s["started_at"])
    root = truth["projects"]["acme-api"]["path"] + "/"
    out: set[tuple[str, str, str]] = set()
    seen: set[tuple[str, str]] = set()
    for s in sessions:
        if source == "codex":
            keys = _codex_calls(Path(s["jsonl_path"]))
        else:
            keys = {("command", c) for c in s.get("bash_commands") or []} | \
                {("edit", p.removeprefix(root)) for p in s.get("file_paths") or []}
        out |= {(kind, key, s["db_session_id"]) for kind, key in keys if (kind, key) in seen}
        seen |= keys
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
        scopes = [ScopeRef(f"{source}-main", "acme", "acme-api", (source,), tuple(roots))
                  for source in ("claude", "codex")]
        for scope in scopes:
            pairs, _ = mine(read_history(db, sources=scope.sources, roots=scope.bound_roots()))
            # Named by the later command as run (the key masks numbers) or the repository-relative file.
            mined = {(p.kind, p.terms[0], p.later) for p in pairs if p.kind in ("command", "edit")}
            assert mined == _expected_pairs(scope.sources[0]), scope.agent_id
            assert mined  # both scopes have repeats: claude pytest -q and reports.py, codex sed/pytest/app.py
        docs = [run_replay(db, config, scope) for scope in scopes]
    assert db.read_bytes() == before
    for doc in docs:
        assert doc["replayed"]["pairs"] < MIN_PAIRS
        assert doc["verdict"] == "insufficient_history" and doc["passed"] is False
        assert doc["metrics"]["scope"]["items_outside_scope_or_cut"] == 0
        fm = doc["metrics"]["false_matches"]
        assert fm["negatives"] > 0 and fm["false_matches"] == 0
    # Every mined pair is recognised, the codex commands with quotes too (stored JSON-escaped in input_json).
    assert [d["metrics"]["recognition"]["recognised"] for d in docs] == [d["replayed"]["pairs"] for d in docs]
    assert docs[1]["metrics"]["recognition"]["by_kind"]["command"]["pairs"] == 4


# --- enable --stage 2 accepts a replay report for exactly this scope ---------------------------------------


def _enable(config: Path, fx: ReplayFixture, report: Path, roots: list[str] | None = None,
            **extra: Any) -> tuple[int, dict[str, Any]]:
    import io

    from obelisk_session_evidence.commands.lifecycle import enable_scope

    out = io.StringIO()
    code = enable_scope(config_path=config, agent_id="claude-main", project_id="harbor", repository_id="harbor-api",
                        sources=["claude"], roots=roots if roots is not None else list(fx.roots), stage=2,
                        include_worktrees=False, qualification_report=str(report), out=out, replace=True, **extra)
    return code, json.loads(out.getvalue())


def _write(path: Path, doc: dict[str, Any]) -> Path:
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def _same_install(tmp_path: Path, fixture_config: Path) -> Path:
    """A config path of the install the replay ran in: its digest key, nothing enabled yet."""
    from obelisk_session_evidence.digest import key_path

    config = tmp_path / "cfg" / "config.json"
    config.parent.mkdir(mode=0o700)
    key_path(config).write_bytes(key_path(fixture_config).read_bytes())
    key_path(config).chmod(0o600)
    return config


def _refused(code: int, doc: dict[str, Any], words: str) -> None:
    assert code == 2 and doc["ok"] is False, doc
    assert doc["error"]["code"] == "qualification_required" and words in doc["error"]["detail"], doc


def test_replay_report_carries_the_keyed_scope_digest(
        replay_fixture: tuple[ReplayFixture, Path, ScopeRef], replay_doc: dict[str, Any]) -> None:
    """The report's scope digest is the receipts' (keyed, per install): a request's receipt has the same one."""
    fx, config, scope = replay_fixture
    assert replay_doc["scope_digest"] == scope_digest(scope, load_key(config))
    assert replay_doc["scope_digest"].startswith("hmac-sha256:")
    raw = request(scope, "command", ("pytest",), "receipt")
    receipt = answer(raw, db_path=fx.db_path, config_path=config, preloaded=_loaded(config, scope)).envelope["receipt"]
    assert receipt["scope_digest"] == replay_doc["scope_digest"]


def test_enable_stage2_accepts_the_scopes_replay_report(
        tmp_path: Path, replay_fixture: tuple[ReplayFixture, Path, ScopeRef], replay_doc: dict[str, Any]) -> None:
    fx, fixture_config, _ = replay_fixture
    config = _same_install(tmp_path, fixture_config)
    code, doc = _enable(config, fx, _write(tmp_path / "r.json", replay_doc))
    assert code == 0, doc
    assert doc["scope"]["qualification_kind"] == "replay" and not doc["scope"]["synthetic_qualification_accepted"]
    record = load_config(config).scopes[0].qualification
    assert record is not None and record.kind == "replay" and not record.synthetic_accepted


def test_enable_stage2_refuses_a_replay_report_for_another_scope(
        tmp_path: Path, replay_fixture: tuple[ReplayFixture, Path, ScopeRef], replay_doc: dict[str, Any]) -> None:
    fx, fixture_config, _ = replay_fixture
    config = _same_install(tmp_path, fixture_config)
    report = _write(tmp_path / "r.json", replay_doc)
    # Other roots (the worktree left out): another scope digest.
    _refused(*_enable(config, fx, report, roots=[fx.roots[0]]), "another scope")
    # Another digest written into the report.
    other = _write(tmp_path / "other.json", dict(replay_doc, scope_digest="hmac-sha256:" + "0" * 64))
    _refused(*_enable(config, fx, other), "another scope")
    # Another install (its own key): the same scope's report from elsewhere does not match.
    (tmp_path / "elsewhere").mkdir(mode=0o700)
    elsewhere = write_config(tmp_path / "elsewhere" / "config.json", [])
    _refused(*_enable(elsewhere, fx, report), "another scope")
    # An install with no key yet: no replay report can match.
    _refused(*_enable(tmp_path / "fresh" / "config.json", fx, report), "another scope")
    assert load_config(config).scopes == ()


def test_enable_stage2_refuses_a_stale_report(
        tmp_path: Path, replay_fixture: tuple[ReplayFixture, Path, ScopeRef], replay_doc: dict[str, Any]) -> None:
    from datetime import UTC, datetime, timedelta

    fx, fixture_config, _ = replay_fixture
    config = _same_install(tmp_path, fixture_config)
    old = (datetime.now(UTC) - timedelta(days=40)).strftime("%Y-%m-%dT%H:%M:%SZ")
    stale = _write(tmp_path / "stale.json", dict(replay_doc, generated_at=old))
    _refused(*_enable(config, fx, stale), "40 days old; at most 30")  # the default
    code, doc = _enable(config, fx, stale, max_report_age_days=45)
    assert code == 0, doc
    week = (datetime.now(UTC) - timedelta(days=8)).strftime("%Y-%m-%dT%H:%M:%SZ")
    _refused(*_enable(config, fx, _write(tmp_path / "week.json", dict(replay_doc, generated_at=week)),
                      max_report_age_days=7), "8 days old; at most 7")


def test_enable_stage2_refuses_a_generated_corpus_report_without_acceptance(
        tmp_path: Path, replay_fixture: tuple[ReplayFixture, Path, ScopeRef], replay_doc: dict[str, Any]) -> None:
    """A report without ``kind: replay`` is synthetic evidence (the real self-test report:
    tests/integration/test_qualify.py)."""
    fx, fixture_config, _ = replay_fixture
    config = _same_install(tmp_path, fixture_config)
    synthetic = {k: v for k, v in replay_doc.items() if k not in ("kind", "scope_digest", "format")}
    synthetic.update(sources=["claude"])
    path = _write(tmp_path / "synthetic.json", synthetic)
    _refused(*_enable(config, fx, path), "--accept-synthetic-qualification")
    code, doc = _enable(config, fx, path, accept_synthetic=True)
    assert code == 0, doc
    assert doc["scope"]["synthetic_qualification_accepted"] is True
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
    assert doc["kind"] == "replay" and doc["scope_digest"].startswith("hmac-sha256:")
    md = (out / "replay-claude-main-harbor-api.md").read_text(encoding="utf-8")
    assert "The 5 slowest replays, by their keyed digest:" in md and "| recognition |" in md
    import importlib.util

    if importlib.util.find_spec("matplotlib") is not None:  # the optional [report] extra
        assert (out / "replay-claude-main-harbor-api-recognition.png").stat().st_size > 0
        assert "![recognition by days](replay-claude-main-harbor-api-recognition.png)" in md
    unknown = subprocess.run([sys.executable, "-m", "obelisk_session_evidence", "qualify", "--replay",
                              "--agent-id", "nobody", "--project-id", "harbor", "--repository-id", "harbor-api",
                              "--db", str(fx.db_path), "--config", str(config), "--out", str(out)],
                             capture_output=True, check=False, timeout=600)
    assert unknown.returncode == 2 and b"not enabled" in unknown.stderr
