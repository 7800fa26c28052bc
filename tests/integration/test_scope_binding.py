"""What ``enable`` binds (issue 30 "Trust, round three") and the stage-2 gate (issue 36), through the CLI.

Every test runs ``enable``/``query``/``status`` as subprocesses with HOME and the config in a temp dir, over an
Obelisk-shaped fixture index whose repositories are real git repositories made with the ``git`` binary:

* a worktree is bound only when its own ``.git`` points back into this repository's git directory: a planted
  ``.git/worktrees/x/gitdir`` naming another repository or the home directory binds nothing, and that
  repository's sessions do not come back as evidence;
* a root that is ``/``, the home directory, or holds another repository is refused (``root_too_broad``,
  ``root_too_large``) unless ``--allow-broad-root`` (never for ``/``); a root that overlaps another enabled
  scope reading a common source is refused (``root_overlaps_scope``) unless ``--allow-shared-root``; a waiver
  is recorded and ``status`` shows it;
* the stage-2 gate refuses a report that did not pass and a report whose ``sources`` is not a list, each in a
  setup where the same report with only that field right is accepted (so nothing else refuses it);
* ``repository_identity`` never raises, also for a remote git prints but Python cannot parse and a config that
  makes ``git remote -v`` fail.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from obelisk_session_evidence.admission.config import load_config
from obelisk_session_evidence.commands import binding
from obelisk_session_evidence.commands.gitlink import MAX_LINK_BYTES
from obelisk_session_evidence.commands.identity import remote_digest, repository_identity
from obelisk_session_evidence.commands.lifecycle import enable_scope
from obelisk_session_evidence.commands.qualify.replay.document import REPLAY_FORMAT
from obelisk_session_evidence.digest import DigestKey, load_key, scope_basis
from obelisk_session_evidence.fixtures.builder import build_fixture

from tests.conftest import CLI, REPO, make_request

AGENT, PROJECT = "claude-agent", "demo"
KEY = DigestKey(bytes(range(32)))
GIT_ENV = {"GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "T",
           "GIT_COMMITTER_EMAIL": "t@example.invalid", "GIT_CONFIG_NOSYSTEM": "1"}


class World(NamedTuple):
    db: Path
    home: Path  # the fixture's home: every repository and transcript lives under it
    repos: dict[str, Path]
    env: dict[str, str]
    config: Path


@pytest.fixture
def world(tmp_path: Path) -> World:
    """A fresh fixture index (alpha-svc a git repository with its worktree alpha-svc-wt; beta-web, alpha-svc-evil
    plain directories) and a CLI environment whose HOME is an empty directory of its own."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    info = build_fixture(tmp_path / "fx", generation="current")
    repos = {name: Path(path) for name, path in json.loads(info.manifest_path.read_text())["repos"].items()}
    assert (repos["alpha-svc"] / ".git").is_dir() and (repos["alpha-svc-wt"] / ".git").is_file()
    home = tmp_path / "operator-home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OBELISK", "GIT_"))}
    env.update({"HOME": str(home), "XDG_CONFIG_HOME": str(tmp_path / "xdg"), "OBELISK_DB": str(info.db_path)})
    return World(info.db_path, info.home, repos, env, tmp_path / "xdg" / "obelisk-session-evidence" / "config.json")


def git(cwd: Path, *args: str) -> str:
    genv = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    genv.update({**GIT_ENV, "GIT_CONFIG_GLOBAL": os.devnull})
    return subprocess.run(["git", *args], cwd=cwd, env=genv, capture_output=True, timeout=30,
                          check=True).stdout.decode()


def run(env: dict[str, str], *args: str, stdin: bytes = b"") -> tuple[int, dict[str, Any], str]:
    proc = subprocess.run([*CLI, *args], input=stdin, capture_output=True, env=env, cwd=REPO, timeout=120,
                          check=False)
    assert proc.stderr == b"", proc.stderr.decode("utf-8", "replace")  # never a traceback
    out = proc.stdout.decode()
    lines = [line for line in out.splitlines() if line.strip()]
    assert len(lines) == 1, out
    return proc.returncode, json.loads(lines[0]), out


