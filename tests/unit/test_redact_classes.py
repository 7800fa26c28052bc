"""Issue 30, item 1: the secret classes that were shown in clear, each with several shapes as transcripts hold
them (a tool's output, a shell command, a JSON config the agent cat'ed, an assistant's message, a Codex output
JSON-escaped) and near-misses that must stay as they are.

A positive case passes when no 8-character piece of the secret survives, its placeholder names the kind, and
the class's own rule (or view) is what hides it: with that rule removed, the text comes out differently.
Secrets are random, drawn from a seeded generator (no secret-shaped literal sits in the source).
"""

from __future__ import annotations

import base64
import json
import random
import string
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from obelisk_session_evidence.redaction import redact as redaction
from obelisk_session_evidence.redaction.redact import redact

RNG = random.Random(30)
ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
BECH32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"


def rnd(n: int, alphabet: str = ALNUM) -> str:
    return "".join(RNG.choice(alphabet) for _ in range(n))


def password() -> str:
    """A password as people pick them: letters, digits, a symbol, 12 to 16 characters."""
    return rnd(4, string.ascii_uppercase) + rnd(RNG.randint(5, 9)) + RNG.choice("!#%+@") + rnd(3, string.digits)


def b64(data: str) -> str:
    return base64.b64encode(data.encode()).decode()


def pem(label: str) -> str:
    body = "\n".join(rnd(64, ALNUM + "+/") for _ in range(6))
    return f"-----BEGIN {label}-----\n{body}\n-----END {label}-----\n"


def escaped(text: str) -> str:
    return "".join(f"\\u{ord(c):04x}" for c in text)


def codex_output(text: str) -> str:
    """A Codex tool result: the command's output JSON-encoded, with its exit code."""
    return json.dumps({"output": text, "metadata": {"exit_code": 0, "duration_seconds": 0.4}})


def leaks(text: str, secret: str) -> bool:
    return any(secret[i:i + 8] in text for i in range(max(1, len(secret) - 7)))


#: Classes another rule also covers in every shape: a kubeconfig's client key is always an encoded PEM key.
ALSO = {"kubeconfig_client_key": "base64_private_key"}


@contextmanager
def without(*names: str) -> Iterator[None]:
    """Redaction with the rules named ``names`` (or the views of those names) taken out."""
    rules, views = redaction._RULES, redaction._VIEWS
    redaction._RULES = tuple(r for r in rules if r.name not in names)
    redaction._VIEWS = tuple(v for v in views if v[0].__name__.lstrip("_") not in names)
    assert rules != redaction._RULES or views != redaction._VIEWS, names
    try:
        yield
    finally:
        redaction._RULES, redaction._VIEWS = rules, views


# --- the secrets --------------------------------------------------------------------------------------------

RSA_PEM = pem("RSA PRIVATE KEY")
KEY_B64 = b64(RSA_PEM)
KEY_B64_CORE = KEY_B64[44:]  # past the encoded BEGIN line, which every encoded key shares
CERT_B64 = b64(pem("CERTIFICATE"))
PUBKEY_B64 = b64(pem("PUBLIC KEY"))
PW = [password() for _ in range(40)]
BLOB = rnd(344, ALNUM + "+/") + "="
SA_JSON_B64 = b64(json.dumps({"type": "service_account", "project_id": "acme-prod", "private_key_id": rnd(40, HEX),
                              "client_email": "deploy@acme-prod.iam.gserviceaccount.com",
                              "client_id": rnd(21, "0123456789"),
                              "token_uri": "https://oauth2.googleapis.com/token"}))
SHOPIFY = {p: p + rnd(32, HEX) for p in ("shpat_", "shpss_", "shpca_", "shppa_")}
DISCORD = [base64.urlsafe_b64encode(str(RNG.randint(10**17, 10**19 - 1)).encode()).decode().rstrip("=")
           + "." + rnd(6, ALNUM + "_-") + "." + rnd(n, ALNUM + "_-") for n in (27, 38, 38)]
