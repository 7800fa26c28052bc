"""Every input is bounded before it is held, and the CLI's edges are typed (issues 10.4, 10.6, 12.6, 12.8).

* rejections keep a string ``request_id`` and name the field path, never request content;
* usage errors exit 64 with nothing on stdout; ``--request -`` is stdin;
* ``serve --stdio`` drops the rest of an oversize line as it streams (peak memory of the process stays far
  below the line's size); a FIFO ``--config``/``--request`` is refused without blocking; a caller that never
  closes stdin gets a ``timeout`` envelope;
* a named config that does not exist is ``config_invalid`` naming it by its role, never by its path (``status``
  names the path); a config that is not private is refused with how to fix it.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from obelisk_session_evidence.service import answer

from tests.conftest import CLI, REPO, make_request, run_cli, scope_entry, write_config

PRIVATE_KEY = "zz_private_key_name_4711"


def _answer(request: dict[str, Any] | bytes, config: Path) -> dict[str, Any]:
    raw = request if isinstance(request, bytes) else json.dumps(request).encode()
    return answer(raw, db_path=Path("/nonexistent/obelisk.sqlite"), config_path=config).envelope


@pytest.fixture
def config(tmp_path: Path) -> Path:
    return write_config(tmp_path / "config.json", [scope_entry("claude-main", "acme", "acme-api", ["claude"],
                                                               [str(tmp_path)])])


LIMITS = {"max_sessions": 5, "max_items": 8, "max_snippet_chars": 300, "max_total_chars": 3000}
SCOPE = {"agent_id": "claude-main", "project_id": "acme", "repository_id": "acme-api",
         "allow_cross_agent": False, "allow_cross_project": False}

# (overrides, expected code, the field path the detail must name)
CASES: list[tuple[dict[str, Any], str, str]] = [
    ({PRIVATE_KEY: 1}, "unknown_field", "top level"),
    ({"scope": {**SCOPE, PRIVATE_KEY: 1}}, "unknown_field", "in scope"),
    ({"limits": {**LIMITS, PRIVATE_KEY: 1}}, "unknown_field", "in limits"),
    ({"scope": {**SCOPE, "allow_cross_agent": True}}, "cross_scope_requested", "scope.allow_cross_agent"),
    ({"scope": {**SCOPE, "allow_cross_project": 0}}, "cross_scope_requested", "scope.allow_cross_project"),
    ({"limits": {**LIMITS, "max_items": "8"}}, "invalid_request", "limits.max_items"),
    ({"limits": {**LIMITS, "max_items": 0}}, "invalid_request", "limits.max_items"),
    ({"limits": {**LIMITS, "max_items": 51}}, "limit_over_ceiling", "limits.max_items"),
    ({"revision": None}, "invalid_request", "revision"),
    ({"revision": {"current": "abc", "merge_base": None}}, "invalid_request", "revision.merge_base"),
    ({"revision": {"current": 7}}, "invalid_request", "revision.current"),
    ({"trigger": "now"}, "invalid_request", "trigger"),
    ({"evidence_types": ["everything"]}, "invalid_request", "evidence_types"),
    ({"query_terms": "jwt"}, "invalid_request", "query_terms"),
    ({"scope": {**SCOPE, "repository_id": "other"}}, "scope_mismatch", ""),
    ({"scope": {**SCOPE, "agent_id": "other"}}, "not_enabled", ""),
]


@pytest.mark.parametrize(("overrides", "code", "path"), CASES)
def test_rejection_keeps_request_id_and_names_the_field(overrides: dict[str, Any], code: str, path: str,
                                                        config: Path) -> None:
    envelope = _answer(make_request(request_id="rid-77", **overrides), config)
    assert envelope["outcome"] == "rejected"
    assert envelope["error"]["code"] == code
    assert envelope["request_id"] == "rid-77"
    assert path in envelope["error"]["detail"]
    assert PRIVATE_KEY not in json.dumps(envelope)


def test_missing_field_is_named_and_request_id_kept(config: Path) -> None:
    request = make_request(request_id="rid-8")
    del request["limits"]
    envelope = _answer(request, config)
    assert (envelope["request_id"], envelope["error"]["code"]) == ("rid-8", "invalid_request")
    assert "field limits " in envelope["error"]["detail"]


def test_non_string_request_id_is_not_echoed(config: Path) -> None:
    envelope = _answer(make_request(request_id=12), config)
    assert envelope["request_id"] is None
    assert envelope["error"]["detail"] == "field request_id is missing or has the wrong type or value"


def test_unparseable_request_has_no_request_id(config: Path) -> None:
    envelope = _answer(b'{"request_id": "rid-9", ', config)
    assert envelope["request_id"] is None
    assert envelope["error"]["code"] == "malformed_json"


# --- usage errors ----------------------------------------------------------------------------------------

SECRET_ARG = "/home/someone/secret-value-123"


@pytest.mark.parametrize("argv", [
    [], ["no-such-command"], ["query", SECRET_ARG], ["status", "--format", SECRET_ARG],
    ["enable", "--agent-id", "a"], ["enable", "--stage", SECRET_ARG], ["qualify", "--seed", SECRET_ARG],
    ["serve"], ["query", "--request"],
])
def test_usage_errors_exit_64_with_nothing_on_stdout(argv: list[str], isolated_env: dict[str, str]) -> None:
    result = run_cli(*argv, env=isolated_env)
    assert result.code == 64
    assert result.stdout == ""
    assert "usage:" in result.stderr
    assert SECRET_ARG not in result.stderr


def test_request_dash_means_stdin(tmp_path: Path, isolated_env: dict[str, str]) -> None:
    config = write_config(tmp_path / "c.json", [])
    result = run_cli("query", "--config", str(config), "--request", "-",
                     stdin=json.dumps(make_request(request_id="from-stdin")).encode(), env=isolated_env)
    assert result.code == 2
    assert result.document()["request_id"] == "from-stdin"
    assert result.document()["error"]["code"] == "not_enabled"


# --- bounded inputs ----------------------------------------------------------------------------------------


def _peak_rss_kib(argv: list[str], stdin_path: Path, env: dict[str, str]) -> tuple[int, bytes]:
    """Run ``argv`` with stdin from a file; return (peak RSS in KiB, stdout)."""
    out_path = stdin_path.with_suffix(".out")
    with open(stdin_path, "rb") as stdin, open(out_path, "wb") as stdout:
        proc = subprocess.Popen(argv, stdin=stdin, stdout=stdout, stderr=subprocess.DEVNULL, env=env, cwd=REPO)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    assert proc.returncode == 0
    return usage.ru_maxrss, out_path.read_bytes()


def test_serve_drops_an_oversize_line_as_it_streams(tmp_path: Path, config: Path,
                                                    isolated_env: dict[str, str]) -> None:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("OBELISK")}, **isolated_env}
    argv = [*CLI, "serve", "--stdio", "--db", str(tmp_path / "none.sqlite"), "--config", str(config)]
    valid = json.dumps(make_request(scope={**SCOPE, "agent_id": "other"}, request_id="after")).encode()
    small = tmp_path / "small.in"
    small.write_bytes(valid + b"\n")
    big = tmp_path / "big.in"
    line_mib = 96
    with open(big, "wb") as handle:
        handle.write(b'{"request_id": "huge", "pad": "')
        chunk = b"x" * (1024 * 1024)
        for _ in range(line_mib):
            handle.write(chunk)
        handle.write(b'"}\n' + valid + b"\n")
    base_kib, _ = _peak_rss_kib(argv, small, env)
    peak_kib, out = _peak_rss_kib(argv, big, env)
    lines = [json.loads(line) for line in out.splitlines()]
    assert [d["error"]["code"] for d in lines] == ["request_too_large", "not_enabled"]
    assert lines[1]["request_id"] == "after"
    grown_mib = (peak_kib - base_kib) / 1024
    print(f"\nSERVE-BOUND: line={line_mib} MiB peak_rss_growth={grown_mib:.1f} MiB")
    assert grown_mib < line_mib / 4, grown_mib


def test_fifo_config_and_request_are_refused_without_blocking(tmp_path: Path, config: Path,
                                                              isolated_env: dict[str, str]) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    result = run_cli("query", "--config", str(fifo), stdin=json.dumps(make_request()).encode(), env=isolated_env,
                     timeout=60)
    assert result.code == 2
    assert result.document()["error"]["code"] == "config_invalid"
    assert "not a regular file" in result.document()["error"]["detail"]
    result = run_cli("query", "--config", str(config), "--request", str(fifo), env=isolated_env, timeout=60)
    assert result.code == 2
    assert result.document()["error"]["detail"] == "request file is not a regular file"
    result = run_cli("status", "--config", str(fifo), "--db", str(tmp_path / "none"), env=isolated_env, timeout=60)
    assert result.code == 1
    assert "UNREADABLE OR INVALID" in result.stdout and "is not a regular file" in result.stdout


def test_query_stops_reading_stdin_at_the_deadline(tmp_path: Path, isolated_env: dict[str, str]) -> None:
    config = write_config(tmp_path / "c.json", [], deadline_ms=300)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("OBELISK")}, **isolated_env}
    proc = subprocess.Popen([*CLI, "query", "--config", str(config)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, cwd=REPO)
    assert proc.stdin is not None
    proc.stdin.write(b'{"request_id": "never-closed", ')
    proc.stdin.flush()
    try:
        proc.wait(timeout=60)  # a hang guard only; stdin stays open (communicate() would close it)
    finally:
        proc.kill()
    assert proc.stdout is not None and proc.stderr is not None
    out = proc.stdout.read()
    assert proc.returncode == 3, proc.stderr.read()
    proc.stdin.close()
    envelope = json.loads(out)
    assert envelope["outcome"] == "failed"
    assert envelope["error"]["code"] == "timeout"
    assert envelope["error"]["retryable"] is True


def test_oversize_config_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_bytes(b'{"config_version": 1, "transcript_homes": ["' + b"a" * (2 * 1024 * 1024) + b'"]}')
    envelope = _answer(make_request(), path)
    assert envelope["error"]["code"] == "config_invalid"
    assert "larger than 1048576 bytes" in envelope["error"]["detail"]


# --- the config is named, present and private ---------------------------------------------------------------


def test_named_config_that_does_not_exist_is_config_invalid(tmp_path: Path, isolated_env: dict[str, str]) -> None:
    missing = tmp_path / "typo" / "config.json"
    request = json.dumps(make_request()).encode()
    for args, env in ((["--config", str(missing)], isolated_env),
                      ([], {**isolated_env, "OBELISK_SESSION_EVIDENCE_CONFIG": str(missing)})):
        result = run_cli("query", *args, stdin=request, env=env)
        assert result.code == 2
        doc = result.document()
        assert doc["error"]["code"] == "config_invalid"
        assert doc["error"]["detail"] == ("the config file named by --config or $OBELISK_SESSION_EVIDENCE_CONFIG "
                                          "does not exist")
        assert str(tmp_path) not in result.stdout
        assert doc["request_id"] == "req-1"
        shown = run_cli("status", *args, env=env)  # the local operator's view names the path
        assert shown.code == 1 and f"the config file {missing} named by --config" in shown.stdout
    # The default (platform) path missing is still default-off.
    result = run_cli("query", stdin=request, env=isolated_env)
    assert result.document()["error"]["code"] == "not_enabled"


def test_group_or_world_writable_config_is_refused(tmp_path: Path, config: Path) -> None:
    config.chmod(0o620)
    envelope = _answer(make_request(), config)
    assert envelope["error"]["code"] == "config_invalid"
    assert envelope["error"]["detail"] == "the config file is group- or world-writable; fix: chmod 600"
    config.chmod(0o600)
    assert _answer(make_request(), config)["error"]["code"] != "config_invalid"
    tmp_path.chmod(0o777)
    try:
        envelope = _answer(make_request(), config)
    finally:
        tmp_path.chmod(0o700)
    assert envelope["error"]["code"] == "config_invalid"
    assert envelope["error"]["detail"] == "the config directory is group- or world-writable; fix: chmod 700"


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root (CI runs as root)")
def test_config_owned_by_another_user_is_refused(config: Path) -> None:
    os.chown(config, 65534, 65534)
    envelope = _answer(make_request(), config)
    assert envelope["error"]["code"] == "config_invalid"
    assert "owned by another user" in envelope["error"]["detail"]
    os.chown(config.parent, 65534, 65534)
    os.chown(config, 0, 0)
    try:
        envelope = _answer(make_request(), config)
    finally:
        os.chown(config.parent, 0, 0)
    assert "owned by another user" in envelope["error"]["detail"]


def test_stdin_read_is_bounded_by_the_deadline_not_by_eof_time(tmp_path: Path, isolated_env: dict[str, str]) -> None:
    """A slow writer that finishes within the deadline is answered (the deadline bounds, it does not rush)."""
    config = write_config(tmp_path / "c.json", [], deadline_ms=5000)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("OBELISK")}, **isolated_env}
    proc = subprocess.Popen([*CLI, "query", "--config", str(config)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, cwd=REPO)
    assert proc.stdin is not None
    raw = json.dumps(make_request(request_id="slow")).encode()
    proc.stdin.write(raw[:20])
    proc.stdin.flush()
    time.sleep(0.2)
    out, _ = proc.communicate(raw[20:], timeout=60)
    assert json.loads(out)["request_id"] == "slow"
    assert json.loads(out)["error"]["code"] == "not_enabled"
