"""``demo``: build a demo Obelisk-shaped index and config in a demo folder, enable a scope, and show answers.

Never reads or writes ``~/.obelisk``: everything lives in the demo folder (default ``./demo-index``). The config,
the digest key and the sample request are written as every operator file is (``provider/outputs.py``): a link
planted at one of their names is refused (``UnsafeWriteTarget``), never followed. The folder is a new one, one
that holds none of the names the demo writes (it builds beside what is there), or an earlier demo's (its
manifest says so: that build is replaced); any other is refused (``DemoFolderInUse``), so the demo never
overwrites or removes a file it did not write.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, TextIO

from ..admission.config import EnabledScope, ProviderConfig, save_config
from ..errors import DemoFolderInUse
from ..fixtures.builder import build_fixture
from ..fixtures.manifest import FIXTURE_FORMAT
from ..inputs import read_regular_file
from ..outputs import write_file_in
from ..service import WarmState, answer

DEFAULT_DIR = Path("demo-index")
#: Every name the demo writes in its folder: the fixture builder's (the index and its sidecars, ``home``, the
#: manifest), then the config, the digest key and the sample request.
DEMO_NAMES = ("obelisk.sqlite", "obelisk.sqlite-wal", "obelisk.sqlite-shm", "obelisk.sqlite-journal", "home",
              "manifest.json", "config.json", "digest.key", "request.json")
#: Bytes of an earlier demo's manifest read at most (one is about 100 KB).
_MANIFEST_BYTES = 16 * 1024 * 1024


def _request(request_id: str, agent: str, repo: str, types: list[str], terms: list[str], *,
             trigger: str = "operator_requested_history") -> dict[str, Any]:
    return {
        "schema_version": "historical_evidence_request_v0",
        "request_id": request_id,
        "situation_id": f"demo-{request_id}",
        "trigger": trigger,
        "scope": {"agent_id": agent, "project_id": "demo", "repository_id": repo,
                  "allow_cross_agent": False, "allow_cross_project": False},
        "evidence_types": types,
        "query_terms": terms,
        "limits": {"max_sessions": 5, "max_items": 6, "max_snippet_chars": 240, "max_total_chars": 2400},
    }


def _show(out: TextIO, title: str, envelope: dict[str, Any], code: int) -> None:
    out.write(f"\n=== {title}\n")
    out.write(f"outcome: {envelope['outcome']} (exit {code})")
    if envelope.get("error"):
        out.write(f"  error: {envelope['error']['code']} - {envelope['error']['detail']}")
    out.write("\n")
    result = envelope.get("result")
    if result:
        out.write(f"freshness: {result['freshness']}  truncated: {result['truncated']}  "
                  f"omitted: {result['omitted_count']}\n")
        for item in result["items"]:
            when = (item.get("observed_at") or "")[:10]
            out.write(f"  - {item['evidence_type']:<13} {when}  {item['snippet']}\n")
    if envelope.get("receipt"):
        receipt = envelope["receipt"]
        out.write("receipt (public, content-free): " + json.dumps(
            {k: receipt[k] for k in ("result_count", "evidence_type_counts", "freshness", "truncated",
                                     "omitted_count", "result_digest")}, ensure_ascii=False) + "\n")


def _earlier_demo(root: Path) -> bool:
    """Whether ``root`` holds an earlier demo's build: its ``manifest.json`` is a regular file naming the
    fixture's format."""
    try:
        manifest = json.loads(read_regular_file(root / "manifest.json", _MANIFEST_BYTES))
    except (OSError, ValueError, RecursionError):
        return False
    return isinstance(manifest, dict) and manifest.get("format") == FIXTURE_FORMAT


def check_demo_folder(root: Path) -> None:
    """Refuse (:class:`DemoFolderInUse`) a folder the demo may not build in: one that is not a folder, or holds
    a name the demo writes without being an earlier demo's."""
    if not os.path.lexists(root):
        return
    if not root.is_dir():
        raise DemoFolderInUse("the demo folder is not a folder: refused, nothing was written; give --dir a new "
                              "or empty folder")
    if not _earlier_demo(root) and any(os.path.lexists(root / name) for name in DEMO_NAMES):
        raise DemoFolderInUse