TWILIO_SID = ["AC" + rnd(32, HEX) for _ in range(3)]
TWILIO_TOKEN = [rnd(32, HEX) for _ in range(3)]
AGE = ["AGE-SECRET-KEY-1" + rnd(58, BECH32) for _ in range(3)]
GHP = "ghp_" + rnd(36)
ANTHROPIC = "sk-ant-api03-" + rnd(93, ALNUM + "_-") + "AA"
AWS_KEY = "AKIA" + rnd(16, string.ascii_uppercase + string.digits)
STRIPE = "sk_live_" + rnd(99)
NPM = "npm_" + rnd(36)

# (class, kind, text, the secrets that must not survive)
POSITIVE: list[tuple[str, str, str, list[str]]] = [
    # base64 forms
    ("kubeconfig_client_key", "private_key",
     "apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority-data: " + CERT_B64 + "\n"
     "    server: https://10.0.0.1:6443\n  name: prod\nusers:\n- name: admin\n  user:\n"
     "    client-certificate-data: " + CERT_B64 + "\n    client-key-data: " + KEY_B64 + "\n", [KEY_B64_CORE]),
    ("kubeconfig_client_key", "private_key",
     json.dumps({"users": [{"name": "admin", "user": {"client-key-data": KEY_B64}}]}, indent=4), [KEY_B64_CORE]),
    ("kubeconfig_client_key", "private_key",
     codex_output("users:\n- name: ci\n  user:\n    client-key-data: " + KEY_B64 + "\n    token: null\n"),
     [KEY_B64_CORE]),
    ("base64_private_key", "private_key", f"echo {KEY_B64} | base64 -d > ~/.ssh/id_rsa && chmod 600 ~/.ssh/id_rsa",
     [KEY_B64_CORE]),
    ("base64_private_key", "private_key",
     "$ base64 id_rsa\n" + "\n".join(KEY_B64[i:i + 76] for i in range(0, len(KEY_B64), 76)) + "\n$ ",
     [KEY_B64_CORE[i:i + 30] for i in range(0, len(KEY_B64_CORE) - 30, 30)]),
    ("base64_private_key", "private_key", json.dumps({"DEPLOY_KEY_B64": KEY_B64, "region": "eu-west-1"}),
     [KEY_B64_CORE]),
    ("kubernetes_secret_data", "kubernetes_secret",
     "apiVersion: v1\ndata:\n  DB_USER: " + b64("app_rw") + "\n  DB_PASSWORD: " + b64(PW[0]) + "\n  STRIPE_KEY: "
     + b64(STRIPE) + "\nkind: Secret\nmetadata:\n  name: db-creds\n  namespace: prod\ntype: Opaque\n",
     [b64(PW[0]), b64(STRIPE)]),
    ("kubernetes_secret_data", "kubernetes_secret",
     json.dumps({"apiVersion": "v1", "data": {"api-token": b64(PW[1]), "url": b64("https://api.internal/v2")},
                 "kind": "Secret", "metadata": {"name": "api"}, "type": "Opaque"}, indent=4),
     [b64(PW[1]), b64("https://api.internal/v2")]),
    ("kubernetes_secret_data", "kubernetes_secret",
     f"cat k8s/secret.yaml\napiVersion: v1\nkind: Secret\nmetadata:\n  name: smtp\nstringData:\n  relay: "
     f"smtp.internal.example:587\n  login-secret: {PW[2]}\n", [PW[2], "smtp.internal.example"]),
    ("long_base64_token", "base64_blob", f"Generated session token:\n{BLOB}\nIt expires in 24 hours.", [BLOB]),
    ("long_base64_token", "base64_blob", f"gcloud auth activate-service-account --key-file=<(echo {SA_JSON_B64} | "
                                         "base64 -d)", [SA_JSON_B64]),
    ("long_base64_token", "base64_blob", json.dumps({"session": {"blob": BLOB, "ttl": 86400}}), [BLOB]),
    # config files and command lines
    ("netrc_password", "password_assignment",
     f"$ cat ~/.netrc\nmachine api.heroku.com\n  login ops@example.com\n  password {PW[3]}\nmachine git.heroku.com\n"
     f"  login ops@example.com\n  password {PW[4]}\n", [PW[3], PW[4]]),
    ("netrc_password", "password_assignment",
     f"echo 'machine ftp.example.org login deploy password {PW[5]}' >> ~/.netrc", [PW[5]]),
    ("netrc_password", "password_assignment",
     codex_output(f"machine registry.npmjs.org\nlogin ci\npassword {PW[6]}\n"), [PW[6]]),
    ("docker_config_auth", "basic_auth",
     '{\n\t"auths": {\n\t\t"ghcr.io": {\n\t\t\t"auth": "' + b64(f"octo:{PW[7]}") + '"\n\t\t}\n\t}\n}',
     [b64(f"octo:{PW[7]}")[8:]]),
    ("docker_config_auth", "basic_auth",
     codex_output(json.dumps({"auths": {"https://index.docker.io/v1/": {"auth": b64(f"me:{PW[8]}")}}})),
     [b64(f"me:{PW[8]}")[4:]]),
    ("docker_config_auth", "basic_auth",
     "{'auths': {'registry.gitlab.com': {'auth': '" + b64(f"gitlab-ci-token:{PW[9]}") + "'}}}",
     [b64(f"gitlab-ci-token:{PW[9]}")[20:]]),
    ("pgpass_line", "password_assignment",
     f"$ cat ~/.pgpass\ndb.internal:5432:app:app_rw:{PW[10]}\n*:*:*:postgres:{PW[11]}\n", [PW[10], PW[11]]),
    ("pgpass_line", "password_assignment",
     f"echo 'db-replica.prod.internal:6432:analytics:report:{PW[12]}' >> ~/.pgpass && chmod 600 ~/.pgpass",
     [PW[12]]),
    ("pgpass_line", "password_assignment", codex_output(f"10.0.3.7:5432:*:migrator:{PW[13]}\n"), [PW[13]]),
    ("connection_string_pwd", "password_assignment",
     'conn = pyodbc.connect("Driver={ODBC Driver 18 for SQL Server};Server=tcp:sql.internal,1433;'
     f'Database=billing;Uid=svc_billing;Pwd={PW[14]};Encrypt=yes;")', [PW[14]]),
    ("connection_string_pwd", "password_assignment",
     json.dumps({"ConnectionStrings": {"Default": f"Data Source=db;Initial Catalog=App;User Id=sa;Pwd={PW[15]};"}},
                indent=2), [PW[15]]),
    ("connection_string_pwd", "password_assignment",
     "DSN=warehouse;UID=etl;PWD={" + PW[16] + ";x};", [PW[16]]),
    ("sshpass_env", "password_assignment", f"SSHPASS='{PW[17]}' sshpass -e ssh deploy@10.0.0.5 'uptime'",
     [PW[17]]),
    ("sshpass_env", "password_assignment", f"export SSHPASS={PW[18]}\nsshpass -e rsync -a dist/ web:/srv/", [PW[18]]),
    ("sshpass_env", "password_assignment", f"$ env | grep SSH\nSSH_AUTH_SOCK=/tmp/ssh-x/agent.1\nSSHPASS={PW[19]}\n",
     [PW[19]]),
    ("smb_user_password", "password_assignment",
     f"smbclient //fs01.corp.local/finance -U 'CORP\\alice%{PW[20]}' -c 'ls reports/'", [PW[20]]),
    ("smb_user_password", "password_assignment", f"rpcclient -U svc_backup%{PW[21]} 10.0.0.12 -c enumdomusers",
     [PW[21]]),
    ("smb_user_password", "password_assignment", f"net rpc user info bob --user=admin%{PW[22]} -S dc01", [PW[22]]),
    ("lftp_user_password", "password_assignment",
     f"lftp -u deploy,{PW[23]} sftp://files.example.com -e 'mirror -R dist /www; bye'", [PW[23]]),
    ("lftp_user_password", "password_assignment",
     f'lftp -c "open -u ftpuser,{PW[24]} ftp.example.org; put build.tar.gz"', [PW[24]]),
    ("lftp_user_password", "password_assignment", f"lftp -u 'backup,{PW[25]}' ftp://nas.local", [PW[25]]),
    ("sudo_stdin_password", "password_assignment", f"echo '{PW[26]}' | sudo -S apt-get install -y nginx", [PW[26]]),
    ("sudo_stdin_password", "password_assignment", f"echo {PW[27]} | sudo -S -u postgres psql -c 'select 1'",
     [PW[27]]),
    ("sudo_stdin_password", "password_assignment", f"sudo -S systemctl restart app <<< '{PW[28]}'", [PW[28]]),
    # prose and other languages
    ("prose_password", "password_assignment",
     f"I reset it. The password is {PW[29]} and it is stored nowhere else, so save it now.", [PW[29]]),
    ("prose_password", "password_assignment",
     f"the password for the admin account is `{PW[30]}` (rotate it after the demo)", [PW[30]]),
    ("prose_password", "password_assignment", f"ok, the passphrase has been changed to {PW[31]}.", [PW[31]]),
    ("arrow_password", "password_assignment", f"DEBUG config: user -> app, password -> {PW[32]}, host -> db",
     [PW[32]]),
    ("arrow_password", "password_assignment", f'val props = Map("user" -> "app", "password" -> "{PW[33]}")',
     [PW[33]]),
    ("arrow_password", "password_assignment", f"admin password → {PW[34]}", [PW[34]]),
    ("chinese_password", "password_assignment", f"数据库密码是 {PW[35]}，请妥善保管。", [PW[35]]),
    ("chinese_password", "password_assignment", f"root 密码：{PW[36]}\n登录后请立即修改", [PW[36]]),
    ("chinese_password", "password_assignment", f"测试环境的账号 admin，密码为{PW[37]}。", [PW[37]]),
    ("japanese_password", "password_assignment", f"初期パスワードは「{PW[38]}」です。ログイン後に変更してください。",
     [PW[38]]),
    ("japanese_password", "password_assignment", f"ユーザー: deploy\nパスワード: {PW[39]}\n", [PW[39]]),
    ("japanese_password", "password_assignment", f"管理画面のパスワードは {PW[0]} です", [PW[0]]),
    ("korean_password", "password_assignment", f"관리자 비밀번호는 {PW[1]} 입니다.", [PW[1]]),
    ("korean_password", "password_assignment", f"계정: ops\n비밀번호: {PW[2]}\n", [PW[2]]),
    ("korean_password", "password_assignment", f"DB 패스워드: {PW[3]} (운영)", [PW[3]]),
    ("fullwidth_colon_password", "password_assignment", f"password：{PW[4]}", [PW[4]]),
    ("fullwidth_colon_password", "password_assignment", f"Password：{PW[5]}（本番環境）", [PW[5]]),
    ("fullwidth_colon_password", "password_assignment", f"ssh root@10.0.0.2  pwd：{PW[6]}", [PW[6]]),
    # token shapes
    ("shopify_token", "shopify_token",
     f"curl -H 'X-Shopify-Access-Token: {SHOPIFY['shpat_']}' https://acme.myshopify.com/admin/api/2024-07/shop.json",
     [SHOPIFY["shpat_"]]),
    ("shopify_token", "shopify_token",
     f"SHOPIFY_API_SECRET={SHOPIFY['shpss_']}\nSHOPIFY_CUSTOM_APP={SHOPIFY['shpca_']}", [SHOPIFY["shpss_"],
                                                                                        SHOPIFY["shpca_"]]),
    ("shopify_token", "shopify_token", json.dumps({"shop": "acme", "access_token": SHOPIFY["shppa_"]}),
     [SHOPIFY["shppa_"]]),
    ("discord_bot_token", "discord_token", f"bot = commands.Bot(command_prefix='!')\nbot.run('{DISCORD[0]}')",
     [DISCORD[0]]),
    ("discord_bot_token", "discord_token", f"DISCORD_TOKEN={DISCORD[1]}", [DISCORD[1]]),
    ("discord_bot_token", "discord_token",
     f'curl -H "Authorization: Bot {DISCORD[2]}" https://discord.com/api/v10/users/@me', [DISCORD[2]]),
    ("twilio_sid_and_auth_token", "twilio_credentials",
     f"client = Client('{TWILIO_SID[0]}', '{TWILIO_TOKEN[0]}')", [TWILIO_SID[0], TWILIO_TOKEN[0]]),
    ("twilio_sid_and_auth_token", "twilio_credentials",
     f"curl -X POST https://api.twilio.com/2010-04-01/Accounts/{TWILIO_SID[1]}/Messages.json "
     f"-u {TWILIO_SID[1]}:{TWILIO_TOKEN[1]}", [TWILIO_SID[1], TWILIO_TOKEN[1]]),
    ("twilio_sid_and_auth_token", "twilio_credentials",
     f"TWILIO_URL=https://{TWILIO_SID[2]}:{TWILIO_TOKEN[2]}@api.twilio.com/2010-04-01",
     [TWILIO_SID[2], TWILIO_TOKEN[2]]),
    ("twilio_account_sid", "twilio_credentials",
     f"TWILIO_ACCOUNT_SID={TWILIO_SID[2]}\nTWILIO_AUTH_TOKEN={TWILIO_TOKEN[2]}\n", [TWILIO_SID[2], TWILIO_TOKEN[2]]),
    ("twilio_account_sid", "twilio_credentials",
     json.dumps({"twilio": {"account_sid": TWILIO_SID[0], "auth_token": TWILIO_TOKEN[0]}}, indent=2),
     [TWILIO_SID[0], TWILIO_TOKEN[0]]),
    ("twilio_account_sid", "twilio_credentials",
     f'account_sid = "{TWILIO_SID[1]}"\nauth_token = os.environ["TWILIO_AUTH_TOKEN"]\nclient = Client(account_sid, '
     'auth_token)', [TWILIO_SID[1]]),
    ("age_secret_key", "age_secret_key",
     "$ cat ~/.config/sops/age/keys.txt\n# created: 2026-10-01T10:00:00Z\n"
     f"# public key: age1{rnd(58, 'qpzry9x8gf2tvdw0s3jn54khce6mua7l')}\n{AGE[0]}\n",
     [AGE[0]]),
    ("age_secret_key", "age_secret_key", f"export SOPS_AGE_KEY={AGE[1]}", [AGE[1]]),
    ("age_secret_key", "age_secret_key", json.dumps({"recipients": [], "identity": AGE[2].lower()}),
     [AGE[2].lower()]),
    # encodings
    ("escaped_view", "github_token", 'print("' + escaped(GHP) + '")', [GHP, escaped(GHP)]),
    ("escaped_view", "password_assignment", "PGPASSWORD=" + escaped(PW[7]) + " psql -h db", [PW[7], escaped(PW[7])]),
    ("escaped_view", "aws_access_key", codex_output("key id: " + escaped(AWS_KEY)), [AWS_KEY, escaped(AWS_KEY)]),
    ("joined_view", "anthropic_key",
     json.dumps({"output": f"export ANTHROPIC_API_KEY={ANTHROPIC[:60]}\n{ANTHROPIC[60:]}\n"}),
     [ANTHROPIC[:60], ANTHROPIC[60:]]),
    ("joined_view", "github_token", f"token: {GHP[:22]}\n{GHP[22:]}\nremote: ok", [GHP[:22], GHP[22:]]),
    ("joined_view", "npm_token", f"//registry.npmjs.org/:_authToken={NPM[:20]}\\n{NPM[20:]}", [NPM[:20], NPM[20:]]),
]

