"""The command line: one argparse parser for every command, and each command's modules imported when it runs.

Building the parser imports no command: the options, help and examples live here, and each ``cmd_*`` function
imports its command's modules inside it (``query`` and ``serve`` the service, ``enable`` and ``disable`` the
lifecycle, and so on), so a process loads only the command it runs. ``query`` writes one JSON envelope on
stdout, ``serve`` one per input line; each command's ``--help`` lists the exit codes it can return
(:data:`EXIT_CODES`). Nothing private reaches stderr: a usage error names options, never the values given.
"""

from __future__ import annotations

import argparse
import gc
import io
import json
import os
import re
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn, TextIO

from ._version import PROVIDER_ID, PROVIDER_VERSION
from .admission.config import CONFIG_ENV, ProviderConfig, default_config_path, default_db_path, load_config
from .digest import key_if_present
from .errors import ConfigInvalid, DeadlineExceeded, InternalError, MalformedJson, ProviderError
from .inputs import InputDeadline, NotRegularFile, bounded_lines, read_regular_file, read_until_deadline

PROG = PROVIDER_ID
#: stdin is read only up to this many bytes (+1 to detect oversize); see provider.contract.parse.
STDIN_BOUND = 64 * 1024


def _db_path(args: argparse.Namespace) -> Path:
    return Path(args.db) if args.db else default_db_path(os.environ)


def _config_path(args: argparse.Namespace) -> Path:
    return Path(args.config) if args.config else default_config_path(os.environ)


def _config_named(args: argparse.Namespace) -> bool:
    """True when the operator named the config (then a missing file is ``config_invalid``)."""
    return bool(getattr(args, "config", None) or os.environ.get(CONFIG_ENV))


#: Characters some line readers treat as line breaks; escaped so one envelope is always one line.
_LINE_BREAKS = str.maketrans({"\u2028": "\\u2028", "\u2029": "\\u2029", "\u0085": "\\u0085"})


def _emit(document: Any) -> None:
    text = json.dumps(document, ensure_ascii=False, separators=(",", ":")).translate(_LINE_BREAKS)
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def _deadline_ms(args: argparse.Namespace) -> int:
    """The config's deadline for reading stdin (the default when the config cannot be read: ``answer`` then
    reports that config problem itself)."""
    try:
        return load_config(_config_path(args), must_exist=_config_named(args)).deadline_ms
    except ConfigInvalid:
        return ProviderConfig().deadline_ms


def _read_request(args: argparse.Namespace, started: float) -> bytes:
    """The request bytes, at most ``STDIN_BOUND + 1`` of them: a regular ``--request FILE``, or stdin
    (``--request -`` or no ``--request``) read only until the request's deadline."""
    if args.request and args.request != "-":
        return read_regular_file(args.request, STDIN_BOUND)
    expires_at = started + _deadline_ms(args) / 1000.0
    return read_until_deadline(sys.stdin.fileno(), STDIN_BOUND, expires_at)


def cmd_query(args: argparse.Namespace) -> int:
    from .service import answer, error_response

    started = time.monotonic()
    try:
        raw = _read_request(args, started)
    except InputDeadline:
        response = error_response(DeadlineExceeded("the request deadline expired before the request was read to "
                                                    "its end"))
    except NotRegularFile:
        response = error_response(MalformedJson("request file is not a regular file"))
    except OSError:
        response = error_response(MalformedJson("request file could not be read"))
    else:
        try:
            response = answer(raw, db_path=_db_path(args), config_path=_config_path(args),
                              config_must_exist=_config_named(args), started_at=started)
        except Exception:  # noqa: BLE001 - answer() never raises; this is the last line of defence
            response = error_response(InternalError())
    _emit(response.envelope)
    return response.exit_code


