"""Replace secrets in snippet text with typed placeholders such as ``[REDACTED:aws_access_key]``.

``redact(text)`` never raises on any ``str`` (lone surrogates, NUL, CJK and emoji included) and returns the
redacted text with counts by kind (only kinds that were found).

How it works:

* Each rule is one regular expression (plus, for some, a plausibility check of the matched value). A rule
  names the part of its match that is secret: for an assignment or a URL only the value or the
  ``user:password`` part is replaced; the key, the scheme and the host stay readable.
* All candidate spans are resolved once: earliest start wins, then the longest, then the more specific
  kind (the order of ``REDACTION_KINDS``). A candidate contained in a chosen span is dropped; one that
  overlaps its end extends the chosen span, so a secret is never half-revealed. Each resolved span counts
  once, under the kind that won.
* Placeholders already present in the input are opaque to matching (seen as line breaks), kept as they are
  and never counted again, so ``redact(redact(x).text)`` returns the same text with no counts.
* Linear time: every pattern either starts with a literal that cannot recur inside the run it scans, or
  with a look-behind that lets an attempt start only at the beginning of a run; runs are scanned with
  possessive quantifiers (no backtracking into them) and the few lazy scans are bounded. A rule is only
  run when a cheap trigger substring is present. A key/value match is searched again from its value only
  when it is at most ``_RESCAN_LIMIT`` characters long (finds ``TOKEN='api_key=...'``). The whole is
  repeated until nothing new is found, at most ``_MAX_PASSES`` times. Work per call is O(len(text)).
* Views: a secret written in an encoding the rules do not read is matched in a view of the text with the
  encoding undone, and the span found there is mapped back: a run of eight or more ``\\uXXXX`` escapes is
  decoded (every rule runs on it), and a line break (real, or ``\\n`` inside a JSON string) between two runs
  of token characters is removed (the token-shaped rules of ``_JOINABLE_KINDS`` run on it: a key whose body
  wraps across lines). Only spans touching what the view changed are kept; the replaced span covers the
  escapes or the line break whole.
* The rule families: ``services.py`` (service tokens), ``passwords.py`` (config files, commands, prose and
  non-English keys), ``encoded.py`` (base64 forms), ``entropy.py`` (the last resort). Each rule carries the
  ``name`` of the class of secret it finds.
"""

import bisect
import functools
import re
import string
import types
from collections.abc import Callable, Iterator, Mapping
from typing import NamedTuple

from .encoded import KINDS as _ENCODED_KINDS
from .encoded import RULES as _ENCODED_RULES
from .entropy import KINDS as _ENTROPY_KINDS
from .entropy import RULES as _ENTROPY_RULES
from .passwords import RULES as _PASSWORD_RULES
from .rule import VALUE as _VALUE
from .rule import Accept, Rule
from .rule import is_placeholder_value as _is_placeholder_value
from .rule import rule as _rule
from .services import KINDS as _SERVICE_KINDS
from .services import RULES as _SERVICE_RULES

__all__ = ["PLACEHOLDER_RE", "REDACTION_KINDS", "Redacted", "placeholder", "redact"]

# Order matters: on a tie (same start, same length) the kind listed first wins.
REDACTION_KINDS: tuple[str, ...] = (
    "private_key",
    "jwt",
    "aws_access_key",
    "aws_secret",
    "github_token",
    "gitlab_token",
    "slack_token",
    "stripe_key",
    "anthropic_key",
    "openai_key",
    "google_api_key",
    "npm_token",
    "huggingface_token",
    "pypi_token",
    *_SERVICE_KINDS,
    "url_credentials",
    "bearer_token",
    "basic_auth",
    "cookie",
    "password_assignment",
    "generic_secret_assignment",
    *_ENCODED_KINDS,
    "key_material",
    *_ENTROPY_KINDS,
)

_PRIORITY: dict[str, int] = {kind: i for i, kind in enumerate(REDACTION_KINDS)}

#: Any placeholder, ours or one already in the input (kept verbatim, never redacted again).
PLACEHOLDER_RE: re.Pattern[str] = re.compile(r"\[REDACTED:[a-z0-9_]{1,40}\]")


def placeholder(kind: str) -> str:
    """The placeholder text that replaces a secret of ``kind``."""
    return f"[REDACTED:{kind}]"


class Redacted(NamedTuple):
    """Redacted text and the number of redactions by kind (only kinds with a count > 0)."""

    text: str
    counts: Mapping[str, int] = types.MappingProxyType({})


# --------------------------------------------------------------------------------------------------------
# Plausibility checks for values found after a key (assignments, headers, flags).

_Accept = Accept

_CREDENTIAL_WORDS = ("pass", "pwd", "secret", "token", "key", "cred", "auth")
# The checks' own expressions are compiled on first use (``_compiled``), as the rules' are: a text only needs
# those of the rules its triggers call for.
_IDENT_RE = r"[A-Za-z_][A-Za-z0-9_]*+(?:\.[A-Za-z_][A-Za-z0-9_]*+)*+"
_KEY_FOLLOWS = r":(?![=:])"  # a quoted "value" directly followed by ``:`` is the next key
_ALNUM = frozenset(string.ascii_letters + string.digits)


