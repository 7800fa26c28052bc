"""The templates a request runs: chosen by evidence type and the live schema, verified before any runs."""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from .catalog import TEMPLATE_DIR, Template, load_templates, scope_of, shipped_digests


class Chosen(NamedTuple):
    """What a request runs: the evidence templates and their plans, the scope template and whether the live
    schema can run it (when not, nothing runs), and the requested evidence types left without a template."""

    templates: tuple[Template, ...]
    scope: Template
    scope_runs: bool
    skipped: tuple[str, ...]


@dataclass(slots=True)
class TemplateSet:
    """One template directory as this process knows it: its templates, the digests its shipped manifest vouches
    for, and those verified in memory here. A warm process keeps one per directory (a template is its bytes, so
    a verdict never goes stale); a one-shot request loads its own."""

    directory: Path
    templates: tuple[Template, ...]
    shipped: frozenset[str]
    verified: set[str] = field(default_factory=set)

    @classmethod
    def load(cls, directory: Path = TEMPLATE_DIR) -> "TemplateSet":
        return cls(directory, load_templates(directory), shipped_digests(directory))

    def choose(self, evidence_types: Sequence[str], missing: Mapping[str, Sequence[str]]) -> Chosen:
        """The templates of each requested type whose needed columns the live schema has (``missing``: the
        columns each template lacks, by key; a template it does not list cannot run), in request order, verified
        (:meth:`verify`) with the scope template."""

        def runs(template: Template) -> bool:
            return template.key in missing and not missing[template.key]

        scope = scope_of(self.templates)
        chosen: list[Template] = []
        skipped: list[str] = []
        for etype in evidence_types:
            ok = [t for t in self.templates if t.evidence_type == etype and runs(t)]
            chosen.extend(ok)
            if not ok:
                skipped.append(etype)
        if not runs(scope):  # nothing can be read within the scope: every type is skipped
            chosen, skipped = [], list(evidence_types)
        self.verify([scope, *chosen])
        return Chosen(tuple(chosen), scope, runs(scope), tuple(skipped))

    def verify(self, templates: Sequence[Template]) -> None:
        """Accept the templates the shipped manifest lists; verify any other in memory (once per process), or
        raise ``TemplateRejected``. Nothing is written."""
        pending = [t for t in templates if t.digest not in self.shipped and t.digest not in self.verified]
        if not pending:
            return
        # The verifier (and sqlglot) only for a template the shipped manifest does not list: most requests never.
        from .verify import ensure_verified

        ensure_verified(pending, shipped=())
        self.verified.update(t.digest for t in pending)