def enable(w: World, *roots: Path | str, agent: str = AGENT, project: str = PROJECT,
           repository: str = "alpha-svc", sources: tuple[str, ...] = ("claude",),
           extra: tuple[str, ...] = ()) -> tuple[int, dict[str, Any], str]:
    args = ["enable", "--agent-id", agent, "--project-id", project, "--repository-id", repository]
    for source in sources:
        args += ["--source", source]
    for root in roots:
        args += ["--root", str(root)]
    return run(w.env, *args, *extra)


def evidence(w: World, terms: list[str], repository: str = "alpha-svc", agent: str = AGENT,
             project: str = PROJECT) -> list[dict[str, Any]]:
    request = make_request(scope={"agent_id": agent, "project_id": project, "repository_id": repository,
                                  "allow_cross_agent": False, "allow_cross_project": False},
                           evidence_types=["file_history", "summary", "prior_failure"], query_terms=terms)
    code, doc, _ = run(w.env, "query", stdin=json.dumps(request).encode())
    assert code == 0, doc["error"]
    items: list[dict[str, Any]] = doc["result"]["items"]
    return items


def status(w: World) -> tuple[dict[str, Any], str]:
    code, doc, _ = run(w.env, "status", "--format", "json")
    assert code == 0
    text = subprocess.run([*CLI, "status"], capture_output=True, env=w.env, cwd=REPO, timeout=120, check=True)
    return doc, text.stdout.decode()


# ======================================================================== 1. a forged worktree widens the scope


def _plant(repo: Path, name: str, gitdir: Path) -> None:
    """What anyone who can write into ``repo/.git`` can do: a worktree entry naming any directory."""
    entry = repo / ".git" / "worktrees" / name
    entry.mkdir(parents=True)
    (entry / "gitdir").write_text(f"{gitdir}\n")
    (entry / "HEAD").write_text(git(repo, "rev-parse", "HEAD"))
    (entry / "commondir").write_text("../..\n")


@pytest.mark.parametrize(("target", "reason"), [
    ("other_repository", "not_this_repository"),  # beta-web made a repository of its own; its .git is its own
    ("home_prunable", "prunable"),                # $HOME, which holds every repository; git marks it prunable
    ("home_linked_back", "contains_bound_root"),  # $HOME with a .git file naming the planted entry back
])
def test_a_planted_worktree_entry_binds_nothing(world: World, target: str, reason: str) -> None:
    w = world
    alpha, beta = w.repos["alpha-svc"], w.repos["beta-web"]
    assert any("Button" in i["snippet"] for i in evidence_in_beta(w))  # beta-web's sessions hold "Button"
    if target == "other_repository":
        git(beta, "init", "-q", "-b", "main")
        git(beta, "add", "-A")
        git(beta, "commit", "-q", "-m", "beta")
        planted = beta
    else:
        w.env["HOME"] = str(w.home)  # the fixture's home: every repository's sessions are below it
        planted = w.home
        if target == "home_linked_back":
            (planted / ".git").write_text(f"gitdir: {alpha}/.git/worktrees/x\n")
    _plant(alpha, "x", planted / ".git")
    assert str(planted) in git(alpha, "worktree", "list", "--porcelain")  # git itself lists it
    code, doc, out = enable(w, alpha, extra=("--include-worktrees",))
    assert code == 0, doc
    (entry,) = load_config(w.config).scopes
    assert entry.roots == (str(alpha), str(w.repos["alpha-svc-wt"]))  # the real worktree, and nothing else
    assert entry.repository_identity is not None
    assert str(planted) not in entry.repository_identity.worktrees
    assert doc["scope"]["worktrees_bound"] == 1
    assert doc["scope"]["worktrees_refused"] == [{"digest": load_key(w.config).of_text(str(planted)),
                                                  "reason": reason}]
    assert str(planted) not in out and str(w.home) not in out
    # The planted directory's sessions do not come back as this repository's evidence.
    assert not any("Button" in i["snippet"] for i in evidence(w, ["Button"]))
    assert any("stripe" in i["snippet"].lower() for i in evidence(w, ["ModuleNotFoundError", "stripe"]))


def evidence_in_beta(w: World) -> list[dict[str, Any]]:
    """beta-web's own evidence for "Button", from a config of its own (left as it was found)."""
    env = dict(w.env, XDG_CONFIG_HOME=str(w.config.parents[2] / "xdg-beta"))
    other = World(w.db, w.home, w.repos, env, w.config)
    assert enable(other, w.repos["beta-web"], repository="beta-web")[0] == 0
    return evidence(other, ["Button"], repository="beta-web")


