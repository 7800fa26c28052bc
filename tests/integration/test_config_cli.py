"""Issue 30, items 4 and 5: the config as ``query`` and ``status`` read it through the CLI, HOME and the config
directory in a temporary folder: a repeated key is refused, and a config that cannot be trusted is
``config_invalid`` naming the config by its role, never its path (the reader itself:
tests/unit/test_config_reader.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

SCOPE = {"agent_id": "claude-main", "project_id": "acme", "repository_id": "acme-api", "sources": ["claude"],
         "roots": ["/src/acme-api"]}


def _cli_env(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """HOME and XDG_CONFIG_HOME in ``tmp_path``; the config at its default path there, with its digest key."""
    from tests.conftest import write_config

    (tmp_path / "home").mkdir()
    folder = tmp_path / "xdg" / "obelisk-session-evidence"
    folder.mkdir(parents=True, mode=0o700)
    config = write_config(folder / "config.json", [SCOPE])
    config.chmod(0o600)
    return {"HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "xdg")}, config


def _query(env: dict[str, str], request: bytes | None = None, *args: str) -> dict[str, Any]:
    from tests.conftest import make_request, run_cli

    result = run_cli("query", "--db", "/nonexistent/obelisk.sqlite", *args,
                     stdin=request if request is not None else json.dumps(make_request()).encode(), env=env)
    assert "Traceback" not in result.stderr
    return result.document()


@pytest.mark.parametrize("text", [
    '{"config_version": 1, "scopes": [], "scopes": [SCOPE]}',
    '{"config_version": 1, "scopes": [SCOPE], "ceilings": {"max_items": 7, "max_items": 50}}',
    '{"config_version": 1, "scopes": [SCOPE], "recency_days": 30, "recency_days": 36500}',
], ids=["top level", "ceilings", "a setting"])
def test_a_repeated_key_in_the_config_is_config_invalid(tmp_path: Path, text: str) -> None:
    """``json.loads`` keeps the last of two equal keys; the config is read strictly, so it is refused."""
    env, config = _cli_env(tmp_path)
    assert _query(env)["error"]["code"] == "index_missing"  # the config as written is fine
    scope = json.dumps(SCOPE)
    config.write_text(text.replace("SCOPE", scope))
    doc = _query(env)
    assert doc["error"]["code"] == "config_invalid"
    assert doc["error"]["detail"] == "the config file repeats a key"
    nested = dict(SCOPE, repository_id="other")
    config.write_text(json.dumps({"scopes": [nested]}).replace('"repository_id": "other"',
                                                               '"repository_id": "other", "repository_id": '
                                                               '"acme-api"'))
    assert _query(env)["error"]["detail"] == "the config file repeats a key"


def test_a_repeated_key_in_the_request_is_refused_too(tmp_path: Path) -> None:
    env, _ = _cli_env(tmp_path)
    from tests.conftest import make_request

    raw = json.dumps(make_request()).replace('"trigger":', '"trigger": "replan_repetition", "trigger":')
    doc = _query(env, raw.encode())
    assert doc["error"]["code"] == "malformed_json" and doc["error"]["detail"] == "request JSON repeats a key"


def _not_regular(config: Path) -> None:
    config.unlink()
    config.mkdir()


def _group_writable(config: Path) -> None:
    config.chmod(0o660)


def _open_folder(config: Path) -> None:
    config.parent.chmod(0o777)


def _too_large(config: Path) -> None:
    config.write_bytes(b'{"transcript_homes": ["' + b"a" * (1024 * 1024) + b'"]}')


@pytest.mark.parametrize(("break_it", "detail"), [
    (_not_regular, "the config file is not a regular file"),
    (_group_writable, "the config file is group- or world-writable; fix: chmod 600"),
    (_open_folder, "the config directory is group- or world-writable; fix: chmod 700"),
    (_too_large, "the config file is larger than 1048576 bytes"),
], ids=["not a file", "group-writable file", "open folder", "too large"])
def test_config_invalid_names_the_config_by_its_role_never_its_path(tmp_path: Path, break_it: Any,
                                                                    detail: str) -> None:
    from tests.conftest import run_cli

    env, config = _cli_env(tmp_path)
    break_it(config)
    try:
        for args in ((), ("--config", str(config))):
            doc = _query(env, None, *args)
            assert doc["error"] == {"code": "config_invalid", "retryable": False, "detail": detail}
            assert str(tmp_path) not in json.dumps(doc) and "/" not in doc["error"]["detail"]
        shown = run_cli("status", "--db", "/nonexistent/obelisk.sqlite", env=env)  # the local view: paths
        assert shown.code == 1 and str(config) in shown.stdout
    finally:
        config.parent.chmod(0o700)
