"""What a ``query`` process loads: its own path, not the other commands' modules (checked in fresh interpreters).

The CLI imports a command's modules only when that command runs (``provider/cli.py``). No timing is asserted
here (the machine is shared and noisy): ``tools/bench_cold.py`` measures the cold start against ``python -c pass``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pytest
from obelisk_session_evidence.cli import EXAMPLES

from tests.conftest import CLI, REPO, make_request, scope_entry, write_config

#: What only other commands, the maintainers' tools or another request need: the operator commands, the fixture
#: builder and the evaluation, the contract of record and pydantic (``schema``; the request path validates with
#: ``contract.wire``), the template verifier and sqlglot (a template the shipped manifest does not list), and
#: matplotlib (the replay report's chart), shtab and the declarations' renderer (``completion``, ``schema``).
NOT_FOR_QUERY = ("obelisk_session_evidence.commands", "obelisk_session_evidence.fixtures",
                 "obelisk_session_evidence.evaluation", "obelisk_session_evidence.contract.models",
                 "obelisk_session_evidence.templates.verify", "pydantic", "pydantic_core", "sqlglot", "matplotlib",
                 "shtab", "obelisk_session_evidence.contract.typescript", "obelisk_session_evidence.contract.documents")
#: The modules of the commands themselves and of the request path: parsing a command line loads none of them.
COMMAND_MODULES = ("obelisk_session_evidence.service", "obelisk_session_evidence.commands",
                   "obelisk_session_evidence.contract.models", "obelisk_session_evidence.retrieval",
                   "obelisk_session_evidence.index", "obelisk_session_evidence.templates", "pydantic", "sqlglot",
                   "apsw")


def _within(name: str, packages: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in packages)


def imported_modules(stderr: str) -> list[str]:
    """Module names from ``-X importtime`` lines (``import time: self | cumulative | name``)."""
    names = []
    for line in stderr.splitlines():
        if not line.startswith("import time:"):
            continue
        name = line.rsplit("|", 1)[-1].strip()
        if name != "imported package":
            names.append(name)
    return names


class ColdQuery(NamedTuple):
    argv: list[str]  # the ``query`` arguments after the command name
    request: bytes
    env: dict[str, str]


@pytest.fixture(scope="module")
def cold_query(tmp_path_factory: pytest.TempPathFactory) -> ColdQuery:
    """A five-type request on the current-generation fixture (no revision, no archived Codex rollouts)."""
    from obelisk_session_evidence.fixtures.builder import build_fixture

    out = tmp_path_factory.mktemp("cold")
    info = build_fixture(out, generation="current")
    manifest = json.loads(info.manifest_path.read_text(encoding="utf-8"))
    config = write_config(out / "config.json", [scope_entry("claude-main", "acme", "acme-api", ["claude"],
                                                            [str(manifest["repos"]["alpha-svc"])])])
    request = make_request(evidence_types=["prior_failure", "tool_outcome", "decision", "file_history",
                                           "summary"])
    env = {k: v for k, v in os.environ.items() if not k.startswith("OBELISK") and k != "PYTHONPROFILEIMPORTTIME"}
    env["HOME"] = str(out / "home")
    return ColdQuery(["query", "--db", str(info.db_path), "--config", str(config)], json.dumps(request).encode(),
                     env)


@pytest.fixture(scope="module")
def query_imports(cold_query: ColdQuery) -> list[str]:
    proc = subprocess.run([sys.executable, "-X", "importtime", *CLI[1:], *cold_query.argv], input=cold_query.request,
                          capture_output=True, env=cold_query.env, cwd=REPO, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout[:500]
    document = json.loads(proc.stdout)
    assert document["outcome"] == "ok" and document["result"]["items"]
    return imported_modules(proc.stderr.decode("utf-8", "replace"))


def _fresh_interpreter(code: str, argv: list[str], cold_query: ColdQuery) -> str:
    """What ``code`` prints, run by a new interpreter with ``argv`` as its arguments and the request on stdin."""
    proc = subprocess.run([sys.executable, "-c", code, *argv], input=cold_query.request, capture_output=True,
                          env=cold_query.env, cwd=REPO, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.decode()


def test_query_imports_none_of_the_other_commands_modules(query_imports: list[str]) -> None:
    assert "obelisk_session_evidence.service" in query_imports  # the parse saw the real request path
    assert [name for name in query_imports if _within(name, NOT_FOR_QUERY)] == []


#: Run in a fresh interpreter: every command's ``--help`` and ``--version``, then the modules loaded so far.
_HELP_CHECK = """
import contextlib, io, json, sys
from obelisk_session_evidence import cli
codes = []
for argv in [["--version"], ["--help"], *([name, "--help"] for name in cli.EXAMPLES)]:
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            cli.main(argv)
        except SystemExit as exc:
            codes.append(exc.code)