def test_a_worktree_whose_git_file_is_not_a_plain_link_is_refused(world: World) -> None:
    """The worktree's own ``.git`` is read as untrusted input: a regular file, bounded, one ``gitdir:`` line
    naming the entry that names it back. A symlink, an oversized file or an entry naming another
    ``.git`` file are each refused."""
    w = world
    alpha, wt = w.repos["alpha-svc"], w.repos["alpha-svc-wt"]
    link = (wt / ".git").read_text()
    for bad, reason in [("symlink", "not_this_repository"), ("oversized", "not_this_repository"),
                        ("two_lines", "not_this_repository"), ("other_entry", "not_this_repository")]:
        (wt / ".git").unlink()
        if bad == "symlink":
            (wt.parent / "link-target").write_text(link)
            (wt / ".git").symlink_to(wt.parent / "link-target")
        elif bad == "oversized":
            (wt / ".git").write_text(link + "\n" * MAX_LINK_BYTES)  # the same link, padded past the bound
        elif bad == "two_lines":
            (wt / ".git").write_text(link + link)
        else:
            _plant(alpha, f"decoy-{bad}", wt.parent / "elsewhere" / ".git")
            (wt / ".git").write_text(f"gitdir: {alpha}/.git/worktrees/decoy-{bad}\n")
        code, doc, _ = enable(w, alpha, extra=("--include-worktrees", "--replace"))
        assert code == 0, doc
        assert load_config(w.config).scopes[0].roots == (str(alpha),), bad
        assert reason in {r["reason"] for r in doc["scope"]["worktrees_refused"]}, (bad, doc)
        (wt / ".git").unlink()
        (wt / ".git").write_text(link)
    # A real worktree that holds another repository is as broad as such a root: refused.
    (wt / "vendor" / "lib").mkdir(parents=True)
    git(wt / "vendor" / "lib", "init", "-q")
    code, doc, _ = enable(w, alpha, extra=("--include-worktrees", "--replace"))
    assert load_config(w.config).scopes[0].roots == (str(alpha),)
    assert {r["reason"] for r in doc["scope"]["worktrees_refused"]} >= {"contains_another_repository"}, doc
    shutil.rmtree(wt / "vendor")
    code, doc, _ = enable(w, alpha, extra=("--include-worktrees", "--replace"))
    assert load_config(w.config).scopes[0].roots == (str(alpha), str(wt))


# ======================================================================== 2. over-broad and overlapping roots


def test_a_root_holding_other_repositories_is_refused_unless_allowed(world: World) -> None:
    w = world
    src = w.home / "src"  # alpha-svc, its worktree, beta-web, alpha-svc-evil
    code, doc, out = enable(w, src)
    assert code == 2, doc
    assert doc["error"]["code"] == "root_too_broad"
    assert "--root #1 holds another git repository" in doc["error"]["detail"]
    assert "--allow-broad-root" in doc["error"]["detail"] and str(src) not in out
    assert not w.config.exists()
    code, doc, _ = enable(w, src, extra=("--allow-broad-root",))
    assert code == 0, doc
    assert doc["scope"]["allowances"] == ["broad_root"]
    assert doc["allowed"] == [{"allowance": "broad_root", "root": 1, "reason": "contains_another_repository"}]
    assert load_config(w.config).scopes[0].allowances == ("broad_root",)
    public, text = status(w)
    assert public["scopes"][0]["allowances"] == ["broad_root"]
    assert "allowed    broad root (--allow-broad-root)" in text
    # A repository's own directory needs no waiver, and records none.
    code, doc, _ = enable(w, w.repos["alpha-svc"], extra=("--replace",))
    assert code == 0 and doc["scope"]["allowances"] == [] and doc["allowed"] == []
    assert status(w)[0]["scopes"][0]["allowances"] == []


