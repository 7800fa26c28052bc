"""The integration surface (issue 34): the shipped schemas, declarations and examples are what the code makes,
every command's real output validates against its schema and compiles against its declaration, the ping, one
output style, shell completion, and an adapter written from the shipped files alone.

* ``schemas/*.schema.json`` and ``schemas/obelisk-session-evidence.d.ts`` equal what ``tools/write-surface``
  makes from the models (a changed model without regenerated files fails), each schema with ``$schema``, ``$id``
  and the schemas' version; ``provider_meta``'s keys, degradations and reason flags are the enums of
  ``contract.meta``.
* ``schemas/examples/`` equals real answers made again on the demo fixture (timings and digests normalised), one
  per outcome.
* ``status``, ``enable``, ``disable``, ``rotate-key``, ``check-schema``, ``qualify`` (both kinds), their
  refusals and the ping reply, run as subprocesses, validate against their shipped schemas; ``tsc --strict``
  compiles them and every example against the declarations, and refuses a wrong sample.
* ``tests/ts/adapter.ts`` imports only the shipped declarations, spawns ``serve --stdio``, pings it, sends every
  example's request and checks every envelope; compiled with ``tsc --strict`` and run with ``node``. Without
  ``tsc`` (and ``@types/node`` beside it) or ``node`` the TypeScript tests skip, unless ``OSE_REQUIRE_TSC=1``
  (``.ci/run`` installs both and sets it).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from obelisk_session_evidence.cli import EXAMPLES, build_parser
from obelisk_session_evidence.contract.meta import DEGRADATIONS, FRESHNESS_DETAIL_KEYS, META_KEYS, UNKNOWN_REASONS
from obelisk_session_evidence.contract.models import DOCUMENTS, export_json_schema
from obelisk_session_evidence.contract.wire import SCHEMAS_VERSION
from obelisk_session_evidence.errors import ERROR_CODES

from tests.conftest import CLI, REPO, run_cli
from tools.devkit.surface import (
    DECLARATIONS,
    EXAMPLE_CASES,
    SURFACE_DIR,
    Setup,
    build_setup,
    example_files,
    normalised,
    schema_files,
)

EXAMPLE_DIR = SURFACE_DIR / "examples"
ADAPTER = REPO / "tests" / "ts" / "adapter.ts"


def _validator(name: str) -> Draft202012Validator:
    schema = json.loads((SURFACE_DIR / f"{name}.schema.json").read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def _problems(name: str, document: Any) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message[:160]}" for e in _validator(name).iter_errors(document)]


# --- the shipped files are the code's ------------------------------------------------------------------


def test_shipped_schemas_and_declarations_are_what_the_code_makes() -> None:
    made = schema_files()
    stale = [name for name, text in made.items()
             if not (SURFACE_DIR / name).exists() or (SURFACE_DIR / name).read_text(encoding="utf-8") != text]
    assert not stale, f"run tools/write-surface and commit: {stale}"
    shipped = {p.name for p in SURFACE_DIR.iterdir() if p.name.endswith((".schema.json", ".d.ts"))}
    assert shipped == set(made), "schemas/ holds a file the code no longer makes"


def test_every_schema_names_its_dialect_id_and_version() -> None:
    schemas = export_json_schema()
    assert list(schemas) == [d.name for d in DOCUMENTS]
    for name, schema in schemas.items():
        Draft202012Validator.check_schema(schema)
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        assert schema["$id"] == f"urn:obelisk-session-evidence:schema:{name}:{SCHEMAS_VERSION}"
        assert schema["version"] == SCHEMAS_VERSION and re.fullmatch(r"\d+\.\d+\.\d+", SCHEMAS_VERSION)
    assert len({s["$id"] for s in schemas.values()}) == len(schemas)


def test_meta_names_are_the_schema_enums_from_one_place() -> None:
    """``provider_meta`` is closed: its keys, the degradations, the freshness detail's keys (one flag per unknown
    reason) and the error codes are enumerations taken from ``contract.meta`` and ``errors``; the README names
    every degradation and reason flag."""
    defs = export_json_schema()["historical_evidence_response_v0"]["$defs"]
    meta = defs["ProviderMeta"]
    assert meta["additionalProperties"] is False and tuple(meta["properties"]) == META_KEYS
    assert tuple(meta["properties"]["degradations"]["items"]["enum"]) == DEGRADATIONS
    assert defs["FreshnessDetail"]["additionalProperties"] is False
    assert tuple(defs["FreshnessDetail"]["properties"]) == FRESHNESS_DETAIL_KEYS
    assert {f"unknown_reason_{r}" for r in UNKNOWN_REASONS} <= set(FRESHNESS_DETAIL_KEYS)
    assert defs["ErrorInfo"]["properties"]["code"]["enum"] == list(ERROR_CODES)
    status = export_json_schema()["status_v0"]["$defs"]
    assert tuple(status["StatusScope"]["properties"]["degradations"]["items"]["enum"]) == DEGRADATIONS
    assert tuple(status["ScopeFreshness"]["properties"]["unknown_reasons"]["items"]["enum"]) == UNKNOWN_REASONS
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert [d for d in DEGRADATIONS if f"`{d}`" not in readme] == []
    assert [r for r in UNKNOWN_REASONS if f"`unknown_reason_{r}`" not in readme] == []
    declarations = (SURFACE_DIR / DECLARATIONS).read_text(encoding="utf-8")
    assert f"export type Degradation = {' | '.join(json.dumps(d) for d in DEGRADATIONS)};" in declarations


def test_an_unlisted_meta_key_or_degradation_is_refused_by_the_schema() -> None:
    envelope = json.loads((EXAMPLE_DIR / "ok.json").read_text(encoding="utf-8"))["envelope"]
    assert _problems("historical_evidence_response_v0", envelope) == []
    for meta in ({**envelope["provider_meta"], "cache_hits": 1},
                 {**envelope["provider_meta"], "degradations": ["partial_index"]},
                 {**envelope["provider_meta"], "freshness_detail": {"unknown_reason_guess": 1}}):
        assert _problems("historical_evidence_response_v0", {**envelope, "provider_meta": meta})


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Setup:
    return build_setup(tmp_path_factory.mktemp("surface"))


def test_shipped_examples_are_what_the_code_answers(setup: Setup) -> None:
    made = example_files(setup)
    shipped = {p.name: p.read_text(encoding="utf-8") for p in EXAMPLE_DIR.glob("*.json")}
    assert set(shipped) == set(made), "run tools/write-surface and commit"
    drifted = [name for name, text in made.items()
               if normalised(json.loads(text)) != normalised(json.loads(shipped[name]))]
    assert not drifted, f"examples no longer what the code answers (run tools/write-surface): {drifted}"


def test_one_example_per_outcome() -> None:
    envelopes = {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in EXAMPLE_DIR.glob("*.json")}
    pong = envelopes.pop("ping")
    assert _problems("provider_ping_v0", pong["request"]) == [] and _problems("provider_pong_v0", pong["reply"]) == []
    for name, example in envelopes.items():
        assert _problems("historical_evidence_response_v0", example["envelope"]) == [], name
        if "request" in example and not name.startswith(("rejected_unknown", "rejected_invalid_request",
                                                          "rejected_cross")):
            assert _problems("historical_evidence_request_v0", example["request"]) == [], name
    by_outcome = {name: (e["envelope"]["outcome"], (e["envelope"]["error"] or {}).get("code")) for name, e in
                  envelopes.items()}
    assert by_outcome["ok"] == ("ok", None) and envelopes["ok"]["envelope"]["result"]["items"]
    assert by_outcome["ok_truncated"] == ("ok", None) and envelopes["ok_truncated"]["envelope"]["result"]["truncated"]
    rejected = {code for outcome, code in by_outcome.values() if outcome == "rejected"}
    assert rejected == {code for code, cls in ERROR_CODES.items() if cls.outcome == "rejected"} - {"request_too_large"}
    assert by_outcome["failed_index_missing"] == ("failed", "index_missing")
    assert by_outcome["failed_timeout"] == ("failed", "timeout")
    assert envelopes["failed_timeout"]["envelope"]["error"]["retryable"] is True
    assert len(EXAMPLE_CASES) == len(envelopes)


# --- real outputs against the shipped schemas ----------------------------------------------------------


@pytest.fixture(scope="module")
def outputs(setup: Setup, tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, Any]]:
    """Real documents of every command, by case: (schema name, document), from CLI subprocesses."""
    base = tmp_path_factory.mktemp("outputs")
    home = base / "home"
    home.mkdir()
    env = {"HOME": str(home), "XDG_CONFIG_HOME": str(base / "xdg")}
    db, config = str(setup.db), str(setup.config)
    fresh = str(base / "cfg" / "config.json")
    root = base / "repo"
    root.mkdir()
    runs: dict[str, tuple[str, list[str], bytes]] = {
        "status": ("status_v0", ["status", "--format", "json", "--db", db, "--config", config], b""),
        "status_no_db": ("status_v0", ["status", "--format", "json", "--db", str(setup.missing_db), "--config",
                                       str(setup.invalid_config)], b""),
        "enable": ("enable_v0", ["enable", "--agent-id", "a", "--project-id", "p", "--repository-id", "r", "--source",
                                 "claude", "--root", str(root), "--db", db, "--config", fresh], b""),
        "enable_unchecked": ("enable_v0", ["enable", "--agent-id", "a", "--project-id", "p", "--repository-id", "r2",
                                           "--source", "claude", "--root", str(base), "--allow-broad-root",
                                           "--allow-shared-root", "--config", fresh], b""),
        "enable_refused": ("enable_v0", ["enable", "--agent-id", "a", "--project-id", "p", "--repository-id", "r",
                                         "--source", "claude", "--root", str(root), "--config", fresh], b""),
        "rotate_key": ("rotate_key_v0", ["rotate-key", "--config", fresh], b""),
        "disable": ("disable_v0", ["disable", "--agent-id", "a", "--project-id", "p", "--config", fresh], b""),
        "disable_refused": ("disable_v0", ["disable", "--agent-id", "a", "--project-id", "p", "--config", fresh], b""),
        "check_schema": ("check_schema_v0", ["check-schema", "--format", "json", "--db", db, "--config", config], b""),
        "check_schema_unreadable": ("check_schema_v0", ["check-schema", "--format", "json", "--db",
                                                        str(setup.missing_db)], b""),
        "qualify": ("qualify_v0", ["qualify", "--out", str(base / "q"), "--extra-sessions", "0",
                                   "--subprocess-cases", "0", "--agent-id", "claude-agent", "--project-id", "demo",
                                   "--repository-id", "alpha-svc", "--source", "claude"], b""),
        "qualify_replay": ("qualify_v0", ["qualify", "--replay", "--out", str(base / "r"), "--agent-id",
                                          "claude-agent", "--project-id", "demo", "--repository-id", "alpha-svc",
                                          "--db", db, "--config", config], b""),
        "pong": ("provider_pong_v0", ["serve", "--stdio", "--db", db, "--config", config],
                 b'{"schema_version": "provider_ping_v0"}\n'),
        "pong_invalid_config": ("provider_pong_v0", ["serve", "--stdio", "--db", db, "--config",
                                                     str(setup.invalid_config)],
                                b'{"schema_version":"provider_ping_v0"}\n'),
    }
    out: dict[str, tuple[str, Any]] = {}
    for case, (schema, argv, stdin) in runs.items():  # in order: enable, then rotate-key and disable its config
        done = run_cli(*argv, stdin=stdin, env=env, timeout=300)
        lines = done.stdout.splitlines()
        assert len(lines) == 1 or argv[0] in ("check-schema",), (case, done.stdout[-500:], done.stderr[-500:])
        out[case] = (schema, json.loads(done.stdout))
    return out


def test_every_command_output_validates_against_its_shipped_schema(outputs: dict[str, tuple[str, Any]]) -> None:
    for case, (schema, document) in outputs.items():
        assert _problems(schema, document) == [], case
    assert outputs["enable"][1]["ok"] is True and outputs["enable_refused"][1]["error"]["code"] == "already_enabled"
    assert outputs["enable_unchecked"][1]["sources_checked"] is False
    assert outputs["disable_refused"][1]["error"]["code"] == "not_enabled"
    assert outputs["check_schema_unreadable"][1]["verdict"] == "unreadable"
    assert outputs["qualify"][1]["passed"] is True and "verdict" in outputs["qualify_replay"][1]
    assert outputs["status"][1]["scopes"] and outputs["status_no_db"][1]["database_present"] is False


def test_the_schemas_are_not_loose(outputs: dict[str, tuple[str, Any]]) -> None:
    """A document with a field its command does not print, or a wrong value, is refused."""
    status = outputs["status"][1]
    assert _problems("status_v0", {**status, "config_path": "/home/me/.config"})
    assert _problems("status_v0", {**status, "scopes": [{**status["scopes"][0], "roots": ["/src/acme"]}]})
    assert _problems("enable_v0", {"ok": False, "error": {"code": "no_such_code", "detail": "x"}})
    assert _problems("provider_pong_v0", {**outputs["pong"][1], "config_path": "/etc/x"})


# --- the ping --------------------------------------------------------------------------------------------


def test_ping_is_answered_with_versions_and_ceilings_and_nothing_private(setup: Setup,
                                                                        outputs: dict[str, tuple[str, Any]]) -> None:
    pong = outputs["pong"][1]
    assert pong["provider_id"] == "obelisk-session-evidence" and pong["schemas_version"] == SCHEMAS_VERSION
    assert pong["request_schema_versions"] == ["historical_evidence_request_v0"]
    assert pong["config_valid"] is True and pong["ceilings"]["max_items"] == 50 and pong["deadline_ms"] == 2000
    text = json.dumps(pong)
    for private in (str(setup.config.parent), str(setup.db.parent), "claude-agent", "alpha-svc"):
        assert private not in text
    invalid = outputs["pong_invalid_config"][1]
    assert invalid["config_valid"] is False and invalid["ceilings"] is None and invalid["deadline_ms"] is None


def test_only_the_exact_ping_is_a_ping(setup: Setup) -> None:
    """A ping with another field, or a ping inside a broken line, is a request: answered by an envelope."""
    lines = b'{"schema_version": "provider_ping_v0", "request_id": "r"}\n{"schema_version": "provider_ping_v0"\n' \
            b'{ "schema_version" : "provider_ping_v0" }\n'
    done = run_cli("serve", "--stdio", "--db", str(setup.db), "--config", str(setup.config), stdin=lines)
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert [a["schema_version"] for a in answers] == ["historical_evidence_response_v0"] * 2 + ["provider_pong_v0"]
    assert [a["error"]["code"] for a in answers[:2]] == ["invalid_request", "malformed_json"]
    assert answers[0]["request_id"] == "r"


# --- one output style, completion --------------------------------------------------------------------------


def _format_choices() -> dict[str, tuple[str, ...]]:
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    out = {}
    for name, parser in sub.choices.items():  # type: ignore[union-attr]
        action = next((a for a in parser._actions if a.dest == "format"), None)
        if action is not None:
            out[name] = tuple(action.choices)  # type: ignore[arg-type]
    return out


def test_every_document_printing_command_takes_format_json_and_text() -> None:
    """Every command but the wire (query, serve), the walkthrough (demo) and the script (completion) prints a
    document, and each takes --format json|text (a command may add a form: schema typescript, qualify md)."""
    choices = _format_choices()
    assert set(choices) == set(EXAMPLES) - {"query", "serve", "demo", "completion"}
    assert all(c[:2] == ("json", "text") for c in choices.values()), choices
    wheres = {d.where.split(" --format")[0] for d in DOCUMENTS if "--format json" in d.where}
    assert wheres <= set(choices)


def test_text_is_the_json_document_for_a_person(tmp_path: Path, isolated_env: dict[str, str]) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    config = str(tmp_path / "cfg" / "config.json")
    args = ["--agent-id", "a", "--project-id", "p", "--repository-id", "r", "--source", "claude", "--root", str(root),
            "--config", config]
    text = run_cli("enable", *args, "--format", "text", env=isolated_env)
    assert text.code == 0 and "action: enabled" in text.stdout and "repository_id: r" in text.stdout
    refused = run_cli("enable", *args, "--format", "text", env=isolated_env)
    assert refused.code == 2 and "code: already_enabled" in refused.stdout and not refused.stdout.startswith("{")
    rotated = run_cli("rotate-key", "--config", config, "--format", "text", env=isolated_env)
    assert rotated.code == 0 and "action: rotated" in rotated.stdout
    listed = run_cli("schema", "--format", "text", env=isolated_env)
    assert all(d.name in listed.stdout for d in DOCUMENTS)


def test_schema_prints_one_document_or_the_declarations(isolated_env: dict[str, str]) -> None:
    one = run_cli("schema", "status_v0", env=isolated_env)
    assert json.loads(one.stdout) == json.loads((SURFACE_DIR / "status_v0.schema.json").read_text(encoding="utf-8"))
    typescript = run_cli("schema", "--format", "typescript", env=isolated_env)
    assert typescript.stdout == (SURFACE_DIR / DECLARATIONS).read_text(encoding="utf-8")
    unknown = run_cli("schema", "no_such_document", env=isolated_env)
    assert unknown.code == 64 and unknown.stdout == "" and "no_such_document" not in unknown.stderr


def test_bash_completion_is_valid_and_names_every_command(isolated_env: dict[str, str], tmp_path: Path) -> None:
    done = run_cli("completion", "--shell", "bash", env=isolated_env)
    assert done.code == 0
    script = tmp_path / "completion.bash"
    script.write_text(done.stdout, encoding="utf-8")
    assert subprocess.run(["bash", "-n", str(script)], capture_output=True, check=False).returncode == 0
    listed = re.search(r"_subparsers=\(([^)]*)\)", done.stdout)
    assert listed is not None and set(listed.group(1).split()) == set(EXAMPLES)
    assert "--format" in done.stdout and "_shtab_compgen_files" in done.stdout  # options, and paths complete
    zsh = run_cli("completion", "--shell", "zsh", env=isolated_env)
    assert zsh.code == 0 and all(name in zsh.stdout for name in EXAMPLES)
    if shutil.which("zsh"):
        (tmp_path / "completion.zsh").write_text(zsh.stdout, encoding="utf-8")
        assert subprocess.run(["zsh", "-n", str(tmp_path / "completion.zsh")], check=False).returncode == 0


def test_completion_without_shtab_says_which_extra(isolated_env: dict[str, str]) -> None:
    code = ("import sys; sys.modules['shtab'] = None\nfrom obelisk_session_evidence.cli import main\n"
            "raise SystemExit(main(['completion', '--shell', 'bash']))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, cwd=REPO,
                          env={**os.environ, **isolated_env})
    assert done.returncode == 2 and done.stdout == "" and "[completion]" in done.stderr


# --- TypeScript --------------------------------------------------------------------------------------------


def _typescript() -> tuple[str, Path, str]:
    """tsc, the @types folder beside it, node; a skip (or, with OSE_REQUIRE_TSC=1, a failure) without them."""
    tsc, node = shutil.which("tsc"), shutil.which("node")
    types = Path(tsc).resolve().parents[2] / "@types" if tsc else None
    if tsc is None or node is None or types is None or not (types / "node").is_dir():
        if os.environ.get("OSE_REQUIRE_TSC") == "1":
            pytest.fail("tsc, @types/node beside it and node are required (OSE_REQUIRE_TSC=1): .ci/run installs them")
        pytest.skip("tsc with @types/node beside it, or node, is missing: npm install typescript@5 @types/node@20")
    return tsc, types, node


_TSC_FLAGS = ["--strict", "--exactOptionalPropertyTypes", "--noUncheckedIndexedAccess", "--target", "es2022",
              "--module", "commonjs", "--moduleResolution", "node10"]


def _compile_samples(tsc: str, folder: Path, samples: list[tuple[str, str, Any]]) -> subprocess.CompletedProcess[str]:
    shutil.copyfile(SURFACE_DIR / DECLARATIONS, folder / DECLARATIONS)
    names = sorted({type_name for _, type_name, _ in samples})
    lines = [f'import type {{ {", ".join(names)} }} from "./obelisk-session-evidence";']
    lines += [f"export const {name}: {type_name} = {json.dumps(document)};" for name, type_name, document in samples]
    (folder / "samples.ts").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return subprocess.run([tsc, *_TSC_FLAGS, "--noEmit", "samples.ts"], capture_output=True,
                          text=True, timeout=300, check=False, cwd=folder)


def test_declarations_compile_against_every_example_and_real_output(outputs: dict[str, tuple[str, Any]],
                                                                    tmp_path: Path) -> None:
    tsc, _, _ = _typescript()
    type_of = {d.name: d.type_name for d in DOCUMENTS}
    samples: list[tuple[str, str, Any]] = []
    for path in sorted(EXAMPLE_DIR.glob("*.json")):
        example = json.loads(path.read_text(encoding="utf-8"))
        key = path.stem
        if key == "ping":
            samples += [("ping", "ProviderPingV0", example["request"]), ("pong", "ProviderPongV0", example["reply"])]
            continue
        samples.append((f"example_{key}", "HistoricalEvidenceResponseV0", example["envelope"]))
        if "request" in example and key in ("ok", "ok_truncated", "failed_timeout"):
            samples.append((f"request_{key}", "HistoricalEvidenceRequestV0", example["request"]))
    samples += [(f"output_{case}", type_of[schema], document) for case, (schema, document) in outputs.items()]
    done = _compile_samples(tsc, tmp_path, samples)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-1000:]
    # The check is real: an undeclared meta key, an unknown degradation, a null optional field do not compile.
    ok = json.loads((EXAMPLE_DIR / "ok.json").read_text(encoding="utf-8"))["envelope"]
    for wrong in ({**ok, "provider_meta": {**ok["provider_meta"], "cache_hits": 1}},
                  {**ok, "provider_meta": {**ok["provider_meta"], "degradations": ["partial_index"]}},
                  {**ok, "result": {**ok["result"], "items": [{**ok["result"]["items"][0], "message_ref": None}]}}):
        bad = _compile_samples(tsc, tmp_path, [("bad", "HistoricalEvidenceResponseV0", wrong)])
        assert bad.returncode != 0 and re.search(r"TS23(22|53)", bad.stdout), bad.stdout[-2000:]


def test_shipped_declarations_are_the_rfc_types(tmp_path: Path) -> None:
    """The request, result and receipt the package declares are the RFC §5 types (``tests/ts/contract_types.ts``),
    each assignable to the other: an integrator's RFC-typed code takes the shipped types as they are."""
    tsc, _, _ = _typescript()
    shutil.copyfile(SURFACE_DIR / DECLARATIONS, tmp_path / DECLARATIONS)
    shutil.copyfile(REPO / "tests" / "ts" / "contract_types.ts", tmp_path / "contract_types.ts")
    names = ("HistoricalEvidenceRequestV0", "HistoricalEvidenceResultV0", "HistoricalEvidenceReceiptV0")

    def check(declared: str) -> subprocess.CompletedProcess[str]:
        lines = ['import type * as RFC from "./contract_types";', f'import type * as Shipped from "./{declared}";',
                 "type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;"]
        lines += [f"export const same{name}: Same<RFC.{name}, Shipped.{name}> = true;" for name in names]
        (tmp_path / "same.ts").write_text("\n".join(lines) + "\n", encoding="utf-8")
        return subprocess.run([tsc, *_TSC_FLAGS, "--noEmit", "same.ts"], capture_output=True, text=True,
                              timeout=300, check=False, cwd=tmp_path)

    done = check("obelisk-session-evidence")
    assert done.returncode == 0, done.stdout[-3000:]
    # The check is real: a declaration that drops the RFC's `false` literal for a boolean does not pass.
    text = (tmp_path / DECLARATIONS).read_text(encoding="utf-8")
    (tmp_path / "loose.d.ts").write_text(text.replace("raw_content_captured: false;", "raw_content_captured: boolean;"),
                                         encoding="utf-8")
    assert check("loose").returncode != 0


