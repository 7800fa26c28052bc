"""Issue 12, item 3: the redaction classes that were missing, each with a positive and a negative case.

Positive: the secret disappears, its placeholder names the kind, and the key, flag or header around it stays
readable. Negative: text of the same shape that holds no secret is left exactly as it was.
"""

from __future__ import annotations

import pytest
from obelisk_session_evidence.redaction.entropy import bits_per_char, looks_random
from obelisk_session_evidence.redaction.redact import REDACTION_KINDS, redact


def fill(unit: str, n: int) -> str:
    return (unit * (n // len(unit) + 1))[:n]


PW = "Fake0-Pass!word"
AZURE_KEY = fill("Fake0Key+/AbCd", 86) + "=="
SAS_SIG = "Fake0Sig%2BAbCdEfGh1234567890%3D"
WEBHOOK = "T0FAKE000/B0FAKE000/" + fill("Fake0Hook", 24)
SENDGRID = "SG." + fill("Fake0abc", 22) + "." + fill("Fake0xyz_-", 43)
DIGITALOCEAN = "dop_v1_" + fill("0123456789abcdef", 64)
VAULT = "hvs." + fill("Fake0Vault", 26)
GCP_KEY_ID = fill("0123456789abcdef", 40)
SESSION = "Fake0Sess1onId99AbC"
RANDOM = "Fake0aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC2eF4"

# (kind, text, the secret that must disappear, a fragment that must stay)
POSITIVE: list[tuple[str, str, str, str]] = [
    ("azure_storage_key", f"DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={AZURE_KEY};"
                          "EndpointSuffix=core.windows.net", AZURE_KEY, "AccountName=acme;AccountKey="),
    ("azure_storage_key", f"https://acme.blob.core.windows.net/c/f?sv=2022-11-02&sp=r&sig={SAS_SIG}&x=1",
     SAS_SIG, "sv=2022-11-02&sp=r&sig="),
    ("slack_webhook", f"curl -X POST https://hooks.slack.com/services/{WEBHOOK} -d x", WEBHOOK,
     "https://hooks.slack.com/services/"),
    ("sendgrid_key", f"SENDGRID_API_KEY={SENDGRID}", SENDGRID, "SENDGRID_API_KEY="),
    ("digitalocean_token", f"doctl auth init -t {DIGITALOCEAN}", DIGITALOCEAN, "doctl auth init -t "),
    ("vault_token", f"export VAULT_TOKEN={VAULT}", VAULT, "export VAULT_TOKEN="),
    ("gcp_private_key_id", f'{{"type": "service_account", "private_key_id": "{GCP_KEY_ID}"}}', GCP_KEY_ID,
     '"private_key_id": "'),
    ("password_assignment", f"DB_PWD={PW} psql", PW, "DB_PWD="),
    ("password_assignment", f"SMTP_PASS='{PW}'", PW, "SMTP_PASS='"),
    ("password_assignment", f"redis_password: {PW}", PW, "redis_password: "),
    ("generic_secret_assignment", "GITHUB_TOKEN=Fake0Token123", "Fake0Token123", "GITHUB_TOKEN="),
    ("password_assignment", f"openssl rsa -in k.pem -passin pass:{PW} -out k2.pem", PW, "-passin pass:"),
    ("password_assignment", f"openssl enc -aes-256-cbc -pass pass:{PW} -in f", PW, "-pass pass:"),
    ("password_assignment", f"redis-cli -h cache -a {PW} ping", PW, "redis-cli -h cache -a "),
    ("password_assignment", f"htpasswd -b /etc/nginx/.htpasswd admin {PW}", PW, "htpasswd -b /etc/nginx/"),
    ("password_assignment", f"htpasswd -cb .htpasswd admin {PW}", PW, "admin "),
    ("password_assignment", f"htpasswd -nb admin {PW}", PW, "htpasswd -nb admin "),
    ("password_assignment", f"echo {PW} | docker login -u ci --password-stdin registry.example", PW,
     "| docker login -u ci --password-stdin"),
    ("password_assignment", f"echo '{PW}' | helm registry login r.example -u ci --password-stdin", PW, "echo '"),
    ("cookie", f"Cookie: session={SESSION}; theme=dark", SESSION, "Cookie: "),
    ("cookie", f'{{"Cookie": "sid={SESSION}"}}', SESSION, '"Cookie": "'),
    ("cookie", f"Set-Cookie: sid={SESSION}; Path=/; HttpOnly", SESSION, "; Path=/; HttpOnly"),
    ("high_entropy_token", f"the deploy key is {RANDOM} (rotate monthly)", RANDOM, "the deploy key is "),
]

NEGATIVE: list[str] = [
    "AccountKey=<your-storage-account-key>",
    "AccountKey=$AZURE_STORAGE_KEY",
    "sig=verified and the signature matches",
    "the signal sig=SIGTERM was sent",
    "see https://hooks.slack.com/services/ for the setup guide",
    "SG.unrelated sentence about SG. levels",
    "dop_v1_ is the DigitalOcean token prefix",
    "hvs.example is a Vault token placeholder",
    '"private_key_id": "<id>"',
    "DB_PWD=$DB_PWD psql",
    "SMTP_PASS=${SMTP_PASS}",
    "GITHUB_TOKEN=${{ secrets.GITHUB_TOKEN }}",
    "GITHUB_TOKEN=os.environ",
    "openssl rsa -in k.pem -passin env:KEY_PASS -out k2.pem",
    "openssl rsa -in k.pem -passin file:/run/secrets/pw",
    "redis-cli -h cache ping",
    "redis-cli -a $REDIS_PASSWORD ping",
    "htpasswd -c /etc/nginx/.htpasswd admin",
    "htpasswd -B /etc/nginx/.htpasswd admin",
    'echo "$CI_REGISTRY_PASSWORD" | docker login -u ci --password-stdin registry.example',
    "cat ~/pw.txt | docker login -u ci --password-stdin registry.example",
    "Cookie: theme=dark",
    "Set-Cookie: lang=en; Path=/",
    "the cookie jar is empty",
    "commit 3f2a1b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c0d9e",
    "sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "request 123e4567-e89b-12d3-a456-426614174000 failed",
    "integrity sha512-Fake0aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC2eF4gH6jK8mN0pQ2sT4vW6yZ8bC1eF3==",
    "test_every_receipt_field_is_recomputed_from_the_result",
    "src/provider/redaction/entropy/and/a/long/path/Name2.py",
    "ThisIsAVeryLongCamelCaseClassNameForTests",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaAAAAAA111",
]


def test_every_new_kind_is_declared() -> None:
    assert {kind for kind, *_ in POSITIVE} <= set(REDACTION_KINDS)
    assert REDACTION_KINDS[-1] == "high_entropy_token"  # the last resort loses every tie


@pytest.mark.parametrize(("kind", "text", "secret", "kept"), POSITIVE,
                         ids=[f"{p[0]}-{i}" for i, p in enumerate(POSITIVE)])
def test_each_new_class_is_redacted(kind: str, text: str, secret: str, kept: str) -> None:
    result = redact(text)
    assert secret not in result.text, result.text
    assert f"[REDACTED:{kind}]" in result.text, result.text
    assert result.counts.get(kind, 0) >= 1
    assert kept in result.text, result.text
    assert redact(result.text).text == result.text  # idempotent


@pytest.mark.parametrize("text", NEGATIVE)
def test_same_shape_without_a_secret_is_left_alone(text: str) -> None:
    result = redact(text)
    assert result.text == text, result.text
    assert dict(result.counts) == {}


def test_entropy_measure() -> None:
    assert bits_per_char("aaaa") == 0.0
    assert bits_per_char("abcd") == 2.0
    assert looks_random(RANDOM)
    assert not looks_random(RANDOM.lower())  # no upper case
    assert not looks_random(fill("0123456789abcdef", 40))  # a hex digest