@pytest.mark.parametrize("which", ["slash", "home", "holds_home"])
def test_slash_and_the_home_directory_are_refused(world: World, which: str) -> None:
    w = world
    root = {"slash": Path("/"), "home": Path(w.env["HOME"]), "holds_home": Path(w.env["HOME"]).parent}[which]
    code, doc, out = enable(w, root)
    assert code == 2, doc
    assert doc["error"]["code"] == "root_too_broad" and w.env["HOME"] not in out
    assert {"slash": "is /", "home": "is the home directory",
            "holds_home": "contains the home directory"}[which] in doc["error"]["detail"]
    assert not w.config.exists()
    code, doc, _ = enable(w, root, extra=("--allow-broad-root",))
    if which == "slash":  # no flag binds /: the scope's path test matches no session under it
        assert code == 2 and doc["error"]["code"] == "root_too_broad", doc
        assert not w.config.exists()
    else:
        assert code == 0 and doc["scope"]["allowances"] == ["broad_root"], doc


def test_the_password_databases_home_is_refused_whatever_home_says(world: World) -> None:
    """``$HOME`` can point anywhere (here a temporary folder): the home directory the password database gives
    this user is refused as a root all the same."""
    import pwd

    w = world
    home = Path(os.path.realpath(pwd.getpwuid(os.getuid()).pw_dir))
    assert str(home) != os.path.realpath(w.env["HOME"])
    code, doc, _ = enable(w, home)
    assert code == 2 and doc["error"]["code"] == "root_too_broad", doc
    assert "is the home directory" in doc["error"]["detail"]
    assert not w.config.exists()


