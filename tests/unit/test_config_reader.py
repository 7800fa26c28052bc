"""The config reader (``admission.config.config_from_json``): what ``enable`` writes reads back to the same
config, and anything else (an unknown key, a wrong JSON type, a number out of its range, a boolean for a
number) is ``config_invalid``, naming nothing from the file. Through the CLI: tests/integration/test_config_cli.py."""

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
