"""The shape of one redaction rule, shared by the rule families (``redact.py``, ``redact_services.py``,
``redact_entropy.py``).

A rule is one regular expression, the lower-case trigger substrings without which it is not run, the part of
its match that is secret (``group``: None for the whole match, ``"value"`` for the dq/sq/uq value groups, or
a group name) and an optional plausibility check of that part.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cached_property

Accept = Callable[[str, re.Match[str]], bool]


class Rule:
    """One rule; its expressions are compiled on first use (a request compiles only the rules whose triggers
    its snippets hold: cold start). A plain class, not a dataclass (a cold ``query`` imports no
    ``dataclasses``); nothing changes a rule once made."""

    def __init__(self, kind: str, source: str, triggers: tuple[str, ...], *, group: str | None = None,
                 accept: Accept | None = None, fallback_source: str | None = None) -> None:
        self.kind = kind
        self.source = source
        self.triggers = triggers  # lower-case substrings; the rule runs only if one is present
        self.group = group  # the secret part; None: the whole match; "value": dq/sq/uq
        self.accept = accept
        self.fallback_source = fallback_source  # tried at the same start when an annotated match is rejected

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
) -> Rule:
    return Rule(kind, pattern, triggers, group=group, accept=accept, fallback_source=fallback)