def test_a_tree_too_large_to_walk_is_refused_unless_allowed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The walk stops at ``WALK_ENTRIES`` (lowered here: a tree of 100,000 entries takes seconds to make) and
    says so, instead of walking on."""
    root = tmp_path / "big"
    for i in range(30):
        (root / f"d{i}").mkdir(parents=True)
        (root / f"d{i}" / "f").touch()
    monkeypatch.setattr(binding, "WALK_ENTRIES", 40)
    scanned: list[str] = []
    real_scandir = os.scandir
    monkeypatch.setattr(os, "scandir", lambda p: (scanned.append(str(p)), real_scandir(p))[1])
    config = tmp_path / "cfg" / "config.json"
    code, doc = _direct(config, root)
    assert code == 2 and doc["error"]["code"] == "root_too_large", doc
    assert "more than 40 entries within 3 levels" in doc["error"]["detail"]
    assert len(scanned) < 30  # it stopped; it did not list every directory
    code, doc = _direct(config, root, allow_broad_root=True)
    assert code == 0 and doc["allowed"] == [{"allowance": "broad_root", "root": 1, "reason": "too_large_to_check"}]


def _direct(config: Path, *roots: Path, **overrides: Any) -> tuple[int, dict[str, Any]]:
    out = io.StringIO()
    kwargs: dict[str, Any] = {"config_path": config, "agent_id": AGENT, "project_id": PROJECT,
                              "repository_id": "r", "sources": ["claude"], "roots": [str(r) for r in roots],
                              "stage": 1, "include_worktrees": False, "qualification_report": None, "replace": True}
    kwargs.update(overrides)
    code = enable_scope(out=out, **kwargs)
    return code, json.loads(out.getvalue())


def test_the_walk_depth_symlinks_and_own_checkouts(tmp_path: Path) -> None:
    """A repository three levels down is found, four levels down is not (the documented depth); a symlink to
    another repository is not followed (its sessions lie outside the root by real path); this repository's own
    worktree and submodule inside the root are not "another repository"."""
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q")
    for depth, expected in [(3, "contains_another_repository"), (4, None)]:
        root = tmp_path / f"root{depth}"
        deep = root.joinpath(*(f"l{i}" for i in range(1, depth + 1)))
        deep.mkdir(parents=True)
        git(deep, "init", "-q")
        assert binding.breadth(str(root), None, []).reason == expected, depth
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "other").symlink_to(other)
    assert binding.breadth(str(linked), None, []).reason is None
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "commit", "-q", "--allow-empty", "-m", "one")
    git(repo, "worktree", "add", "-q", "-b", "wt", str(repo / "trees" / "wt"))
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(other_with_commit(other)), "vendor/o")
    assert (repo / "trees" / "wt" / ".git").is_file() and (repo / "vendor" / "o" / ".git").is_file()
    assert binding.breadth(str(repo), str(repo / ".git"), []).reason is None
    (repo / "trees" / "stray").mkdir()
    git(repo / "trees" / "stray", "init", "-q")
    assert binding.breadth(str(repo), str(repo / ".git"), []) == binding.Breadth("contains_another_repository", 2)


def other_with_commit(path: Path) -> Path:
    git(path, "commit", "-q", "--allow-empty", "-m", "one")
    return path


def test_two_agents_reading_one_source_on_one_root_are_refused(world: World) -> None:
    w = world
    alpha = w.repos["alpha-svc"]
    assert enable(w, alpha)[0] == 0
    code, doc, out = enable(w, alpha, agent="claude-review")
    assert code == 2, doc
    assert doc["error"]["code"] == "root_overlaps_scope"
    assert "agent claude-agent, project demo, repository alpha-svc" in doc["error"]["detail"]
    assert "source claude" in doc["error"]["detail"] and "--allow-shared-root" in doc["error"]["detail"]
    assert str(alpha) not in out
    assert [s.agent_id for s in load_config(w.config).scopes] == [AGENT]
    # Another source on the same root reads other sessions: no overlap.
    assert enable(w, alpha, agent="codex-agent", sources=("codex",))[0] == 0
    # Replacing a scope is no overlap with itself.
    assert enable(w, alpha, extra=("--replace",))[0] == 0
    code, doc, _ = enable(w, alpha, agent="claude-review", extra=("--allow-shared-root",))
    assert code == 0, doc
    assert doc["scope"]["allowances"] == ["shared_root"]
    assert doc["allowed"] == [{"allowance": "shared_root", "root": 1, "agent_id": AGENT, "project_id": PROJECT,
                               "repository_id": "alpha-svc"}]
    public, text = status(w)
    assert [s["allowances"] for s in public["scopes"]] == [[], [], ["shared_root"]]
    assert "allowed    shared root (--allow-shared-root)" in text


@pytest.mark.parametrize("first", ["parent", "child"])
def test_another_project_on_a_parent_or_child_directory_is_refused(world: World, first: str) -> None:
    w = world
    parent, child = w.repos["alpha-svc"], w.repos["alpha-svc"] / "src"
    scopes = {"parent": ("demo", "alpha-svc", parent), "child": ("billing", "billing-src", child)}
    later = "child" if first == "parent" else "parent"
    project, repository, root = scopes[first]
    assert enable(w, root, project=project, repository=repository)[0] == 0
    project, repository, root = scopes[later]
    code, doc, _ = enable(w, root, project=project, repository=repository)
    assert code == 2 and doc["error"]["code"] == "root_overlaps_scope", doc
    code, doc, _ = enable(w, root, project=project, repository=repository, extra=("--allow-shared-root",))
    assert code == 0 and doc["scope"]["allowances"] == ["shared_root"], doc


def test_the_demo_enablements_pass_every_check(world: World) -> None:
    """What ``demo`` enables (each agent, both repositories; alpha-svc with its worktree) needs no waiver, and
    alpha-svc's real worktree is bound by ``--include-worktrees``."""
    w = world
    for agent, source in [("claude-agent", "claude"), ("codex-agent", "codex")]:
        for repository, roots in [("alpha-svc", (w.repos["alpha-svc"], w.repos["alpha-svc-wt"])),
                                  ("beta-web", (w.repos["beta-web"],))]:
            code, doc, _ = enable(w, *roots, agent=agent, repository=repository, sources=(source,))
            assert code == 0 and doc["allowed"] == [] and doc["scope"]["worktrees_refused"] == [], doc
    code, doc, _ = enable(w, w.repos["alpha-svc"], extra=("--include-worktrees", "--replace"))
    assert code == 0 and doc["scope"]["worktrees_bound"] == 1 and doc["scope"]["worktrees_refused"] == [], doc


# ======================================================================== 3. the stage-2 gate (issue 36)


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _report(path: Path, **fields: Any) -> Path:
    doc: dict[str, Any] = {"schema_version": "qualification_report_v0", "passed": True, "generated_at": _now(),
                           "scope": {"agent_id": AGENT, "project_id": PROJECT, "repository_id": "alpha-svc"},
                           "sources": ["claude"]}
    doc.update(fields)
    path.write_text(json.dumps(doc))
    return path


