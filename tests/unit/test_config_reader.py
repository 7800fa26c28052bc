"""The config reader (``admission.config.config_from_json``): what ``enable`` writes reads back to the same
config, and anything else (an unknown key, a wrong JSON type, a number out of its range, a boolean for a
number) is ``config_invalid``, naming nothing from the file."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from obelisk_session_evidence.admission.config import (
    CEILING_RANGES,
    SETTING_RANGES,
    Ceilings,
    EnabledScope,
    ProviderConfig,
    QualificationRecord,
    RepositoryIdentity,
    config_from_json,
    config_to_json,
    load_config,
    save_config,
)
from obelisk_session_evidence.errors import ConfigInvalid

FULL = ProviderConfig(
    deadline_ms=1500, recency_days=30, revision_slack_days=0,
    ceilings=Ceilings(max_sessions=7, max_items=9, max_snippet_chars=40, max_total_chars=100, max_query_terms=2,
                      max_term_chars=3),
    transcript_homes=("/home/u",),
    scopes=(EnabledScope(agent_id="a", project_id="p", repository_id="r", sources=("claude", "codex"),
                         roots=("/src/r",), real_roots=("/real/r",), stage=2, enabled_at="2026-01-01T00:00:00Z",
                         repository_identity=RepositoryIdentity(kind="git", root_commit="c0ffee",
                                                                remote_digests=("hmac-sha256:1",),
                                                                worktrees=("/src/r2",)),
                         qualification=QualificationRecord(report_digest="sha256:2", passed=True,
                                                           generated_at="2026-01-01T00:00:00Z", kind="replay",
                                                           synthetic_accepted=False)),
            EnabledScope(agent_id="b", project_id="p", repository_id="s", sources=("claude",), roots=("/s",))),
)


def test_every_setting_round_trips_through_the_file(tmp_path: Path) -> None:
    path = tmp_path / "cfg" / "config.json"
    save_config(path, FULL)
    assert load_config(path, must_exist=True) == FULL
    assert config_from_json(config_to_json(FULL)) == FULL
    assert config_from_json({}) == ProviderConfig()


def test_defaults_fill_what_the_file_leaves_out() -> None:
    config = config_from_json({"scopes": [{"agent_id": "a", "project_id": "p", "repository_id": "r",
                                           "sources": ["claude"], "roots": ["/r"]}]})
    assert config.deadline_ms == 2000 and config.ceilings == Ceilings()
    assert config.scopes[0].stage == 1 and config.scopes[0].real_roots == ()
    assert config.scopes[0].repository_identity is None and config.scopes[0].qualification is None


def _set(document: dict[str, Any], dotted: str, value: Any) -> dict[str, Any]:
    out = copy.deepcopy(document)
    *parents, last = dotted.split(".")
    node: Any = out
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return out


BAD = [
    ("unknown top-level key", "extra", 1),
    ("unknown ceiling", "ceilings.max_bytes", 1),
    ("unknown scope key", "scopes.0.team", "t"),
    ("unknown identity key", "scopes.0.repository_identity.branch", "main"),
    ("a boolean for a number", "deadline_ms", True),
    ("a float for a number", "recency_days", 30.0),
    ("a string for a number", "ceilings.max_items", "9"),
    ("a string for a list", "transcript_homes", "/home/u"),
    ("a number in a list of strings", "scopes.0.roots", [1]),
    ("stage 3", "scopes.0.stage", 3),
    ("stage true", "scopes.0.stage", True),
    ("config version 2", "config_version", 2),
    ("unknown identity kind", "scopes.0.repository_identity.kind", "hg"),
    ("passed as a string", "scopes.0.qualification.passed", "true"),
    ("scopes not a list", "scopes", {}),
    ("a scope not an object", "scopes.0", "a"),
]


@pytest.mark.parametrize(("why", "where", "value"), BAD, ids=[b[0] for b in BAD])
def test_a_malformed_config_is_config_invalid(why: str, where: str, value: Any) -> None:
    document = config_to_json(FULL)
    assert config_from_json(document) == FULL  # the unchanged document is fine: the change alone is refused
    with pytest.raises(ConfigInvalid) as caught:
        config_from_json(_set(document, where, value))
    assert caught.value.detail == ConfigInvalid.default_detail


def test_a_missing_required_scope_field_is_config_invalid() -> None:
    document = config_to_json(FULL)
    for name in ("agent_id", "project_id", "repository_id", "sources", "roots"):
        broken = copy.deepcopy(document)
        del broken["scopes"][0][name]
        with pytest.raises(ConfigInvalid):
            config_from_json(broken)


@pytest.mark.parametrize("name", sorted({**CEILING_RANGES, **SETTING_RANGES}))
def test_each_number_is_held_to_its_range_inclusive(name: str) -> None:
    low, high = {**CEILING_RANGES, **SETTING_RANGES}[name]
    where = f"ceilings.{name}" if name in CEILING_RANGES else name
    document = config_to_json(ProviderConfig())
    for ok in (low, high):
        config_from_json(_set(document, where, ok))
    for bad in (low - 1, high + 1):
        with pytest.raises(ConfigInvalid):
            config_from_json(_set(document, where, bad))


def test_a_file_that_is_not_json_is_config_invalid(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    for raw in (b"{", b"\xff\xfe", b"[" * 100_000, b"[]", json.dumps({"scopes": None}).encode()):
        path.write_bytes(raw)
        path.chmod(0o600)
        with pytest.raises(ConfigInvalid):
            load_config(path, must_exist=True)


# --- through the CLI (issue 30, items 4 and 5): HOME and the config directory in a temporary folder -----------

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
