"""Redaction rules for secrets written in base64: a kubeconfig's ``client-key-data``, the values of a Kubernetes
Secret's ``data:`` (and ``stringData:``) block, a PEM private key encoded whole (text starting
``LS0tLS1CRUdJTi``, the base64 of ``-----BEGIN``), and any base64 token longer than 256 characters.

What stays: encoded public material (a certificate, a public key: the encoded BEGIN line is decoded and
read), an OpenSSH public key blob (``AAAAB3NzaC1yc2E…`` after ``ssh-rsa``), base64 file data (a ``data:`` URI,
or the encoded magic number of a PNG, JPEG, GIF, PDF, zip or gzip file: an image chunk is not a secret, and
counting it as one would make the counts lie), hex digests and paths. A ConfigMap's ``data:`` is not a
Secret's: values are hidden only in a text that declares ``kind: Secret``.
"""

from __future__ import annotations

import binascii
import re
from collections.abc import Iterator

from .rule import Rule, rule

KINDS: tuple[str, ...] = ("kubernetes_secret", "base64_blob")

#: Line breaks as a transcript may hold them: real ones, or escaped inside a JSON string.
_NL = r"(?:\r?\n|\\r\\n|\\n)"
_B64 = "A-Za-z0-9+/"
_FILE_MAGIC = ("iVBOR", "/9j/", "R0lGOD", "JVBER", "UEsDB", "H4sI")
_PUBLIC_LABELS = ("X509 CRL", "PGP SIGNATURE", "PKCS7", "CMS", "DH PARAMETERS", "EC PARAMETERS")
_SSH_KEY_TYPES = (b"ssh-", b"ecdsa-", b"sk-")


def _decoded_head(value: str, chars: int = 64) -> bytes:
    """The bytes the first ``chars`` base64 characters of ``value`` encode (b"" when they do not decode)."""
    head = re.sub(r"\\[rn]|\s", "", value[: chars + 16])[:chars]
    head = head[: len(head) - len(head) % 4].replace("-", "+").replace("_", "/")
    try:
        return binascii.a2b_base64(head)
    except binascii.Error:
        return b""


def _pem_label(decoded: bytes) -> str | None:
    """The label of a PEM BEGIN line (``RSA PRIVATE KEY``), or None when ``decoded`` does not start with one."""
    if not decoded.startswith(b"-----BEGIN "):
        return None
    label, sep, _ = decoded[len(b"-----BEGIN "):].partition(b"-----")
    return label.decode("ascii", "replace") if sep else label.decode("ascii", "replace") + "…"


def _is_public_label(label: str) -> bool:
    return "PUBLIC" in label or "CERTIFICATE" in label or label.rstrip("…") in _PUBLIC_LABELS


def _encodes_secret_pem(value: str, _m: re.Match[str]) -> bool:
    """An encoded PEM block that is not public material (a label cut short counts as secret)."""
    label = _pem_label(_decoded_head(value))
    return label is not None and not _is_public_label(label)


def _is_public_blob(value: str) -> bool:
    """Base64 data that is no secret: public PEM material, an OpenSSH public key blob, a file's bytes."""
    if value.startswith(_FILE_MAGIC):
        return True
    decoded = _decoded_head(value)
    label = _pem_label(decoded)
    if label is not None:
        return _is_public_label(label)
    # An OpenSSH public key: a 4-byte length, then the key type ("ssh-rsa", "ecdsa-sha2-nistp256", ...).
    return value.startswith("AAAA") and decoded[4:].startswith(_SSH_KEY_TYPES)


def _blob(value: str, m: re.Match[str]) -> bool:
    """A base64 run of more than 256 characters: letters of both cases and digits (hex and words are not
    base64 data), not a path, not public or file data, not inside a ``data:`` URI."""
    core = value.rstrip("=")
    if not (any(c.isupper() for c in core) and any(c.islower() for c in core) and any(c.isdigit() for c in core)):
        return False
    if core.startswith("/") or core.count("/") * 24 > len(core):  # a path: a slash every few characters
        return False
    if m.string.endswith(";base64,", max(0, m.start() - 8), m.start()):
        return False
    return not _is_public_blob(core)


