"""Redaction rules for passwords written the ways ``redact.py``'s ``key=value`` rules do not read:

* config files: a ``.netrc`` ``password``, a Docker ``config.json`` ``"auth"`` (base64 of ``user:password``),
  a ``.pgpass`` line (``host:port:database:user:password``), ``Pwd=`` in an ODBC/ADO connection string;
* commands: ``SSHPASS=``, ``smbclient -U user%password``, ``lftp -u user,password``, ``echo pw | sudo -S``;
* prose and other languages: "the password is X", ``password -> X``, ``密码``, ``パスワード``, ``비밀번호``,
  and a full-width colon (``password`` U+FF1A ``X``).

Each rule replaces the password only (the key, the user name, the host stay readable). A value that stands for
a password (``$PW``, ``<password>``, ``****``) is left alone. Prose is held to more: the value after "the
password is" must look like a password (a digit with letters, mixed case inside the word, a symbol inside, or
six digits), so "the password is incorrect" and "password is None" stay.
"""

from __future__ import annotations

import binascii
import re

from .rule import VALUE, Rule, is_placeholder_value, rule

KINDS: tuple[str, ...] = ()  # every rule here is a password_assignment or a basic_auth

#: A bare word of a config file or command line; an escaped line break or quote (inside a JSON string) ends it.
_WORD = r"""(?:[^\s"'`\\]|\\(?![nrt"'\\]))++"""
#: A value after a key: quoted (the quotes stay) or a bare word.
_QUOTED_OR_WORD = (r"""(?:\\?"(?P<dq>[^"\\\n]{1,256}+)\\?"|\\?'(?P<sq>[^'\\\n]{1,256}+)\\?'"""
                   r"""|(?P<uq>""" + _WORD + "))")
#: Whitespace between the words of a ``.netrc``, line breaks (real or escaped) included.
_NETRC_SPACE = r"(?:[ \t]|\r?\n|\\r\\n|\\n)++"
_LINE_END = r"""(?=[ \t]*+(?:\r?\n|\\r|\\n|["'`]|\Z))"""
#: A ``.pgpass`` field: ``:`` and ``\`` inside it are escaped with ``\``.
_PG_FIELD = r"""(?:[^\s:\\"'`]|\\[:\\])++"""
#: What ends a ``.pgpass`` host, read backwards from its ``:port:``; a template (``{host}``, ``$HOST``) is no host.
_NOT_PG_HOST = frozenset(" \t\r\n:\\\"'`{}()$")
#: A password in prose: quoted, or a bare word whose trailing punctuation (``.`` ``,`` ``)`` ...) is not part of it.
_PROSE_VALUE = (r"""(?:[`"“](?P<dq>[^`"”\n]{1,256}+)[`"”]|'(?P<sq>[^'\n]{1,256}+)'"""
                r"""|(?P<uq>[^\s`"'“”]{0,255}?[^\s.,;:)`"'”\]}>])(?=[.,;:!?)`"'”\]}>]*+(?:\s|\\[nrt]|\Z)))""")
_ASCII_PW = r"A-Za-z0-9!#$%&*+\-/<=>?@\[\]^_{|}~"
#: An ASCII password after a key in CJK text or a full-width colon: it ends where the CJK text resumes.
_ASCII_VALUE = (r"""[ \t]*+[「『“"'`\uff08(]?[ \t]*+"""
                rf"(?P<v>[{_ASCII_PW}.:;]{{3,127}}[{_ASCII_PW}])(?![{_ASCII_PW}])")
_CONNECTION_KEY = (r"(?i)(?:uid|user[ \t]*id|user(?:name)?|server|driver|data[ \t]*source|database|dsn|host|provider)"
                   r"[ \t]*=")
_CODE_NAME = r"[A-Za-z_][A-Za-z0-9_]*+(?:\.[A-Za-z_][A-Za-z0-9_]*+)*+(?:\(.*)?"


#: Words that name a password in documentation and usage lines (``-U user%password``, ``echo pw | sudo -S``).
_NAMES_OF_A_PASSWORD = frozenset({"password", "passwd", "pass", "passphrase", "pw", "pwd", "secret", "mypassword",
                                  "yourpassword", "your_password", "your-password", "new_password", "pass123"})