NEGATIVE: list[str] = [
    # base64 forms
    "users:\n- name: admin\n  user:\n    client-certificate-data: " + CERT_B64 + "\n"
    "    client-key: /home/me/.minikube/profiles/minikube/client.key\n",
    "clusters:\n- cluster:\n    certificate-authority-data: " + CERT_B64 + "\n    server: https://10.0.0.1:6443\n",
    f"echo {PUBKEY_B64} | base64 -d > key.pub",
    "apiVersion: v1\nkind: ConfigMap\ndata:\n  LOG_LEVEL: debug\n  FEATURE_FLAGS: " + b64("beta,search") + "\n",
    "kind: Secret\nmetadata:\n  name: db\ndata: {}\n",
    # A ConfigMap that names a secret: the Secret rule runs (its trigger is there) and finds no Secret kind.
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  secretRef: db-creds\n  LOG_LEVEL: debug\n",
    "helm values:\ndata:\n  retention: 30d\n  replicas: 3\n",
    "<img src=\"data:image/png;base64,iVBORw0KGgo" + rnd(400, ALNUM + "+/") + "\">",
    f"![chart](data:image/svg+xml;base64,{rnd(400, ALNUM)})",
    "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABgQ" + rnd(500, ALNUM + "+/") + " me@laptop",
    "sha512 " + rnd(300, HEX),
    "/".join(["home", "dev", "project", "node_modules", "@scope", "package", "dist", "esm"] * 10),
    # a UUID, a git SHA, paths: ids and names, no secret
    "request 123e4567-e89b-12d3-a456-426614174000 failed: the password is not set",
    "HEAD is now at 3f786850e387550fdab836ed7e6dc881de23001b fix: password -> reset flow",
    "the password is in /run/secrets/db_password (mounted by compose)",
    "Edit /home/dev/app/src/auth/password_reset.py and src/auth/netrc_login.py",
    # config files and command lines
    "fatal: could not read Password for 'https://github.com': terminal prompts disabled",
    "machine learning login page password reset flow",
    "machine github.com login octo password $GITHUB_TOKEN",
    '"auth": "oauth"',
    '{"auths": {"ghcr.io": {"auth": "$DOCKER_AUTH"}}}',
    "10:30:00:123:456",
    "root:x:0:0:root:/root:/bin/bash",
    "ether 00:1a:2b:3c:4d:5e txqueuelen 1000",
    "db.internal:5432:app:app:*",
    "cursor 1794132423000.123:8:4523:1794132423001.5:" + rnd(16, HEX),  # Obelisk's five-part signature
    'cursor = f"{late}:1:{s.st_size}:{ctime}:{s.st_ino}"',
    "db.internal:5432:app:app:$PGPASSWORD",
    "PWD=/home/dev/project",
    "echo $PWD; OLDPWD=/tmp",
    "Server=db;Database=app;Trusted_Connection=yes;",
    "SSHPASS=$DEPLOY_PW sshpass -e ssh deploy@host",
    "sshpass -e ssh host   # reads SSHPASS from the environment",
    "smbclient //fs01/share -U alice -c ls",
    "smbclient //fs01/share -U alice%$SMB_PASSWORD",
    "psql -U postgres -d app",
    "lftp -u deploy sftp://files.example.com",
    "lftp -u deploy,$FTP_PASS ftp://host",
    'echo "$SUDO_PW" | sudo -S ls',
    "echo hello | sudo tee /etc/motd",
    "sudo -S ls /root",
    # prose and other languages
    "The password is incorrect.",
    "the password is required for this endpoint",
    "if password is None:\n    raise ValueError('missing')",
    "assert password is user.password",
    "The password is stored in Vault, never in the repository.",
    "The password is at least 12 characters long.",
    "Remember: the password is case-sensitive.",
    "the password is self-explanatory, the token is not",
    "password -> hashed with bcrypt before storage",
    "password -> ********",
    "password -> $DB_PASSWORD",
    "密码错误，请重试",
    "密码长度至少 8 位",
    "密码为空",
    "パスワードを入力してください",
    "パスワードは8文字以上にしてください",
    "비밀번호를 입력하세요",
    "비밀번호는 8자 이상",
    "password：********",
    "password：请输入",
    # token shapes
    "Shopify admin tokens start with shpat_ and are 38 characters long",
    "shpat_" + rnd(31, HEX),
    "M123.abcdef.xyz",
    "Mozilla" + rnd(20) + "." + rnd(6) + "." + rnd(30),
    f"Account {TWILIO_SID[0]} was upgraded to a paid plan",
    f"md5 {rnd(32, HEX)}",
    "age1" + rnd(58, "qpzry9x8gf2tvdw0s3jn54khce6mua7l"),
    "AGE-SECRET-KEY-1 is the prefix of an age identity",
    # encodings
    '{"msg": "' + escaped("你好世界，这是一个测试") + '"}',
    '"emoji": "\\ud83d\\ude80\\ud83d\\ude80\\ud83d\\ude80\\ud83d\\ude80"',
    "build_output_dir_v2\nNextStepHandler",
    "compile_release_target\nrelease",
]


