"""Redaction rules for cloud-service credentials with a recognisable shape: Azure storage account keys and
SAS signatures, Slack webhook URLs, SendGrid, DigitalOcean and Vault tokens, and a GCP service account's
``private_key_id``; Shopify app tokens, Discord bot tokens, Twilio credentials and age secret keys. Each rule
replaces only the secret part (the key name, scheme and host stay readable).

A Twilio auth token is 32 hex digits, like any MD5 digest: it is recognised next to its account SID (``AC`` and
32 hex digits, the pair a client is built from), or by its key name (the ``*_TOKEN=`` and ``auth_token:`` rules
of ``redact.py``); an account SID is hidden only in a text that also holds an auth token, as the pair's half.
"""

from __future__ import annotations

import binascii
import re

from .rule import Rule, rule

KINDS: tuple[str, ...] = ("azure_storage_key", "slack_webhook", "sendgrid_key", "digitalocean_token",
                          "vault_token", "gcp_private_key_id", "shopify_token", "discord_token", "twilio_credentials",
                          "age_secret_key")


def _mixed(value: str, _m: re.Match[str]) -> bool:
    """Letters and digits (or percent-escapes) both present: a random token, not a word."""
    return any(c.isalpha() for c in value) and any(c.isdigit() or c == "%" for c in value)


def _discord_user_id(_value: str, m: re.Match[str]) -> bool:
    """A Discord bot token's first part is the bot's numeric user id, base64-encoded."""
    head = m.group("id")
    try:
        decoded = binascii.a2b_base64(head.replace("-", "+").replace("_", "/") + "=" * (-len(head) % 4))
    except binascii.Error:
        return False
    return 15 <= len(decoded) <= 20 and decoded.isdigit()


#: What pairs a SID with its auth token in one text: a key naming the token, or the SID written beside one.
_PAIRING_CUE = r"(?i:auth[ _-]?token|authtoken)|AC[0-9a-f]{32}[\s\"',:;/()\\]{1,12}+[0-9a-f]{32}(?![A-Za-z0-9])"


def _pairs_with_auth_token(text: str) -> bool:
    """A text that holds an account SID's auth token too (``TWILIO_AUTH_TOKEN=``, ``auth_token:``, or a SID
    written beside a token): every SID in it is hidden, the same SID in a URL path too."""
    return re.search(_PAIRING_CUE, text) is not None


# The patterns below start with their literal (``AC``, ``[MNO]``) and check the character before it after it: a
# pattern that starts with a look-behind is tried at every position of every text.
RULES: tuple[Rule, ...] = (
    rule(  # DefaultEndpointsProtocol=https;AccountName=x;AccountKey=<base64>;...
        "azure_storage_key",
        r"(?i:accountkey)[ \t]*=[ \t]*(?P<v>[A-Za-z0-9+/]{40,}+={0,2})",
        ("accountkey",),
        group="v",
    ),
    rule(  # a SAS URL or token: ...?sv=2022-11-02&ss=b&sig=<url-encoded base64>
        "azure_storage_key",
        r"(?<![A-Za-z0-9_])sig=(?P<v>[A-Za-z0-9%+/]{16,}+(?:=|%3[Dd]){0,2})",
        ("sig=",),
        group="v",
        accept=_mixed,
    ),
    rule(
        "slack_webhook",
        r"(?i:https?://hooks\.slack\.com/(?:services|workflows|triggers)/)(?P<v>[A-Za-z0-9_/-]{16,}+)",
        ("hooks.slack.com",),
        group="v",
    ),
    rule(
        "sendgrid_key",
        r"(?<![A-Za-z0-9_-])SG\.[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{30,50}(?![A-Za-z0-9_-])",
        ("sg.",),
    ),
    rule(
        "digitalocean_token",
        r"(?<![A-Za-z0-9_])do[opr]_v1_[a-f0-9]{64}(?![A-Za-z0-9])",
        ("_v1_",),
    ),
    rule(
        "vault_token",
        r"(?<![A-Za-z0-9_.-])hv[sbr]\.[A-Za-z0-9_-]{24,}+",
        ("hvs.", "hvb.", "hvr."),
        accept=_mixed,
    ),
    rule(  # a service account JSON key file: "private_key_id": "<40 hex>"
        "gcp_private_key_id",
        r"""(?i:private_key_id)\\?["']?[ \t]*[:=][ \t]*\\?["']?(?P<v>[A-Fa-f0-9]{32,64})(?![A-Za-z0-9])""",
        ("private_key_id",),
        group="v",
    ),
    rule(  # shpat_ (admin API), shpss_ (shared secret), shpca_ (custom app), shppa_ (private app)
        "shopify_token",
        r"(?<![A-Za-z0-9_])shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}(?![A-Za-z0-9])",
        ("shp",),
        name="shopify_token",
    ),
    rule(  # <base64 user id>.<timestamp>.<hmac>
        "discord_token",
        r"(?P<id>[MNO](?<![A-Za-z0-9_.-].)[A-Za-z0-9_-]{22,27})\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40}"
        r"(?![A-Za-z0-9_.-])",
        ("",),
        accept=_discord_user_id,
        name="discord_bot_token",
    ),
    rule(  # Client("AC...", "<auth token>"), AC...:<auth token>, the SID and the token side by side
        "twilio_credentials",
        r"AC(?<![A-Za-z0-9]AC)[0-9a-f]{32}[\s\"',:;/()\\]{1,12}+[0-9a-f]{32}(?![A-Za-z0-9])",
        ("ac",),
        name="twilio_sid_and_auth_token",
    ),
    rule(
        "twilio_credentials",
        r"AC(?<![A-Za-z0-9]AC)[0-9a-f]{32}(?![A-Za-z0-9])",
        ("ac",),
        within=_pairs_with_auth_token,
        name="twilio_account_sid",
    ),
    rule(
        "age_secret_key",
        r"(?<![A-Za-z0-9])(?i:AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58})(?![A-Za-z0-9])",
        ("age-secret-key-1",),
        name="age_secret_key",
    ),
)
