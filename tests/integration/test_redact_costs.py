"""What redaction costs: linear time on 100 KB of adversarial input, and no rule compiled at import.

Split from tests/unit/test_redact.py (the rules' behaviour, the fast tier): these inputs are large by design and
the import check runs a fresh interpreter.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from obelisk_session_evidence.redaction.redact import redact

from tests.unit.test_redact import FAKE_GHP, FAKE_JWT, FAKE_PASSWORD, fill

ADVERSARIAL_UNITS = [
    "a", "A", "0", "=", "/", "-", "_", ".", ":", "@", '"', "'", "\\", " ", "\\\"",
    "AKIA", "ASIA0000", "ghp_", "github_pat_", "glpat-", "xoxb-", "xapp-1-", "sk-", "sk-ant-", "sk_live_",
    "AIza", "eyJ", "eyJa.", "eyJaaaaaaaa.aaaa.", "npm_", "hf_", "pypi-AgE",
    "-----BEGIN PRIVATE KEY-----", "-----BEGIN PRIVATE KEY-----x", "-----END PRIVATE KEY-----",
    "-----BEGIN RSA ",
    "password=", 'password="', "password='", "password: ", "password:a", "password: str", "--password ",
    "---password", "token=", "secret_key=", 'api_key="', "secret access key [", "aws_secret_access_key=",
    "a:", "a://", "a://a:", "://a:b", "a:b@", "Bearer ", "bearer a", "Authorization: Bearer ",
    "Authorization: Basic ", "-u ", "-u a:", "[REDACTED:jwt]", "[REDACTED:", "x" * 40 + "=", "0" * 39 + "/",
    # issue 30's rules and views
    "kind: Secret\ndata:\n  a: ", "  a: QUJD\n", "data:\n", '"data": {', '"data": {"a": "', "client-key-data: ",
    "LS0tLS1CRUdJTi", "LS0tLS1CRUdJTi" + "A" * 60 + "\n", "machine a.b login x ", "machine a.b\\n", "password ",
    '"auth": "', "'auth': '", "h:5432:a:b:", ":5432:a:b:c", "a:1:", "Pwd=", ";Uid=a;Pwd=", "SSHPASS=",
    "-U a%", "-U a\\b%", "lftp -u a,", "lftp ", "echo a | sudo -S", "sudo -S ", "sudo <<< ", "password is ",
    "password for the ", "password -> ", "密码是", "パスワードは", "비밀번호는", "password\uff1a", "shpat_",
    "M" + "A" * 25 + ".", "MTA4NzY1NDMyMTIzNDU2Nzg5MA.GFake0.", "AC" + "0" * 32, "AC" + "0" * 32 + ":",
    "auth_token ", "AGE-SECRET-KEY-1", "\\u0041", "\\\\u0041", "ghp_AAAA1111\n", "ghp_AAAA1111\\n",
    "Ab1" * 3 + "\n", "A" * 257, "A1b" * 90 + "=", "\n",
]  # fmt: skip


def _timed(text: str) -> float:
    start = time.perf_counter()
    redact(text)
    return time.perf_counter() - start


@pytest.mark.parametrize("unit", ADVERSARIAL_UNITS)
def test_adversarial_100kb_is_fast(unit: str) -> None:
    text = fill(unit, 100_000)
    assert _timed(text) < 0.5


def test_adversarial_mixtures_are_fast() -> None:
    worst = 0.0
    for i, a in enumerate(ADVERSARIAL_UNITS):
        b = ADVERSARIAL_UNITS[(i * 7 + 3) % len(ADVERSARIAL_UNITS)]
        worst = max(worst, _timed(fill(a + b, 100_000)), _timed(fill(a + " " + b, 100_000)))
    assert worst < 0.5


def test_many_secrets_100kb_is_fast() -> None:
    line = f"password={FAKE_PASSWORD} {FAKE_GHP} {FAKE_JWT} https://u:{FAKE_PASSWORD}@h [REDACTED:jwt]\n"
    text = fill(line, 100_000)
    assert _timed(text) < 0.5


@pytest.mark.parametrize("key", ["token=", "password=", "secret: ", "api_key='", '"password": "'])
@pytest.mark.parametrize("run", [50, 290, 299, 1000])
def test_runs_of_nested_keys_are_fast(key: str, run: int) -> None:
    text = fill(fill(key, run) + " ", 100_000)
    assert _timed(text) < 0.5


Builder = Callable[[int], str]


@pytest.mark.parametrize(
    "build",
    [
        lambda n: "-----BEGIN PRIVATE KEY-----\n" + "x" * n,
        lambda n: 'password="' + "a" * n,
        lambda n: "https://" + "a:" * (n // 2),
        lambda n: "https://a:" + "b" * n + " @",
        lambda n: "eyJ" + "a" * n,
        lambda n: "Authorization: Bearer " + "a" * n,
    ],
)
def test_single_long_run_is_fast(build: Builder) -> None:
    assert _timed(build(100_000)) < 0.5


def test_every_rule_compiles_and_none_is_compiled_at_import() -> None:
    """Rules compile on first use (cold start); a broken expression still fails here, not in a request."""
    import subprocess
    import sys

    from obelisk_session_evidence.redaction import redact as module

    rules = module._RULES
    assert len(rules) > 20
    for rule in rules:
        assert rule.pattern.pattern == rule.source
        assert rule.fallback is None or rule.fallback.pattern == rule.fallback_source
    script = ("from obelisk_session_evidence.redaction import redact as r; "
              "print(sum('pattern' in x.__dict__ or 'fallback' in x.__dict__ for x in r._RULES)); "
              "r.redact('password=Xy7!kq0Zp1 plain words'); "
              "print(sum('pattern' in x.__dict__ for x in r._RULES), len(r._RULES))")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout.split()
    assert out[0] == "0"  # nothing compiled by the import
    assert 0 < int(out[1]) < int(out[2])  # a snippet compiles only the rules its triggers call for