@pytest.mark.parametrize(("name", "kind", "text", "secrets"), POSITIVE,
                         ids=[f"{case[0]}-{i}" for i, case in enumerate(POSITIVE)])
def test_each_class_is_hidden_by_its_own_rule(name: str, kind: str, text: str, secrets: list[str]) -> None:
    result = redact(text)
    for secret in secrets:
        assert not leaks(result.text, secret), (secret[:12], result.text)
    assert f"[REDACTED:{kind}]" in result.text, result.text
    assert redact(result.text).text == result.text  # idempotent
    with without(name, *([ALSO[name]] if name in ALSO else [])):
        assert redact(text).text != result.text, f"{name} is not what hides the secret"


@pytest.mark.parametrize("text", NEGATIVE)
def test_near_misses_are_left_alone(text: str) -> None:
    result = redact(text)
    assert result.text == text, result.text
    assert dict(result.counts) == {}


def test_every_new_rule_has_three_shapes() -> None:
    names = [case[0] for case in POSITIVE]
    assert all(names.count(name) >= 3 for name in set(names)), names
    families = {r.name for r in redaction._RULES} | {v[0].__name__.lstrip("_") for v in redaction._VIEWS}
    assert set(names) <= families


def test_a_complete_token_does_not_swallow_the_next_line() -> None:
    """The joined view removes a break only inside a token: a whole token is redacted alone."""
    result = redact(f"GITHUB_TOKEN={GHP}\nARTIFACT_MIRROR=https://example.com/x")
    assert result.text == "GITHUB_TOKEN=[REDACTED:github_token]\nARTIFACT_MIRROR=https://example.com/x"


def test_escape_runs_map_back_to_whole_escapes() -> None:
    text = "password: " + escaped(PW[9]) + " done"
    result = redact(text)
    assert result.text.endswith(" done") and "\\u" not in result.text, result.text


def test_a_span_ending_at_a_removed_break_keeps_the_break() -> None:
    """A token wrapped over two breaks whose rule stops at the second (``/`` is no GitLab token character): the
    placeholder covers the token and the break inside it, the second break stays."""
    head, middle, tail = "glpat-" + rnd(10), rnd(12), "/" + rnd(8)
    result = redact(f"{head}\n{middle}\n{tail}")
    assert result.text == f"[REDACTED:gitlab_token]\n{tail}", result.text