@functools.cache
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _value_text(m: re.Match[str]) -> tuple[str, bool]:
    """The secret value of a key/value match and whether it was quoted."""
    for name in ("dq", "sq"):
        v = m.group(name)
        if v is not None:
            return v, True
    return m.group("uq") or "", False


def _is_code_reference(value: str, quoted: bool, m: re.Match[str]) -> bool:
    """``password=password``, ``token=self.token``, ``secret=os.environ[...]``, ``pw=getpass()``, and a
    value that is itself the next key (``PASSWORD= passwd: x``: the nested assignment is found instead)."""
    if quoted:
        return _compiled(_KEY_FOLLOWS).match(m.string, m.end()) is not None
    if value[-1:] in (":", "=") and _compiled(_IDENT_RE).fullmatch(value, 0, len(value) - 1) is not None:
        low = value.lower()
        return value[-1] == ":" or any(w in low for w in _CREDENTIAL_WORDS)
    if _compiled(_IDENT_RE).fullmatch(value) is None:
        return False
    nxt = m.string[m.end() : m.end() + 1]
    if nxt in ("(", "["):
        return not _has_digit(value)
    if "." in value:
        return not _has_digit(value)
    low = value.lower()
    return any(w in low for w in _CREDENTIAL_WORDS) and not _has_digit(value)


def _is_prose(value: str, quoted: bool, m: re.Match[str]) -> bool:
    """``invalid password: expected at least 8 characters`` -- a colon, a plain word, then more words."""
    if quoted or (m.group("sep") or "") != ":" or not value.isalpha():
        return False
    rest = m.string[m.end() : m.end() + 3]
    return len(rest) >= 2 and rest[0] in " \t" and rest.lstrip(" \t")[:1] not in ("", "#", "\n", "\r")


def _accept_password(_value: str, m: re.Match[str]) -> bool:
    value, quoted = _value_text(m)
    if _is_placeholder_value(value):
        return False
    if _is_code_reference(value, quoted, m):
        return False
    return not _is_prose(value, quoted, m)


_LOWER = frozenset(string.ascii_lowercase)
_UPPER = frozenset(string.ascii_uppercase)
_DIGITS = frozenset(string.digits)


def _char_classes(value: str) -> tuple[bool, bool, bool, bool]:
    """ASCII lower, upper, digit, other -- present or not (set operations, no per-character Python loop)."""
    chars = frozenset(value)
    lower, upper, digit = not chars.isdisjoint(_LOWER), not chars.isdisjoint(_UPPER), not chars.isdisjoint(_DIGITS)
    return lower, upper, digit, not chars <= _ALNUM


def _has_digit(value: str) -> bool:
    return not _DIGITS.isdisjoint(value)


def _accept_generic(_value: str, m: re.Match[str]) -> bool:
    value, quoted = _value_text(m)
    if len(value) < 16 or _is_placeholder_value(value) or _is_code_reference(value, quoted, m):
        return False
    if value.startswith(("/", "./", "../", "~/")) or " " in value.strip():
        return False
    lower, upper, digit, other = _char_classes(value)
    if digit and (lower or upper):
        return True
    return (lower + upper + digit + other) >= 3


def _accept_mixed_token(value: str, _m: re.Match[str]) -> bool:
    """Free-standing tokens (``Bearer x``, ``sk-x``): letters and digits, not a path."""
    if value.startswith(("/", ".", "~")):
        return False
    lower, upper, digit, _other = _char_classes(value)
    return digit and (lower or upper)


@functools.cache
def _path_part() -> re.Pattern[str]:
    """The shape of a path component in the base64 alphabet: digits (``2026``), capitals (``LICENSES``) or
    words (``lib``, ``Header``, ``MyProject2``). Compiled on first use."""
    return re.compile(r"[0-9]+|[A-Z]+|(?:[A-Z]?[a-z]+[0-9]*)+")


def _is_path_token(token: str) -> bool:
    """Whether a base64-alphabet token is a path ("/home/me/src/...", "src/app/lib/..."), not key bytes: it
    starts with "/", or it has more than four slashes, none doubled, between parts shaped like path
    components. Key bytes can hold a run of slashes ("...000/////") or many slashes between random parts
    ("...0/0/0/0/0/", "Fk3q/9ZxL/..."), a path does neither."""
    if token.startswith("/"):
        return True
    if token.count("/") <= 4 or "//" in token:
        return False
    part = _path_part().fullmatch
    return all(part(name) for name in token.split("/") if name)


