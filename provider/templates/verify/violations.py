"""The verdict types: one broken rule (``Violation``) and the exception naming every rule broken."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Violation:
    """One broken rule. ``subject`` is a table or parameter name, or empty; never SQL text."""

    rule: str
    subject: str = ""

    def __str__(self) -> str:
        return f"{self.rule}({self.subject})" if self.subject else self.rule


class TemplateViolation(Exception):
    """A template (or raw SQL) broke one or more rules; the message names the rules only."""

    def __init__(self, violations: Sequence[Violation]) -> None:
        unique = tuple(dict.fromkeys(violations))
        if not unique:
            unique = (Violation("unknown"),)
        self.violations: tuple[Violation, ...] = unique
        self.rules: tuple[str, ...] = tuple(dict.fromkeys(v.rule for v in unique))
        super().__init__("template violates " + ", ".join(str(v) for v in unique))

    @property
    def rule(self) -> str:
        """The first rule broken."""
        return self.rules[0]
