"""The shipped template files as a process sees them: ``sql_templates/verified.json`` is current and spares the
request path sqlglot, an unlisted template is verified in memory with nothing written, sqlglot's fallback
warning never reaches stderr, and the original template text executes through
``obelisk_session_evidence.index.connection.read_index`` on a copy of the real Obelisk database.

Split from tests/unit/test_templates.py (the verifier's rules, the fast tier): each of these runs a fresh
interpreter, the verify-templates tool or a real database.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from obelisk_session_evidence.index.connection import Deadline, ReadSnapshot, read_index
from obelisk_session_evidence.templates.catalog import MANIFEST_FILENAME, load_templates
from obelisk_session_evidence.templates.verify.manifest import verifier_digest

from tests.conftest import REPO
from tests.realobelisk import db_copy, real_dir

TEMPLATES = load_templates()


def test_sqlglot_fallback_warning_never_reaches_stderr() -> None:
    code = (
        "from obelisk_session_evidence.templates.verify import verify_sql, TemplateViolation\n"
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


_PROBE = """
import json, sys
from pathlib import Path
from obelisk_session_evidence.templates.selection import TemplateSet
templates = TemplateSet.load(Path(sys.argv[1])) if len(sys.argv) > 1 else TemplateSet.load()
templates.verify(templates.templates)
loaded = sorted(m for m in sys.modules if m == "sqlglot" or m.startswith("sqlglot."))
print(json.dumps({"sqlglot": loaded[:3]}))
"""


def _probe(*args: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", _PROBE, *args], cwd=REPO, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    loaded: list[str] = json.loads(done.stdout)["sqlglot"]
    return loaded


def test_manifest_is_current() -> None:
    """tools/verify-templates --check: every template verifies, and the manifest lists exactly their digests
    under the digest of the current rules."""
    done = subprocess.run([sys.executable, str(REPO / "tools" / "verify-templates"), "--check"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    manifest = json.loads((REPO / "sql_templates" / MANIFEST_FILENAME).read_text(encoding="utf-8"))
    assert manifest["templates"] == {t.filename: t.digest for t in TEMPLATES}
    assert manifest["verifier"] == verifier_digest()


def test_manifest_check_fails_when_a_rule_changes(tmp_path: Path) -> None:
    """A manifest made under other rules is out of date, even though every digest still matches."""
    folder = tmp_path / "templates"
    shutil.copytree(REPO / "sql_templates", folder)
    manifest_path = folder / MANIFEST_FILENAME
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    manifest["verifier"] = "sha256:" + "0" * 64
    manifest_path.write_text(json.dumps(manifest), encoding="utf-8")
    tool = [sys.executable, str(REPO / "tools" / "verify-templates"), "--dir", str(folder)]
    assert subprocess.run([*tool, "--check"], capture_output=True, timeout=120, check=False).returncode == 1
    assert subprocess.run(tool, capture_output=True, timeout=120, check=False).returncode == 0
    assert subprocess.run([*tool, "--check"], capture_output=True, timeout=120, check=False).returncode == 0


def test_shipped_templates_do_not_import_sqlglot() -> None:
    assert _probe() == [], "templates listed in the shipped manifest must not need sqlglot"


def test_unlisted_template_is_verified_in_memory_and_nothing_is_written(tmp_path: Path) -> None:
    folder = tmp_path / "templates"
    shutil.copytree(REPO / "sql_templates", folder)
    (folder / MANIFEST_FILENAME).unlink()
    before = sorted(p.name for p in folder.iterdir())
    assert _probe(str(folder)), "without the manifest every template is verified, so sqlglot is imported"
    assert sorted(p.name for p in folder.iterdir()) == before


SAMPLE_PARAMS: dict[str, Any] = {
    "sources": json.dumps(["claude", "codex"]),
    "roots": json.dumps(["/tmp/obelisk-home/src/acme-api", "/tmp/obelisk-home/src/acme-web"]),
    "since": "",
    "until": "\U0010ffff",
    "terms": json.dumps(["auth", "pytest", "cache", "src", "error"]),
    "fts": '"auth" OR "cache" OR "because" OR "error"',
    "head": 200,
    "tail": 200,
    "search": 65536,
    "pre": 40,
    "window": 300,
    "cap": 12000,
    "after_ts": "",
    "after_key": "",
    "after_rowid": -(2**63),
    "limit": 20,
    "cues": json.dumps(["error", "because", "原因"]),
    "failures": json.dumps([]),  # set per run below from the scope's sessions
    "rows": json.dumps(list(range(1, 2001))),  # rowids of the small-scope plan (the first 2000 rows)
}


@pytest.mark.real_obelisk
def test_templates_execute_on_real_obelisk(tmp_path: Path) -> None:
    shared = real_dir() / "fresh.sqlite"  # skips, with the reason, when the data is absent
    db = db_copy("fresh", tmp_path)
    before = hashlib.sha256(shared.read_bytes()).hexdigest()

    scope = next(t for t in TEMPLATES if t.evidence_type == "scope")

    def work(snap: ReadSnapshot) -> dict[str, list[tuple[Any, ...]]]:
        ids = [row[0] for row in snap.rows(scope.sql, {name: SAMPLE_PARAMS[name] for name in scope.params})]
        failures = json.dumps([f"{sid}\x1f" for sid in ids])  # every scoped session, from its start
        params = {**SAMPLE_PARAMS, "scope_ids": json.dumps(ids), "failures": failures}
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