def _stage_2(w: World, report: Path, *roots: Path, sources: tuple[str, ...] = ("claude",),
             synthetic: bool = True) -> tuple[int, dict[str, Any], str]:
    extra = ("--stage", "2", "--qualification-report", str(report), "--replace", "--allow-unknown-source")
    return enable(w, *roots, sources=sources,
                  extra=(*extra, "--accept-synthetic-qualification") if synthetic else extra)


@pytest.mark.parametrize("kind", ["synthetic", "replay"])
def test_stage_2_refuses_a_report_that_did_not_pass(world: World, tmp_path: Path, kind: str) -> None:
    """The same report, right in everything (scope, sources, a fresh time, the keyed scope digest of a replay, the
    synthetic acceptance), is refused with passed=false and accepted with passed=true."""
    w = world
    root = w.repos["alpha-svc"]
    assert enable(w, root)[0] == 0  # stage 1 first: the install's key, which a replay report's digest needs
    fields: dict[str, Any] = {}
    if kind == "replay":
        digest = load_key(w.config).of(scope_basis(AGENT, PROJECT, "alpha-svc", ["claude"], [str(root)]))
        fields = {"kind": "replay", "format": REPLAY_FORMAT, "scope_digest": digest}
    before = w.config.read_bytes()
    code, doc, _ = _stage_2(w, _report(tmp_path / "failed.json", passed=False, **fields), root,
                            synthetic=kind == "synthetic")
    assert code == 2, doc
    assert doc["error"] == {"code": "qualification_required",
                            "detail": "the qualification report did not pass"}
    assert w.config.read_bytes() == before
    code, doc, _ = _stage_2(w, _report(tmp_path / "passed.json", passed=True, **fields), root,
                            synthetic=kind == "synthetic")
    assert code == 0, doc
    assert load_config(w.config).scopes[0].stage == 2
    assert doc["scope"]["qualification_kind"] == kind


def test_stage_2_refuses_a_replay_report_of_an_unknown_format(world: World, tmp_path: Path) -> None:
    """Issue 36: a replay report right in everything but its ``format`` (another version's, or none) is refused,
    the config untouched; the same report with the known format is accepted."""
    w = world
    root = w.repos["alpha-svc"]
    assert enable(w, root)[0] == 0
    digest = load_key(w.config).of(scope_basis(AGENT, PROJECT, "alpha-svc", ["claude"], [str(root)]))
    before = w.config.read_bytes()
    for name, fmt in (("other.json", REPLAY_FORMAT + "-next"), ("none.json", None)):
        fields = {"kind": "replay", "scope_digest": digest, **({"format": fmt} if fmt else {})}
        code, doc, _ = _stage_2(w, _report(tmp_path / name, **fields), root, synthetic=False)
        assert (code, doc["error"]) == (2, {"code": "qualification_required",
                                            "detail": "the replay report has an unknown format"}), doc
        assert w.config.read_bytes() == before
    code, doc, _ = _stage_2(w, _report(tmp_path / "known.json", kind="replay", format=REPLAY_FORMAT,
                                       scope_digest=digest), root, synthetic=False)
    assert code == 0 and doc["scope"]["qualification_kind"] == "replay", doc


@pytest.mark.parametrize("holder", ["report", "scope"])
@pytest.mark.parametrize("shape", ["string", "object"])
def test_stage_2_refuses_sources_that_are_not_a_list(world: World, tmp_path: Path, holder: str, shape: str) -> None:
    """``sources`` must be a list equal to the scope's: a string (``"x"`` is a set of one character, the name of
    source ``x``) or an object (whose keys are the names) does not match, though its items would."""
    w = world
    root = w.repos["alpha-svc"]
    bad: Any = "x" if shape == "string" else {"x": True}

    def report(name: str, sources: Any) -> Path:
        scope = {"agent_id": AGENT, "project_id": PROJECT, "repository_id": "alpha-svc"}
        if holder == "scope":
            return _report(tmp_path / name, scope={**scope, "sources": sources}, sources=["x"])
        return _report(tmp_path / name, scope=scope, sources=sources)

    code, doc, _ = _stage_2(w, report("bad.json", bad), root, sources=("x",))
    assert code == 2, doc
    assert doc["error"] == {"code": "qualification_required",
                            "detail": "the qualification report is for other sources"}
    assert not w.config.exists()
    code, doc, _ = _stage_2(w, report("good.json", ["x"]), root, sources=("x",))
    assert code == 0 and doc["scope"]["stage"] == 2, doc


