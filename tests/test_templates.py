"""Static verification of the SQL templates (provider/retrieval/verify/) and their execution on real data.

* every shipped template passes the verifier;
* golden cases in tests/golden/sql/: one small file per case whose first line is ``-- expect: ok`` or
  ``-- expect: violation <rule>``, followed by ``-- params:`` (declared parameters) and optionally
  ``-- needs:`` (declared columns; without it the needs rule is not checked);
* the verdict cache: a warm start does not import sqlglot, a corrupt cache or an unwritable cache
  directory is ignored, a failing template is never cached;
* the original template text executes through ``provider.index.connection.read_index`` on a copy of the
  real Obelisk database.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from provider.errors import TemplateRejected
from provider.index.connection import Deadline, ReadSnapshot, read_index
from provider.retrieval import verify
from provider.retrieval.templates import Template, load_templates
from provider.retrieval.verify import TemplateViolation, ensure_verified, verify_sql, verify_template
from tests.realobelisk import db_copy, real_dir

REPO = Path(__file__).resolve().parents[1]
GOLDEN = Path(__file__).resolve().parent / "golden" / "sql"
CACHE_FILE = "template-verdicts.json"

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
        reduced = Template(**{**template.__dict__, "needs": template.needs - {(table, column)}})
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
        "unused_param", "column_not_in_needs", "ok_base",
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


def test_sqlglot_fallback_warning_never_reaches_stderr() -> None:
    code = (
        "from provider.retrieval.verify import verify_sql, TemplateViolation\n"
        "for sql in (\"VACUUM INTO '/tmp/x'\", 'REPLACE INTO t VALUES (1)', 'ALTER TABLE t ADD COLUMN c'):\n"
        "    try:\n"
        "        verify_sql(sql, declared_params=[])\n"
        "    except TemplateViolation as exc:\n"
        "        assert 'unparsed_command' in exc.rules, exc.rules\n"
        "    else:\n"
        "        raise SystemExit('accepted')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""


def test_regenerated_sql_is_never_needed() -> None:
    """The verifier reads the text as given; a unary + (which sqlglot drops) is kept in what is executed."""
    decision = [t for t in TEMPLATES if "+messages_fts.rowid" in t.sql]
    for template in decision:
        verify_template(template)
        assert "+messages_fts.rowid" in template.sql


# --- verdict cache ----------------------------------------------------------------------------------------

_PROBE = """
import json, sys
from pathlib import Path
from provider.retrieval.templates import load_templates
from provider.retrieval.verify import ensure_verified
ensure_verified(load_templates(), cache_dir=Path(sys.argv[1]))
loaded = sorted(m for m in sys.modules if m == "sqlglot" or m.startswith("sqlglot."))
print(json.dumps({"sqlglot": loaded[:3]}))
"""


def _probe(cache_dir: Path) -> list[str]:
    done = subprocess.run([sys.executable, "-c", _PROBE, str(cache_dir)], cwd=REPO, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    loaded: list[str] = json.loads(done.stdout)["sqlglot"]
    return loaded


def test_warm_cache_does_not_import_sqlglot(tmp_path: Path) -> None:
    cache_dir = tmp_path / "cache"
    assert _probe(cache_dir), "the first call must verify (and so import sqlglot)"
    cache_file = cache_dir / CACHE_FILE
    assert cache_file.is_file()
    assert stat.S_IMODE(cache_file.stat().st_mode) == 0o600
    assert _probe(cache_dir) == [], "a warm cache must not import sqlglot"
    assert not [p for p in cache_dir.iterdir() if p.name != CACHE_FILE], "temp files left behind"


def test_cache_is_keyed_by_sqlglot_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = verify.verify_template

    def counting(t: Template) -> None:
        calls.append(t.id)
        real(t)

    monkeypatch.setattr(verify, "verify_template", counting)
    ensure_verified(TEMPLATES, cache_dir=tmp_path)
    assert len(calls) == len(TEMPLATES)
    ensure_verified(TEMPLATES, cache_dir=tmp_path)
    assert len(calls) == len(TEMPLATES)
    monkeypatch.setattr(verify, "_sqlglot_version", lambda: "0.0.1")
    ensure_verified(TEMPLATES, cache_dir=tmp_path)
    assert len(calls) == 2 * len(TEMPLATES)


def test_sqlglot_version_read_without_import() -> None:
    assert verify._sqlglot_version() == importlib.metadata.version("sqlglot")


@pytest.mark.parametrize("content", [b"{not json", b"", b"[]", b'{"format": 1, "verified": "x"}',
                                     b'{"format": 99, "verified": []}', b"\xff\xfe\x00", b"{}" * 200_000])
def test_corrupt_cache_is_ignored(tmp_path: Path, content: bytes) -> None:
    (tmp_path / CACHE_FILE).write_bytes(content)
    ensure_verified(TEMPLATES, cache_dir=tmp_path)
    data = json.loads((tmp_path / CACHE_FILE).read_text(encoding="utf-8"))
    assert data["format"] == 1
    assert len(data["verified"]) == len(TEMPLATES)


def test_forged_cache_entries_are_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A cache naming a digest in another form (or listing junk) does not vouch for anything."""
    forged = {"format": 1, "verified": [t.digest for t in TEMPLATES] + [None, 7, "x" * 64]}
    (tmp_path / CACHE_FILE).write_text(json.dumps(forged), encoding="utf-8")
    calls: list[str] = []
    real = verify.verify_template

    def counting(t: Template) -> None:
        calls.append(t.id)
        real(t)

    monkeypatch.setattr(verify, "verify_template", counting)
    ensure_verified(TEMPLATES, cache_dir=tmp_path)
    assert len(calls) == len(TEMPLATES)