def _accept_key_material(value: str, _m: re.Match[str]) -> bool:
    """Base64 key material without its BEGIN line (a read window cut it off): two or more key-length lines
    with upper case and digits (hex digests, all lower case, never qualify), 96+ characters in all, none of
    them a path (``_is_path_token``)."""
    _lower, upper, digit, _other = _char_classes(value)
    if any(_is_path_token(token) for token in value.replace("\\n", " ").split()):
        return False
    return upper and digit and sum(ch.isalnum() for ch in value) >= 96


def _accept_url_password(value: str, _m: re.Match[str]) -> bool:
    password = value.partition(":")[2]
    return bool(password) and not _is_placeholder_value(password)


def _accept_user_flag(value: str, _m: re.Match[str]) -> bool:
    user, _, password = value.partition(":")
    if not password or _is_placeholder_value(password):
        return False
    return not (user.isdigit() and password.isdigit())  # docker -u 1000:1000


# --------------------------------------------------------------------------------------------------------
# Patterns. Conventions: possessive quantifiers (``*+``, ``++``, ``{m,}+``) on every run; look-behinds so an
# attempt can only start where a run starts; lazy scans only with a bound.

# Separator between a key and its value: optional closing quote of a JSON key (also backslash-escaped),
# then ``=``, ``:``, ``:=``, ``=>``, ``==``; the annotated form also takes a Python/TS annotation
# ``: Optional[str] =`` (a type has no digits and a space before ``=``). When the annotated reading yields
# no acceptable value, the plain reading is tried at the same place (``token: abc123 = x``).
_SEP_HEAD = r"""\\?["']?[ \t]*"""
_SEP_PLAIN = _SEP_HEAD + r"(?P<sep>:=|=>|==?|:)[ \t]*"
_SEP = _SEP_HEAD + r"(?:(?P<ann>:[ \t]*[A-Za-z_][A-Za-z_.\[\], |]{0,80}?[ \t]=(?!=))|(?P<sep>:=|=>|==?|:))[ \t]*"
_PW_KEY = r"(?i:pass(?:word|wd|phrase)|mysql_pwd)"
_GENERIC_KEY = (
    r"(?i:api[_-]?key|secret(?:[_-]?key)?|token|access[_-]?key|private[_-]?key|auth[_-]?key"
    r"|signing[_-]?key|encryption[_-]?key|credentials?)"
)
_AUTH_HEADER = r"""(?i:authorization)\\?["']?[ \t]*[:=][ \t]*\\?["']?"""


_Rule = Rule