def cmd_serve(args: argparse.Namespace) -> int:
    """One envelope per input line, blank lines included (a caller pairing replies by position stays in step)."""
    from .contract.parse import is_ping
    from .service import WarmState, answer, error_response

    db, config, named = _db_path(args), _config_path(args), _config_named(args)
    warm = WarmState()  # what this process remembers between requests
    for line in bounded_lines(sys.stdin.buffer, STDIN_BOUND):
        if not line.strip():
            response = error_response(MalformedJson("the request line is empty"))
        elif is_ping(line):  # {"schema_version": "provider_ping_v0"}: who answers, not a request
            from .commands.ping import pong

            _emit(pong(config, must_exist=named))
            continue
        else:
            response = answer(line, db_path=db, config_path=config, config_must_exist=named, warm=warm)
        _emit(response.envelope)
    return 0


def _printed(fmt: str, produce: Callable[[TextIO], int]) -> int:
    """Run a command that writes one JSON document (a line) to the stream it is given, and print that document
    as ``fmt`` says: ``json`` as it is, ``text`` as the same document for a person (``commands/text.py``)."""
    if fmt == "json":
        return produce(sys.stdout)
    from .commands.text import render_document

    buffer = io.StringIO()
    code = produce(buffer)
    sys.stdout.writelines(render_document(json.loads(line)) for line in buffer.getvalue().splitlines()
                          if line.strip())
    sys.stdout.flush()
    return code


def _refused(err: ProviderError, fmt: str = "json") -> int:
    """An operator command's typed refusal, as ``enable`` prints one: one JSON line on stdout; exit 2."""
    def write(out: TextIO) -> int:
        out.write(json.dumps({"ok": False, "error": {"code": err.code, "detail": err.detail}}) + "\n")
        return 2

    return _printed(fmt, write)


def cmd_schema(args: argparse.Namespace) -> int:
    from .contract.models import DOCUMENTS, export_json_schema, typescript_declarations

    if args.format == "typescript":
        sys.stdout.write(typescript_declarations())
        return 0
    schemas = export_json_schema()
    if args.name is not None and args.name not in schemas:
        sys.stderr.write(f"{PROG} schema: NAME is not a document; one of: {', '.join(schemas)}\n")
        return EX_USAGE
    chosen = [d for d in DOCUMENTS if args.name in (None, d.name)]
    if args.format == "json":
        _emit(schemas[args.name] if args.name else schemas)
    else:
        width = max(len(d.name) for d in chosen) + 2
        sys.stdout.write(f"JSON Schemas {schemas[chosen[0].name]['version']} (print one: {PROG} schema NAME; "
                         f"TypeScript: {PROG} schema --format typescript)\n")
        sys.stdout.writelines(f"  {d.name:<{width}}{d.type_name}: {d.where}\n    {schemas[d.name]['$id']}\n"
                              for d in chosen)
    sys.stdout.flush()
    return 0


def cmd_completion(args: argparse.Namespace) -> int:
    """The shell completion script, generated from this parser by ``shtab`` (the optional ``completion`` extra)."""
    try:
        import shtab
    except ImportError:
        sys.stderr.write(f"{PROG} completion: needs the optional shtab package: pip install "
                         f"'{PROG}[completion]'\n")
        return 2
    parser = build_parser()
    for action in _actions(parser):  # file and folder options complete paths
        if action.metavar in ("PATH", "FILE"):
            action.complete = shtab.FILE  # type: ignore[attr-defined]
        elif action.metavar == "DIR":
            action.complete = shtab.DIRECTORY  # type: ignore[attr-defined]
    sys.stdout.write(shtab.complete(parser, shell=args.shell))
    sys.stdout.flush()
    return 0