def test_unwritable_cache_dir_is_ignored(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x", encoding="utf-8")
    ensure_verified(TEMPLATES, cache_dir=blocker / "cache")  # mkdir fails: no cache, still verified
    ensure_verified(TEMPLATES, cache_dir=blocker / "cache")
    assert blocker.read_text(encoding="utf-8") == "x"


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root ignores directory modes")
def test_read_only_cache_dir_is_ignored(tmp_path: Path) -> None:
    cache_dir = tmp_path / "ro"
    cache_dir.mkdir()
    cache_dir.chmod(0o500)
    try:
        ensure_verified(TEMPLATES, cache_dir=cache_dir)
        assert list(cache_dir.iterdir()) == []
    finally:
        cache_dir.chmod(0o700)


def test_cache_file_replaced_by_directory_is_ignored(tmp_path: Path) -> None:
    (tmp_path / CACHE_FILE).mkdir()
    ensure_verified(TEMPLATES, cache_dir=tmp_path)
    assert (tmp_path / CACHE_FILE).is_dir()
    assert [p.name for p in tmp_path.iterdir()] == [CACHE_FILE], "temp file left behind"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="XDG_CACHE_HOME is the Linux convention")
def test_default_cache_dir_is_the_user_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    ensure_verified(TEMPLATES, cache_dir=None)
    assert (tmp_path / "obelisk-session-evidence" / CACHE_FILE).is_file()


def _bad_template() -> Template:
    sql = (GOLDEN / "visibility_missing.sql").read_text(encoding="utf-8")
    return Template(id="bad.template", version=1, evidence_type="decision", needs=frozenset(),
                    params=("sources", "roots", "since", "fts", "limit"), sql=sql,
                    digest=hashlib.sha256(sql.encode()).hexdigest(), filename="bad.template.v1.sql")


def test_failing_template_is_rejected_and_not_cached(tmp_path: Path) -> None:
    bad = _bad_template()
    for _ in range(2):
        with pytest.raises(TemplateRejected) as info:
            ensure_verified([*TEMPLATES, bad], cache_dir=tmp_path)
        detail = info.value.detail
        assert "bad.template" in detail
        assert "visibility" in detail
        assert "COALESCE" not in detail
        assert "SELECT" not in detail
        assert info.value.code == "template_rejected"
    data: dict[str, Any] = json.loads((tmp_path / CACHE_FILE).read_text(encoding="utf-8"))
    assert len(data["verified"]) == len(TEMPLATES)


def test_verifier_crash_is_a_rejection(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(_sql: str, **_kwargs: Any) -> list[verify.Violation]:
        raise AttributeError("changed AST")

    monkeypatch.setattr(verify, "_check", broken)
    with pytest.raises(TemplateRejected) as info:
        ensure_verified(TEMPLATES, cache_dir=tmp_path)
    assert "verifier_error" in info.value.detail
    assert not (tmp_path / CACHE_FILE).exists()


# --- execution on the real Obelisk database ---------------------------------------------------------------

SAMPLE_PARAMS: dict[str, Any] = {
    "sources": json.dumps(["claude", "codex"]),
    "roots": json.dumps(["/tmp/obelisk-home/src/acme-api", "/tmp/obelisk-home/src/acme-web"]),
    "since": "",
    "terms": json.dumps(["auth", "pytest", "cache", "src", "error"]),
    "fts": '"auth" OR "cache" OR "because" OR "error"',
    "head": 200,
    "tail": 200,
    "pre": 40,
    "window": 300,
    "limit": 20,
}


@pytest.mark.real_obelisk
def test_templates_execute_on_real_obelisk(tmp_path: Path) -> None:
    shared = real_dir() / "fresh.sqlite"  # skips, with the reason, when the data is absent
    db = db_copy("fresh", tmp_path)
    before = hashlib.sha256(shared.read_bytes()).hexdigest()

    scope = next(t for t in TEMPLATES if t.evidence_type == "scope")

    def work(snap: ReadSnapshot) -> dict[str, list[tuple[Any, ...]]]:
        ids = [row[0] for row in snap.rows(scope.sql, {name: SAMPLE_PARAMS[name] for name in scope.params})]
        params = {**SAMPLE_PARAMS, "scope_ids": json.dumps(ids)}
        return {t.key: snap.rows(t.sql, {name: params[name] for name in t.params}) for t in TEMPLATES
                if t is not scope}

    results, _mode = read_index(db, work, deadline=Deadline(10_000))
    assert set(results) == {t.key for t in TEMPLATES if t is not scope}
    for key, rows in results.items():
        assert len(rows) <= SAMPLE_PARAMS["limit"], key
        for row in rows:
            # every template returns (session_id, session_source, session_path, ...) first
            assert row[1] in ("claude", "codex"), key
            assert any(row[2] == root or str(row[2]).startswith(root + "/")
                       for root in json.loads(SAMPLE_PARAMS["roots"])), key
    assert sum(len(rows) for rows in results.values()) > 0
    assert hashlib.sha256(shared.read_bytes()).hexdigest() == before