_RULES: tuple[_Rule, ...] = (
    _rule(
        "jwt",
        r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{7,}+\.[A-Za-z0-9_-]{4,}+\.[A-Za-z0-9_-]*+",
        ("eyj",),
    ),
    _rule("aws_access_key", r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])", ("akia", "asia")),
    _rule(
        "aws_secret",
        r"(?i:secret[ _-]?(?:access[ _-]?)?key)(?:[ \t]*\[[^\]\n]{0,40}\])?"
        r"""(?:\\?["']?[ \t]*(?::=|=>|[:=])[ \t]*\\?["']?|[ \t]+)"""
        r"(?P<v>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])",
        ("secret",),
        group="v",
    ),
    _rule(
        "github_token",
        r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{36,}+|github_pat_[A-Za-z0-9_]{22,}+)",
        ("gh", "github_pat_"),
    ),
    _rule(
        "gitlab_token",
        r"(?<![A-Za-z0-9_-])gl(?:pat|ptt|dt|rt|soat|cbt)-[A-Za-z0-9_-]{20,}+(?:\.[A-Za-z0-9_-]++)*+",
        ("gl",),
    ),
    _rule(
        "slack_token",
        r"(?<![A-Za-z0-9_-])(?:xox[abposre]-[A-Za-z0-9-]{10,}+|xapp-[0-9]-[A-Za-z0-9-]{10,}+)",
        ("xox", "xapp-"),
    ),
    _rule(
        "stripe_key",
        r"(?<![A-Za-z0-9_])(?:(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}+|whsec_[A-Za-z0-9]{24,}+)",
        ("sk_", "rk_", "whsec_"),
    ),
    _rule("anthropic_key", r"(?<![A-Za-z0-9_-])sk-ant-[A-Za-z0-9_-]{20,}+", ("sk-ant-",)),
    _rule(
        "openai_key",
        r"(?<![A-Za-z0-9_-])sk-(?!ant-)[A-Za-z0-9_-]{32,}+",
        ("sk-",),
        accept=_accept_mixed_token,
    ),
    _rule("google_api_key", r"(?<![A-Za-z0-9_-])AIza[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])", ("aiza",)),
    _rule("npm_token", r"(?<![A-Za-z0-9_])npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])", ("npm_",)),
    _rule("huggingface_token", r"(?<![A-Za-z0-9_])hf_[A-Za-z0-9]{34,}+", ("hf_",), accept=_accept_mixed_token),
    _rule("pypi_token", r"(?<![A-Za-z0-9_-])pypi-AgE[A-Za-z0-9_-]{50,}+", ("pypi-",)),
    _rule(
        "url_credentials",
        r"""(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{0,31}+://"""
        r"""(?P<v>[^\s:/?#@"'`<>\[\]]*+:[^\s/?#"'`<>]+)@""",
        ("://",),
        group="v",
        accept=_accept_url_password,
    ),
    _rule(
        "bearer_token",
        _AUTH_HEADER + r"(?i:bearer|token)[ \t]+(?P<v>[A-Za-z0-9._~+/-]{8,}+=*+)",
        ("authorization",),
        group="v",
    ),
    _rule(
        "bearer_token",
        r"(?<![A-Za-z0-9_])(?i:bearer)[ \t]+(?P<v>[A-Za-z0-9._~+/-]{20,}+=*+)",
        ("bearer",),
        group="v",
        accept=_accept_mixed_token,
    ),
    _rule(
        "basic_auth",
        _AUTH_HEADER + r"(?i:basic)[ \t]+(?P<v>[A-Za-z0-9+/]{4,}+=*+)",
        ("authorization",),
        group="v",
    ),
    _rule(
        "basic_auth",
        r"""(?<![A-Za-z0-9_-])(?:-u|--user)[ \t]+\\?["']?(?P<v>[^\s:"'`]++:[^\s"'`]++)""",
        ("-u",),
        group="v",
        accept=_accept_user_flag,
    ),
    _rule(
        "password_assignment",
        _PW_KEY + _SEP + _VALUE,
        ("pass", "mysql_pwd"),
        group="value",
        accept=_accept_password,
        fallback=_PW_KEY + _SEP_PLAIN + _VALUE,
    ),
    _rule(
        "password_assignment",
        r"(?<![A-Za-z0-9_-])--[A-Za-z0-9-]{0,40}?" + _PW_KEY + r"(?P<sep>[ \t]+)(?![-\s])" + _VALUE,
        ("--",),
        group="value",
        accept=_accept_password,
    ),
    _rule(  # docker login -p X, sshpass -p X
        "password_assignment",
        r"(?<![A-Za-z0-9_-])(?:(?:docker|podman|buildah|nerdctl|skopeo|oras) login|helm registry login|sshpass)"
        r"(?![A-Za-z0-9_-])[^\n|;&]{0,200}?[ \t]-p(?P<sep>[ \t]+)(?![-\s])" + _VALUE,
        ("login", "sshpass"),
        group="value",
        accept=_accept_password,
    ),
    _rule(  # mysql -pX (attached; ``-p`` alone prompts and the next word is the database)
        "password_assignment",
        r"(?<![A-Za-z0-9_-])(?:mysql|mysqldump|mysqladmin|mariadb|mariadb-dump)(?![A-Za-z0-9_-])"
        r"[^\n|;&]{0,200}?[ \t]-p(?P<sep>)(?![-\s])" + _VALUE,
        ("mysql", "mariadb"),
        group="value",
        accept=_accept_password,
    ),
    _rule(
        "generic_secret_assignment",
        _GENERIC_KEY + _SEP + _VALUE,
        ("key", "secret", "token", "credential"),
        group="value",
        accept=_accept_generic,
        fallback=_GENERIC_KEY + _SEP_PLAIN + _VALUE,
    ),
)

def _accept_env_token(_value: str, m: re.Match[str]) -> bool:
    """``GITHUB_TOKEN=...``: any plausible value of eight or more characters (not a placeholder or a name)."""
    value, quoted = _value_text(m)
    return len(value) >= 8 and not _is_placeholder_value(value) and not _is_code_reference(value, quoted, m)


_HTPASSWD_FLAGS = r"htpasswd((?:[ \t]+-[A-Za-z]+)+)"


def _accept_htpasswd(value: str, m: re.Match[str]) -> bool:
    """``htpasswd -b`` (batch) takes the password on the command line; without ``b`` it prompts."""
    flags = _compiled(_HTPASSWD_FLAGS).match(m.group(0))
    return flags is not None and "b" in flags.group(1) and not _is_placeholder_value(value)


def _accept_cookie(value: str, _m: re.Match[str]) -> bool:
    """A cookie value worth hiding: eight or more characters with a digit or mixed case (a session id)."""
    if len(value) < 8 or _is_placeholder_value(value):
        return False
    lower, upper, digit, _other = _char_classes(value)
    return digit or (lower and upper)


_ENV_NAME = r"(?<![A-Za-z0-9_])[A-Za-z][A-Za-z0-9_]{0,80}?_"
_ARG_VALUE = r"""(?P<v>[^\s"'`;&|<>]++)"""