_KIND_LINE = r"""(?i:kind)\\?["']?[ \t]*:[ \t]*\\?["']?Secret(?![A-Za-z0-9])"""


def _declares_secret(text: str) -> bool:
    """A text holding ``kind: Secret`` (YAML or JSON): the only one whose ``data:`` blocks are a Secret's."""
    return re.search(_KIND_LINE, text) is not None


#: One line of a YAML block (after its line break) and the "key:" that may start it.
_LINE = _NL + r"(?P<line>(?:[^\n\\]|\\(?![rn]))*+)"
_KEY = r"[ \t]*+[A-Za-z0-9._-]{1,253}+[ \t]*+:(?:[ \t]++|$)"
_BLOCK_SCALAR = frozenset({"|", ">", "|-", ">-", "|+", ">+"})
_QUOTES = " \t\"'\\"
_JSON_ENTRY = r"""\\?"[A-Za-z0-9._-]{1,253}+\\?"[ \t]*+:[ \t]*+\\?"(?P<v>[^"\\\n]++)\\?\""""


def _secret_values(m: re.Match[str]) -> Iterator[tuple[int, int]]:
    """Every value of a Secret's ``data:``/``stringData:`` block: each YAML line's value (a line without a key
    continues a block scalar and is hidden whole), or each value of the JSON object."""
    if m.group("json") is not None:
        base = m.start("jbody")
        for found in re.finditer(_JSON_ENTRY, m.group("jbody")):
            yield base + found.start("v"), base + found.end("v")
        return
    base = m.start("body")
    for line in re.finditer(_LINE, m.group("body")):
        text = line.group("line")
        key = re.match(_KEY, text)
        after_key = key.end() if key else 0
        start = len(text) - len(text[after_key:].lstrip(_QUOTES))
        end = len(text.rstrip(_QUOTES))
        if start < end and text[start:end] not in _BLOCK_SCALAR:
            yield base + line.start("line") + start, base + line.start("line") + end


RULES: tuple[Rule, ...] = (
    rule(  # kubeconfig users[].user.client-key-data: the client's private key, PEM in base64
        "private_key",
        r"""(?<![A-Za-z0-9_-])(?i:client-key-data)\\?["']?[ \t]*:[ \t]*\\?["']?(?P<v>[A-Za-z0-9+/]{16,}+={0,2})""",
        ("client-key-data",),
        group="v",
        name="kubeconfig_client_key",
    ),
    rule(  # base64 of "-----BEGIN ... PRIVATE KEY-----": one line, or wrapped into full lines of 60 or more
        "private_key",
        rf"(?<![{_B64}=])LS0tLS1CRUdJTi[{_B64}]*+(?:(?<=[{_B64}]{{60}}){_NL}[{_B64}]++)*+={{0,2}}",
        ("ls0tls1crudjti",),
        accept=_encodes_secret_pem,
        name="base64_private_key",
    ),
    rule(  # kind: Secret ... data: / stringData: followed by deeper-indented "key: value" lines, or JSON
        "kubernetes_secret",
        r"""(?:(?:\A|(?<=\n)|(?<=\\n))(?P<i>[ \t]*+)(?:data|stringData):[ \t]*+"""
        r"""(?P<body>(?:""" + _NL + r"""(?P=i)[ \t]++(?:[^\n\\]|\\(?![rn]))++)++)"""
        r"""|(?P<json>\\?"(?:data|stringData)\\?"[ \t]*+:[ \t]*+\{)(?P<jbody>[^{}]{1,65536}+)\})""",
        ("secret",),
        spans=_secret_values,
        within=_declares_secret,
        name="kubernetes_secret_data",
    ),
    rule(
        "base64_blob",
        r"(?<![A-Za-z0-9_+/.-])[A-Za-z0-9_+/-]{257,}+={0,2}(?![A-Za-z0-9_+/=-]|\.[A-Za-z0-9_+/-])",
        ("",),
        accept=_blob,
        name="long_base64_token",
    ),
)
