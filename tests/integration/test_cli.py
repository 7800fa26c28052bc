"""The CLI boundary through real subprocesses: one JSON document on stdout, the exit-code table, stderr clean."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.conftest import make_request, run_cli, scope_entry, write_config

PRIVATE = "ZZPRIVATECANARYZZ"


@pytest.fixture
def fixture_db(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, object]]:
    from obelisk_session_evidence.fixtures.builder import build_fixture

    out = tmp_path_factory.mktemp("fx")
    info = build_fixture(out, generation="current")
    manifest = json.loads(info.manifest_path.read_text(encoding="utf-8"))
    return info.db_path, manifest


def _alpha_config(path: Path, manifest: dict[str, object]) -> Path:
    repos = manifest["repos"]
    assert isinstance(repos, dict)
    return write_config(path, [scope_entry("claude-main", "acme", "acme-api", ["claude"],
                                           [str(repos["alpha-svc"])])])


def test_unknown_field_is_rejected_with_exit_2(isolated_env: dict[str, str]) -> None:
    result = run_cli("query", stdin=json.dumps(make_request(extra_field=PRIVATE)).encode(), env=isolated_env)
    doc = result.document()
    assert result.code == 2
    assert doc == {"schema_version": "historical_evidence_response_v0", "request_id": "req-1",
                   "outcome": "rejected", "error": {"code": "unknown_field", "retryable": False,
                                                     "detail": "request carries a field the contract does "
                                                               "not define (at the top level of the request)"},
                   "result": None, "receipt": None, "provider_meta": {}}
    assert PRIVATE not in result.stdout + result.stderr
    assert result.stderr == ""


def test_default_off_rejects_not_enabled(isolated_env: dict[str, str]) -> None:
    result = run_cli("query", stdin=json.dumps(make_request()).encode(), env=isolated_env)
    assert result.code == 2
    assert result.document()["error"]["code"] == "not_enabled"


def test_missing_database_fails_open_with_exit_3(tmp_path: Path, isolated_env: dict[str, str]) -> None:
    config = write_config(tmp_path / "c.json", [scope_entry("claude-main", "acme", "acme-api", ["claude"],
                                                            [str(tmp_path)])])
    missing = tmp_path / "nowhere" / "obelisk.sqlite"
    result = run_cli("query", "--db", str(missing), "--config", str(config),
                     stdin=json.dumps(make_request(query_terms=[PRIVATE])).encode(), env=isolated_env)
    doc = result.document()
    assert result.code == 3
    assert doc["outcome"] == "failed"
    assert doc["error"] == {"code": "index_missing", "retryable": False,
                            "detail": "the Obelisk index database does not exist"}
    assert doc["result"]["items"] == [] and doc["result"]["freshness"] == "unknown"
    assert doc["receipt"]["result_count"] == 0
    assert PRIVATE not in result.stdout + result.stderr
    assert not missing.parent.exists()


def test_ok_answer_exit_0_and_stderr_empty(fixture_db: tuple[Path, dict[str, object]], tmp_path: Path,
                                          isolated_env: dict[str, str]) -> None:
    db, manifest = fixture_db
    config = _alpha_config(tmp_path / "c.json", manifest)
    request = make_request(query_terms=["pytest -k billing", "ModuleNotFoundError"],
                           evidence_types=["prior_failure", "tool_outcome"])
    req_file = tmp_path / "req.json"
    req_file.write_text(json.dumps(request))
    before = db.read_bytes()
    listing = sorted(os.listdir(db.parent))
    result = run_cli("query", "--db", str(db), "--config", str(config), "--request", str(req_file),
                     env=isolated_env)
    doc = result.document()
    assert result.code == 0, doc
    assert doc["outcome"] == "ok" and doc["error"] is None
    assert doc["result"]["items"]
    assert result.stderr == ""
    assert db.read_bytes() == before
    assert sorted(os.listdir(db.parent)) == listing
    assert not Path(f"{db}-wal").exists() and not Path(f"{db}-shm").exists()


def test_env_db_and_flag_precedence(fixture_db: tuple[Path, dict[str, object]], tmp_path: Path,
                                    isolated_env: dict[str, str]) -> None:
    db, manifest = fixture_db
    config = _alpha_config(tmp_path / "c.json", manifest)
    request = json.dumps(make_request(query_terms=["billing"])).encode()
    env = {**isolated_env, "OBELISK_DB": str(db), "OBELISK_SESSION_EVIDENCE_CONFIG": str(config)}
    assert run_cli("query", stdin=request, env=env).code == 0
    assert run_cli("query", "--db", str(tmp_path / "missing.sqlite"), stdin=request, env=env).code == 3


def test_schema_prints_every_contract_type(isolated_env: dict[str, str]) -> None:
    result = run_cli("schema", env=isolated_env)
    assert result.code == 0
    doc = result.document()
    assert {"historical_evidence_request_v0", "historical_evidence_result_v0", "historical_evidence_receipt_v0",
            "historical_evidence_response_v0"} <= set(doc)  # and every command's document (test_surface.py)


def test_oversize_stdin_is_bounded(isolated_env: dict[str, str]) -> None:
    result = run_cli("query", stdin=b"{" + b" " * (5 * 1024 * 1024), env=isolated_env)
    assert result.code == 2
    assert result.document()["error"]["code"] == "request_too_large"


def test_python_m_and_console_script_agree(isolated_env: dict[str, str]) -> None:
    script = shutil.which("obelisk-session-evidence", path=str(Path(os.sys.executable).parent))
    assert script is not None
    import subprocess

    proc = subprocess.run([script, "query"], input=b"{}", capture_output=True, env={**os.environ,
                          **isolated_env}, check=False, timeout=60)
    assert proc.returncode == 2
    assert json.loads(proc.stdout)["error"]["code"] == "invalid_request"


def test_every_command_and_option_is_documented() -> None:
    """The README names every command (its table sends the reader to ``COMMAND --help``); that help describes
    every option."""
    from obelisk_session_evidence.cli import build_parser

    from tests.conftest import REPO

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    for name, subparser in sub.choices.items():  # type: ignore[union-attr]
        assert f"`{name}" in readme, name
        shown = subparser.format_help()
        for action in subparser._actions:
            for option in action.option_strings:
                if option.startswith("--") and option != "--help":
                    assert option in shown and (action.help or "").strip(), (name, option)


def test_unicode_line_separators_are_escaped_so_one_envelope_is_one_line(isolated_env: dict[str, str]) -> None:
    # U+2028 and U+2029 are valid in a request_id; U+0085 (NEL), a C1 control, is not and is never echoed.
    request = make_request(request_id="a\u2028b\u2029c")
    result = run_cli("query", stdin=json.dumps(request, ensure_ascii=False).encode(), env=isolated_env)
    assert len(result.stdout.splitlines()) == 1
    assert result.document()["request_id"] == "a\u2028b\u2029c"


def test_request_id_is_bounded_before_it_reaches_the_receipt(fixture_db: tuple[Path, dict[str, object]],
                                                             tmp_path: Path, isolated_env: dict[str, str]) -> None:
    db, manifest = fixture_db
    config = _alpha_config(tmp_path / "c.json", manifest)
    for request_id in ("r" * 128, "a\u2028b"):
        result = run_cli("query", "--db", str(db), "--config", str(config),
                         stdin=json.dumps(make_request(request_id=request_id)).encode(), env=isolated_env)
        doc = result.document()
        assert result.code == 0 and doc["receipt"]["request_id"] == request_id == doc["result"]["request_id"]
    for request_id in ("r" * 129, "r" * 5000, "req\x1b[2J\x1b[H", "a\nb", "a\x85b"):
        result = run_cli("query", "--db", str(db), "--config", str(config),
                         stdin=json.dumps(make_request(request_id=request_id)).encode(), env=isolated_env)
        doc = result.document()
        assert result.code == 2 and doc["outcome"] == "rejected" and doc["receipt"] is None
        assert doc["error"] == {"code": "invalid_request", "retryable": False,
                                "detail": "field request_id is missing or has the wrong type or value"}


def test_an_invalid_request_id_is_not_copied_into_the_rejection(tmp_path: Path, isolated_env: dict[str, str]) -> None:
    """Issue 30: a rejection's envelope carries the request's ``request_id`` only when the contract accepts it
    (at most 128 characters, no control character); a 2 MB one, or one holding terminal escapes, is null there,
    in ``query`` and in ``serve --stdio``, whatever else the request gets wrong."""
    config = write_config(tmp_path / "c.json", [])
    bad = ["r" * 2_000_000, "r" * 129, "req\x1b[2J\x1b[H", "a\nb", "a\x85b", "a\x00b"]
    for request_id in bad:
        for other in ({}, {"scope": {"agent_id": "nobody"}}, {"evidence_types": ["poems"]}):
            raw = json.dumps(make_request(request_id=request_id, **other)).encode()
            result = run_cli("query", "--config", str(config), "--db", str(tmp_path / "none.sqlite"), stdin=raw,
                             env=isolated_env)
            doc = result.document()
            assert result.code == 2 and doc["outcome"] == "rejected", (result.code, doc.get("error"))
            assert doc["request_id"] is None and len(result.stdout) < 4096
    lines = [json.dumps(make_request(request_id=request_id)).encode() for request_id in bad]
    served = run_cli("serve", "--stdio", "--config", str(config), "--db", str(tmp_path / "none.sqlite"),
                     stdin=b"\n".join(lines) + b"\n", env=isolated_env)
    replies = [json.loads(line) for line in served.stdout.splitlines()]
    assert len(replies) == len(bad) and all(r["request_id"] is None and r["outcome"] == "rejected" for r in replies)
    assert len(served.stdout) < 4096 * len(bad)


def test_serve_answers_a_blank_line_so_replies_stay_paired(tmp_path: Path, isolated_env: dict[str, str]) -> None:
    """A caller pairs the n-th reply with its n-th line: a blank line gets its own typed rejection."""
    lines = [json.dumps(make_request(request_id="first")).encode(), b"", b"   \t", b"{not json",
             json.dumps(make_request(request_id="last")).encode()]
    result = run_cli("serve", "--stdio", "--db", str(tmp_path / "none.sqlite"), stdin=b"\n".join(lines) + b"\n",
                     env=isolated_env)
    assert result.code == 0 and result.stderr == ""
    replies = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["request_id"] for r in replies] == ["first", None, None, None, "last"]
    assert [r["error"]["code"] for r in replies] == ["not_enabled", "malformed_json", "malformed_json",
                                                     "malformed_json", "not_enabled"]
    assert replies[1]["error"]["detail"] == replies[2]["error"]["detail"] == "the request line is empty"


def _interrupted(args: list[str], env: dict[str, str], *, ready: str, stdin: bytes = b"") -> tuple[int, bytes]:
    """Run the CLI, wait until it is ``ready`` (``reply``: it answered the first line; ``reading``: it has
    loaded what it needs to read stdin), send SIGINT; the exit code and stderr."""
    import signal
    import subprocess
    import sys
    import time

    from tests.conftest import REPO

    full_env = {**{k: v for k, v in os.environ.items() if not k.startswith("OBELISK")}, **env}
    proc = subprocess.Popen([sys.executable, "-m", "obelisk_session_evidence", *args], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=full_env, cwd=REPO)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    try:
        proc.stdin.write(stdin)
        proc.stdin.flush()
        if ready == "reply":
            assert proc.stdout.readline()  # the loop is running: it waits for the next line
        else:  # the stdin reader's module is loaded, then the read waits (deadline 60 s) for a stdin never closed
            maps = Path(f"/proc/{proc.pid}/maps")
            give_up = time.monotonic() + 60
            while "select.cpython" not in maps.read_text() and time.monotonic() < give_up:
                time.sleep(0.05)
            time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=60)
    finally:
        proc.kill()
        proc.stdin.close()
    return code, proc.stderr.read()


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs /proc")
def test_ctrl_c_ends_serve_and_query_quietly_with_130(tmp_path: Path, isolated_env: dict[str, str]) -> None:
    config = write_config(tmp_path / "c.json", [], deadline_ms=60000)
    request = json.dumps(make_request()).encode() + b"\n"
    code, stderr = _interrupted(["serve", "--stdio", "--config", str(config)], isolated_env, ready="reply",
                                stdin=request)
    assert (code, stderr) == (130, b"")
    code, stderr = _interrupted(["query", "--config", str(config)], isolated_env, ready="reading",
                                stdin=request[:20])
    assert (code, stderr) == (130, b"")
