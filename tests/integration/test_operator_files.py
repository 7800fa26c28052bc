"""Issue 30, item 2: the files the operator commands write stay inside their folder and never follow a link.

* ``qualify --replay`` names its reports from the scope's ids: an id with a ``/`` or a ``..`` gives a plain,
  tagged file name inside ``--out`` (never a traceback, never a file outside it), and a report of another scope
  whose ids read alike (or of another project) keeps its file;
* ``demo``'s sample request, config and digest key, and the replay reports: a link planted at the name is
  refused with ``unsafe_write_target`` (one JSON line, exit 2, no traceback), its target untouched;
* ``provider/outputs.py``'s ``write_file_in`` itself: tests/unit/test_write_file_in.py.

Each command runs as a subprocess with HOME and the config in a temporary folder.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CliResult, run_cli, scope_entry, write_config

AGENT, PROJECT = "claude-agent", "demo"


@pytest.fixture(scope="module")
def fixture(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    from obelisk_session_evidence.fixtures.builder import build_fixture

    info = build_fixture(tmp_path_factory.mktemp("fx") / "fx", generation="current")
    return info.db_path, json.loads(info.manifest_path.read_text(encoding="utf-8"))


def _config(tmp_path: Path, manifest: dict[str, Any], scopes: list[tuple[str, str, str]]) -> Path:
    folder = tmp_path / "cfg"
    folder.mkdir(mode=0o700)
    root = manifest["repos"]["alpha-svc"]
    return write_config(folder / "config.json", [scope_entry(a, p, r, ["claude"], [root]) for a, p, r in scopes])


def _env(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "home").mkdir(exist_ok=True)
    return {"HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "xdg")}


def _replay(db: Path, config: Path, out: Path, tmp_path: Path, agent: str, project: str, repo: str) -> CliResult:
    return run_cli("qualify", "--replay", "--agent-id", agent, "--project-id", project, "--repository-id", repo,
                   "--db", str(db), "--config", str(config), "--out", str(out), env=_env(tmp_path), timeout=300)


def _files(folder: Path) -> set[Path]:
    return {p for p in folder.rglob("*") if not p.is_dir()}


def _refusal(result: CliResult) -> dict[str, Any]:
    """The one JSON line of a typed refusal: exit 2, no traceback."""
    assert "Traceback" not in result.stderr, result.stderr
    assert result.code == 2, (result.stdout, result.stderr)
    lines = result.stdout.splitlines()
    assert len(lines) == 1, result.stdout
    doc: dict[str, Any] = json.loads(lines[0])
    assert doc["ok"] is False and set(doc["error"]) == {"code", "detail"}
    return doc


@pytest.mark.parametrize("repo", ["org/api", "x/../../escape", "a b\tc"])
def test_replay_reports_of_any_id_stay_inside_out(fixture: tuple[Path, dict[str, Any]], tmp_path: Path,
                                                  repo: str) -> None:
    db, manifest = fixture
    config = _config(tmp_path, manifest, [(AGENT, PROJECT, repo)])
    out = tmp_path / "work" / "a" / "b" / "out"
    (out / f"replay-{AGENT}-x").mkdir(parents=True)  # what a joined ``x/../..`` would climb out through
    before = _files(tmp_path / "work")
    result = _replay(db, config, out, tmp_path, AGENT, PROJECT, repo)
    assert "Traceback" not in result.stderr, result.stderr
    assert result.code in (0, 1), (result.stdout, result.stderr)  # passed or insufficient_history: reports made
    summary = json.loads(result.stdout)
    report = Path(summary["report"])
    assert report.parent == out and Path(summary["markdown"]).parent == out
    assert _files(tmp_path / "work") - before == _files(out)  # nothing written anywhere else
    assert json.loads(report.read_text(encoding="utf-8"))["scope"]["repository_id"] == repo
    assert "/" not in report.name and report.name.startswith(f"replay-{AGENT}-")


def test_a_report_of_another_scope_keeps_its_file(fixture: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    """Another project with the same agent and repository, and ids that read alike once joined by ``-``, each get
    a file of their own: nothing overwrites another scope's report."""
    db, manifest = fixture
    scopes = [(AGENT, PROJECT, "alpha-svc"), (AGENT, "other", "alpha-svc"), ("a-b", PROJECT, "c"),
              ("a", PROJECT, "b-c")]
    config = _config(tmp_path, manifest, scopes)
    out = tmp_path / "out"
    reports = []
    for agent, project, repo in scopes:
        result = _replay(db, config, out, tmp_path, agent, project, repo)
        assert result.code in (0, 1), (result.stdout, result.stderr)
        reports.append(Path(json.loads(result.stdout)["report"]))
    assert reports[0].name == f"replay-{AGENT}-alpha-svc.json"  # a plain scope keeps the documented name
    assert len(set(reports)) == len(scopes)
    for (agent, project, repo), report in zip(scopes, reports, strict=True):
        assert json.loads(report.read_text(encoding="utf-8"))["scope"] == {
            "agent_id": agent, "project_id": project, "repository_id": repo}
    again = _replay(db, config, out, tmp_path, AGENT, PROJECT, "alpha-svc")  # its own report is replaced
    assert Path(json.loads(again.stdout)["report"]) == reports[0]
    assert len(list(out.glob("*.json"))) == len(scopes)


def test_replay_refuses_a_link_planted_at_its_report(fixture: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    db, manifest = fixture
    config = _config(tmp_path, manifest, [(AGENT, PROJECT, "alpha-svc")])
    out = tmp_path / "out"
    out.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    for name in (f"replay-{AGENT}-alpha-svc.json", f"replay-{AGENT}-alpha-svc.md"):
        (out / name).symlink_to(victim)
        doc = _refusal(_replay(db, config, out, tmp_path, AGENT, PROJECT, "alpha-svc"))
        assert doc["error"]["code"] == "unsafe_write_target"
        assert str(tmp_path) not in doc["error"]["detail"]
        assert victim.read_text() == "keep me\n" and (out / name).is_symlink()
        (out / name).unlink()


@pytest.mark.parametrize("name", ["request.json", "config.json"])
def test_demo_refuses_a_link_planted_at_what_it_writes(tmp_path: Path, name: str) -> None:
    demo = tmp_path / "demo"
    demo.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    (demo / name).symlink_to(victim)
    doc = _refusal(run_cli("demo", "--dir", str(demo), env=_env(tmp_path), timeout=300))
    assert doc["error"]["code"] == "unsafe_write_target"
    assert victim.read_text() == "keep me\n" and (demo / name).is_symlink()


@pytest.mark.parametrize("target", ["missing", "existing"])
def test_demo_refuses_a_link_planted_at_the_digest_key(tmp_path: Path, target: str) -> None:
    demo = tmp_path / "demo"
    demo.mkdir()
    aim = tmp_path / "aim.key"
    if target == "existing":
        aim.write_text("ab" * 32 + "\n")
        aim.chmod(0o600)
    (demo / "digest.key").symlink_to(aim)
    doc = _refusal(run_cli("demo", "--dir", str(demo), env=_env(tmp_path), timeout=300))
    assert doc["error"]["code"] == "unsafe_write_target"
    assert (demo / "digest.key").is_symlink()
    assert aim.exists() == (target == "existing")
    if target == "existing":
        assert aim.read_text() == "ab" * 32 + "\n"
