"""Load the versioned SQL templates in ``sql_templates/`` and parse their headers into typed fields.

A template file is data: a header of ``-- key: value`` lines (``sql_templates/README.md`` lists the keys),
then one SELECT. Code never assembles SQL from strings; it binds the declared parameters. The header is
read fail closed: an unknown key, a repeated key, a plan kind outside :data:`PLAN_KINDS`, or a plan whose
template is missing refuses the whole directory.
"""

import hashlib
import json
import re
from pathlib import Path
from typing import Final, Literal, NamedTuple, cast, get_args

from .._resources import data_dir
from ..contract.wire import EVIDENCE_TYPES, EvidenceType

TEMPLATE_DIR = data_dir("sql_templates")
#: The shipped sqlglot verdicts beside the templates (see ``templates.verify.manifest``).
MANIFEST_FILENAME = "verified.json"
MANIFEST_FORMAT = 1
_MANIFEST_MAX_BYTES = 256 * 1024

#: The one template that is not evidence: it lists the sessions in scope, run once per request.
SCOPE_KIND = "scope"
TemplateKind = EvidenceType | Literal["scope"]
#: The ways a template's rows may be read other than by the template itself (``retrieval.planner``).
PlanKind = Literal["fts_first", "scope_rows", "cue_rows", "cue_text", "cue_bodies", "term_probe"]
PLAN_KINDS: Final[tuple[PlanKind, ...]] = get_args(PlanKind)

_REQUIRED: Final = ("id", "version", "evidence_type", "purpose", "needs", "params")
_OPTIONAL: Final = ("plan_of", "plan", "shape", "markers")
_KEY: Final = re.compile(r"[a-z][a-z0-9_]*")
_NAME: Final = re.compile(r"[a-z][a-z0-9_]*")
_ID: Final = re.compile(r"[a-z][a-z0-9_]*(?:\.[a-z][a-z0-9_]*)+")


class TemplateFormatError(ValueError):
    """A template file's header is missing, malformed or names what does not exist."""


class Template(NamedTuple):
    id: str
    version: int
    evidence_type: TemplateKind
    needs: frozenset[tuple[str, str]]  # (table, column)
    params: tuple[str, ...]
    sql: str  # the original text, executed as is (regenerated SQL changes plans)
    digest: str  # sha256 of the file bytes
    filename: str
    purpose: str = ""
    #: A plan: the template whose rows it reads another way, and how (``plan``). None for a template itself.
    plan_of: str | None = None
    plan: PlanKind | None = None
    #: An evidence template's row shape: the name of the function that turns its rows into candidates
    #: (``retrieval.evidence.SHAPES``). A plan's rows take its template's shape.
    shape: str | None = None
    #: The marker words paired with the query terms (``retrieval.terms.MARKERS``), if any.
    markers: str | None = None

    @property
    def key(self) -> str:
        return f"{self.id}.v{self.version}"


def _parse_header(text: str, filename: str) -> dict[str, str]:
    """The leading ``-- key: value`` lines; the first other line (a bare ``--``, prose, SQL) ends them."""
    header: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.removeprefix("-- ").partition(": ")
        if not line.startswith("-- ") or not sep or not _KEY.fullmatch(key):
            break
        if key not in (*_REQUIRED, *_OPTIONAL):
            raise TemplateFormatError(f"{filename}: unknown header key {key!r}")
        if key in header:
            raise TemplateFormatError(f"{filename}: header key {key!r} given twice")
        header[key] = value.strip()
    missing = [key for key in _REQUIRED if not header.get(key)]
    if missing:
        raise TemplateFormatError(f"{filename}: header lacks {', '.join(missing)}")
    return header


def _name(header: dict[str, str], key: str, filename: str) -> str | None:
    value = header.get(key)
    if value is not None and not _NAME.fullmatch(value):
        raise TemplateFormatError(f"{filename}: {key} is not a name")
    return value


