"""Stage 0 qualification: a small run completes, reports every metric and criterion, passes on the fixture
corpus, stays content-free, and is what ``enable --stage 2 --qualification-report`` accepts."""

from __future__ import annotations

import hashlib
import inspect
import io
import json
from pathlib import Path
from typing import Any

import pytest
from obelisk_session_evidence.commands.qualify import default_scopes, operator_scope, run_qualification

from tests.conftest import run_cli

SCOPE = {"agent_id": "claude-main", "project_id": "acme", "repository_id": "acme-api"}
REPORT_NAME = "qualification-claude-main-acme-api.json"

METRIC_PATHS = [
    ("dead_end", "recognition_rate", "current_context"),
    ("dead_end", "recognition_rate", "provider"),
    ("dead_end", "recognition_rate", "native_ceiling"),
    ("dead_end", "repeated_dead_end_rate", "provider"),
    ("recall", "provider"),
    ("recall", "native_ceiling"),
    ("precision", "prior_failure", "provider", "precision"),
    ("precision", "same_route", "provider", "precision"),
    ("precision", "same_route", "native_ceiling", "precision"),
    ("false_matches", "provider", "false_match_rate"),
    ("false_matches", "native_ceiling", "negatives_with_items"),
    ("foreign_scope_items", "provider"),
    ("context_chars", "provider", "median"),
    ("context_chars", "native_ceiling", "p95"),
    ("context_chars", "ceiling_over_provider_median"),
    ("truncation", "rate"),
    ("latency_ms", "provider_in_process", "median"),
    ("latency_ms", "provider_in_process", "p95"),
    ("latency_ms", "native_ceiling", "median"),
    ("freshness", "detection_rate"),
    ("freshness", "freshness_latency_ms", "median"),
    ("freshness", "stale", "rate"),
    ("freshness", "incomplete", "rate"),
    ("cross_scope", "rejection_rate"),
    ("unknown_option", "failure_rate"),
]
CRITERIA = {"corpus_size", "dead_end_reduction", "precision_prior_failure", "precision_same_route",
            "no_false_match_on_negatives", "recall_not_worse", "bounded_context", "context_reduction",
            "bounded_latency", "stale_incomplete_detection", "no_scope_broadening", "unknown_option_rejected",
            "cli_agrees", "task_success"}