def test_an_adapter_from_the_shipped_files_alone_runs_against_every_example(setup: Setup, tmp_path: Path) -> None:
    """``tests/ts/adapter.ts`` imports nothing of the provider but ``schemas/obelisk-session-evidence.d.ts``;
    compiled with ``tsc --strict`` and run with node against ``serve --stdio``, it checks every example."""
    tsc, types, node = _typescript()
    imports = re.findall(r'from "([^"]+)"', ADAPTER.read_text(encoding="utf-8"))
    assert [i for i in imports if not i.startswith("node:")] == ["../../schemas/obelisk-session-evidence"]
    out = tmp_path / "js"
    built = subprocess.run([tsc, *_TSC_FLAGS, "--types", "node", "--typeRoots", str(types), "--rootDir", str(REPO),
                            "--outDir", str(out), str(ADAPTER)], capture_output=True, text=True, timeout=300,
                           check=False, cwd=REPO)
    assert built.returncode == 0, built.stdout[-3000:]
    setups = {name: {"db": str(setup.paths(name)[0]), "config": str(setup.paths(name)[1])}
              for name in ("demo", "missing_index", "invalid_config")}
    (tmp_path / "setup.json").write_text(json.dumps({"command": list(CLI), "examples": str(EXAMPLE_DIR),
                                                     "setups": setups}), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OBELISK")}
    env.update(OSE_ADAPTER_SETUP=str(tmp_path / "setup.json"), HOME=str(tmp_path))
    ran = subprocess.run([node, str(out / "tests" / "ts" / "adapter.js")], capture_output=True, text=True,
                         timeout=300, check=False, cwd=REPO, env=env)
    assert ran.returncode == 0, ran.stdout + ran.stderr[-3000:]
    replayed = sum(1 for e in EXAMPLE_CASES if e[1] != "expired_deadline")
    assert f"{len(EXAMPLE_CASES)} examples, {replayed} envelopes from serve --stdio checked, 3 setups pinged, " \
           "0 failures" in ran.stdout