def _plan(header: dict[str, str], filename: str) -> tuple[str | None, PlanKind | None]:
    plan_of, plan = header.get("plan_of"), header.get("plan")
    if (plan_of is None) != (plan is None):
        raise TemplateFormatError(f"{filename}: plan_of and plan go together")
    if plan_of is not None and not _ID.fullmatch(plan_of):
        raise TemplateFormatError(f"{filename}: plan_of is not a template id")
    if plan is None:
        return None, None
    if plan not in PLAN_KINDS:
        raise TemplateFormatError(f"{filename}: unknown plan kind")
    return plan_of, plan


def parse_template(text: str, filename: str) -> Template:
    header = _parse_header(text, filename)
    evidence_type = header["evidence_type"]
    if evidence_type not in (*EVIDENCE_TYPES, SCOPE_KIND):
        raise TemplateFormatError(f"{filename}: unknown evidence_type")
    if not _ID.fullmatch(header["id"]) or not header["version"].isdigit():
        raise TemplateFormatError(f"{filename}: malformed id or version")
    needs = set()
    for item in header["needs"].split():
        table, dot, column = item.partition(".")
        if not dot:
            raise TemplateFormatError(f"{filename}: need {item!r} is not table.column")
        needs.add((table, column))
    plan_of, plan = _plan(header, filename)
    shape, markers = _name(header, "shape", filename), _name(header, "markers", filename)
    evidence = evidence_type != SCOPE_KIND and plan is None
    if evidence != (shape is not None) or (markers is not None and not evidence):
        raise TemplateFormatError(f"{filename}: only an evidence template (no plan, not the scope) declares "
                                  "shape (required) and markers")
    return Template(
        id=header["id"],
        version=int(header["version"]),
        evidence_type=cast("TemplateKind", evidence_type),
        needs=frozenset(needs),
        params=tuple(header["params"].split()),
        sql=text,
        digest=hashlib.sha256(text.encode()).hexdigest(),
        filename=filename,
        purpose=header["purpose"],
        plan_of=plan_of,
        plan=plan,
        shape=shape,
        markers=markers,
    )


def _check_plans(templates: list[Template]) -> None:
    """Every plan names an evidence template of its type in the same directory, once per kind."""
    own = {t.id: t for t in templates if t.plan is None}
    seen: set[tuple[str, str]] = set()
    for t in templates:
        if t.plan_of is None or t.plan is None:
            continue
        of = own.get(t.plan_of)
        if of is None or of.evidence_type != t.evidence_type or of.evidence_type == SCOPE_KIND:
            raise TemplateFormatError(f"{t.filename}: plan_of names no evidence template of its type")
        if (t.plan_of, t.plan) in seen:
            raise TemplateFormatError(f"{t.filename}: a second {t.plan} plan of {t.plan_of}")
        seen.add((t.plan_of, t.plan))


def load_templates(directory: Path = TEMPLATE_DIR) -> tuple[Template, ...]:
    """Every template in ``directory``, sorted by id (deterministic order)."""
    found = [parse_template(path.read_text(encoding="utf-8"), path.name)
             for path in sorted(directory.glob("*.sql"))]
    ids = [t.key for t in found]
    if len(ids) != len(set(ids)):
        raise TemplateFormatError("two templates share an id and version")
    _check_plans(found)
    return tuple(sorted(found, key=lambda t: t.id))


def scope_template(directory: Path = TEMPLATE_DIR) -> Template:
    """The ``scope.sessions`` template of ``directory`` (exactly one must exist)."""
    return scope_of(load_templates(directory))


def scope_of(templates: tuple[Template, ...]) -> Template:
    """The one scope template among ``templates``."""
    found = [t for t in templates if t.evidence_type == SCOPE_KIND]
    if len(found) != 1:
        raise TemplateFormatError("exactly one scope template is required")
    return found[0]


def shipped_digests(directory: Path = TEMPLATE_DIR) -> frozenset[str]:
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