print(json.dumps({"codes": codes, "modules": sorted(sys.modules)}))
"""


def test_parsing_a_command_line_imports_no_command(cold_query: ColdQuery) -> None:
    """The parser, every command's help and the version come from ``cli.py`` alone: no command's modules."""
    report = json.loads(_fresh_interpreter(_HELP_CHECK, [], cold_query))
    assert report["codes"] == [0] * (2 + len(EXAMPLES))
    assert [name for name in report["modules"] if _within(name, COMMAND_MODULES)] == []


def test_a_command_imports_its_own_modules_only(cold_query: ColdQuery) -> None:
    """``schema`` loads the contract of record (pydantic) and nothing of the request path or the other commands."""
    code = ("import contextlib, io, json, sys\nfrom obelisk_session_evidence import cli\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n    code = cli.main(['schema'])\n"
            "print(json.dumps({'code': code, 'modules': sorted(sys.modules)}))")
    report = json.loads(_fresh_interpreter(code, [], cold_query))
    assert report["code"] == 0 and "obelisk_session_evidence.contract.models" in report["modules"]
    others = ("obelisk_session_evidence.service", "obelisk_session_evidence.commands",
              "obelisk_session_evidence.retrieval", "obelisk_session_evidence.index", "sqlglot", "apsw")
    assert [name for name in report["modules"] if _within(name, others)] == []


#: Run in a fresh interpreter: one operator command in process, then whether the request path was loaded.
_OPERATOR_CHECK = """
import contextlib, io, json, sys
from obelisk_session_evidence import cli
with contextlib.redirect_stdout(io.StringIO()):
    code = cli.main(sys.argv[1:])
print(json.dumps({"code": code, "service": "obelisk_session_evidence.service" in sys.modules}))
"""


@pytest.mark.parametrize("command", ["status", "check-schema", "enable"])
def test_an_operator_command_does_not_load_the_request_path(cold_query: ColdQuery, tmp_path: Path,
                                                              command: str) -> None:
    """``status``, ``check-schema`` and ``enable`` find the default database without importing ``service`` (the
    request path): ``default_db_path`` lives with the config's defaults (``admission/config.py``)."""
    root = tmp_path / "root"
    root.mkdir()
    argv = {"status": ["status", "--format", "json"], "check-schema": ["check-schema", "--format", "json"],
            "enable": ["enable", "--agent-id", "a", "--project-id", "p", "--repository-id", "r", "--source",
                       "claude", "--root", str(root), "--config", str(tmp_path / "cfg" / "config.json")]}[command]
    cold = cold_query._replace(env={**cold_query.env, "OBELISK_DB": cold_query.argv[2],
                                    "XDG_CONFIG_HOME": str(tmp_path / "xdg")})
    report = json.loads(_fresh_interpreter(_OPERATOR_CHECK, argv, cold))
    assert report == {"code": 0, "service": False}


def test_importtime_parser_reads_nested_names() -> None:
    sample = ("import time: self [us] | cumulative | imported package\n"
              "import time:       855 |      40692 |       pydantic\n"
              "import time:        12 |         12 | sqlglot.parser\n")
    assert imported_modules(sample) == ["pydantic", "sqlglot.parser"]


def test_schema_verdict_module_stands_alone() -> None:
    """The query path's schema module must not pull the operator command back in (a fresh interpreter)."""
    code = ("import sys, obelisk_session_evidence.index.schema_verdict as m; "
            "print(sorted(n for n in sys.modules if n.endswith('check_schema') or n.startswith('sqlglot')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, cwd=Path(REPO), check=True,
                         timeout=60).stdout.decode().strip()
    assert out == "[]"


#: A fresh interpreter runs the process entry point as the console script does, then reports the collector.
_COLLECTOR_CHECK = """
import contextlib, gc, io, json, sys
from obelisk_session_evidence import cli
with contextlib.redirect_stdout(io.StringIO()) as out:
    code = cli.run()
print(json.dumps({"code": code, "enabled": gc.isenabled(), "frozen": gc.get_freeze_count() > 0,
                  "answered": bool(out.getvalue())}))
"""


def _collector_after(argv: list[str], cold_query: ColdQuery) -> dict[str, object]:
    return dict(json.loads(_fresh_interpreter(_COLLECTOR_CHECK, argv, cold_query)))


def test_one_shot_query_process_runs_no_cyclic_collection(cold_query: ColdQuery) -> None:
    """The process entry point answers a ``query`` with the collector off and the objects left frozen (no final
    collection at exit); any other command, and ``main`` called in process, leave the collector as it was."""
    assert _collector_after(cold_query.argv, cold_query) == {"code": 0, "enabled": False, "frozen": True,
                                                             "answered": True}
    assert _collector_after(["schema"], cold_query) == {"code": 0, "enabled": True, "frozen": False,
                                                        "answered": True}
    code = ("import contextlib, gc, io, sys\nfrom obelisk_session_evidence import cli\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n    cli.main(sys.argv[1:])\n"
            "print(gc.isenabled(), gc.get_freeze_count() > 0)")
    assert _fresh_interpreter(code, cold_query.argv, cold_query).split() == ["True", "False"]


def test_console_script_and_module_share_the_entry_point() -> None:
    """``pyproject.toml``'s console script is the entry point ``python -m`` runs (``cli.run``)."""
    text = (Path(REPO) / "pyproject.toml").read_text(encoding="utf-8")
    assert 'obelisk-session-evidence = "obelisk_session_evidence.cli:run"' in text
    assert "raise SystemExit(run())" in (Path(REPO) / "provider" / "__main__.py").read_text(encoding="utf-8")
