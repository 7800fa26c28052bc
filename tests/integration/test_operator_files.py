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
import os
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


def _earlier_demo(tmp_path: Path) -> Path:
    """A folder an earlier demo built in, as far as the demo can tell (its manifest): the demo builds there again."""
    from obelisk_session_evidence.fixtures.manifest import FIXTURE_FORMAT

    demo = tmp_path / "demo"
    demo.mkdir()
    (demo / "manifest.json").write_text(json.dumps({"format": FIXTURE_FORMAT}))
    return demo


@pytest.mark.parametrize("name", ["request.json", "config.json"])
def test_demo_refuses_a_link_planted_at_what_it_writes(tmp_path: Path, name: str) -> None:
    demo = _earlier_demo(tmp_path)
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    (demo / name).symlink_to(victim)
    doc = _refusal(run_cli("demo", "--dir", str(demo), env=_env(tmp_path), timeout=300))
    assert doc["error"]["code"] == "unsafe_write_target"
    assert victim.read_text() == "keep me\n" and (demo / name).is_symlink()


@pytest.mark.parametrize("target", ["missing", "existing"])
def test_demo_refuses_a_link_planted_at_the_digest_key(tmp_path: Path, target: str) -> None:
    demo = _earlier_demo(tmp_path)
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


def _tree(folder: Path) -> dict[str, bytes | str]:
    """Every entry under ``folder``: a file's bytes, a link's target, a folder as ``"dir"``."""
    tree: dict[str, bytes | str] = {}
    for path in sorted(folder.rglob("*")):
        name = str(path.relative_to(folder))
        tree[name] = os.readlink(path) if path.is_symlink() else "dir" if path.is_dir() else path.read_bytes()
    return tree


@pytest.mark.parametrize("planted", ["obelisk.sqlite", "home", "manifest.json", "config.json", "digest.key",
                                     "request.json", "link"])
def test_demo_refuses_a_folder_that_is_not_an_earlier_demos(tmp_path: Path, planted: str) -> None:
    """Issue 30: ``demo --dir`` into a folder holding a file under a name the demo writes, when no earlier demo
    wrote it (the user's own index, transcripts, config...), is refused with ``demo_folder_in_use``: one JSON
    line, exit 2, no traceback (the fixture builder raised one), and nothing there written or removed (a
    ``config.json`` of the user's was overwritten)."""
    demo = tmp_path / "mine"
    demo.mkdir()
    (demo / "notes.txt").write_text("mine\n")
    if planted == "home":
        (demo / "home" / ".claude").mkdir(parents=True)
        (demo / "home" / ".claude" / "settings.json").write_text("{}\n")
    elif planted == "link":
        (demo / "obelisk.sqlite").symlink_to(tmp_path / "nowhere")
    elif planted == "manifest.json":
        (demo / planted).write_text(json.dumps({"format": "someone-else/1"}))
    else:
        (demo / planted).write_bytes(b"the user's own " + planted.encode() + b"\n")
    before = _tree(demo)
    result = run_cli("demo", "--dir", str(demo), env=_env(tmp_path), timeout=300)
    doc = _refusal(result)
    assert doc["error"]["code"] == "demo_folder_in_use" and str(tmp_path) not in doc["error"]["detail"]
    assert _tree(demo) == before


def test_demo_builds_beside_other_files_and_again_over_its_own_build(tmp_path: Path) -> None:
    """A folder holding none of the demo's names gets the demo beside what is there (untouched); a second run
    replaces the first build; a file given as the folder is refused."""
    demo = tmp_path / "mine"
    demo.mkdir()
    (demo / "notes.txt").write_text("mine\n")
    for _ in range(2):
        result = run_cli("demo", "--dir", str(demo), env=_env(tmp_path), timeout=300)
        assert result.code == 0 and "Traceback" not in result.stderr, result.stderr
        assert (demo / "notes.txt").read_text() == "mine\n" and (demo / "request.json").is_file()
    doc = _refusal(run_cli("demo", "--dir", str(demo / "notes.txt"), env=_env(tmp_path), timeout=300))
    assert doc["error"]["code"] == "demo_folder_in_use"
    assert (demo / "notes.txt").read_text() == "mine\n"
