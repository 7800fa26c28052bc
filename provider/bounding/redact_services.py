"""Redaction rules for cloud-service credentials with a recognisable shape: Azure storage account keys and
SAS signatures, Slack webhook URLs, SendGrid, DigitalOcean and Vault tokens, and a GCP service account's
``private_key_id``. Each rule replaces only the secret part (the key name, scheme and host stay readable)."""

from __future__ import annotations

import re

from .redact_rule import Rule, rule

KINDS: tuple[str, ...] = ("azure_storage_key", "slack_webhook", "sendgrid_key", "digitalocean_token",
                          "vault_token", "gcp_private_key_id")


def _mixed(value: str, _m: re.Match[str]) -> bool:
    """Letters and digits (or percent-escapes) both present: a random token, not a word."""
    return any(c.isalpha() for c in value) and any(c.isdigit() or c == "%" for c in value)


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
)
