"""Issue 30, item 1: the digest key is held to the config's own privacy check, ``status`` reports an unusable key,
and ``rotate-key`` replaces it, re-making the keyed digests the config stores.

* a key others may read or write (0644, 0666, 0640), or owned by another user, is ``config_invalid`` with the
  fix (``chmod 600``, then ``rotate-key``) and no path, through the CLI;
* ``status`` (text and JSON) reports a missing key (while a scope is enabled) or an unsafe one as an error with
  the fix, exit 1; no key and no scope is fine;
* ``rotate-key`` writes a new 0600 key and re-makes the remote digests under it; every crash point between its
  writes leaves a config holding the digests of the key on disk; a link planted at the key is refused.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from obelisk_session_evidence.digest import DigestKey, key_path

from tests.conftest import CliResult, make_request, run_cli, scope_entry, write_config

REMOTE_URL = "git@github.com:acme/acme-api.git"
REMOTE = "github.com/acme/acme-api"  # as provider/commands/identity.py normalises it


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "home").mkdir()
    return {"HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "xdg")}


@pytest.fixture
def config(tmp_path: Path) -> Path:
    (tmp_path / "cfg").mkdir(mode=0o700)
    return write_config(tmp_path / "cfg" / "config.json",
                        [scope_entry("claude-main", "acme", "acme-api", ["claude"], [str(tmp_path)])])


def _query(config: Path, env: dict[str, str], tmp_path: Path) -> dict[str, Any]:
    result = run_cli("query", "--db", str(tmp_path / "none.sqlite"), "--config", str(config),
                     stdin=json.dumps(make_request()).encode(), env=env)
    assert "Traceback" not in result.stderr
    return result.document()


def _status(config: Path, env: dict[str, str], tmp_path: Path, *fmt: str) -> CliResult:
    return run_cli("status", "--db", str(tmp_path / "none.sqlite"), "--config", str(config), *fmt, env=env)


def _key(config: Path) -> DigestKey:
    return DigestKey(bytes.fromhex(key_path(config).read_text().strip()))


@pytest.mark.parametrize("mode", [0o644, 0o666, 0o640, 0o604, 0o620])
def test_a_key_others_may_read_or_write_is_refused(config: Path, env: dict[str, str], tmp_path: Path,
                                                   mode: int) -> None:
    assert _query(config, env, tmp_path)["error"]["code"] == "index_missing"  # the private key is used
    key_path(config).chmod(mode)
    doc = _query(config, env, tmp_path)
    assert doc["outcome"] == "rejected" and doc["error"]["code"] == "config_invalid"
    assert doc["error"]["detail"] == ("the digest key file is readable or writable by group or others; fix: chmod "
                                      "600, then run `rotate-key` (others may have read it)")
    assert str(tmp_path) not in json.dumps(doc)
    check = run_cli("check-schema", "--format", "json", "--db", str(tmp_path / "none.sqlite"), "--config",
                    str(config), env=env)
    assert json.loads(check.stdout)["db_digest"] is None  # an unsafe key keys nothing


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root (CI runs as root)")
def test_a_key_owned_by_another_user_is_refused(config: Path, env: dict[str, str], tmp_path: Path) -> None:
    os.chown(key_path(config), 65534, 65534)
    doc = _query(config, env, tmp_path)
    assert doc["error"]["code"] == "config_invalid"
    assert doc["error"]["detail"] == "the digest key file is owned by another user; fix: chown $USER"


def test_status_reports_a_missing_key_while_a_scope_is_enabled(config: Path, env: dict[str, str],
                                                              tmp_path: Path) -> None:
    ok = _status(config, env, tmp_path, "--format", "json")
    assert ok.code == 0 and json.loads(ok.stdout)["digest_key"] == "present"
    key_path(config).unlink()
    assert _query(config, env, tmp_path)["error"]["code"] == "config_invalid"
    result = _status(config, env, tmp_path, "--format", "json")
    doc = json.loads(result.stdout)
    assert result.code == 1
    assert doc["digest_key"] == "absent" and "rotate-key" in doc["digest_key_error"]
    assert str(tmp_path) not in result.stdout
    text = _status(config, env, tmp_path)
    assert text.code == 1
    assert f"digest key {key_path(config)}: ABSENT, every query is refused" in text.stdout
    assert "rotate-key" in text.stdout


def test_status_reports_an_unsafe_key_with_its_fix(config: Path, env: dict[str, str], tmp_path: Path) -> None:
    key_path(config).chmod(0o644)
    result = _status(config, env, tmp_path, "--format", "json")
    doc = json.loads(result.stdout)
    assert result.code == 1 and doc["digest_key"] == "unusable"
    assert "chmod 600" in doc["digest_key_error"] and str(tmp_path) not in result.stdout
    text = _status(config, env, tmp_path)
    assert text.code == 1 and f"the digest key file {key_path(config)} is readable" in text.stdout


def test_no_key_and_no_scope_is_no_error(tmp_path: Path, env: dict[str, str]) -> None:
    (tmp_path / "cfg").mkdir(mode=0o700)
    config = tmp_path / "cfg" / "config.json"
    config.write_text(json.dumps({"config_version": 1}))
    config.chmod(0o600)
    result = _status(config, env, tmp_path, "--format", "json")
    doc = json.loads(result.stdout)
    assert result.code == 0 and doc["digest_key"] == "absent" and doc["digest_key_error"] is None


# --- rotate-key ------------------------------------------------------------------------------------------------


def _git_repo(path: Path) -> Path:
    path.mkdir()
    for args in (["init", "-q"], ["remote", "add", "origin", REMOTE_URL]):
        subprocess.run(["git", "-C", str(path), *args], check=True, capture_output=True)
    return path


def _enabled(tmp_path: Path, env: dict[str, str]) -> Path:
    """A config with one scope over a git repository with a remote, made by ``enable`` (which makes the key)."""
    (tmp_path / "cfg").mkdir(mode=0o700)
    config = tmp_path / "cfg" / "config.json"
    repo = _git_repo(tmp_path / "repo")
    result = run_cli("enable", "--agent-id", "claude-main", "--project-id", "acme", "--repository-id", "acme-api",
                     "--source", "claude", "--root", str(repo), "--allow-unknown-source", "--db",
                     str(tmp_path / "none.sqlite"), "--config", str(config), env=env)
    assert result.code == 0, result.stdout
    return config


def _remote_digests(config: Path) -> list[str]:
    scope = json.loads(config.read_text())["scopes"][0]
    digests: list[str] = scope["repository_identity"]["remote_digests"]
    return digests


def test_rotate_key_makes_a_new_key_and_remakes_the_remote_digests(tmp_path: Path, env: dict[str, str]) -> None:
    config = _enabled(tmp_path, env)
    old = _key(config)
    assert _remote_digests(config) == [old.of_text(REMOTE)]
    result = run_cli("rotate-key", "--config", str(config), env=env)
    assert result.code == 0, (result.stdout, result.stderr)
    assert json.loads(result.stdout) == {"ok": True, "action": "rotated", "scopes": 1, "remote_digests_before": 1,
                                         "remote_digests_after": 1}
    new = _key(config)
    assert new != old and (key_path(config).stat().st_mode & 0o777) == 0o600
    assert _remote_digests(config) == [new.of_text(REMOTE)]
    status = json.loads(_status(config, env, tmp_path, "--format", "json").stdout)
    assert status["scopes"][0]["remote_digests"] == [new.of_text(REMOTE)]
    assert status["scopes"][0]["root_digests"] == [new.of_text(str(tmp_path / "repo"))]
    assert sorted(os.listdir(config.parent)) == ["config.json", "digest.key"]  # no temporary file left


@pytest.mark.parametrize("damage", ["deleted", "readable", "malformed"])
def test_rotate_key_is_the_fix_status_gives(config: Path, env: dict[str, str], tmp_path: Path, damage: str) -> None:
    if damage == "deleted":
        key_path(config).unlink()
    elif damage == "readable":
        key_path(config).chmod(0o644)
    else:
        key_path(config).write_text("not a key\n")
    assert _status(config, env, tmp_path).code == 1
    assert run_cli("rotate-key", "--config", str(config), env=env).code == 0
    assert _status(config, env, tmp_path).code == 0
    assert _query(config, env, tmp_path)["error"]["code"] == "index_missing"  # answered again


@pytest.mark.parametrize("crash_at", ["key", "second config write"])
def test_a_crash_during_rotation_leaves_config_and_key_agreeing(tmp_path: Path, env: dict[str, str],
                                                               monkeypatch: pytest.MonkeyPatch,
                                                               crash_at: str) -> None:
    """Whatever write fails, the config on disk holds the remote digests under the key on disk; ``rotate-key``
    run again ends with the new key's digests alone."""
    import io

    from obelisk_session_evidence.commands import rotation

    config = _enabled(tmp_path, env)
    writes: list[str] = []
    real_key, real_config = rotation.write_key, rotation.write_config_file

    def write_key(*args: Any, **kwargs: Any) -> None:
        if crash_at == "key":
            raise OSError("crash")
        writes.append("key")
        real_key(*args, **kwargs)

    def write_config_file(*args: Any, **kwargs: Any) -> None:
        if crash_at == "second config write" and "key" in writes:
            raise OSError("crash")
        writes.append("config")
        real_config(*args, **kwargs)

    monkeypatch.setattr(rotation, "write_key", write_key)
    monkeypatch.setattr(rotation, "write_config_file", write_config_file)
    out = io.StringIO()
    assert rotation.rotate_key(config_path=config, out=out) == 1
    assert json.loads(out.getvalue())["error"]["code"] == "config_write_failed"
    assert _key(config).of_text(REMOTE) in _remote_digests(config)  # agrees with the key on disk
    assert len(_remote_digests(config)) == 2  # the stored digests and the new ones, until the rotation ends
    monkeypatch.undo()
    assert rotation.rotate_key(config_path=config, out=io.StringIO()) == 0
    assert _remote_digests(config) == [_key(config).of_text(REMOTE)]


def test_rotate_key_refuses_a_link_planted_at_the_key(config: Path, env: dict[str, str], tmp_path: Path) -> None:
    aim = tmp_path / "aim.key"
    aim.write_text("keep me\n")
    key_path(config).unlink()
    key_path(config).symlink_to(aim)
    before = config.read_bytes()
    result = run_cli("rotate-key", "--config", str(config), env=env)
    assert result.code == 2 and "Traceback" not in result.stderr
    assert json.loads(result.stdout)["error"]["code"] == "unsafe_write_target"
    assert aim.read_text() == "keep me\n" and key_path(config).is_symlink()
    assert config.read_bytes() == before  # refused before anything was written


def test_rotate_key_needs_a_named_config_to_exist(tmp_path: Path, env: dict[str, str]) -> None:
    result = run_cli("rotate-key", "--config", str(tmp_path / "typo" / "config.json"), env=env)
    assert result.code == 1 and json.loads(result.stdout)["error"]["code"] == "config_invalid"
    assert not (tmp_path / "typo").exists()
