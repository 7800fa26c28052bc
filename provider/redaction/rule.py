"""The shape of one redaction rule, shared by the rule families (``redact.py``, ``services.py``, ``encoded.py``,
``passwords.py``, ``entropy.py``), and the value pieces they share.

A rule is one regular expression, the lower-case trigger substrings without which it is not run, the part of
its match that is secret (``group``: None for the whole match, ``"value"`` for the dq/sq/uq value groups, or
a group name; or ``spans``: a function giving several secret parts of one match, e.g. every value of a
block), an optional plausibility check of that part, and an optional condition on the whole text (``within``:
checked once per text, before the rule runs, so no match asks it again). ``name`` names the class of secret the
rule finds
(several rules may share a placeholder ``kind``: a ``.netrc`` password and ``sshpass -p`` are both
``password_assignment``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import KW_ONLY, dataclass
from functools import cached_property

Accept = Callable[[str, re.Match[str]], bool]
Spans = Callable[[re.Match[str]], Iterable[tuple[int, int]]]
Within = Callable[[str], bool]

#: A value after a key: double-quoted, single-quoted (also backslash-escaped quotes) or a bare run.
VALUE = (
    r"""(?:\\?"(?P<dq>[^"\n]{1,1024}?)\\?"|\\?'(?P<sq>[^'\n]{1,1024}?)\\?'"""
    r"""|(?P<uq>[^\s"'`,;&<>(){}\[\]\\]++))"""
)

_NON_SECRET_WORDS = frozenset(
    {
        "none", "null", "nil", "true", "false", "undefined", "empty", "unset", "required", "optional",
        "str", "string", "bytes", "int", "bool", "any", "secretstr", "text", "char", "varchar", "hidden",
        "redacted", "masked", "omitted", "removed", "example", "placeholder",
    }
)  # fmt: skip
_MASK_CHARS = frozenset("*xX•.-_#?·")


def is_placeholder_value(value: str) -> bool:
    """A value that stands for a secret without being one: a variable, a template, a mask, a type name."""
    s = value.strip()
    if s.startswith(("$", "%(", "%{", "%s", "{{", "{%", "<", "[REDACTED:", "#{", "@{")):
        return True
    if set(s) <= _MASK_CHARS:  # also the empty value
        return True
    return s.lower() in _NON_SECRET_WORDS


@dataclass(frozen=True, eq=False)
class Rule:
    """One rule. Its expressions compile on first use: a text runs only the rules its triggers call for.
    Equal and hashed by identity (rule tuples key the trigger index's cache)."""

    kind: str
    source: str
    triggers: tuple[str, ...]  # lower-case substrings; the rule runs only if one is present
    _: KW_ONLY
    name: str  # the class of secret (tests and tools/redaction-fp name rules by it)
    group: str | None = None  # the secret part; None: the whole match; "value": dq/sq/uq
    accept: Accept | None = None
    fallback_source: str | None = None  # tried at the same start when an annotated match is rejected
    spans: Spans | None = None  # several secret parts of one match (``group`` and ``accept`` are then unused)
    within: Within | None = None  # a text this rule runs in at all (e.g. one that names the secret's kind)

    @cached_property
    def pattern(self) -> re.Pattern[str]:
        return re.compile(self.source)

    @cached_property
    def fallback(self) -> re.Pattern[str] | None:
        return None if self.fallback_source is None else re.compile(self.fallback_source)


def rule(
    kind: str,
    pattern: str,
    triggers: tuple[str, ...],
    *,
    group: str | None = None,
    accept: Accept | None = None,
    fallback: str | None = None,
    name: str | None = None,
    spans: Spans | None = None,
    within: Within | None = None,
) -> Rule:
    return Rule(kind, pattern, triggers, name=name or kind, group=group, accept=accept, fallback_source=fallback,
                spans=spans, within=within)