_RULES = (
    *_RULES,
    # .env style: DB_PWD=, SMTP_PASS=, REDIS_PASSWORD=, GITHUB_TOKEN= (any prefix, any case).
    _rule(
        "password_assignment",
        _ENV_NAME + r"(?i:pwd|pass|password|passwd)" + r"[ \t]*(?P<sep>:=|=|:)[ \t]*" + _VALUE,
        ("_pwd", "_pass"),
        group="value",
        accept=_accept_password,
    ),
    _rule(
        "generic_secret_assignment",
        _ENV_NAME + r"(?i:token)" + r"[ \t]*(?P<sep>:=|=|:)[ \t]*" + _VALUE,
        ("_token",),
        group="value",
        accept=_accept_env_token,
    ),
    # Passwords given as arguments: openssl -passin/-passout/-pass pass:X, redis-cli -a X, htpasswd -b.
    _rule(
        "password_assignment",
        r"(?<![A-Za-z0-9_-])-pass(?:in|out)?[ \t]+pass:" + _ARG_VALUE,
        ("pass:",),
        group="v",
        accept=lambda value, _m: not _is_placeholder_value(value),
    ),
    _rule(
        "password_assignment",
        r"(?<![A-Za-z0-9_-])redis-cli(?![A-Za-z0-9_-])[^\n|;&]{0,200}?[ \t](?:-a|--pass)(?P<sep>[ \t]+)(?![-\s])"
        + _VALUE,
        ("redis-cli",),
        group="value",
        accept=_accept_password,
    ),
    _rule(  # htpasswd -b[c...] FILE USER PASSWORD
        "password_assignment",
        r"(?<![A-Za-z0-9_-])htpasswd(?:[ \t]+-[A-Za-mo-z]+)+[ \t]+[^\s;&|-]\S*+[ \t]+[^\s;&|-]\S*+[ \t]+"
        + _ARG_VALUE,
        ("htpasswd",),
        group="v",
        accept=_accept_htpasswd,
    ),
    _rule(  # htpasswd -nb USER PASSWORD (to stdout, no file)
        "password_assignment",
        r"(?<![A-Za-z0-9_-])htpasswd(?:[ \t]+-[A-Za-z]+)*?[ \t]+-[A-Za-z]*n[A-Za-z]*(?:[ \t]+-[A-Za-z]+)*+"
        r"[ \t]+[^\s;&|-]\S*+[ \t]+" + _ARG_VALUE,
        ("htpasswd",),
        group="v",
        accept=_accept_htpasswd,
    ),
    _rule(  # echo PW | docker login --password-stdin (also printf '%s' PW | ...)
        "password_assignment",
        r"(?<![A-Za-z0-9_-])(?:echo|printf)(?:[ \t]+-[neE]+)?(?:[ \t]+'%s(?:\\n)?')?[ \t]+" + _VALUE
        + r"(?P<sep>)[ \t]*\|[^\n|;&]{0,200}?--password-stdin",
        ("password-stdin",),
        group="value",
        accept=_accept_password,
    ),
    # Cookie: a=1; b=2 (every value); Set-Cookie: a=1; Path=/ (the value, attributes kept; a second header glued
    # on with punctuation, `Set-Cookie: a=X(Set-Cookie: b=Y`, is a header of its own).
    _rule(
        "cookie",
        r"""(?<![A-Za-z0-9_-])(?i:cookie)\\?["']?[ \t]*:[ \t]*\\?["']?(?P<v>[^\r\n\t"'\\]{8,}+)""",
        ("cookie",),
        group="v",
        accept=lambda value, _m: "=" in value and _accept_cookie(value.partition("=")[2], _m),
    ),
    _rule(
        "cookie",
        r"""(?<![A-Za-z0-9_-])(?i:set-cookie)\\?["']?[ \t]*:[ \t]*\\?["']?[^=;\s"'\\]{1,100}+="""
        # The value ends where another cookie header starts: one finditer pass never matches inside a match.
        r"""(?P<v>(?:(?!(?i:(?:set-)?cookie)\\?["']?[ \t]*:)[^;\s"'\\])++)""",
        ("set-cookie",),
        group="v",
        accept=_accept_cookie,
    ),
    *_SERVICE_RULES,
    *_PASSWORD_RULES,
    *_ENCODED_RULES,
    # Two or more whitespace-separated base64 lines of key length: the body of a PEM key whose BEGIN line
    # lies outside the text (cut off by a read window). Hex digests have no upper case and never match.
    _rule(
        "key_material",
        r"(?<![A-Za-z0-9+/=])(?:[A-Za-z0-9+/]{40,100}+={0,2}(?:[ \t]*+(?:\r?\n|\\n)[ \t]*+|[ \t]++)){1,64}"
        r"[A-Za-z0-9+/]{16,100}+={0,2}(?![A-Za-z0-9+/=_.-])",
        ("",),
        accept=_accept_key_material,
    ),
    *_ENTROPY_RULES,
)

