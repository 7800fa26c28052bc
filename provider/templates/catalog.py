"""Load the versioned SQL templates in ``sql_templates/`` and their headers.

A template file is data: a header of ``-- key: value`` lines (id, version, evidence_type, needs, params)
followed by one SELECT. Code never assembles SQL from strings; it binds the declared parameters.
"""

import hashlib
import json
from functools import cache
from pathlib import Path
from typing import Literal, NamedTuple, cast

from .._resources import data_dir
from ..contract.wire import EVIDENCE_TYPES, EvidenceType

TEMPLATE_DIR = data_dir("sql_templates")
#: The shipped sqlglot verdicts beside the templates (see ``retrieval.verify.manifest``).
MANIFEST_FILENAME = "verified.json"
MANIFEST_FORMAT = 1
_MANIFEST_MAX_BYTES = 256 * 1024
_HEADER_KEYS = ("id", "version", "evidence_type", "needs", "params")


#: The one template that is not evidence: it lists the sessions in scope, run once per request.
SCOPE_KIND = "scope"
TemplateKind = EvidenceType | Literal["scope"]


class TemplateFormatError(ValueError):
    """A template file's header is missing or malformed."""


class Template(NamedTuple):
    id: str
    version: int
    evidence_type: TemplateKind
    needs: frozenset[tuple[str, str]]  # (table, column)
    params: tuple[str, ...]
    sql: str  # the original text, executed as is (regenerated SQL changes plans)
    digest: str  # sha256 of the file bytes
    filename: str

    @property
    def key(self) -> str:
        return f"{self.id}.v{self.version}"


def _parse_header(text: str, filename: str) -> dict[str, str]:
    header: dict[str, str] = {}
    for line in text.splitlines():
        if not line.startswith("--"):
            break
        key, sep, value = line[2:].strip().partition(":")
        if sep and key.strip() in _HEADER_KEYS:
            header[key.strip()] = value.strip()
    missing = [key for key in _HEADER_KEYS if key not in header]
    if missing:
        raise TemplateFormatError(f"{filename}: header lacks {', '.join(missing)}")
    return header


def parse_template(text: str, filename: str) -> Template:
    header = _parse_header(text, filename)
    evidence_type = header["evidence_type"]
    if evidence_type not in (*EVIDENCE_TYPES, SCOPE_KIND):
        raise TemplateFormatError(f"{filename}: unknown evidence_type")
    needs = set()
    for item in header["needs"].split():
        table, dot, column = item.partition(".")
        if not dot:
            raise TemplateFormatError(f"{filename}: need {item!r} is not table.column")
        needs.add((table, column))
    return Template(
        id=header["id"],
        version=int(header["version"]),
        evidence_type=cast("TemplateKind", evidence_type),
        needs=frozenset(needs),
        params=tuple(header["params"].split()),
        sql=text,
        digest=hashlib.sha256(text.encode()).hexdigest(),
        filename=filename,
    )


def load_templates(directory: Path = TEMPLATE_DIR) -> tuple[Template, ...]:
    """Every template in ``directory``, sorted by id (deterministic order); read once per directory in a
    process, however the directory is passed (by default or by name)."""
    return _load_templates(directory)


@cache
def _load_templates(directory: Path) -> tuple[Template, ...]:
    found = [parse_template(path.read_text(encoding="utf-8"), path.name)
             for path in sorted(directory.glob("*.sql"))]
    ids = [t.key for t in found]
    if len(ids) != len(set(ids)):
        raise TemplateFormatError("two templates share an id and version")
    return tuple(sorted(found, key=lambda t: t.id))


def scope_template(directory: Path = TEMPLATE_DIR) -> Template:
    """The ``scope.sessions`` template of ``directory`` (exactly one must exist)."""
    found = [t for t in load_templates(directory) if t.evidence_type == SCOPE_KIND]
    if len(found) != 1:
        raise TemplateFormatError("exactly one scope template is required")
    return found[0]



def shipped_digests(directory: Path = TEMPLATE_DIR) -> frozenset[str]:
    """Digests of the templates of ``directory`` that ``verified.json`` lists (:func:`_shipped_digests`; read once
    per directory in a process)."""
    return _shipped_digests(directory)


@cache
def _shipped_digests(directory: Path) -> frozenset[str]:
    """Digests of the templates of ``directory`` that ``verified.json`` says sqlglot verified when it was made
    (``tools/verify-templates``). Missing or malformed: none, so every template is verified in memory."""
    try:
        with open(directory / MANIFEST_FILENAME, "rb") as handle:
            raw = handle.read(_MANIFEST_MAX_BYTES + 1)
        data = json.loads(raw) if len(raw) <= _MANIFEST_MAX_BYTES else None
    except (OSError, ValueError):
        data = None
    if not isinstance(data, dict) or data.get("format") != MANIFEST_FORMAT:
        return frozenset()
    templates = data.get("templates")
    if not isinstance(templates, dict):
        return frozenset()
    return frozenset(d for d in templates.values() if isinstance(d, str))
