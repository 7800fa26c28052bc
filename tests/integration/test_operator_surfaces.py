"""Operator surfaces (issue 10.8): --version, help for every option with an example per command and the
exit-code table, status --format json with the effective ceilings, deadline and recency window, a
limit_over_ceiling detail naming the ceiling, and a demo that prints its scopes and writes a sample request."""

from __future__ import annotations

import json
from pathlib import Path

from obelisk_session_evidence._version import PROVIDER_VERSION
from obelisk_session_evidence.cli import EXAMPLES, build_parser
from obelisk_session_evidence.service import answer

from tests.conftest import make_request, run_cli, scope_entry, write_config


def test_version(isolated_env: dict[str, str]) -> None:
    result = run_cli("--version", env=isolated_env)
    assert result.code == 0
    assert result.stdout.strip() == f"obelisk-session-evidence {PROVIDER_VERSION}"


def test_every_option_has_help_and_every_command_an_example(isolated_env: dict[str, str]) -> None:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    assert set(sub.choices) == set(EXAMPLES)  # type: ignore[arg-type]
    for name, subparser in sub.choices.items():  # type: ignore[union-attr]
        for action in subparser._actions:
            assert action.help, (name, action.option_strings)
        shown = run_cli(name, "--help", env=isolated_env)
        assert shown.code == 0
        assert "example:" in shown.stdout and EXAMPLES[name].split()[0] in shown.stdout, name
        assert "64 usage error" in shown.stdout, name
    top = run_cli("--help", env=isolated_env).stdout
    for line in ("0 ok, 2 rejected", "3 failed", "64 usage error", "0 exact or compatible"):
        assert line in top


def test_status_json_shows_effective_limits(tmp_path: Path, isolated_env: dict[str, str]) -> None:
    config = write_config(tmp_path / "c.json", [], deadline_ms=1234, recency_days=99,
                          ceilings={"max_items": 7})
    result = run_cli("status", "--format", "json", "--config", str(config), "--db", str(tmp_path / "none"),
                     env=isolated_env)
    doc = json.loads(result.stdout)
    assert doc["deadline_ms"] == 1234 and doc["recency_days"] == 99 and doc["revision_slack_days"] == 7
    assert doc["ceilings"] == {"max_sessions": 50, "max_items": 7, "max_snippet_chars": 2000,
                               "max_total_chars": 32000, "max_query_terms": 16, "max_term_chars": 200}
    text = run_cli("status", "--config", str(config), "--db", str(tmp_path / "none"), env=isolated_env).stdout
    assert "deadline 1234 ms" in text and "recency window 99 days" in text and "max_items 7" in text


def test_limit_over_ceiling_names_the_ceiling(tmp_path: Path) -> None:
    config = write_config(tmp_path / "c.json", [scope_entry("claude-main", "acme", "acme-api", ["claude"],
                                                            [str(tmp_path)])], ceilings={"max_items": 7})
    request = make_request(limits={"max_sessions": 5, "max_items": 8, "max_snippet_chars": 300,
                                   "max_total_chars": 3000})
    envelope = answer(json.dumps(request).encode(), db_path=tmp_path / "none", config_path=config).envelope
    assert envelope["error"]["code"] == "limit_over_ceiling"
    assert envelope["error"]["detail"] == "limits.max_items is above the provider ceiling of 7"


def test_demo_prints_its_scopes_and_writes_a_sample_request(tmp_path: Path, isolated_env: dict[str, str]) -> None:
    result = run_cli("demo", "--dir", str(tmp_path / "demo"), env=isolated_env, timeout=300)
    assert result.code == 0, result.stdout[-2000:]
    assert "enabled scopes" in result.stdout
    assert "claude-agent / demo / alpha-svc: claude;" in result.stdout
    assert "claude-agent / demo / beta-web: claude;" in result.stdout
    sample = tmp_path / "demo" / "request.json"
    assert f"sample request: {sample}" in result.stdout
    answered = run_cli("query", "--db", str(tmp_path / "demo" / "obelisk.sqlite"), "--config",
                       str(tmp_path / "demo" / "config.json"), "--request", str(sample), env=isolated_env)
    assert answered.code == 0 and answered.document()["result"]["items"]


def test_each_command_help_lists_only_its_own_exit_codes(isolated_env: dict[str, str]) -> None:
    """``serve`` never exits 2 or 3 (each line's outcome is in its envelope), ``schema`` only 0: each command's
    ``--help`` shows its own codes and those every command shares, never another command's table."""
    from obelisk_session_evidence.cli import EXIT_CODES

    assert set(EXIT_CODES) == set(EXAMPLES)
    for name in EXAMPLES:
        shown = run_cli(name, "--help", env=isolated_env).stdout
        table = shown.split("exit codes:", 1)[1]
        named = {line.split(":", 1)[0].strip() for line in table.splitlines() if line[:3].strip() and ":" in line}
        assert named == {name, "any command"}, (name, named)
        assert "130 interrupted" in table
    serve = run_cli("serve", "--help", env=isolated_env).stdout.split("exit codes:", 1)[1]
    assert "2 rejected" not in serve and "3 failed" not in serve
    assert "0 printed" in run_cli("schema", "--help", env=isolated_env).stdout