_PEM_BEGIN = r"-----BEGIN[A-Z0-9 ]{0,40}?PRIVATE KEY(?: BLOCK)?-----"
_PEM_END = r"-----END[A-Z0-9 ]{0,40}?PRIVATE KEY(?: BLOCK)?-----"
# What follows a BEGIN line in a real key: base64 or a ``Proc-Type:``-style header (after newlines, also
# backslash-escaped ones as in JSON strings).
_PEM_BODY = r"[ \t]*+(?:(?:\r?\n|\\r\\n|\\n)[ \t]*+){0,2}+(?:[A-Za-z0-9+/=]{8}|[A-Z][A-Za-z-]{1,39}: )"


def _private_keys(text: str) -> Iterator[tuple[int, int]]:
    """Whole BEGIN..END blocks; a BEGIN whose END was cut off (body follows, or nothing) runs to the end."""
    pos = 0
    no_end_from = len(text) + 1  # an END search from here on is known to fail
    pem_begin, pem_end = _compiled(_PEM_BEGIN), _compiled(_PEM_END)
    while (begin := pem_begin.search(text, pos)) is not None:
        end = pem_end.search(text, begin.end()) if begin.end() < no_end_from else None
        if end is not None:
            yield begin.start(), end.end()
            pos = end.end()
            continue
        no_end_from = min(no_end_from, begin.end())
        if begin.end() == len(text) or _compiled(_PEM_BODY).match(text, begin.end()) is not None:
            yield begin.start(), len(text)
            return
        pos = begin.end()


# --------------------------------------------------------------------------------------------------------
# Candidate collection and resolution.

_Candidate = tuple[int, int, int]  # start, end, priority
_MAX_PASSES = 4
# A rejected key/value match no longer than this is searched again from its value (bounds the rescans).
_RESCAN_LIMIT = 300


def _value_group(m: re.Match[str]) -> str:
    return "dq" if m.group("dq") is not None else "sq" if m.group("sq") is not None else "uq"


def _secret_span(rule: _Rule, m: re.Match[str]) -> tuple[int, int] | None:
    """The span to replace for one match of ``rule``, or None when the value is not plausibly secret."""
    if rule.group is None:
        start, end = m.span()
    elif rule.group == "value":
        start, end = m.span(_value_group(m))
    else:
        start, end = m.span(rule.group)
    if start >= end:
        return None
    if rule.accept is not None and not rule.accept(m.string[start:end], m):
        return None
    return start, end


@functools.cache
def _trigger_index(rules: tuple[_Rule, ...]) -> tuple[tuple[str, ...], dict[str, tuple[int, ...]]]:
    """The triggers of ``rules``, once each, and for each trigger the positions of the rules it runs."""
    by_trigger: dict[str, list[int]] = {}
    for i, rule in enumerate(rules):
        for t in rule.triggers:
            by_trigger.setdefault(t, []).append(i)
    return tuple(by_trigger), {t: tuple(ids) for t, ids in by_trigger.items()}


def _candidates(text: str, rules: tuple[_Rule, ...] | None = None,
                present: set[str] | None = None) -> list[_Candidate]:
    """Every rule's (or the given rules') candidate spans in ``text``, private key blocks included. ``present``
    (when given) receives the triggers found in ``text``."""
    lowered = text.lower()
    found: list[_Candidate] = []
    if rules is None:
        rules = _RULES
        if "private key" in lowered:
            pri = _PRIORITY["private_key"]
            found.extend((s, e, pri) for s, e in _private_keys(text))
    triggers, by_trigger = _trigger_index(rules)
    hit = [t for t in triggers if t in lowered]
    if present is not None:
        present.update(hit)
    for rule in [rules[i] for i in sorted({i for t in hit for i in by_trigger[t]})]:
        if rule.within is not None and not rule.within(text):
            continue
        pri = _PRIORITY[rule.kind]
        pos = 0
        while (m := rule.pattern.search(text, pos)) is not None:
            if rule.spans is not None:  # several secret parts in one match (the values of a block)
                found.extend((s, e, pri) for s, e in rule.spans(m) if s < e)
                pos = max(m.end(), pos + 1)
                continue
            span = _secret_span(rule, m)
            if span is None and rule.fallback is not None and m.group("ann") is not None:
                plain = rule.fallback.match(text, m.start())
                span = None if plain is None else _secret_span(rule, plain)
            if span is not None:
                found.append((span[0], span[1], pri))
            if rule.group == "value" and m.end() - m.start() <= _RESCAN_LIMIT:
                # The value may hold the next assignment (``TOKEN='api_key=...'``, ``PASSWORD= "password":
                # "..."``): search again from the value; overlaps are resolved later.
                pos = m.start(_value_group(m))
            else:
                pos = m.end()
    return found


# --------------------------------------------------------------------------------------------------------
# Views: the text with an encoding undone. A view is its text, the pieces it is made of (view start, source
# start, source characters per view character: 1 for copied text, 6 or 7 for a decoded escape) and the view
# spans that differ from the source (decoded runs; removed line breaks, empty spans).

