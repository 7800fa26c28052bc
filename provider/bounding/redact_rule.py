"""The shape of one redaction rule, shared by the rule families (``redact.py``, ``redact_services.py``,
``redact_entropy.py``).

A rule is one regular expression, the lower-case trigger substrings without which it is not run, the part of
its match that is secret (``group``: None for the whole match, ``"value"`` for the dq/sq/uq value groups, or
a group name) and an optional plausibility check of that part.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

Accept = Callable[[str, re.Match[str]], bool]


@dataclass(frozen=True)
class Rule:
    kind: str
    pattern: re.Pattern[str]
    triggers: tuple[str, ...]  # lower-case substrings; the rule runs only if one is present
    group: str | None = None  # the secret part; None: the whole match; "value": dq/sq/uq
    accept: Accept | None = None
    fallback: re.Pattern[str] | None = None  # tried at the same start when an annotated match is rejected


def rule(
    kind: str,
    pattern: str,
    triggers: tuple[str, ...],
    *,
    group: str | None = None,
    accept: Accept | None = None,
    fallback: str | None = None,
) -> Rule:
    return Rule(kind, re.compile(pattern), triggers, group, accept, None if fallback is None else re.compile(fallback))