def _actions(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """Every action of ``parser`` and of its commands' parsers."""
    found = list(parser._actions)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found.extend(a for sub in action.choices.values() for a in sub._actions)
    return found


def cmd_enable(args: argparse.Namespace) -> int:
    from .commands.lifecycle import enable_scope

    return _printed(args.format, lambda out: enable_scope(
        config_path=_config_path(args), agent_id=args.agent_id, project_id=args.project_id,
        repository_id=args.repository_id, sources=args.source, roots=args.root, stage=args.stage,
        include_worktrees=args.include_worktrees, qualification_report=args.qualification_report,
        out=out, replace=args.replace, db_path=_db_path(args),
        allow_unknown_source=args.allow_unknown_source, accept_synthetic=args.accept_synthetic_qualification,
        max_report_age_days=args.max_report_age_days, allow_broad_root=args.allow_broad_root,
        allow_shared_root=args.allow_shared_root,
    ))


def cmd_disable(args: argparse.Namespace) -> int:
    from .commands.lifecycle import disable_scope

    return _printed(args.format, lambda out: disable_scope(
        config_path=_config_path(args), agent_id=args.agent_id, project_id=args.project_id,
        repository_id=args.repository_id, out=out))


def cmd_status(args: argparse.Namespace) -> int:
    from .commands.status import status_command

    return status_command(db_path=_db_path(args), config_path=_config_path(args), fmt=args.format,
                          out=sys.stdout, config_must_exist=_config_named(args))


def cmd_check_schema(args: argparse.Namespace) -> int:
    from .commands.check_schema import check_schema_command

    return check_schema_command(db_path=_db_path(args), fmt=args.format, snapshot_out=args.snapshot_out,
                                out=sys.stdout, key=key_if_present(_config_path(args)))


def cmd_demo(args: argparse.Namespace) -> int:
    from .commands.demo import run_demo

    try:
        return run_demo(Path(args.dir) if args.dir else None, out=sys.stdout)
    except ProviderError as err:  # a link planted where the demo writes, or an unusable key there
        return _refused(err)


def cmd_rotate_key(args: argparse.Namespace) -> int:
    from .commands.rotation import rotate_key

    return _printed(args.format, lambda out: rotate_key(config_path=_config_path(args), out=out,
                                                         must_exist=_config_named(args)))


def cmd_qualify_replay(args: argparse.Namespace) -> int:
    """``qualify --replay``: the scope's own history on the real index; 0 passed, 1 failed or
    insufficient_history, 2 usage or an unusable index/config (content-free messages)."""
    from .commands.qualify.replay import run_replay, write_replay_reports
    from .commands.qualify.replay.report import scope_of

    if not (args.agent_id and args.project_id and args.repository_id):
        sys.stderr.write(f"{PROG} qualify --replay: --agent-id, --project-id and --repository-id are required\n")
        return 2
    try:
        scope = scope_of(_config_path(args), args.agent_id, args.project_id, args.repository_id)
        doc = run_replay(_db_path(args), _config_path(args), scope)
    except ValueError:
        sys.stderr.write(f"{PROG} qualify --replay: the scope is not enabled in the config (enable it first)\n")
        return 2
    except ProviderError as err:
        sys.stderr.write(f"{PROG} qualify --replay: {err.code}\n")
        return 2
    try:
        json_path, md_path = write_replay_reports(doc, Path(args.out))
    except ProviderError as err:  # a link or another scope's report where this one goes
        return _refused(err, _human(args.format))
    summary = {"verdict": doc["verdict"], "passed": doc["passed"], "pairs": doc["replayed"]["pairs"],
               "negatives": doc["replayed"]["negatives"],
               "recognition": doc["metrics"]["recognition"]["rate"],
               "false_matches": doc["metrics"]["false_matches"]["false_matches"],
               "report": str(json_path), "markdown": str(md_path)}

    def write(out: TextIO) -> int:
        out.write(json.dumps(summary) + "\n")
        return 0 if doc["passed"] else 1

    return _printed(_human(args.format), write)


def _human(fmt: str) -> str:
    """``qualify``'s ``md`` is its ``text`` (the summary in Markdown, for a person)."""
    return "text" if fmt == "md" else fmt


def cmd_qualify(args: argparse.Namespace) -> int:
    if args.replay:
        return cmd_qualify_replay(args)
    from .commands.qualify import operator_scope, qualify_command
    from .progress import progress

    ids = (args.agent_id, args.project_id, args.repository_id)
    scope = None
    if any(ids) or args.source:
        if not all(ids) or not args.source:
            sys.stderr.write(f"{PROG} qualify: --agent-id, --project-id, --repository-id and --source go "
                             "together\n")
            return 2
        try:
            scope = operator_scope(args.agent_id, args.project_id, args.repository_id, args.source)
        except ValueError as exc:
            sys.stderr.write(f"{PROG} qualify: {exc}\n")
            return 2
    if args.work_dir and Path(args.work_dir).exists() and any(Path(args.work_dir).iterdir()):
        sys.stderr.write(f"{PROG} qualify: --work-dir must be a new or empty directory\n")
        return 2
    with progress("qualifying (corpus, three arms per case)"):  # on a terminal only; quiet when piped
        try:
            return qualify_command(out_dir=Path(args.out), fmt="md" if args.format == "text" else args.format,
                                   out=sys.stdout, scope=scope,
                                   seed=args.seed, extra_sessions=args.extra_sessions,
                                   subprocess_cases=args.subprocess_cases,
                                   work_dir=Path(args.work_dir) if args.work_dir else None)
        except ProviderError as err:  # a link planted where a report goes
            return _refused(err, _human(args.format))


#: sysexits.h EX_USAGE: the command line itself was wrong (distinct from a rejected request's 2).
EX_USAGE = 64
#: What a usage error's value looks like (``invalid choice: 'x'``, ``invalid int value: 'x'``): the value given
#: is dropped, the option's name kept.
_GIVEN_VALUE = re.compile(r"(invalid [\w ]+?): ('[^']*'|\S+)")


class _Parser(argparse.ArgumentParser):
    """argparse with usage errors on exit 64, nothing on stdout, and no argument value echoed to stderr."""

    def error(self, message: str) -> NoReturn:
        if message.startswith("unrecognized arguments"):
            message = "unrecognized arguments"
        text = _GIVEN_VALUE.sub(r"\1", message)
        self.print_usage(sys.stderr)
        sys.stderr.write(f"{self.prog}: error: {text}\n")
        raise SystemExit(EX_USAGE)


#: The exit codes each command can return: its own ``--help`` lists its line and :data:`ANY_COMMAND`; the
#: top-level ``--help`` lists them all (:data:`EXIT_TABLE`; the README's tables say the same).
EXIT_CODES: dict[str, str] = {
    "query": "0 ok, 2 rejected (no result), 3 failed (typed empty result and receipt),\n"
             "1 internal error (still one JSON envelope)",
    "serve": "0 end of input (every line, a blank one too, is answered by one envelope: its outcome\n"
             "is that request's answer)",
    "enable": "0 done, 2 refused, 1 the config could not be read or written",
    "disable": "0 done, 2 refused, 1 the config could not be read or written",
    "status": "0 reported, 1 the config could not be read or its digest key is unusable",
    "check-schema": "0 exact or compatible, 1 degraded, 2 incompatible or unreadable",
    "schema": "0 printed",
    "completion": "0 printed, 2 the optional shtab package is not installed",
    "qualify": "0 every scope passed, 1 otherwise, 2 unusable (arguments, index, config)\n"
               "or refused (unsafe_write_target)",
    "demo": "0 done, 1 a demo request met an internal error, 2 refused (unsafe_write_target,\n"
            "config_invalid, demo_folder_in_use)",
    "rotate-key": "0 rotated, 1 the config could not be read or written, 2 refused (unsafe_write_target)",
}
#: Exit codes every command shares.
ANY_COMMAND = ("64 usage error (bad arguments; nothing on stdout), 130 interrupted (Ctrl-C; no traceback),\n"
               "1 also when the reader closes stdout early (`| head`)")
#: 128 + SIGINT: the shell's code for a command Ctrl-C stopped.
EX_INTERRUPTED = 130


def _exit_lines(names: Sequence[str]) -> str:
    width = max(len(name) for name in (*names, "any command")) + 2
    lines = ["exit codes:"]
    for name, text in [*((n, EXIT_CODES[n]) for n in names), ("any command", ANY_COMMAND)]:
        first, *rest = text.split("\n")
        lines.append(f"  {name + ':':<{width}}{first}")
        lines.extend(f"  {'':<{width}}{more}" for more in rest)
    return "\n".join(lines)


#: The whole exit-code table, shown by the top-level ``--help``.
EXIT_TABLE = _exit_lines(list(EXIT_CODES))

#: One example per command (shown at the end of that command's --help).
EXAMPLES: dict[str, str] = {
    "query": f"{PROG} query --request request.json      # or: {PROG} query < request.json",
    "serve": f"jq -c . request.json | {PROG} serve --stdio      # one request per line",
    "enable": f"{PROG} enable --agent-id claude-main --project-id acme --repository-id acme-api "
              "--source claude --root ~/src/acme-api",
    "disable": f"{PROG} disable --agent-id claude-main --project-id acme --repository-id acme-api",
    "status": f"{PROG} status --format json",
    "check-schema": f"{PROG} check-schema --format json",
    "schema": f"{PROG} schema historical_evidence_response_v0 > envelope.schema.json",
    "completion": f"{PROG} completion --shell bash > ~/.local/share/bash-completion/completions/{PROG}",
    "qualify": f"{PROG} qualify --out qualification --format md",
    "demo": f"{PROG} demo --dir ./demo-index",
    "rotate-key": f"{PROG} rotate-key",
}


def build_parser() -> argparse.ArgumentParser:
    """The parser of every command (each command's ``func`` is its ``cmd_*`` function)."""
    parser = _Parser(
        prog=PROG,
        description="Read-only, scoped, bounded historical evidence from an Obelisk session index "
                    "(RFC historical_evidence_*_v0).",
        epilog=EXIT_TABLE, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {PROVIDER_VERSION}",
                        help="print the provider version and exit")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, summary: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=summary, description=summary,
                              epilog=f"example:\n  {EXAMPLES[name]}\n\n{_exit_lines([name])}",
                              formatter_class=argparse.RawDescriptionHelpFormatter)

    def common(p: argparse.ArgumentParser, db: bool = True) -> None:
        if db:
            p.add_argument("--db", metavar="PATH",
                           help="Obelisk database (default: $OBELISK_DB, else ~/.obelisk/obelisk.sqlite)")
        p.add_argument("--config", metavar="PATH",
                       help="provider config (default: $OBELISK_SESSION_EVIDENCE_CONFIG, else the "
                            "platform config dir); a named config must exist")

    def output(p: argparse.ArgumentParser, document: str, default: str, text: str,
               extra: tuple[str, ...] = ()) -> None:
        """``--format``, the same for every command that prints a document: json is the document itself."""
        p.add_argument("--format", choices=("json", "text", *extra), default=default,
                       help=f"json: the JSON document (its schema: `{PROG} schema {document}`); text: {text}; "
                            f"default {default}")

    def ids(p: argparse.ArgumentParser, *, repository_required: bool, what: str) -> None:
        p.add_argument("--agent-id", required=True, metavar="A", help=f"agent id {what} (as in the request)")
        p.add_argument("--project-id", required=True, metavar="P", help=f"project id {what}")
        if repository_required:
            p.add_argument("--repository-id", required=True, metavar="R", help=f"repository id {what}")

    q = command("query", "answer one historical_evidence_request_v0 (JSON on stdin or --request)")
    common(q)
    q.add_argument("--request", metavar="FILE", help="read the request from FILE (a regular file) instead of "
                                                     "stdin; - means stdin")
    q.set_defaults(func=cmd_query)

    s = command("serve", "answer one request per stdin line, one envelope per stdout line; a line "
                         '{"schema_version": "provider_ping_v0"} gets one provider_pong_v0 line (versions, ceilings)')
    common(s)
    s.add_argument("--stdio", action="store_true", required=True, help="line-delimited JSON over stdio")
    s.set_defaults(func=cmd_serve)

    e = command("enable", "enable one agent/project/repository scope (default-off until then)")
    ids(e, repository_required=True, what="to enable")
    e.add_argument("--source", action="append", required=True, metavar="S",
                   help="Obelisk source the agent writes (claude, codex, kimi, pi, ...), checked against the "
                        "index; repeatable")
    e.add_argument("--root", action="append", required=True, metavar="DIR",
                   help="repository root directory; repeatable")
    e.add_argument("--stage", type=int, choices=(1, 2), default=1,
                   help="1: operator_requested_history only; 2: also the replan triggers")
    e.add_argument("--include-worktrees", action="store_true",
                   help="also bind the git worktrees of each root")
    e.add_argument("--qualification-report", metavar="FILE",
                   help="passing qualification report (required for --stage 2)")
    e.add_argument("--replace", action="store_true",
                   help="replace an existing enablement of the same agent, project and repository")
    e.add_argument("--allow-unknown-source", action="store_true",
                   help="accept a --source the index does not know yet (an agent that has not run)")
    e.add_argument("--accept-synthetic-qualification", action="store_true",
                   help="accept a generated-corpus report (qualify --self-test); recorded in the config")
    e.add_argument("--max-report-age-days", type=int, default=30, metavar="N",
                   help="refuse a qualification report older than N days (default 30)")
    e.add_argument("--allow-broad-root", action="store_true",
                   help="accept a root that is the home directory or holds another git repository (never /); "
                        "recorded in the config")
    e.add_argument("--allow-shared-root", action="store_true",
                   help="accept roots that overlap another enabled scope reading a common source; recorded in "
                        "the config")
    common(e)
    output(e, "enable_v0", "json", "the same document, as lines for a person")
    e.set_defaults(func=cmd_enable)

    d = command("disable", "remove an enablement (never touches Obelisk's data)")
    ids(d, repository_required=False, what="to disable")
    d.add_argument("--repository-id", metavar="R", help="disable only this repository (default: every "
                                                        "repository of the agent and project, listed)")
    common(d, db=False)
    output(d, "disable_v0", "json", "the same document, as lines for a person")
    d.set_defaults(func=cmd_disable)

    st = command("status", "versions, database, schema verdict, freshness, ceilings, enabled scopes")
    common(st)
    output(st, "status_v0", "text", "the local operator's view, with plain paths (the JSON has none)")
    st.set_defaults(func=cmd_status)

    cs = command("check-schema", "compare the live schema with the pinned snapshots")
    cs.add_argument("--db", metavar="PATH",
                    help="Obelisk database (default: $OBELISK_DB, else ~/.obelisk/obelisk.sqlite)")
    output(cs, "check_schema_v0", "text", "the operator's view, with the database path (the JSON names it by "
                                          "a keyed digest, null without the install's digest key)")
    cs.add_argument("--config", metavar="PATH",
                    help="provider config whose digest key (digest.key beside it) keys db_digest (default: "
                         "$OBELISK_SESSION_EVIDENCE_CONFIG, else the platform config dir); need not exist")
    cs.add_argument("--snapshot-out", metavar="FILE", help="capture the live schema as a new snapshot file "
                                                           "(maintainers)")
    cs.set_defaults(func=cmd_check_schema)

    sc = command("schema", "print the JSON Schemas (or TypeScript declarations) of the request, the envelope and "
                           "every document a command prints; the package ships the same files (schemas/)")
    sc.add_argument("name", nargs="?", metavar="NAME",
                    help="print only this document's schema (e.g. historical_evidence_request_v0, status_v0; "
                         "`schema --format text` lists them)")
    sc.add_argument("--format", choices=("json", "text", "typescript"), default="json",
                    help="json: the schemas by name (NAME: its schema alone); text: the list of documents, their "
                         "$id and what prints them; typescript: declarations of every document; default json")
    sc.set_defaults(func=cmd_schema)

    cp = command("completion", "print a shell completion script generated from this parser (needs the optional "
                               "shtab package)")
    cp.add_argument("--shell", choices=("bash", "zsh"), required=True, help="the shell to complete for")
    cp.set_defaults(func=cmd_completion)

    ql = command("qualify", "Stage 0 qualification: --replay on the scope's own history, or --self-test on a "
                            "generated matched corpus (the default); writes reports")
    mode = ql.add_mutually_exclusive_group()
    mode.add_argument("--replay", action="store_true",
                      help="replay the enabled scope's own repeat pairs against the index (--db, --config)")
    mode.add_argument("--self-test", action="store_true", help="the generated-corpus qualification (default)")
    common(ql)
    ql.add_argument("--out", metavar="DIR", default="qualification",
                    help="report folder (default: ./qualification)")
    output(ql, "qualify_v0", "json", "the summary in Markdown (md is the same)", extra=("md",))
    ql.add_argument("--agent-id", metavar="A",
                    help="qualify this scope (with --project-id, --repository-id, --source)")
    ql.add_argument("--project-id", metavar="P", help="project id of the scope to qualify")
    ql.add_argument("--repository-id", metavar="R", help="repository id of the scope to qualify")
    ql.add_argument("--source", action="append", metavar="S", help="claude or codex; repeatable")
    ql.add_argument("--seed", type=int, default=7, help="corpus seed (default 7)")
    ql.add_argument("--extra-sessions", type=int, default=24, metavar="N",
                    help="filler sessions added to the corpus as distractors (default 24)")
    ql.add_argument("--subprocess-cases", type=int, default=3, metavar="N",
                    help="cases re-run through a real `query` subprocess per scope (default 3)")
    ql.add_argument("--work-dir", metavar="DIR", help="build the corpus here and keep it (default: a temp dir)")
    ql.set_defaults(func=cmd_qualify)

    dm = command("demo", "build a demo index and config, enable both demo repositories, run representative "
                         "requests, write a sample request")
    dm.add_argument("--dir", metavar="DIR", help="demo folder (default: ./demo-index)")
    dm.set_defaults(func=cmd_demo)

    rk = command("rotate-key", "replace the install's digest key; re-make the keyed digests the config stores "
                               "(receipts' digests change)")
    rk.add_argument("--config", metavar="PATH",
                    help="provider config whose digest key (digest.key beside it) is replaced (default: "
                         "$OBELISK_SESSION_EVIDENCE_CONFIG, else the platform config dir); a named config "
                         "must exist")
    output(rk, "rotate_key_v0", "json", "the same document, as lines for a person")
    rk.set_defaults(func=cmd_rotate_key)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command line (``sys.argv[1:]`` by default) and return its exit code."""
    try:
        args = build_parser().parse_args(sys.argv[1:] if argv is None else list(argv))
        code: int = args.func(args)
    except BrokenPipeError:  # the reader went away (e.g. `| head`): nothing more to say, and no traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except KeyboardInterrupt:  # Ctrl-C: stop quietly, as the shell reports a command SIGINT ended
        return EX_INTERRUPTED
    return code


def run() -> int:
    """The process entry point (the console script and ``python -m``): :func:`main`, with no cyclic garbage
    collection for a one-shot ``query``. Such a process answers one bounded request and ends; reference
    counting frees what it drops, so the collector's passes and its final collection at exit (``gc.freeze``
    keeps that from walking what is left) would only cost time. Callers of :func:`main` keep the collector."""
    argv = sys.argv[1:]
    one_shot = argv[:1] == ["query"]
    if one_shot:
        gc.disable()
    code = main(argv)
    if one_shot:
        gc.freeze()
    return code


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(run())