#: The token shapes matched across a removed line break: a prefix that cannot occur in prose, then a body.
_JOINABLE_KINDS = frozenset({
    "jwt", "aws_access_key", "github_token", "gitlab_token", "slack_token", "stripe_key", "anthropic_key",
    "openai_key", "google_api_key", "npm_token", "huggingface_token", "pypi_token", "sendgrid_key",
    "digitalocean_token", "vault_token", "shopify_token", "age_secret_key",
})  # fmt: skip
#: Eight or more ``\\uXXXX`` escapes in a row, or as many ``\\\\uXXXX`` (escaped once more inside a JSON string).
_ESCAPE_RUN = r"(?:\\\\u[0-9A-Fa-f]{4}){8,}+|(?:\\u[0-9A-Fa-f]{4}){8,}+"
# A break inside a token: a line break (real, or escaped in a JSON string) with four token characters after it
# and a run of at least eight before it that is not all lower-case letters (a word at the end of a line is no
# token's head). Found break first: a pattern starting with a look-behind is tried at every position.
_BREAK = r"(?:\r?\n|\\r\\n|\\n)(?=[A-Za-z0-9_+/-]{4})"
_TOKEN_CHARS = frozenset(string.ascii_letters + string.digits + "_+/=-")
# What follows the break must be the rest of a token: one word of token characters (base64 padding at its
# end), with a digit or upper case after its first letter, ending where the line or the string does. The next
# line's ``KEY=value`` or a word of prose is not.
_WRAP_REST = r"""[A-Za-z0-9_+/-]{4,}+={0,2}(?=[\s"'`,;)\]}]|\\[nrt"]|\Z)"""


class _View(NamedTuple):
    text: str
    starts: list[int]  # view start of each piece
    pieces: list[tuple[int, int, int]]  # (view start, source start, source characters per view character)
    changed: list[tuple[int, int]]  # view spans that differ from the source, sorted

    def source(self, pos: int, *, end: bool = False) -> int:
        """The source position of view position ``pos`` (``end``: the end of a span ending there)."""
        i = bisect.bisect_right(self.starts, pos - 1 if end and pos > 0 else pos) - 1
        view_start, source_start, step = self.pieces[max(i, 0)]
        return source_start + step * (pos - view_start)

    def touches_change(self, start: int, end: int) -> bool:
        i = bisect.bisect_right([c[0] for c in self.changed], end) - 1
        while i >= 0 and self.changed[i][1] >= start:
            s, e = self.changed[i]
            if (s < end and e > start) or (s == e and start < s < end):
                return True
            i -= 1
        return False


def _escaped_view(text: str) -> _View | None:
    """``\\u0067\\u0068...`` (eight or more escapes in a row) decoded; None when the text holds no such run."""
    if "\\u" not in text:
        return None
    parts: list[str] = []
    pieces: list[tuple[int, int, int]] = []
    changed: list[tuple[int, int]] = []
    pos = view = 0
    for m in _compiled(_ESCAPE_RUN).finditer(text):
        pieces.append((view, pos, 1))
        parts.append(text[pos:m.start()])
        view += m.start() - pos
        width = 7 if m.group().startswith("\\\\") else 6
        decoded = "".join(chr(int(m.group()[i + width - 4:i + width], 16))
                          for i in range(0, m.end() - m.start(), width))
        pieces.append((view, m.start(), width))
        parts.append(decoded)
        changed.append((view, view + len(decoded)))
        view += len(decoded)
        pos = m.end()
    if not changed:
        return None
    pieces.append((view, pos, 1))
    parts.append(text[pos:])
    return _View("".join(parts), [p[0] for p in pieces], pieces, changed)


def _token_head_before(text: str, pos: int) -> bool:
    """Whether a run of at least eight token characters, not all lower-case letters, ends at ``pos``."""
    i, mixed = pos, False
    while i > 0 and pos - i < 512 and text[i - 1] in _TOKEN_CHARS and not (mixed and pos - i >= 8):
        mixed = mixed or text[i - 1] not in _LOWER
        i -= 1
    return mixed and pos - i >= 8


def _joined_view(text: str) -> _View | None:
    """Line breaks inside a token removed; None when the text has no such break."""
    parts: list[str] = []
    pieces: list[tuple[int, int, int]] = []
    changed: list[tuple[int, int]] = []
    pos = view = 0
    rest_of_token = _compiled(_WRAP_REST)
    for m in _compiled(_BREAK).finditer(text):
        if m.start() < pos or not _token_head_before(text, m.start()):
            continue
        rest = rest_of_token.match(text, m.end())
        if rest is None:
            continue
        word = rest.group().rstrip("=")
        if not (_has_digit(word) or (any(c.isupper() for c in word[1:]) and any(c.islower() for c in word))):
            continue
        pieces.append((view, pos, 1))
        parts.append(text[pos:m.start()])
        view += m.start() - pos
        changed.append((view, view))
        pos = m.end()
    if not changed:
        return None
    pieces.append((view, pos, 1))
    parts.append(text[pos:])
    return _View("".join(parts), [p[0] for p in pieces], pieces, changed)