def test_stage_2_records_a_plain_directory_as_a_directory(world: World, tmp_path: Path) -> None:
    """A root that is no git repository is recorded ``kind: directory`` (no root commit, no remote), never
    ``git``; next to a git root the scope's identity is the git root's (``_merge_identity``)."""
    w = world
    plain = w.repos["beta-web"]
    if subprocess.run(["git", "-C", str(plain), "rev-parse"], capture_output=True, check=False).returncode == 0:
        pytest.skip("the temp directory lies inside a git repository on this machine")
    report = _report(tmp_path / "r.json", scope={"agent_id": AGENT, "project_id": PROJECT,
                                                 "repository_id": "alpha-svc"})
    code, doc, _ = _stage_2(w, report, plain)
    assert code == 0, doc
    assert (doc["scope"]["repository_kind"], doc["scope"]["root_commit"]) == ("directory", None)
    identity = load_config(w.config).scopes[0].repository_identity
    assert identity is not None and identity.kind == "directory" and identity.root_commit is None


# ======================================================================== 4. repository_identity never raises


def test_identity_never_raises_on_remotes_git_prints_or_fails_to_list(world: World) -> None:
    w = world
    alpha = w.repos["alpha-svc"]
    git(alpha, "remote", "add", "origin", "git@github.com:acme/alpha-svc.git")
    git(alpha, "remote", "add", "broken", "https://[::1/x")  # git keeps it; urllib refuses it (ValueError)
    identity, _ = repository_identity(str(alpha), include_worktrees=False, key=KEY)
    assert identity.kind == "git" and identity.root_commit
    assert identity.remote_digests == (remote_digest("github.com/acme/alpha-svc", KEY),)
    code, doc, _ = enable(w, alpha)  # ``run`` asserts an empty stderr: no traceback
    assert code == 0 and doc["scope"]["remote_digests"] == [remote_digest("github.com/acme/alpha-svc",
                                                                          load_key(w.config))], doc
    # A remote without a URL: rev-parse still works, ``git remote -v`` fails.
    with (alpha / ".git" / "config").open("a") as handle:
        handle.write('[remote "x"]\n\turl\n')
    assert git(alpha, "rev-parse", "--show-toplevel").strip() == str(alpha)
    listed = subprocess.run(["git", "-C", str(alpha), "remote", "-v"], capture_output=True, check=False)
    assert listed.returncode != 0
    identity, _ = repository_identity(str(alpha), include_worktrees=True, key=KEY)
    assert identity.kind == "git" and identity.root_commit and identity.remote_digests == ()
    code, doc, _ = enable(w, alpha, extra=("--replace", "--include-worktrees"))
    assert code == 0 and doc["scope"]["remote_digests"] == [] and doc["scope"]["worktrees_bound"] == 1, doc


def test_identity_never_raises_on_a_remote_url_holding_a_newline(world: World) -> None:
    """A remote URL set in the config may hold a newline: ``git remote -v`` then prints a line without a tab,
    which is no remote (skipped), never an error; the other remotes still count."""
    w = world
    alpha = w.repos["alpha-svc"]
    git(alpha, "remote", "add", "origin", "git@github.com:acme/alpha-svc.git")
    git(alpha, "config", "remote.evil.url", "https://example.com/a\nno-tab-here")
    identity, _ = repository_identity(str(alpha), include_worktrees=False, key=KEY)
    assert identity.kind == "git" and identity.root_commit
    assert remote_digest("github.com/acme/alpha-svc", KEY) in identity.remote_digests


def test_every_enable_refusal_code_is_a_documented_one() -> None:
    """``errors.LIFECYCLE_CODES`` lists exactly the codes ``enable``/``disable`` refuse with (stable codes)."""
    import re

    from obelisk_session_evidence.commands import lifecycle
    from obelisk_session_evidence.errors import LIFECYCLE_CODES

    source = Path(lifecycle.__file__).read_text()
    used = set(re.findall(r'_Refused\(\s*"([a-z_]+)"', source))
    assert used == set(LIFECYCLE_CODES)