def _stated(value: str, _m: re.Match[str]) -> bool:
    """A value given, not a stand-in for one (``$PW``, ``<password>``, ``****``, the word ``password``)."""
    word = value.strip(",;.)")
    return len(word) >= 2 and not is_placeholder_value(word) and word.lower() not in _NAMES_OF_A_PASSWORD


def _docker_auth(value: str, _m: re.Match[str]) -> bool:
    """``"auth"`` in a Docker config: base64 of ``user:password`` (or, failing that, a long mixed token)."""
    try:
        decoded = binascii.a2b_base64(value + "=" * (-len(value) % 4))
    except binascii.Error:
        decoded = b""
    if b":" in decoded:
        return True
    return len(value) >= 16 and any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


def _netrc(value: str, m: re.Match[str]) -> bool:
    """A ``machine`` that is a host name (``api.github.com``, ``localhost``) or ``default``: "machine learning
    login page password reset" is prose."""
    host = m.group("host")
    return (host is None or host == "localhost" or re.search(r"[A-Za-z0-9]\.[A-Za-z0-9]", host) is not None) and \
        _stated(value, m)


def _pgpass(value: str, m: re.Match[str]) -> bool:
    """The line's first field, read backwards from the ``:port:`` the rule matched: a host that is a name
    (``db.internal``), an IPv4 address or ``*``, alone at the start of a line (or of a quoted string), and a
    port: ``10:30:00:...`` is a time and ``1794132423000.123:8:4523:...`` a freshness cursor."""
    text, end = m.string, m.start()
    start = end
    while start > 0 and end - start < 253 and text[start - 1] not in _NOT_PG_HOST:
        start -= 1
    if text.startswith("n", start) and text.endswith("\\", 0, start):  # after an escaped line break
        start += 1
    else:
        before = start
        while before > 0 and text[before - 1] in " \t":
            before -= 1
        if before > 0 and text[before - 1] not in "\n\"'`":
            return False
    host, port = text[start:end], m.group("port")
    named = any(c.isalpha() for c in host) or re.fullmatch(r"[0-9]{1,3}(?:\.[0-9]{1,3}){3}", host) is not None
    return bool(host) and (host == "*" or named) and (port == "*" or int(port) <= 65535) and _stated(value, m)


def _connection_string_pwd(value: str, m: re.Match[str]) -> bool:
    """``Pwd=`` among the other keys of a connection string (``PWD=/home/me`` is the shell's directory)."""
    if not _stated(value, m) or value.startswith(("/", "~", ".")):
        return False
    before = m.string[max(0, m.start() - 256):m.start()]
    return ";" in before + m.string[m.end():m.end() + 1] and re.search(_CONNECTION_KEY, before) is not None


def _plausible_password(value: str, _m: re.Match[str]) -> bool:
    """A word that looks like a password, not like prose or code: a digit among letters, upper case inside it,
    a symbol inside it (not a hyphen or an apostrophe), or six or more digits."""
    core = value.strip("!?.")
    if len(value) < 6 or is_placeholder_value(value) or value.startswith(("/", "~", "./", "http")):
        return False
    # A word, a name, a dotted name or a call, without a digit or inner upper case: never on its own a password.
    if re.fullmatch(_CODE_NAME, core) and not any(c.isdigit() for c in core) and not any(
            c.isupper() for c in core[1:]):
        return False
    if core.isdigit():
        return len(core) >= 6
    has_digit = any(c.isdigit() for c in core)
    has_alpha = any(c.isalpha() for c in core)
    inner_upper = any(c.isupper() for c in core[1:]) and any(c.islower() for c in core)
    inner_symbol = any(not c.isalnum() and c not in "-'_" for c in core[1:-1])
    return (has_digit and has_alpha) or inner_upper or (inner_symbol and has_alpha)


def _ascii_password(value: str, m: re.Match[str]) -> bool:
    return len(value) >= 4 and _stated(value, m)


