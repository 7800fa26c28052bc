"""Shared test helpers: request builders, a CLI runner through a real subprocess, config writers."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
#: The CLI as a subprocess: the installed package, exactly as ``obelisk-session-evidence`` runs it.
CLI = (sys.executable, "-m", "obelisk_session_evidence")


def make_request(**overrides: Any) -> dict[str, Any]:
    request: dict[str, Any] = {
        "schema_version": "historical_evidence_request_v0",
        "request_id": "req-1",
        "situation_id": "sit-1",
        "trigger": "operator_requested_history",
        "scope": {"agent_id": "claude-main", "project_id": "acme", "repository_id": "acme-api",
                  "allow_cross_agent": False, "allow_cross_project": False},
        "evidence_types": ["prior_failure"],
        "query_terms": ["ModuleNotFoundError", "jwt"],
        "limits": {"max_sessions": 5, "max_items": 8, "max_snippet_chars": 300, "max_total_chars": 3000},
    }
    request.update(overrides)
    return request


def write_config(path: Path, scopes: list[dict[str, Any]], **extra: Any) -> Path:
    config = {"config_version": 1, "recency_days": 36500, "scopes": scopes, **extra}
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


def scope_entry(agent: str, project: str, repo: str, sources: list[str], roots: list[str],
                stage: int = 1) -> dict[str, Any]:
    return {"agent_id": agent, "project_id": project, "repository_id": repo, "sources": sources,
            "roots": roots, "stage": stage}


class CliResult:
    def __init__(self, proc: subprocess.CompletedProcess[bytes]) -> None:
        self.code = proc.returncode
        self.stdout = proc.stdout.decode("utf-8")
        self.stderr = proc.stderr.decode("utf-8", "replace")

    def document(self) -> dict[str, Any]:
        lines = [ln for ln in self.stdout.splitlines() if ln.strip()]
        assert len(lines) == 1, f"expected exactly one JSON document on stdout, got {len(lines)} lines"
        doc: dict[str, Any] = json.loads(lines[0])
        return doc


def run_cli(*args: str, stdin: bytes = b"", env: dict[str, str] | None = None,
            timeout: float = 60) -> CliResult:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("OBELISK")}
    full_env.update(env or {})
    proc = subprocess.run([*CLI, *args], input=stdin, capture_output=True,
                          env=full_env, timeout=timeout, cwd=REPO, check=False)
    return CliResult(proc)


@pytest.fixture
def isolated_env(tmp_path: Path) -> dict[str, str]:
    """Env for CLI runs: HOME and the platform config dir point into tmp_path (never the real ~/.obelisk);
    the config is at its default path there (absent: default-off)."""
    home = tmp_path / "home"
    home.mkdir()
    return {"HOME": str(home),
            "XDG_CONFIG_HOME": str(tmp_path / "xdg"), "XDG_CACHE_HOME": str(tmp_path / "xdg-cache")}


def lay_out_package(dest: Path) -> Path:
    """The installed package, laid out in ``dest`` from the checkout exactly as pyproject's ``package-dir`` maps
    it (``provider/`` -> ``obelisk_session_evidence/``, ``sql_templates/`` -> its ``sql_templates/``, ...).

    For interpreters that cannot see this venv's editable install (another uid): put ``dest`` on PYTHONPATH.
    """
    mapping = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["package-dir"]
    for name, folder in sorted(mapping.items()):  # parents before children
        shutil.copytree(REPO / folder, dest.joinpath(*name.split(".")), dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("__pycache__"))
    return dest


@pytest.fixture(scope="session")
def public_package_dir() -> Any:
    """A world-readable copy of the package (see :func:`lay_out_package`) for tests that run as uid 65534."""
    base = Path(tempfile.mkdtemp(prefix="ose-public-pkg-"))
    try:
        lay_out_package(base / "lib")
        for path in [base, *base.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        yield base / "lib"
    finally:
        shutil.rmtree(base, ignore_errors=True)