def _dig(value: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        assert isinstance(value, dict) and key in value, path
        value = value[key]
    return value


@pytest.fixture(scope="module")
def cli_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """One real ``qualify`` subprocess for an operator scope (the input of ``enable --stage 2``)."""
    out = tmp_path_factory.mktemp("qualification")
    result = run_cli("qualify", "--out", str(out), "--agent-id", SCOPE["agent_id"], "--project-id",
                     SCOPE["project_id"], "--repository-id", SCOPE["repository_id"], "--source", "claude",
                     "--subprocess-cases", "2", timeout=300)
    assert result.code == 0, result.stderr
    assert result.stderr == ""
    return out, result.document()


@pytest.fixture(scope="module")
def both_agents(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return run_qualification(tmp_path_factory.mktemp("default"), subprocess_cases=0)


def test_cli_run_writes_json_markdown_and_summary(cli_run: tuple[Path, dict[str, Any]]) -> None:
    out, summary = cli_run
    assert summary["passed"] is True
    assert {p.name for p in out.iterdir()} == {REPORT_NAME, REPORT_NAME.replace(".json", ".md"),
                                               "qualification.json", "qualification.md"}
    assert json.loads((out / "qualification.json").read_text())["scopes"][0]["report"] == REPORT_NAME


def test_report_has_every_metric_and_criterion(cli_run: tuple[Path, dict[str, Any]]) -> None:
    out, _ = cli_run
    report = json.loads((out / REPORT_NAME).read_text())
    assert report["passed"] is True
    assert report["scope"] == {**SCOPE, "sources": ["claude"]}
    assert report["generated_at"].endswith("Z")
    for path in METRIC_PATHS:
        _dig(report["metrics"], path)
    assert {c["id"] for c in report["criteria"]} == CRITERIA
    for criterion in report["criteria"]:
        assert criterion["threshold"] and criterion["rfc"]
        assert criterion["status"] in ("pass", "fail", "not_measured")
        if criterion["stage"] == 0:
            assert criterion["status"] == "pass", criterion
    assert next(c for c in report["criteria"] if c["id"] == "task_success")["status"] == "not_measured"
    assert report["subprocess"] == {**report["subprocess"], "runs": 2, "agree": 2}
    body = {k: v for k, v in report.items() if k != "digest"}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    assert report["digest"] == "sha256:" + hashlib.sha256(canonical).hexdigest()
    markdown = (out / REPORT_NAME.replace(".json", ".md")).read_text()
    assert "| criterion | threshold | measured | status |" in markdown
    assert all(f"| {cid} |" in markdown for cid in CRITERIA)


def test_arms_separate_as_the_rfc_expects(cli_run: tuple[Path, dict[str, Any]]) -> None:
    metrics = json.loads((cli_run[0] / REPORT_NAME).read_text())["metrics"]
    dead = metrics["dead_end"]
    assert dead["recognition_rate"]["current_context"] == 0.0
    assert dead["repeated_dead_end_rate"]["current_context"] == 1.0
    assert dead["recognition_rate"]["provider"] >= 0.9
    assert metrics["context_chars"]["current_context"]["median"] == 0.0
    # Matched negatives: the provider returns nothing; the path-only ceiling returns other agents' history.
    assert metrics["false_matches"]["provider"]["negatives_with_items"] == 0
    assert metrics["foreign_scope_items"]["provider"] == 0
    assert metrics["foreign_scope_items"]["native_ceiling"] > 0
    assert metrics["cross_scope"]["rejection_rate"] == 1.0
    assert metrics["unknown_option"]["failure_rate"] == 1.0
    assert metrics["freshness"]["stale"]["rate"] == 1.0
    assert metrics["freshness"]["incomplete"]["rate"] == 1.0
    assert metrics["freshness"]["fresh_control"]["rate"] == 1.0
    assert metrics["freshness"]["detected_on_first_request_after_change"] is True


def test_report_is_content_free(cli_run: tuple[Path, dict[str, Any]]) -> None:
    out, _ = cli_run
    for path in out.iterdir():
        text = path.read_text()
        for private in ("No module named", "ModuleNotFoundError", "stripe", "/home/src/", "pytest -k"):
            assert private not in text, (path.name, private)


def test_report_is_accepted_by_enable_stage_2(cli_run: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    lifecycle = pytest.importorskip("obelisk_session_evidence.commands.lifecycle")
    if "qualification_report" not in inspect.signature(lifecycle.enable_scope).parameters:
        pytest.skip("enable --stage 2 --qualification-report is not implemented yet")
    from obelisk_session_evidence.admission.config import load_config

    root = tmp_path / "acme-api"
    root.mkdir()
    config = tmp_path / "config.json"
    report = cli_run[0] / REPORT_NAME

    def enable(report_path: Path, **overrides: Any) -> tuple[int, dict[str, Any]]:
        out = io.StringIO()
        args: dict[str, Any] = {**SCOPE, "sources": ["claude"], "roots": [str(root)], "stage": 2,
                                "include_worktrees": False, "qualification_report": str(report_path),
                                "accept_synthetic": True}
        args.update(overrides)
        code = lifecycle.enable_scope(config_path=config, out=out, **args)
        return code, json.loads(out.getvalue())

    # A generated-corpus report promotes a scope only with --accept-synthetic-qualification (RFC §9; issue 14).
    code, doc = enable(report, accept_synthetic=False)
    assert code == 2 and "--accept-synthetic-qualification" in doc["error"]["detail"], doc
    assert not config.exists()
    code, doc = enable(report)
    assert code == 0, doc
    assert doc["scope"]["synthetic_qualification_accepted"] is True
    scope = load_config(config).scopes[0]
    assert scope.stage == 2
    assert scope.qualification is not None and scope.qualification.passed
    # The same report does not qualify another scope, other sources, or once it says it did not pass.
    assert enable(report, repository_id="acme-web")[0] == 2
    assert enable(report, sources=["codex"])[0] == 2
    failed = tmp_path / "failed.json"
    failed.write_text(json.dumps({**json.loads(report.read_text()), "passed": False}))
    assert enable(failed)[0] == 2


def test_default_scopes_qualify_each_fixture_agent(both_agents: dict[str, Any]) -> None:
    reports = {r["scope"]["agent_id"]: r for r in both_agents["reports"]}
    assert set(reports) == {s.agent_id for s in default_scopes()}
    claude = reports["claude-agent"]
    assert claude["passed"] is True
    for report in reports.values():
        assert len(report["corpus"]["cells"]) == 2  # both fixture repositories, each its own scope
        status = {c["id"]: c["status"] for c in report["criteria"]}
        for invariant in ("no_scope_broadening", "unknown_option_rejected", "stale_incomplete_detection",
                          "no_false_match_on_negatives", "bounded_context", "dead_end_reduction"):
            assert status[invariant] == "pass", (report["scope"]["agent_id"], invariant)
    assert both_agents["summary"]["passed"] == all(r["passed"] for r in reports.values())


def test_partial_scope_arguments_are_refused(tmp_path: Path) -> None:
    result = run_cli("qualify", "--out", str(tmp_path), "--agent-id", "a")
    assert result.code == 2
    assert result.stdout == ""
    result = run_cli("qualify", "--out", str(tmp_path), "--agent-id", "a", "--project-id", "p",
                     "--repository-id", "r", "--source", "kimi")
    assert result.code == 2


def test_operator_scope_maps_sources_to_fixture_agents() -> None:
    scope = operator_scope("a", "p", "r", ["codex"])
    assert {c.agents for c in scope.cells} == {("codex-agent",)}
    with pytest.raises(ValueError, match="sources"):
        operator_scope("a", "p", "r", ["kimi"])
