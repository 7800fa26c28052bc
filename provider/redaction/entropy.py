"""The last-resort redaction rule: a free-standing token of 32 to 256 characters that looks random.

Random means: upper case, lower case and digits all present, at least 4.2 bits of Shannon entropy per
character, and not one of the long strings that are not secret: a hex digest (all hex), a UUID, a path
(it starts with ``/`` or holds more than two slashes), an SRI hash (``sha512-…``), an identifier made of
words (``snake_case`` or ``kebab-case`` parts that are mostly letters), or base64-encoded binary data (a run
of four equal characters, as zero bytes give ``AAAA``, or the encoded magic number of a PNG, JPEG, GIF,
PDF, zip or gzip file). It runs after every keyed rule and
has the lowest priority, so a token a specific rule names is counted under that rule's kind.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter

from .rule import Rule, rule

KINDS: tuple[str, ...] = ("high_entropy_token",)

MIN_BITS_PER_CHAR = 4.2
# Compiled on first use (``_compiled``): only a text holding a long token is checked with them.
_HEX = r"[0-9A-Fa-f]++"
_UUID = r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}"
_SRI = r"(?i)sha(?:1|224|256|384|512)-"
_WORDY_PART = r"[A-Za-z]{3,}"
_REPEAT = r"(.)\1{3}"
_FILE_MAGIC = ("iVBOR", "/9j/", "R0lGOD", "JVBER", "UEsDB", "H4sI")


@functools.cache
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def bits_per_char(value: str) -> float:
    """Shannon entropy of the characters of ``value``, in bits per character."""
    counts = Counter(value)
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def _wordy(value: str) -> bool:
    """``some_long_identifier_name2`` or ``a-kebab-case-name``: parts separated by ``_``/``-``, most of them
    words of three or more letters."""
    parts = [p for p in re.split(r"[_-]", value) if p]
    wordy_part = _compiled(_WORDY_PART)
    return len(parts) >= 3 and sum(1 for p in parts if wordy_part.fullmatch(p)) * 2 >= len(parts)


def looks_random(value: str, _m: re.Match[str] | None = None) -> bool:
    core = value.rstrip("=")
    if _compiled(_HEX).fullmatch(core) or _compiled(_UUID).search(core) or _compiled(_SRI).match(core):
        return False
    if core.startswith(("/", *_FILE_MAGIC)) or core.count("/") > 2 or _wordy(core) or _compiled(_REPEAT).search(core):
        return False
    if not (any(c.isupper() for c in core) and any(c.islower() for c in core) and any(c.isdigit() for c in core)):
        return False
    return bits_per_char(core) >= MIN_BITS_PER_CHAR


RULES: tuple[Rule, ...] = (
    rule(
        "high_entropy_token",
        r"(?<![A-Za-z0-9_+/=.-])[A-Za-z0-9_+/-]{32,256}+={0,2}(?![A-Za-z0-9_+/=.-])",
        ("",),
        accept=looks_random,
    ),
)