_PW_WORD = r"(?i:pass(?:word|wd|phrase)|pass[ -]?code|pw)"
#: Triggers of the prose rule: a word for a password ("1 passed" alone does not run it).
_PW_WORDS = ("password", "passwd", "passphrase", "passcode", "pass code", "pass-code", "pw ", "pw\t")
_PROSE_OWNER = (r"(?:[ \t]++(?i:for|of|to)[ \t]++(?:(?i:the)[ \t]++)?[^\s]{1,64}+"
                r"(?:[ \t]++(?i:user|account|database|db|server|host|box|vm|login))?)?")
_PROSE_VERB = (r"(?i:is[ \t]++now|is[ \t]++still|(?:has[ \t]++been|was|is)[ \t]++(?:set|changed|reset)[ \t]++to"
               r"|(?:set|changed|reset)[ \t]++to|will[ \t]++be|would[ \t]++be|should[ \t]++be|remains|is|was)")

RULES: tuple[Rule, ...] = (
    rule(  # machine example.com login me password X (one line, or one pair per line)
        "password_assignment",
        r"(?:(?<![A-Za-z0-9_-])|(?<=\\n))(?:machine[ \t]++(?P<host>" + _WORD + r")|default)"
        r"(?:" + _NETRC_SPACE + r"(?:login|account|port)[ \t]++" + _WORD + r"){0,3}+" + _NETRC_SPACE
        + r"password[ \t]++" + _QUOTED_OR_WORD,
        ("password",),
        group="value",
        accept=_netrc,
        name="netrc_password",
    ),
    rule(  # ~/.docker/config.json: {"auths": {"registry": {"auth": "<base64 of user:password>"}}}
        "basic_auth",
        r"""(?<![A-Za-z0-9_])\\?["']auth\\?["'][ \t]*+:[ \t]*+\\?["'](?P<v>[A-Za-z0-9+/]{4,}+={0,2})\\?["']""",
        ('"auth', "'auth"),
        group="v",
        accept=_docker_auth,
        name="docker_config_auth",
    ),
    rule(  # ~/.pgpass: hostname:port:database:username:password (a whole line, or a quoted one in echo '...');
        # matched from ":port:" (a pattern starting at a line start is tried at every position), host read back
        "password_assignment",
        r":(?P<port>[0-9]{1,5}+|\*):" + _PG_FIELD + ":" + _PG_FIELD + ":(?P<v>" + _PG_FIELD + ")" + _LINE_END,
        ("",),
        group="v",
        accept=_pgpass,
        name="pgpass_line",
    ),
    rule(  # Driver={...};Server=db;Uid=sa;Pwd=X; (ODBC), ...;User Id=sa;Pwd={X;with;semicolons} (braced)
        "password_assignment",
        r"""(?<![A-Za-z0-9_])(?i:pwd)[ \t]*+=[ \t]*+(?P<v>\{[^}\n]{1,256}+\}|[^;\s"'{}\\]++)""",
        ("pwd",),
        group="v",
        accept=_connection_string_pwd,
        name="connection_string_pwd",
    ),
    rule(  # SSHPASS=X sshpass -e ssh host; export SSHPASS='X'
        "password_assignment",
        r"(?<![A-Za-z0-9_])(?i:sshpass)[ \t]*+=[ \t]*+" + _QUOTED_OR_WORD,
        ("sshpass",),
        group="value",
        accept=_stated,
        name="sshpass_env",
    ),
    rule(  # smbclient //fs/share -U 'DOMAIN\user%X', rpcclient -U user%X, --user=user%X
        "password_assignment",
        r"""(?<![A-Za-z0-9_-])(?:-U|--user(?:name)?)(?:[ \t]++|=)\\?["']?"""
        r"""(?:[^\s%"'\\/]{1,64}+(?:\\{1,4}|/))?[^\s%"'\\]{1,64}+%(?P<v>[^\s"'`\\]++)""",
        ("-u",),
        group="v",
        accept=_stated,
        name="smb_user_password",
    ),
    rule(  # lftp -u user,X host; lftp -c 'open -u user,X host'
        "password_assignment",
        r"""(?<![A-Za-z0-9_-])(?:lftp|open)(?![A-Za-z0-9_-])[^\n|;&]{0,200}?[ \t](?:-u|--user)[ \t]++\\?["']?"""
        r"""[^\s,"'\\]{1,100}+,(?P<v>[^\s"'`\\]++)""",
        ("lftp",),
        group="v",
        accept=_stated,
        name="lftp_user_password",
    ),
    rule(  # echo X | sudo -S cmd (also printf '%s\n' X | sudo -kS cmd)
        "password_assignment",
        r"(?<![A-Za-z0-9_-])(?:echo|printf)(?:[ \t]+-[neE]+)?(?:[ \t]+'%s(?:\\n)?')?[ \t]+" + VALUE
        + r"[ \t]*\|[ \t]*sudo(?![A-Za-z0-9_-])[^\n|;&]{0,100}?[ \t](?:-[A-Za-z]*S[A-Za-z]*|--stdin)(?![A-Za-z0-9_-])",
        ("sudo",),
        group="value",
        accept=_stated,
        name="sudo_stdin_password",
    ),
    rule(  # sudo -S cmd <<< X
        "password_assignment",
        # The first -S after sudo is the one (atomic: no backtracking to a later one), then "<<<" before the
        # next "<" (possessive: the run stops at the first "<").
        r"(?<![A-Za-z0-9_-])sudo(?![A-Za-z0-9_-])(?>[^\n|;&]{0,100}?[ \t](?:-[A-Za-z]*S[A-Za-z]*|--stdin)"
        r"(?![A-Za-z0-9_-]))[^\n|;&<]{0,200}+<<<[ \t]*+" + VALUE,
        ("sudo",),
        group="value",
        accept=_stated,
        name="sudo_stdin_password",
    ),
    rule(  # the password is X; the password for the admin account was X; the passphrase has been changed to X
        "password_assignment",
        r"(?<![A-Za-z0-9_-])" + _PW_WORD + _PROSE_OWNER + r"[ \t]++" + _PROSE_VERB + r"(?:[ \t]*+:)?[ \t]++"
        + _PROSE_VALUE,
        _PW_WORDS,
        group="value",
        accept=_plausible_password,
        name="prose_password",
    ),
    rule(  # password -> X, "password" -> "X" (Scala), password → X
        "password_assignment",
        r"""(?<![A-Za-z0-9_-])(?i:pass(?:word|wd|phrase)|pwd)\\?["']?[ \t]*+(?:->|→|⇒|⟶)[ \t]*+""" + _PROSE_VALUE,
        ("password", "passwd", "passphrase", "pwd"),
        group="value",
        accept=_plausible_password,
        name="arrow_password",
    ),
    rule(  # 密码是 X, 密码 X (after a full-width colon), 数据库密码为 X, 密碼: X
        "password_assignment",
        r"(?:密码|密碼|口令)[ \t]*+(?:是|为|為|\uff1a|:|=)" + _ASCII_VALUE,
        ("密码", "密碼", "口令"),
        group="v",
        accept=_ascii_password,
        name="chinese_password",
    ),
    rule(  # パスワードは X, パスワード: X (also a full-width colon)
        "password_assignment",
        r"パスワード[ \t]*+(?:は|が|\uff1a|:|=)" + _ASCII_VALUE,
        ("パスワード",),
        group="v",
        accept=_ascii_password,
        name="japanese_password",
    ),
    rule(  # 비밀번호는 X, 비밀번호: X, 패스워드: X
        "password_assignment",
        r"(?:비밀번호|패스워드|암호)[ \t]*+(?:는|은|\uff1a|:|=)" + _ASCII_VALUE,
        ("비밀번호", "패스워드", "암호"),
        group="v",
        accept=_ascii_password,
        name="korean_password",
    ),
    rule(  # password, a full-width colon (U+FF1A, as an IME types it), X
        "password_assignment",
        r"(?<![A-Za-z0-9_-])(?i:pass(?:word|wd|phrase)?|pwd)[ \t]*+\uff1a" + _ASCII_VALUE,
        ("\uff1a",),
        group="v",
        accept=_ascii_password,
        name="fullwidth_colon_password",
    ),
)