def _view_candidates(text: str, present: set[str]) -> list[_Candidate]:
    """Candidates found in the views of ``text``, as spans of ``text``. A view whose rules are token shapes is
    made only when one of their triggers is in ``text`` (the triggers found there): a token's prefix is whole,
    it is its body that wraps."""
    found: list[_Candidate] = []
    for make, rules in _VIEWS:
        if rules is not None and present.isdisjoint(_trigger_index(rules())[0]):
            continue
        view = make(text)
        if view is None:
            continue
        for start, end, pri in _candidates(view.text, rules() if rules else None):
            if view.touches_change(start, end):
                found.append((view.source(start), view.source(end, end=True), pri))
    return found


def _joinable_rules() -> tuple[_Rule, ...]:
    return _joinable(_RULES)


@functools.cache
def _joinable(rules: tuple[_Rule, ...]) -> tuple[_Rule, ...]:
    return tuple(r for r in rules if r.kind in _JOINABLE_KINDS)



#: Each view and the rules it runs (None: every rule). ``tools/redaction-fp`` turns them off for its baseline.
_VIEWS: tuple[tuple[Callable[[str], _View | None], Callable[[], tuple[_Rule, ...]] | None], ...] = (
    (_escaped_view, None), (_joined_view, _joinable_rules))


def _resolve(found: list[_Candidate]) -> list[_Candidate]:
    """Earliest start wins, then longest, then priority; overlapping tails extend the winner."""
    found.sort(key=lambda c: (c[0], -c[1], c[2]))
    chosen: list[_Candidate] = []
    for start, end, pri in found:
        if chosen and start < chosen[-1][1]:
            last = chosen[-1]
            if end > last[1]:
                chosen[-1] = (last[0], end, last[2])
            continue
        chosen.append((start, end, pri))
    return chosen


def _outside(spans: list[tuple[int, int]], starts: list[int], start: int, end: int) -> list[tuple[int, int]]:
    """The parts of [start, end) outside the sorted, disjoint ``spans`` (existing placeholders)."""
    pieces: list[tuple[int, int]] = []
    i = max(bisect.bisect_right(starts, start) - 1, 0)
    cur = start
    while i < len(spans) and spans[i][0] < end:
        s, e = spans[i]
        if e > cur:
            if s > cur:
                pieces.append((cur, s))
            cur = max(cur, e)
        i += 1
    if cur < end:
        pieces.append((cur, end))
    return pieces


def _redact_once(text: str) -> tuple[str, dict[str, int]]:
    existing = [m.span() for m in PLACEHOLDER_RE.finditer(text)]
    existing_starts = [s for s, _ in existing]

    def starts_in_placeholder(candidate: _Candidate) -> bool:
        i = bisect.bisect_right(existing_starts, candidate[0]) - 1
        return i >= 0 and existing[i][1] > candidate[0]

    if existing:
        # Existing placeholders are opaque: matching sees each as a run of newlines (a boundary for every
        # rule, never skipped by a separator), so nothing can match into or across one. Same length, so
        # spans are valid in ``text``.
        masked = PLACEHOLDER_RE.sub(lambda m: "\n" * (m.end() - m.start()), text)
        present: set[str] = set()
        found = [c for c in [*_candidates(masked, present=present), *_view_candidates(masked, present)]
                 if not starts_in_placeholder(c)]
    else:
        present = set()
        found = [*_candidates(text, present=present), *_view_candidates(text, present)]
    out: list[str] = []
    counts: dict[str, int] = {}
    pos = 0
    for start, end, pri in _resolve(found):
        kind = REDACTION_KINDS[pri]
        # Parts between existing placeholders with nothing alphanumeric in them are left as they are.
        pieces = [
            (s, e) for s, e in _outside(existing, existing_starts, start, end) if any(c.isalnum() for c in text[s:e])
        ]
        if not pieces:
            continue
        for s, e in pieces:
            out.append(text[pos:s])
            out.append(placeholder(kind))
            pos = e
        counts[kind] = counts.get(kind, 0) + 1
    out.append(text[pos:])
    return "".join(out), counts


def redact(text: str) -> Redacted:
    """Replace every secret found in ``text`` by ``[REDACTED:<kind>]``; count the replacements by kind.

    Runs until nothing more is found (at most ``_MAX_PASSES`` passes; a second pass only runs when the
    first redacted something, and almost always finds nothing): a redaction can expose a neighbour, e.g. a
    key glued to the end of a PEM block, whose boundary check failed against the secret before it.
    """
    counts: dict[str, int] = {}
    for _ in range(_MAX_PASSES):
        text, found = _redact_once(text)
        if not found:
            break
        for kind, n in found.items():
            counts[kind] = counts.get(kind, 0) + n
    ordered = {k: counts[k] for k in REDACTION_KINDS if k in counts}
    return Redacted(text, types.MappingProxyType(ordered))
