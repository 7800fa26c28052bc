"""Static verification of the SQL templates (provider/templates/verify/) and their headers.

* every shipped template passes the verifier;
* golden cases in tests/golden/sql/: one small file per case whose first line is ``-- expect: ok`` or
  ``-- expect: violation <rule>``, followed by ``-- params:`` (declared parameters) and optionally
  ``-- needs:`` (declared columns; without it the needs rule is not checked);
* the shipped verdicts (``sql_templates/verified.json``): a corrupt manifest vouches for nothing, a listed digest
  is not verified again, a failing or crashing verifier is a rejection;
* the header: declared keys, read fail closed.

The manifest as the tool and a fresh process see it, and execution on the real Obelisk database:
tests/integration/test_template_files.py.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
from obelisk_session_evidence.errors import TemplateRejected
from obelisk_session_evidence.templates import verify
from obelisk_session_evidence.templates.catalog import (
    MANIFEST_FILENAME,
    Template,
    TemplateFormatError,
    load_templates,
    parse_template,
    shipped_digests,
)
from obelisk_session_evidence.templates.verify import TemplateViolation, ensure_verified, verify_sql, verify_template

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "sql"

TEMPLATES = load_templates()


# --- shipped templates ------------------------------------------------------------------------------------


def test_templates_exist() -> None:
    assert len(TEMPLATES) >= 1


@pytest.mark.parametrize("template", TEMPLATES, ids=[t.id for t in TEMPLATES])
def test_shipped_template_passes(template: Template) -> None:
    verify_template(template)


@pytest.mark.parametrize("template", TEMPLATES, ids=[t.id for t in TEMPLATES])
def test_shipped_template_needs_are_enforced(template: Template) -> None:
    """Dropping any declared column of an index table that the template reads is caught."""
    rules_seen: set[tuple[str, ...]] = set()
    for table, column in sorted(template.needs):
        reduced = template._replace(needs=template.needs - {(table, column)})
        try:
            verify_template(reduced)
        except TemplateViolation as exc:
            rules_seen.add(exc.rules)
    assert rules_seen == {("column_not_in_needs",)}, "no needs entry is checked, or another rule broke"


@pytest.mark.parametrize("template", TEMPLATES, ids=[t.id for t in TEMPLATES])
def test_shipped_template_without_a_param_fails(template: Template) -> None:
    with pytest.raises(TemplateViolation) as info:
        verify_sql(template.sql, declared_params=template.params[1:], needs=template.needs)
    assert "undeclared_param" in info.value.rules


# --- golden cases -----------------------------------------------------------------------------------------


def _golden_header(path: Path) -> dict[str, str]:
    header: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("--"):
            break
        key, sep, value = line[2:].strip().partition(":")
        if sep:
            header.setdefault(key.strip(), value.strip())
    return header


GOLDEN_FILES = sorted(GOLDEN.glob("*.sql"))


def test_golden_cases_present() -> None:
    names = {p.stem for p in GOLDEN_FILES}
    required = {
        "scope_sources_or_1eq1", "literal_sources", "literal_roots", "missing_scope_cte",
        "scope_only_in_join_on", "outer_filter_missing", "alias_sqlite_master", "alias_pragma_table_info",
        "two_statements",
        "union_bypass", "cte_delete_returning", "load_extension_in_select", "pragma", "attach", "vacuum_into",
        "question_placeholder", "dollar_placeholder", "scope_since_not_neq", "visibility_not_neq",
        "visibility_missing", "visibility_under_or", "is_meta_missing", "limit_literal", "undeclared_param",
        "unused_param", "column_not_in_needs", "ok_base", "outer_filter_on_fts_alias",
    }
    assert required <= names, sorted(required - names)
    for path in GOLDEN_FILES:
        first = path.read_text(encoding="utf-8").splitlines()[0]
        assert first == "-- expect: ok" or first.startswith("-- expect: violation "), path.name


@pytest.mark.parametrize("path", GOLDEN_FILES, ids=[p.stem for p in GOLDEN_FILES])
def test_golden(path: Path) -> None:
    header = _golden_header(path)
    params = header["params"].split()
    needs = None
    if "needs" in header:
        needs = {(item.split(".", 1)[0], item.split(".", 1)[1]) for item in header["needs"].split()}
    sql = path.read_text(encoding="utf-8")
    expect = header["expect"].split()
    if expect == ["ok"]:
        verify_sql(sql, declared_params=params, needs=needs)
        return
    assert expect[0] == "violation", path.name
    assert len(expect) == 2, path.name
    with pytest.raises(TemplateViolation) as info:
        verify_sql(sql, declared_params=params, needs=needs)
    assert expect[1] in info.value.rules, (expect[1], info.value.rules)


def test_violation_message_is_content_free() -> None:
    secret = "s3cr3t-term"
    sql = (GOLDEN / "limit_literal.sql").read_text(encoding="utf-8").replace("1000", "1000 -- " + secret)
    sql = sql.replace("'visible'", f"'{secret}'")
    with pytest.raises(TemplateViolation) as info:
        verify_sql(sql, declared_params=["sources", "roots", "since", "fts"])
    message = str(info.value)
    assert secret not in message
    assert "SELECT" not in message.upper()
    assert "limit_placeholder" in message
    assert "visibility" in message


def test_regenerated_sql_is_never_needed() -> None:
    """The verifier reads the text as given; a unary + (which sqlglot drops) is kept in what is executed."""
    decision = [t for t in TEMPLATES if "+messages_fts.rowid" in t.sql]
    for template in decision:
        verify_template(template)
        assert "+messages_fts.rowid" in template.sql


# --- shipped verdicts (sql_templates/verified.json) -------------------------------------------------------


@pytest.mark.parametrize("content", [b"{not json", b"", b"[]", b'{"format": 1, "templates": "x"}',
                                     b'{"format": 99, "templates": {}}', b"\xff\xfe\x00", b"{}" * 200_000])
def test_corrupt_manifest_vouches_for_nothing(tmp_path: Path, content: bytes) -> None:
    (tmp_path / MANIFEST_FILENAME).write_bytes(content)
    assert shipped_digests(tmp_path) == frozenset()


def test_manifest_vouches_only_for_listed_digests(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = verify.verify_template

    def counting(t: Template) -> None:
        calls.append(t.id)
        real(t)

    monkeypatch.setattr(verify, "verify_template", counting)
    shipped = shipped_digests()
    ensure_verified(TEMPLATES, shipped=shipped)
    assert calls == []
    ensure_verified(TEMPLATES, shipped=shipped - {TEMPLATES[0].digest})
    assert calls == [TEMPLATES[0].id]


def _bad_template() -> Template:
    sql = (GOLDEN / "visibility_missing.sql").read_text(encoding="utf-8")
    return Template(id="bad.template", version=1, evidence_type="decision", needs=frozenset(),
                    params=("sources", "roots", "since", "fts", "limit"), sql=sql,
                    digest=hashlib.sha256(sql.encode()).hexdigest(), filename="bad.template.v1.sql")


def test_failing_template_is_rejected() -> None:
    bad = _bad_template()
    for _ in range(2):
        with pytest.raises(TemplateRejected) as info:
            ensure_verified([*TEMPLATES, bad], shipped=shipped_digests())
        detail = info.value.detail
        assert "bad.template" in detail
        assert "visibility" in detail
        assert "COALESCE" not in detail
        assert "SELECT" not in detail
        assert info.value.code == "template_rejected"


def test_verifier_crash_is_a_rejection(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(_sql: str, **_kwargs: Any) -> list[verify.Violation]:
        raise AttributeError("changed AST")

    monkeypatch.setattr(verify, "_check", broken)
    with pytest.raises(TemplateRejected) as info:
        ensure_verified(TEMPLATES, shipped=())
    assert "verifier_error" in info.value.detail


# --- the term probes --------------------------------------------------------------------------------------


def test_the_term_probes_are_one_statement() -> None:
    """The engine asks the term probe once per request for all FTS templates (``engine._probe`` keys its answer
    by the expression alone), so every ``term_probe`` plan must be the same statement."""
    probes = [t for t in TEMPLATES if t.plan == "term_probe"]
    assert len(probes) == 3
    bodies = {t.sql[t.sql.index("WITH scope_sessions"):] for t in probes}
    assert len(bodies) == 1
    assert {t.params for t in probes} == {probes[0].params}


# --- the header: declared keys, read fail closed ----------------------------------------------------------

_HEADER = ("-- id: t.one\n-- version: 1\n-- evidence_type: decision\n-- purpose: a test template\n"
           "-- shape: message\n-- needs: sessions.id\n-- params: limit\n--\n-- prose: a colon here is prose\n"
           "SELECT 1\n")


def test_a_header_is_parsed_into_typed_fields() -> None:
    template = parse_template(_HEADER, "t.one.v1.sql")
    assert (template.id, template.version, template.purpose, template.shape, template.plan) == \
        ("t.one", 1, "a test template", "message", None)
    plan = parse_template(_HEADER.replace("-- shape: message\n", "-- plan_of: t.one\n-- plan: fts_first\n"), "p")
    assert (plan.plan_of, plan.plan, plan.shape) == ("t.one", "fts_first", None)


@pytest.mark.parametrize(("old", "new", "says"), [
    ("-- shape: message\n", "-- shape: message\n-- colour: red\n", "unknown header key"),
    ("-- shape: message\n", "-- shape: message\n-- shape: title\n", "given twice"),
    ("-- purpose: a test template\n", "", "lacks purpose"),
    ("-- purpose: a test template\n", "-- purpose:\n", "lacks purpose"),
    ("-- shape: message\n", "", "declares shape"),
    ("-- shape: message\n", "-- shape: Message!\n", "not a name"),
    ("-- shape: message\n", "-- plan: fts_first\n", "go together"),
    ("-- shape: message\n", "-- plan_of: t.zero\n", "go together"),
    ("-- shape: message\n", "-- plan_of: t.zero\n-- plan: fastest\n", "unknown plan kind"),
    ("-- shape: message\n", "-- shape: message\n-- plan_of: t.zero\n-- plan: fts_first\n", "only an evidence"),
    ("-- evidence_type: decision\n", "-- evidence_type: scope\n", "only an evidence"),
    ("-- evidence_type: decision\n", "-- evidence_type: gossip\n", "unknown evidence_type"),
])
def test_a_malformed_header_is_refused(old: str, new: str, says: str) -> None:
    assert old in _HEADER
    with pytest.raises(TemplateFormatError, match=says):
        parse_template(_HEADER.replace(old, new), "t.one.v1.sql")


@pytest.mark.parametrize(("plan", "says"), [
    ("-- id: t.one.first\n-- evidence_type: decision\n-- plan_of: t.none\n-- plan: fts_first\n", "no evidence"),
    ("-- id: t.one.first\n-- evidence_type: summary\n-- plan_of: t.one\n-- plan: fts_first\n", "no evidence"),
    ("-- id: t.one.first\n-- evidence_type: decision\n-- plan_of: t.one.probe\n-- plan: fts_first\n", "no evidence"),
    ("-- id: t.one.second\n-- evidence_type: decision\n-- plan_of: t.one\n-- plan: term_probe\n", "a second"),
])
def test_a_plan_must_name_an_evidence_template_of_its_directory(tmp_path: Path, plan: str, says: str) -> None:
    probe = "-- id: t.one.probe\n-- evidence_type: decision\n-- plan_of: t.one\n-- plan: term_probe\n"
    rest = "-- version: 1\n-- purpose: a plan\n-- needs: sessions.id\n-- params: limit\nSELECT 1\n"
    (tmp_path / "t.one.v1.sql").write_text(_HEADER, encoding="utf-8")
    (tmp_path / "t.one.probe.v1.sql").write_text(probe + rest, encoding="utf-8")
    assert [t.id for t in load_templates(tmp_path)] == ["t.one", "t.one.probe"]
    (tmp_path / "t.one.x.v1.sql").write_text(plan + rest, encoding="utf-8")
    with pytest.raises(TemplateFormatError, match=says):
        load_templates(tmp_path)


def test_every_shipped_template_declares_what_it_is_for_and_how_its_rows_are_shown() -> None:
    """Each template says what it is for; each evidence template names a shape of ``evidence.SHAPES`` (every shape
    is some template's) and markers of ``terms.MARKERS``; each plan names an evidence template of the directory."""
    from obelisk_session_evidence.retrieval.evidence import SHAPES, check_declared
    from obelisk_session_evidence.retrieval.terms import MARKERS

    check_declared(TEMPLATES)
    assert all(t.purpose and "\n" not in t.purpose for t in TEMPLATES)
    evidence = [t for t in TEMPLATES if t.plan is None and t.evidence_type != "scope"]
    assert {t.shape for t in evidence} == set(SHAPES)
    assert {t.markers for t in evidence} - {None} == set(MARKERS)
    own = {t.id for t in evidence}
    assert all(t.plan_of in own for t in TEMPLATES if t.plan is not None)