def run_demo(directory: Path | None, *, out: TextIO) -> int:

    root = (directory or DEFAULT_DIR).resolve()
    check_demo_folder(root)
    try:
        info = build_fixture(root, generation="current")
    except FileExistsError:  # a name the builder writes appeared since the check
        raise DemoFolderInUse from None
    manifest = json.loads(info.manifest_path.read_text(encoding="utf-8"))
    repos: dict[str, str] = manifest["repos"]
    agents: dict[str, list[str]] = manifest["agents"]
    scopes = []
    for agent, sources in sorted(agents.items()):
        for repo in ("alpha-svc", "beta-web"):
            roots = [repos[repo]] + ([repos["alpha-svc-wt"]] if repo == "alpha-svc" and "alpha-svc-wt" in repos
                                     else [])
            scopes.append(EnabledScope(agent_id=agent, project_id="demo", repository_id=repo,
                                       sources=tuple(sources), roots=tuple(roots), stage=1))
    # Each agent has both repositories of the demo project enabled, side by side (one entry per repository).
    config = ProviderConfig(recency_days=36500, transcript_homes=(str(info.home),), scopes=tuple(scopes))
    config_path = root / "config.json"
    claude, codex = sorted(agents)[0], sorted(agents)[-1]
    cases = _cases(claude, codex)
    save_config(config_path, config)
    sample = write_file_in(root, "request.json", (json.dumps(cases[0][1], indent=2) + "\n").encode("utf-8"),
                           role="the demo's request.json")
    out.write(f"demo index: {info.db_path} ({info.sessions} sessions, {info.messages} messages)\n")
    out.write(f"demo config: {config_path}\n")
    out.write("enabled scopes (agent / project / repository: sources; roots):\n")
    for scope in scopes:
        out.write(f"  {scope.agent_id} / {scope.project_id} / {scope.repository_id}: {', '.join(scope.sources)}; "
                  f"{', '.join(scope.roots)}\n")
    worst = 0
    warm = WarmState()  # the demo answers its requests as one serve process would
    for title, request in cases:
        response = answer(json.dumps(request).encode(), db_path=info.db_path, config_path=config_path, warm=warm)
        _show(out, title, response.envelope, response.exit_code)
        worst = max(worst, 1 if response.exit_code == 1 else 0)
    out.write(f"\nsample request: {sample}\n")
    out.write("Try it yourself:\n")
    out.write(f"  obelisk-session-evidence query --db {info.db_path} --config {config_path} --request {sample}\n")
    return worst


def _cases(claude: str, codex: str) -> list[tuple[str, dict[str, Any]]]:
    """The representative requests the demo answers, each with its question; the first is the sample request."""
    return [
        ("has this agent already hit this failure here?",
         _request("demo-1", claude, "alpha-svc", ["prior_failure", "tool_outcome"],
                  ["pytest -k billing", "ModuleNotFoundError"])),
        ("what was decided, and what files were touched?",
         _request("demo-2", claude, "alpha-svc", ["decision", "file_history", "summary"],
                  ["charge", "billing", "stripe"])),
        ("the same question from another agent's scope (codex) sees only its own history",
         _request("demo-3", codex, "alpha-svc", ["prior_failure"], ["traceback", "ModuleNotFoundError"])),
        ("the same agent's second repository answers from the same config",
         _request("demo-4", claude, "beta-web", ["file_history", "summary"], ["Button"])),
        ("a repository that was never enabled is refused",
         _request("demo-6", claude, "gamma-cli", ["prior_failure"], ["build"])),
        ("a replan trigger is refused at stage 1",
         _request("demo-5", claude, "alpha-svc", ["prior_failure"], ["billing"], trigger="replan_repetition")),
    ]
